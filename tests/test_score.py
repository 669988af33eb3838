import numpy as np
import pandas as pd
import pytest

from beatflow.score import (
    ScoreParams,
    fitted_threshold,
    morphology_ratio,
    rhythm_ratio,
    robust_distance,
    score_table,
)
from beatflow.segment import SegmentParams

FS = 100.0


def test_regular_rhythm_scores_zero():
    peaks = np.arange(20) * 80
    r = rhythm_ratio(peaks, np.full(20, 80), FS, 0.25, 3.0, ScoreParams())
    assert (r == 0).all()


def test_premature_beat_and_pause_known_answers():
    rr = np.full(21, 100)
    rr[10] = 70  # premature: 70 % of the local median RR
    rr[15] = 200  # a pause: twice the median
    peaks = np.cumsum(rr)
    length = np.diff(peaks, append=peaks[-1] + 100)
    r = rhythm_ratio(peaks, length, FS, 0.25, 3.0, ScoreParams())
    assert r[10] == pytest.approx(np.log(1 / 0.7) / np.log(1 / 0.8))
    assert r[15] == pytest.approx(np.log(2.0) / np.log(1.8))
    assert r[11] == 0 and (r[[10, 15]] > 1).all() and (np.delete(r, [10, 15]) <= 1).all()


def test_out_of_range_length_is_a_rhythm_anomaly():
    peaks = np.r_[np.arange(0, 1100, 100), np.arange(1500, 2600, 100)]
    r = rhythm_ratio(peaks, np.diff(peaks, append=2600), FS, 0.25, 3.0, ScoreParams())
    assert r[10] == pytest.approx(5.0 / 3.0)  # 5 s to the next beat against max_rr_s = 3
    assert r[11] == pytest.approx(np.log(5.0) / np.log(1.8))  # the beat after the pause: late


def test_score_table_combines_shape_and_timing():
    beats = pd.DataFrame({"beat": np.arange(6), "peak": np.arange(6) * 100, "start": np.arange(6) * 100,
                          "length": np.full(6, 100), "kept": [False, True, True, True, True, False]})
    morph = np.array([0.5, 3.0, 0.2, 0.9])
    split = np.array(["train", "test", "train", "test"], dtype=object)
    table = score_table(beats, FS, morph, split, SegmentParams(), ScoreParams())
    assert table.split.tolist() == ["pruned", "train", "test", "train", "test", "pruned"]
    assert table.reason.tolist() == ["", "", "morphology", "", "", ""]
    assert table.anomaly.tolist() == [False, False, True, False, False, False]
    np.testing.assert_allclose(table.score[1:5], morph)
    np.testing.assert_allclose(table.time_s, beats.peak / FS)


def test_robust_distance_known_answer():
    latent = np.array([[-1.0], [0.0], [1.0], [2 * 1.4826], [0.0]])  # training rows 0-2: median 0, MAD 1
    np.testing.assert_allclose(robust_distance(latent, np.array([0, 1, 2])),
                               [1 / 1.4826**2, 0, 1 / 1.4826**2, 4.0, 0])


@pytest.mark.parametrize("nu,scale", [(8, 1.0), (3, 5.0), (20, 0.2)])
def test_fitted_threshold_recovers_a_scaled_chi_square_law(nu, scale):
    from scipy.stats import chi2

    distances = scale * chi2.rvs(nu, size=200_000, random_state=nu)
    expected = scale * chi2.ppf(0.999, nu)
    assert fitted_threshold(distances, 0.999) == pytest.approx(expected, rel=0.03)


def test_fitted_threshold_follows_heavy_tails():
    """Latents with heavy tails (Student t, 3 dof): the Gaussian chi-square threshold flags over a fifth of
    them; the fitted one is higher and flags under a quarter as many (a fit at the lower quartile and median
    flagged 7 %)."""
    from scipy.stats import chi2

    latent = np.random.default_rng(1).standard_t(3, size=(100_000, 8))
    distance = robust_distance(latent, np.arange(len(latent)))
    gaussian = (distance > chi2.ppf(0.99, 8)).mean()
    threshold = fitted_threshold(distance, 0.99)
    assert gaussian > 0.2
    assert threshold > 1.5 * chi2.ppf(0.99, 8)
    assert 0.01 < (distance > threshold).mean() < gaussian / 4


def test_morphology_ratio_ignores_a_minority_of_outliers_in_training():
    rng = np.random.default_rng(0)
    normal = rng.standard_normal((1000, 4))
    odd = normal[:150] + 12.0  # 13 % abnormal shapes in the training beats (a fifth is the limit)
    latent = np.vstack([normal, odd])
    ratio = morphology_ratio(latent, np.arange(len(latent)), 0.999)
    assert (ratio[1000:] > 1).all() and (ratio[:1000] > 1).mean() < 0.01
