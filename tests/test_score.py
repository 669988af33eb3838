import numpy as np
import pandas as pd
import pytest

from beatflow.score.scores import ScoreParams, rhythm_ratio, score_table

FS = 100.0


def test_regular_rhythm_scores_zero():
    peaks = np.arange(20) * 80
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams.defaults())
    assert (r == 0).all()


def test_premature_beat_and_pause_known_answers():
    rr = np.full(21, 100)
    rr[10] = 70  # premature: 70 % of the local median RR
    rr[15] = 200  # a pause: twice the median
    peaks = np.cumsum(rr)
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams.defaults())
    assert r[10] == pytest.approx(np.log(1 / 0.7) / np.log(1 / 0.8))
    assert r[15] == pytest.approx(np.log(2.0) / np.log(1.8))
    assert r[11] == 0 and (r[[10, 15]] > 1).all() and (np.delete(r, [10, 15]) <= 1).all()


def test_an_interval_out_of_range_flags_the_beat_that_ends_it():
    """A run of 0.2-s intervals (below min_rr_s = 0.25 s, as a run its own reference) and a 5-s pause."""
    rr = np.r_[np.full(10, 100), np.full(12, 20), np.full(10, 100), 500, np.full(10, 100)]
    peaks = np.cumsum(rr)
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams.defaults())
    assert r[9] == 0  # the beat before the run: on time, though the next one is too close
    assert r[15] == pytest.approx(0.25 / 0.2)  # inside the run: not early against its neighbours, out of range
    assert r[31] == 0  # the beat before the pause
    assert r[32] == pytest.approx(np.log(5.0) / np.log(1.8))  # the beat after it: late (and 5 / 3 out of range)


def test_score_table_combines_shape_and_timing():
    beats = pd.DataFrame(
        {
            "beat": np.arange(6),
            "peak": np.arange(6) * 100,
            "start": np.arange(6) * 100,
            "length": np.full(6, 100),
            "kept": [False, True, True, True, True, False],
        }
    )
    morph = np.array([0.5, 3.0, 0.2, 0.9])
    split = np.array(["train", "test", "train", "test"], dtype=object)
    rhythm = rhythm_ratio(beats.peak.to_numpy(), FS, 0.25, 3.0, ScoreParams.defaults())
    table = score_table(beats, FS, morph, rhythm, split)
    assert table.split.tolist() == ["pruned", "train", "test", "train", "test", "pruned"]
    assert table.reason.tolist() == ["", "", "morphology", "", "", ""]
    assert table.anomaly.tolist() == [False, False, True, False, False, False]
    np.testing.assert_allclose(table.score[1:5], morph)
    np.testing.assert_allclose(table.time_s, beats.peak / FS)


def test_irregular_rhythm_widens_the_thresholds():
    """Atrial-fibrillation-like intervals (log RR with a 0.15 standard deviation): the thresholds widen to the
    quantile of the local spread, so ordinary irregular beats stay below 1, and a regular rhythm's 75 % interval
    is flagged while the same interval in the irregular rhythm is not."""
    from scipy.stats import norm

    rng = np.random.default_rng(0)
    rr = np.round(100 * np.exp(0.15 * rng.standard_normal(400))).astype(int)
    r = rhythm_ratio(np.cumsum(rr), FS, 0.25, 3.0, ScoreParams.defaults())
    assert np.mean(r > 1) < 0.02  # a normal law's 0.1 % early and late, judged from the upper quartile: ~1 %
    widened = norm.ppf(0.999) * 0.15
    assert widened > np.log(1 / 0.8)
    regular = np.full(41, 100)
    regular[20] = 75
    assert rhythm_ratio(np.cumsum(regular), FS, 0.25, 3.0, ScoreParams.defaults())[20] > 1


def test_typical_beats_set_the_spread_and_the_reference():
    """Trigeminy (normal, premature ectopic, normal after a fully compensatory pause): when the shape marks the
    ectopic beats, their intervals and the pauses after them are not irregularity, so the premature beats are
    flagged and the other beats are not; blind to shape, the pattern reads as an irregular rhythm and hides them."""
    rr = np.tile([100, 60, 140], 20)  # N->N, N->V, V->N
    peaks = np.cumsum(rr)
    morph = np.tile([0.2, 3.0, 0.1], 20)  # the ectopic beat (second of each triple) is odd in shape
    with_shape = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams.defaults(), morph)[6:-6]
    premature = np.tile([False, True, False], 20)[6:-6]
    assert (with_shape[premature] > 1).all() and (with_shape[~premature] < 1).all()
    # the reference: the geometric mean of the surrounding intervals' upper quartile (140) and the typical ones' (100)
    np.testing.assert_allclose(with_shape[::3], np.log(np.sqrt(140 * 100) / 100) / np.log(1 / 0.8))
    blind = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams.defaults())[6:-6]
    assert (blind[premature] < 1).all()


