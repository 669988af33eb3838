import numpy as np
import pytest
import torch
from conftest import artifact_paths

from beatflow.score.morphology import (
    Morphology,
    alignments,
    fitted_threshold,
    robust_reference,
    rows_after_anomalies,
    squared_z,
)


def distances(latent, train_rows):
    return squared_z(latent, *robust_reference(latent[train_rows]))


def test_robust_distance_known_answer():
    latent = np.array([[-1.0], [0.0], [1.0], [2 * 1.4826], [0.0]])  # training rows 0-2: median 0, MAD 1
    np.testing.assert_allclose(distances(latent, np.array([0, 1, 2])), [1 / 1.4826**2, 0, 1 / 1.4826**2, 4.0, 0])


@pytest.mark.parametrize("nu,scale", [(8, 1.0), (3, 5.0), (20, 0.2)])
def test_fitted_threshold_recovers_a_scaled_chi_square_law(nu, scale):
    from scipy.stats import chi2

    values = scale * chi2.rvs(nu, size=200_000, random_state=nu)
    expected = scale * chi2.ppf(0.999, nu)
    assert fitted_threshold(values, 0.999) == pytest.approx(expected, rel=0.03)


def test_fitted_threshold_follows_heavy_tails():
    """Latents with heavy tails (Student t, 3 dof): the Gaussian chi-square threshold flags over a fifth of
    them; the fitted one is higher and flags under a quarter as many (a fit at the lower quartile and median
    flagged 7 %)."""
    from scipy.stats import chi2

    latent = np.random.default_rng(1).standard_t(3, size=(100_000, 8))
    distance = distances(latent, np.arange(len(latent)))
    gaussian = (distance > chi2.ppf(0.99, 8)).mean()
    threshold = fitted_threshold(distance, 0.99)
    assert gaussian > 0.2
    assert threshold > 1.5 * chi2.ppf(0.99, 8)
    assert 0.01 < (distance > threshold).mean() < gaussian / 4


def test_threshold_ignores_a_minority_of_outliers_in_training():
    rng = np.random.default_rng(0)
    normal = rng.standard_normal((1000, 4))
    odd = normal[:150] + 12.0  # 13 % abnormal shapes in the training beats (a fifth is the limit)
    latent = torch.from_numpy(np.vstack([normal, odd])[None])  # one alignment
    judge = Morphology(None, 0, (1.0,), 1024).fit(latent, np.arange(latent.shape[1]), 0.999)
    ratio, _ = judge.ratio(latent)
    assert (ratio[1000:] > 1).all() and (ratio[:1000] > 1).mean() < 0.01


def test_ratio_is_linear_in_the_distance():
    """Half the threshold's distance scores 0.5 and twice it 2, as a beat halfway to (or twice past) the
    prematurity threshold does in the rhythm ratio; the squared distance would give 0.25 and 4."""
    plain = torch.from_numpy(np.random.default_rng(4).standard_normal((1, 5000, 2)))
    judge = Morphology(None, 0, (1.0,), 1024).fit(plain, np.arange(5000), 0.999)
    steps = torch.tensor([[0.5, 0.0], [0.0, 2.0]], dtype=torch.float64) * judge.threshold**0.5
    ratio, _ = judge.ratio((judge.centre + steps * judge.spread)[None])
    np.testing.assert_allclose(ratio, [0.5, 2.0], rtol=1e-12)


def test_alignments_span_the_training_stretch():
    assert alignments(0.3) == pytest.approx((0.7, 0.85, 1.0, 1.15, 1.3))
    assert alignments(0.0) == (1.0,)


def test_ratio_takes_the_closest_alignment_and_the_threshold_from_rows_as_they_are():
    rng = np.random.default_rng(2)
    plain = rng.standard_normal((2000, 3))
    latents = np.stack([plain + 50.0, plain, plain - 50.0])  # factors 0.8, 1, 1.2: far from the rows as they are
    latents[0, 7] = latents[1, 7]  # row 7 as it is sits far out, stretched by 0.8 it is typical
    latents[1, 7] = 40.0
    as_they_are = distances(latents[1], np.arange(2000))
    latents = torch.from_numpy(latents)
    judge = Morphology(None, 0, (0.8, 1.0, 1.2), 1024).fit(latents, np.arange(2000), 0.999)
    assert judge.threshold == pytest.approx(fitted_threshold(as_they_are, 0.999))
    ratio, latent = judge.ratio(latents)
    assert as_they_are[7] > 10 * judge.threshold and ratio[7] < 1 and latent[7] == pytest.approx(plain[7])
    np.testing.assert_allclose(ratio[:7], np.sqrt(as_they_are[:7] / judge.threshold), rtol=1e-12)


