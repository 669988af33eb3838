"""evaluate: detected beats against a truth file → ``evaluation.json``.

Beats are matched one-to-one within a tolerance (150 ms, as ANSI/AAMI EC57), nearest pairs first.
AUROC uses the ``score`` of matched beats: abnormal (label other than ``N``) against normal, overall and
per label (the Mann–Whitney U statistic divided by the number of pairs).
"""

from __future__ import annotations

import json

import numpy as np

TOLERANCE_S = 0.150


def match(true: np.ndarray, detected: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i_true, i_detected)`` of one-to-one matches within ``tolerance`` samples, closest first."""
    true, detected = np.asarray(true), np.asarray(detected)
    if len(true) == 0 or len(detected) == 0:
        return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    j = np.searchsorted(detected, true)
    ti = np.repeat(np.arange(len(true)), 4)
    dj = (j[:, None] + np.arange(-2, 2)[None, :]).ravel()
    ok = (dj >= 0) & (dj < len(detected))
    ti, dj = ti[ok], dj[ok]
    dist = np.abs(detected[dj] - true[ti])
    close = dist <= tolerance
    ti, dj, dist = ti[close], dj[close], dist[close]
    used_t, used_d = np.zeros(len(true), bool), np.zeros(len(detected), bool)
    pairs = []
    for k in np.lexsort((ti, dist)):
        if not used_t[ti[k]] and not used_d[dj[k]]:
            used_t[ti[k]] = used_d[dj[k]] = True
            pairs.append((ti[k], dj[k]))
    pairs.sort()
    out = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return out[:, 0], out[:, 1]


def auroc(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """Probability that a positive scores above a negative (ties count half); None if a class is empty."""
    from scipy.stats import mannwhitneyu

    if len(positive) == 0 or len(negative) == 0:
        return None
    return float(mannwhitneyu(positive, negative).statistic / (len(positive) * len(negative)))


def evaluate(truth, scores, fs: float) -> dict:
    """Detection and anomaly figures from a truth table (``sample``, ``label``) and ``scores.parquet``."""
    true = truth["sample"].to_numpy(np.int64)
    detected = np.round(scores["time_s"].to_numpy() * fs).astype(np.int64)
    ti, di = match(true, detected, TOLERANCE_S * fs)
    tp = len(ti)
    sens = tp / len(true) if len(true) else 0.0
    ppv = tp / len(detected) if len(detected) else 0.0
    all_labels = truth["label"].astype(str).to_numpy()
    labels = all_labels[ti]
    matched_scores = scores["score"].to_numpy()[di]
    flagged = scores["anomaly"].to_numpy()[di]
    normal = matched_scores[labels == "N"]
    per_label = {}
    for lab in sorted(set(all_labels) - {"N"}):
        here = labels == lab
        per_label[lab] = {"n": int((all_labels == lab).sum()), "detected": int(here.sum()),
                          "auroc": auroc(matched_scores[here], normal),
                          "flagged": float(flagged[here].mean()) if here.any() else None}
    return {
        "tolerance_s": TOLERANCE_S, "n_true": len(true), "n_detected": len(detected),
        "true_positives": tp, "false_positives": int(len(detected) - tp), "false_negatives": int(len(true) - tp),
        "sensitivity": sens, "ppv": ppv, "f1": 2 * sens * ppv / (sens + ppv) if sens + ppv else 0.0,
        "auroc": auroc(matched_scores[labels != "N"], normal),
        "normal_flagged": float(flagged[labels == "N"].mean()) if len(normal) else None,
        "per_label": per_label,
    }


def write_evaluation(record: str, truth_path, scores_path, signal_path, out_path) -> dict:
    """Read the inputs, evaluate, write ``evaluation.json`` atomically and return the figures."""
    import pandas as pd

    from beatflow.io.atomic import atomic_path
    from beatflow.errors import BeatflowError
    from beatflow.io.tables import read_frame, signal_info

    try:
        truth = pd.read_csv(truth_path)
    except (OSError, ValueError) as exc:
        raise BeatflowError(f"cannot read the truth file ({exc})", record=record, path=str(truth_path)) from exc
    if not {"sample", "label"} <= set(truth.columns):
        raise BeatflowError(f"truth needs columns sample and label, has {list(truth.columns)}", record=record,
                            path=str(truth_path))
    fs, _ = signal_info(signal_path)
    result = {"record": record, **evaluate(truth, read_frame(scores_path), fs)}
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    return result