def test_compensatory_pause_is_not_late():
    """The beat ending a fully compensatory pause (60 + 140 = 2 x 100) is on time; a pause alone is late."""
    rr = np.full(41, 100)
    rr[20], rr[21] = 60, 140
    rr[30] = 190
    r = rhythm_ratio(np.cumsum(rr), FS, 0.25, 3.0, ScoreParams.defaults())
    assert r[20] > 1 and r[21] == 0
    assert r[30] == pytest.approx(np.log(1.9) / np.log(1.8))


def test_joint_evidence_combines_both_parts():
    """Below both thresholds, a beat 0.8 of the way to each is anomalous jointly: (0.8 + 0.8) / sqrt(2) > 1;
    a pruned beat (no morphology) keeps its rhythm ratio."""
    from beatflow.score.scores import combined

    kept = np.array([True, True, True, False])
    morph, score = combined(np.array([0.8, 0.2, 1.5]), np.array([0.8, 0.1, 0.0, 0.6]), kept)
    np.testing.assert_allclose(score, [1.6 / np.sqrt(2), 0.3 / np.sqrt(2), 1.5, 0.6])
    assert np.isnan(morph[3])


def test_score_table_classes_and_families_make_anomalies():
    """The contract columns ``class``, ``family`` and ``class_p``; a beat classed S, V or F, or kept with a shape
    unlike any family (family -1), is an anomaly even below score 1; Q (no shape) and N below 1 are not."""
    beats = pd.DataFrame(
        {
            "beat": np.arange(7),
            "peak": np.arange(7) * 100,
            "start": np.arange(7) * 100,
            "length": np.full(7, 100),
            "kept": [True] * 6 + [False],
        }
    )
    morph = np.array([0.1, 0.2, 0.3, 0.2, 0.1, 0.2])
    split = np.array(["train"] * 6, dtype=object)
    rhythm = np.zeros(7)
    table = score_table(
        beats,
        FS,
        morph,
        rhythm,
        split,
        np.array(["N", "V", "S", "F", "N", "N", "Q"]),
        np.array([0, 1, 0, 2, -1, 0, -1]),
        np.linspace(0.4, 1.0, 7),
    )
    assert list(table.columns) == [
        *("beat", "peak", "time_s", "split", "score", "anomaly", "reason", "class", "family", "class_p")
    ]
    np.testing.assert_allclose(table.class_p, np.linspace(0.4, 1.0, 7))
    assert table.anomaly.tolist() == [False, True, True, True, True, False, False]
    assert table["class"].tolist() == ["N", "V", "S", "F", "N", "N", "Q"] and table.family.dtype == np.int64
    assert (table.reason[table.anomaly] != "").all() and (table.reason[~table.anomaly] == "").all()


def test_score_table_without_classes_keeps_the_score_rule():
    beats = pd.DataFrame(
        {
            "beat": np.arange(3),
            "peak": np.arange(3) * 100,
            "start": np.arange(3) * 100,
            "length": np.full(3, 100),
            "kept": [True, True, False],
        }
    )
    table = score_table(beats, FS, np.array([0.5, 2.0]), np.zeros(3), np.array(["train", "test"], dtype=object))
    assert table["class"].tolist() == ["N", "N", "Q"] and table.family.tolist() == [0, 0, -1]
    assert table.anomaly.tolist() == [False, True, False]


def test_timing_parts_give_the_rhythm_ratio():
    """rhythm_ratio from precomputed timing parts equals the ratio computed from the peaks."""
    from beatflow.score.scores import timing

    rr = np.full(41, 100)
    rr[[10, 25]] = [70, 60]
    peaks = np.cumsum(rr)
    p = ScoreParams.defaults()
    parts = timing(peaks, p)
    np.testing.assert_array_equal(
        rhythm_ratio(peaks, FS, 0.25, 3.0, p, parts=parts), rhythm_ratio(peaks, FS, 0.25, 3.0, p)
    )
    assert parts.early[10] == pytest.approx(np.log(1 / 0.7) / np.log(1 / 0.8))
    assert parts.regular_early_at == pytest.approx(np.log(1 / 0.8))