def test_rows_after_anomalies_counts_kept_beats_only():
    anomaly = np.array([False, True, False, True, False, False])
    kept = np.array([True, True, False, True, True, True])  # beat 2 pruned: no row
    # beats 2 and 4 follow an anomalous beat; beat 2 has no row, beat 4 is the kept row 3
    assert rows_after_anomalies(anomaly, kept).tolist() == [3]


def test_latents_at_factor_one_are_the_encoders_and_stretches_differ():
    from beatflow.learn.model import ConvVAE

    torch.manual_seed(0)
    model = ConvVAE(2, 100, 4).eval()
    x = torch.randn(10, 2, 100)
    latents = Morphology(model, 30, (0.8, 1.0), 3).latents(x)
    assert latents.shape == (2, 10, 4) and latents.dtype == torch.float64
    torch.testing.assert_close(latents[1], model.encode(x)[0].detach().double(), rtol=1e-5, atol=1e-6)
    assert (latents[0] - latents[1]).abs().max() > 1e-3


def flagged_by_label(spec, tmp_path, backend):
    """Run segment → embed → train → score on a synthetic record (CPU); per truth label, the flags of the
    matched beats, and of the normal beats right after a ``V`` and after an ``L``."""
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import EmbedParams, embed
    from beatflow.evaluate import match
    from beatflow.io.tables import read_frame, write_signal
    from beatflow.learn.train import TrainParams, train
    from beatflow.score.scores import ScoreParams, score
    from beatflow.synth import generate

    leads, true, labels = generate(spec)
    paths = artifact_paths(tmp_path)
    write_signal(leads, spec.fs, paths["signal"], gpu=False)
    segment("r", {"signal": paths["signal"]}, {"beats": paths["beats"]}, SegmentParams.defaults(), backend)
    embed(
        "r",
        {"signal": paths["signal"], "beats": paths["beats"]},
        {"embedding": paths["embedding"]},
        EmbedParams.defaults(length_s=1.0),
        backend,
    )
    train(
        "r",
        {"embedding": paths["embedding"], "beats": paths["beats"], "signal": paths["signal"]},
        {"model": paths["model"]},
        TrainParams.defaults(),
        backend,
    )
    score("r", paths, paths, ScoreParams.defaults(), backend)
    table = read_frame(paths["scores"])
    truth_index, detected = match(true, table.peak.to_numpy(), 0.15 * spec.fs)
    label, flag = labels[truth_index], table.anomaly.to_numpy()[detected]
    previous = np.where(truth_index > 0, labels[truth_index - 1], "")
    return {
        **{k: flag[label == k] for k in set(label)},
        **{f"N after {k}": flag[(label == "N") & (previous == k)] for k in ("V", "L")},
    }


def test_normal_beats_after_aberrant_beats_at_150_bpm_are_not_flagged(tmp_path, cpu):
    """At 150 bpm the row's first 0.25 s hold the previous beat's T wave; after an aberrant beat that made
    98 % of the normal beats anomalous in shape before their heads were judged from the template."""
    from beatflow.synth import SynthSpec

    spec = SynthSpec(duration_s=600, fs=128, hr_bpm=150, aberrant_rate=0.05, min_coupling_s=0.25, seed=7)
    flags = flagged_by_label(spec, tmp_path, cpu)
    assert len(flags["N after L"]) > 50
    assert flags["L"].mean() >= 0.95
    assert flags["N after L"].mean() <= 0.1 and flags["N"].mean() <= 0.01


def test_a_later_t_wave_after_a_compensatory_pause_is_not_an_anomaly(tmp_path, cpu):
    """At 42 bpm the normal beat after a ventricular one has its T wave 15 % later (QT follows the pause);
    judged only as it is, 30 % of those beats were flagged."""
    from beatflow.synth import SynthSpec

    spec = SynthSpec(duration_s=1200, fs=128, hr_bpm=42, pvc_rate=0.06, min_coupling_s=0.25, seed=7)
    flags = flagged_by_label(spec, tmp_path, cpu)
    assert len(flags["N after V"]) > 30
    assert flags["V"].mean() >= 0.95 and flags["L"].mean() >= 0.95
    assert flags["N after V"].mean() <= 0.05 and flags["N"].mean() <= 0.01
