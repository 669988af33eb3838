import numpy as np
import pandas as pd
import pytest

from beatflow.evaluate import auroc, evaluate, match


def test_match_is_one_to_one_and_closest_first():
    true = np.array([100, 200, 300, 1000])
    detected = np.array([98, 104, 205, 500, 1040])
    ti, di = match(true, detected, tolerance=30)
    assert list(zip(ti, di)) == [(0, 0), (1, 2)]  # 104 is a second detection of beat 0: a false positive
    ti, di = match(true, detected, tolerance=45)
    assert list(zip(ti, di)) == [(0, 0), (1, 2), (3, 4)]


def test_match_empty_inputs():
    assert len(match(np.array([]), np.array([1, 2]), 5)[0]) == 0
    assert len(match(np.array([1]), np.array([]), 5)[0]) == 0


def test_auroc_known_answers():
    assert auroc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auroc(np.array([1.0]), np.array([1.0])) == 0.5
    assert auroc(np.array([1.0, 3.0]), np.array([2.0])) == 0.5
    assert auroc(np.array([]), np.array([1.0])) is None


def test_evaluate_figures():
    truth = pd.DataFrame({"sample": [100, 200, 300, 400], "label": ["N", "V", "N", "A"]})
    scores = pd.DataFrame({"time_s": np.array([101, 199, 302, 600]) / 100.0, "score": [0.2, 3.0, 0.4, 9.0],
                           "anomaly": [False, True, False, True]})
    e = evaluate(truth, scores, fs=100.0)
    assert (e["true_positives"], e["false_positives"], e["false_negatives"]) == (3, 1, 1)
    assert e["sensitivity"] == pytest.approx(0.75) and e["ppv"] == pytest.approx(0.75) and e["f1"] == pytest.approx(0.75)
    assert e["auroc"] == 1.0 and e["per_label"]["V"] == {"n": 1, "detected": 1, "auroc": 1.0, "flagged": 1.0,
                                                             "flag_ppv": 1.0}
    assert e["per_label"]["A"] == {"n": 1, "detected": 0, "auroc": None, "flagged": None, "flag_ppv": None}
    assert e["normal_flagged"] == 0.0
