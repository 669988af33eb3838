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
    scores = pd.DataFrame(
        {
            "time_s": np.array([101, 199, 302, 600]) / 100.0,
            "score": [0.2, 3.0, 0.4, 9.0],
            "anomaly": [False, True, False, True],
        }
    )
    e = evaluate(truth, scores, fs=100.0)
    assert (e["true_positives"], e["false_positives"], e["false_negatives"]) == (3, 1, 1)
    assert (
        e["sensitivity"] == pytest.approx(0.75) and e["ppv"] == pytest.approx(0.75) and e["f1"] == pytest.approx(0.75)
    )
    assert e["auroc"] == 1.0 and e["per_label"]["V"] == {
        "n": 1,
        "detected": 1,
        "auroc": 1.0,
        "flagged": 1.0,
        "flag_ppv": 1.0,
    }
    assert e["per_label"]["A"] == {"n": 1, "detected": 0, "auroc": None, "flagged": None, "flag_ppv": None}
    assert e["normal_flagged"] == 0.0


def test_classes_as_ec57_counts_them():
    """A hand-made truth and classes with a known confusion table: V +P leaves out the detection that matches an F
    beat, S +P the one that matches a Q beat; a missed beat and a false detection land in the ``-`` cells."""
    labels = ["N", "N", "V", "V", "S", "F", "Q", "N", "V", "N"]
    truth = pd.DataFrame({"sample": np.arange(10) * 100 + 100, "label": labels})
    detected = np.r_[np.arange(9) * 100 + 100, 1050]  # the last reference beat (N) is missed; 1050 is false
    classes = ["N", "V", "V", "S", "S", "V", "S", "N", "N", "V"]
    scores = pd.DataFrame(
        {"time_s": detected / 100.0, "score": np.zeros(10), "anomaly": np.zeros(10, bool), "class": classes}
    )
    c = evaluate(truth, scores, fs=100.0)["classes"]
    assert c["V"] == {"n": 3, "tp": 1, "classed": 3, "se": pytest.approx(1 / 3), "ppv": pytest.approx(1 / 3)}
    assert c["S"] == {"n": 1, "tp": 1, "classed": 2, "se": 1.0, "ppv": 0.5}
    assert c["normal_misclassified"] == pytest.approx(1 / 3) and c["normal_detected"] == 3
    confusion = c["confusion"]
    assert confusion["N"] == {"N": 2, "S": 0, "V": 1, "F": 0, "Q": 0, "-": 1}
    assert confusion["V"] == {"N": 1, "S": 1, "V": 1, "F": 0, "Q": 0, "-": 0}
    assert confusion["F"]["V"] == 1 and confusion["Q"]["S"] == 1 and confusion["S"]["S"] == 1
    assert confusion["-"] == {"N": 0, "S": 0, "V": 1, "F": 0, "Q": 0, "-": 0}
    assert sum(sum(row.values()) for row in confusion.values()) == 11  # 9 matched, 1 missed, 1 false


def test_classes_map_symbols_and_are_absent_without_a_class_column():
    truth = pd.DataFrame({"sample": [100, 200, 300], "label": ["N", "A", "L"]})  # synth labels: A is S, L is N
    scores = pd.DataFrame({"time_s": [1.0, 2.0, 3.0], "score": [0.0, 2.0, 0.0], "anomaly": [False, True, False]})
    assert "classes" not in evaluate(truth, scores, fs=100.0)
    c = evaluate(truth, scores.assign(**{"class": ["N", "S", "N"]}), fs=100.0)["classes"]
    assert c["S"]["se"] == 1.0 and c["S"]["ppv"] == 1.0 and c["normal_misclassified"] == 0.0
    assert c["V"] == {"n": 0, "tp": 0, "classed": 0, "se": None, "ppv": None}


def test_cohort_class_figures_gross_and_average():
    from beatflow.evaluate import cohort_class_figures

    def record(v_n, v_tp, v_classed, normal, wrong):
        row = {"N": 0, "S": 0, "V": 0, "F": 0, "Q": 0, "-": 0}
        return {
            "V": {
                "n": v_n,
                "tp": v_tp,
                "classed": v_classed,
                "se": v_tp / v_n if v_n else None,
                "ppv": v_tp / v_classed if v_classed else None,
            },
            "S": {"n": 0, "tp": 0, "classed": 0, "se": None, "ppv": None},
            "normal_misclassified": wrong / normal,
            "normal_detected": normal,
            "confusion": {r: dict(row, N=normal if r == "N" else 0) for r in ("N", "S", "V", "F", "Q", "-")},
        }

    k = cohort_class_figures(
        {"a": record(100, 90, 100, 1000, 10), "b": record(10, 10, 20, 1000, 30), "c": record(0, 0, 0, 500, 0)}
    )
    assert k["V"]["gross_se"] == pytest.approx(100 / 110) and k["V"]["gross_ppv"] == pytest.approx(100 / 120)
    assert k["V"]["average_se"] == pytest.approx((0.9 + 1.0) / 2) and k["V"]["average_ppv"] == pytest.approx(0.7)
    assert k["S"]["gross_se"] is None
    assert k["normal_misclassified_median"] == pytest.approx(0.01)
    assert k["normal_misclassified_gross"] == pytest.approx(40 / 2500)
    assert k["confusion"]["N"]["N"] == 2500
