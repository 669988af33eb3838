import numpy as np
import pandas as pd
import pytest

from beatflow.score.scores import ScoreParams, rhythm_ratio, score_table

FS = 100.0


def test_regular_rhythm_scores_zero():
    peaks = np.arange(20) * 80
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams())
    assert (r == 0).all()


def test_premature_beat_and_pause_known_answers():
    rr = np.full(21, 100)
    rr[10] = 70  # premature: 70 % of the local median RR
    rr[15] = 200  # a pause: twice the median
    peaks = np.cumsum(rr)
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams())
    assert r[10] == pytest.approx(np.log(1 / 0.7) / np.log(1 / 0.8))
    assert r[15] == pytest.approx(np.log(2.0) / np.log(1.8))
    assert r[11] == 0 and (r[[10, 15]] > 1).all() and (np.delete(r, [10, 15]) <= 1).all()


def test_an_interval_out_of_range_flags_the_beat_that_ends_it():
    """A run of 0.2-s intervals (below min_rr_s = 0.25 s, as a run its own reference) and a 5-s pause."""
    rr = np.r_[np.full(10, 100), np.full(12, 20), np.full(10, 100), 500, np.full(10, 100)]
    peaks = np.cumsum(rr)
    r = rhythm_ratio(peaks, FS, 0.25, 3.0, ScoreParams())
    assert r[9] == 0  # the beat before the run: on time, though the next one is too close
    assert r[15] == pytest.approx(0.25 / 0.2)  # inside the run: not early against its neighbours, out of range
    assert r[31] == 0  # the beat before the pause
    assert r[32] == pytest.approx(np.log(5.0) / np.log(1.8))  # the beat after it: late (and 5 / 3 out of range)


def test_score_table_combines_shape_and_timing():
    beats = pd.DataFrame({"beat": np.arange(6), "peak": np.arange(6) * 100, "start": np.arange(6) * 100,
                          "length": np.full(6, 100), "kept": [False, True, True, True, True, False]})
    morph = np.array([0.5, 3.0, 0.2, 0.9])
    split = np.array(["train", "test", "train", "test"], dtype=object)
    rhythm = rhythm_ratio(beats.peak.to_numpy(), FS, 0.25, 3.0, ScoreParams())
    table = score_table(beats, FS, morph, rhythm, split)
    assert table.split.tolist() == ["pruned", "train", "test", "train", "test", "pruned"]
    assert table.reason.tolist() == ["", "", "morphology", "", "", ""]
    assert table.anomaly.tolist() == [False, False, True, False, False, False]
    np.testing.assert_allclose(table.score[1:5], morph)
    np.testing.assert_allclose(table.time_s, beats.peak / FS)
