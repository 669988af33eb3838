"""evaluate: detected beats against a truth file (CSV or WFDB annotations, :mod:`beatflow.io.truth`)
→ ``evaluation.json``, as ANSI/AAMI EC57 reckons it.

Beats are matched one-to-one within a tolerance (150 ms), nearest pairs first; ventricular
flutter/fibrillation episodes are left out of every figure. AUROC uses the ``score`` of matched beats:
abnormal (label other than ``N``) against normal, overall and per label or AAMI class (the Mann–Whitney U
statistic divided by the number of pairs). Beat classes (``scores.parquet`` column ``class``) are scored as
EC57 scores ventricular and supraventricular ectopic beat detection (:func:`class_figures`), with the
confusion table of PhysioNet's ``bxb``. The cohort's gross and record-average figures, as PhysioNet's
``sumstats`` gives them, are :func:`cohort_figures`.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

TOLERANCE_S = 0.150
CLASSES = ("N", "S", "V", "F", "Q")
NONE = "-"  # the confusion table's row of detections without a reference beat, column of missed beats
LEFT_OUT_OF_PPV = {"V": ("F", "Q"), "S": ("Q",)}  # EC57: VEB +P ignores detections of F and Q beats, SVEB of Q


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


def flag_figures(labels: np.ndarray, scores: np.ndarray, flagged: np.ndarray, label: str) -> dict:
    """Figures of one class among the matched beats: its count, AUROC of ``score`` against ``N``, the share of
    it that is flagged (the flags' sensitivity) and the flags' positive predictivity against ``N`` (flagged
    beats of the class over flagged beats of the class or ``N``)."""
    here, normal = labels == label, labels == "N"
    hits, false = int(flagged[here].sum()), int(flagged[normal].sum())
    return {
        "detected": int(here.sum()),
        "auroc": auroc(scores[here], scores[normal]),
        "flagged": float(flagged[here].mean()) if here.any() else None,
        "flag_ppv": hits / (hits + false) if hits + false else None,
    }


def aami_class(labels: np.ndarray) -> np.ndarray:
    """Reference labels as AAMI classes: WFDB symbols and classes map as :data:`beatflow.io.truth.AAMI_CLASSES`
    (``A`` → ``S``, ``L`` → ``N``, …); any other label is ``Q``."""
    from beatflow.io.truth import AAMI_CLASSES

    return np.array([AAMI_CLASSES.get(str(v), "Q") for v in labels], dtype=object).astype(str)


def class_figures(reference: np.ndarray, classes: np.ndarray, ti: np.ndarray, di: np.ndarray) -> dict:
    """EC57 figures of beat classes from every reference beat's AAMI class ``reference``, every detected beat's
    ``classes`` and the matched pairs ``(ti, di)``: for ``V`` and ``S``, ``n`` (reference beats), ``tp``,
    ``classed`` (detections of the class, less those matching a reference beat of a class left out of its +P:
    F and Q for V, Q for S), ``se`` and ``ppv``; ``normal_misclassified``, the share of detected reference N
    beats classed other than N; and ``confusion``, reference class → class → beats, with row ``-`` for
    detections without a reference beat and column ``-`` for missed reference beats."""
    reference, classes = np.asarray(reference).astype(str), np.asarray(classes).astype(str)
    pair_ref = np.full(len(classes), NONE, dtype=object)
    pair_ref[di] = reference[ti]
    missed = np.ones(len(reference), bool)
    missed[ti] = False
    rows = [*CLASSES, NONE]
    confusion = {r: {c: int(((pair_ref == r) & (classes == c)).sum()) for c in CLASSES} for r in rows}
    for r in CLASSES:
        confusion[r][NONE] = int((missed & (reference == r)).sum())
    confusion[NONE][NONE] = 0
    out = {}
    for label, left_out in LEFT_OUT_OF_PPV.items():
        tp = int(((pair_ref == label) & (classes == label)).sum())
        classed = int(((classes == label) & ~np.isin(pair_ref, left_out)).sum())
        n = int((reference == label).sum())
        out[label] = {
            "n": n,
            "tp": tp,
            "classed": classed,
            "se": tp / n if n else None,
            "ppv": tp / classed if classed else None,
        }
    normal = pair_ref == "N"
    out["normal_misclassified"] = float((classes[normal] != "N").mean()) if normal.any() else None
    out["normal_detected"] = int(normal.sum())
    out["confusion"] = confusion
    return out


def excluded_intervals_s(excluded: np.ndarray, true: np.ndarray, detected: np.ndarray, fs: float) -> list:
    """The excluded intervals in seconds, an open end closed at the last reference or detected beat."""
    last = max([0, *true[-1:], *detected[-1:]]) + 1
    return [[round(start / fs, 3), round(min(end, last) / fs, 3)] for start, end in excluded]


def detection_figures(n_true: int, n_detected: int, tp: int) -> dict:
    """Beat detection's counts, sensitivity, +P and F1 from the reference, detected and matched beats."""
    sens = tp / n_true if n_true else 0.0
    ppv = tp / n_detected if n_detected else 0.0
    return {
        "tolerance_s": TOLERANCE_S,
        "n_true": n_true,
        "n_detected": n_detected,
        "true_positives": tp,
        "false_positives": int(n_detected - tp),
        "false_negatives": int(n_true - tp),
        "sensitivity": sens,
        "ppv": ppv,
        "f1": 2 * sens * ppv / (sens + ppv) if sens + ppv else 0.0,
    }


def symbol_figures(
    all_symbols: np.ndarray,
    all_labels: np.ndarray,
    symbols: np.ndarray,
    matched_scores: np.ndarray,
    flagged: np.ndarray,
    normal: np.ndarray,
) -> dict:
    """Per truth symbol: its class, ``n``, ``detected``, ``flagged`` and (outside class N) AUROC against the
    ``normal`` beats' scores; ``symbols``, ``matched_scores`` and ``flagged`` are those of the matched beats."""
    by_symbol = {}
    for sym in sorted(set(all_symbols)):
        here = symbols == sym
        label = str(all_labels[all_symbols == sym][0])
        by_symbol[sym] = {
            "class": label,
            "n": int((all_symbols == sym).sum()),
            "detected": int(here.sum()),
            "auroc": auroc(matched_scores[here], normal) if label != "N" else None,
            "flagged": float(flagged[here].mean()) if here.any() else None,
        }
    return by_symbol


def evaluate(truth, scores, fs: float, excluded: np.ndarray | None = None) -> dict:
    """Detection and anomaly figures (``evaluation.json`` less its Holter section), as ANSI/AAMI EC57 reckons
    them. Reference and detected beats inside an ``excluded`` interval (ventricular flutter/fibrillation)
    count in no figure. Per label (each truth label, or AAMI class): ``n``, ``detected``, AUROC against ``N``,
    the share ``flagged`` and the flags' ``flag_ppv``; per symbol, where the truth has symbols, its class,
    ``n``, ``detected``, ``flagged`` and (outside class N) AUROC against class N.

    Parameters
    ----------
    truth : pandas.DataFrame
        ``sample`` (R-peak index), ``label`` and optionally ``symbol`` (:func:`beatflow.io.truth.read_truth`).
    scores : pandas.DataFrame
        ``scores.parquet``.
    fs : float
        The sampling rate (Hz).
    excluded : numpy.ndarray, optional
        ``[k, 2]`` sample intervals ``[start, end)`` left out.
    """
    from beatflow.io.truth import outside

    excluded = np.empty((0, 2), np.int64) if excluded is None else excluded
    samples = truth["sample"].to_numpy(np.int64)
    keep_true = outside(samples, excluded)
    true = samples[keep_true]
    all_labels = truth["label"].astype(str).to_numpy()[keep_true]
    all_symbols = (truth["symbol"] if "symbol" in truth else truth["label"]).astype(str).to_numpy()[keep_true]
    detected_all = np.round(scores["time_s"].to_numpy() * fs).astype(np.int64)
    keep_detected = outside(detected_all, excluded)
    detected = detected_all[keep_detected]
    ti, di = match(true, detected, TOLERANCE_S * fs)
    labels, symbols = all_labels[ti], all_symbols[ti]
    matched = np.flatnonzero(keep_detected)[di]  # rows of scores
    matched_scores = scores["score"].to_numpy()[matched]
    flagged = scores["anomaly"].to_numpy()[matched]
    normal = matched_scores[labels == "N"]
    per_label = {
        lab: {"n": int((all_labels == lab).sum()), **flag_figures(labels, matched_scores, flagged, lab)}
        for lab in sorted(set(all_labels) - {"N"})
    }
    result = {
        **detection_figures(len(true), len(detected), len(ti)),
        "auroc": auroc(matched_scores[labels != "N"], normal),
        "normal_flagged": float(flagged[labels == "N"].mean()) if len(normal) else None,
        "normal_detected": len(normal),
        "per_label": per_label,
        "excluded": {
            "reference_beats": int((~keep_true).sum()),
            "detected_beats": int((~keep_detected).sum()),
            "intervals_s": excluded_intervals_s(excluded, samples, detected_all, fs),
        },
    }
    if "class" in scores:
        result["classes"] = class_figures(aami_class(all_labels), scores["class"].to_numpy()[keep_detected], ti, di)
    if not np.array_equal(all_symbols, all_labels):
        result["per_symbol"] = symbol_figures(all_symbols, all_labels, symbols, matched_scores, flagged, normal)
    return result


CLASS_MIN_BEATS = 10  # a record counts in a class's AUROC figures with at least this many beats of it
PACED = ("/", "f")  # EC57 leaves records with paced beats out of the classification figures


def cohort_figures(evaluations: dict[str, dict], classes=("V", "S")) -> dict:
    """Gross (summed over records before dividing) and record-average figures of ``evaluations`` (record →
    :func:`evaluate`'s dict), as PhysioNet's ``sumstats``: detection Se, +P and F1; per class, the flags'
    sensitivity and +P against ``N`` and the AUROC's median and minimum over the records with at least
    ``CLASS_MIN_BEATS`` beats of it (records with paced beats left out); the median share of normal beats
    flagged; with beat classes, ``classes`` (:func:`cohort_class_figures`)."""

    def ratio(a, b):
        return a / b if b else None

    def average(values):
        values = [v for v in values if v is not None]
        return float(np.mean(values)) if values else None

    rows = list(evaluations.values())
    tp, fp, fn = (sum(e[k] for e in rows) for k in ("true_positives", "false_positives", "false_negatives"))
    out = {
        "records": len(rows),
        "detection": {
            "true_positives": tp,
            "false_positives": fp,
            "false_negatives": fn,
            "gross_sensitivity": ratio(tp, tp + fn),
            "gross_ppv": ratio(tp, tp + fp),
            "average_sensitivity": average([e["sensitivity"] for e in rows]),
            "average_ppv": average([e["ppv"] for e in rows]),
            "min_f1": min((e["f1"] for e in rows), default=None),
            "records_f1_below_0.99": sorted(r for r, e in evaluations.items() if e["f1"] < 0.99),
        },
    }
    unpaced = {r: e for r, e in evaluations.items() if not set(PACED) & set(e.get("per_symbol", {}))}
    flagged_normal = sum(round((e["normal_flagged"] or 0) * e["normal_detected"]) for e in unpaced.values())
    for label in classes:
        present = {r: e["per_label"][label] for r, e in unpaced.items() if label in e["per_label"]}
        hits = sum(round((c["flagged"] or 0) * c["detected"]) for c in present.values())
        enough = {r: c["auroc"] for r, c in present.items() if c["n"] >= CLASS_MIN_BEATS and c["auroc"] is not None}
        out[label] = {
            "records": len(present),
            "beats": sum(c["n"] for c in present.values()),
            "gross_flag_sensitivity": ratio(hits, sum(c["detected"] for c in present.values())),
            "gross_flag_ppv": ratio(hits, hits + flagged_normal),
            "auroc_records": len(enough),
            "auroc_median": float(np.median(list(enough.values()))) if enough else None,
            "auroc_min": min(enough.values(), default=None),
            "auroc_lowest_record": min(enough, key=enough.get) if enough else None,
        }
    shares = [e["normal_flagged"] for e in unpaced.values() if e["normal_flagged"] is not None]
    out["normal_flagged_median"] = float(np.median(shares)) if shares else None
    out["normal_flagged_gross"] = ratio(flagged_normal, sum(e["normal_detected"] for e in unpaced.values()))
    classified = {r: e["classes"] for r, e in unpaced.items() if "classes" in e}
    if classified:
        out["classes"] = cohort_class_figures(classified)
    return out


def cohort_class_figures(classes: dict[str, dict]) -> dict:
    """Gross and record-average figures of beat classes (record → :func:`class_figures`' dict), as ``sumstats``
    gives them for VEB and SVEB: per class ``V`` and ``S`` the gross Se and +P (summed over records before
    dividing) and their averages over the records with such reference beats (Se) or such classed beats (+P);
    the median and gross share of reference N beats classed other than N; the summed confusion table."""

    def ratio(a, b):
        return a / b if b else None

    rows = list(classes.values())
    out = {"records": len(rows)}
    for label in LEFT_OUT_OF_PPV:
        tp, n, classed = (sum(c[label][k] for c in rows) for k in ("tp", "n", "classed"))
        se = [c[label]["se"] for c in rows if c[label]["se"] is not None]
        ppv = [c[label]["ppv"] for c in rows if c[label]["ppv"] is not None]
        out[label] = {
            "n": n,
            "tp": tp,
            "classed": classed,
            "gross_se": ratio(tp, n),
            "gross_ppv": ratio(tp, classed),
            "average_se": float(np.mean(se)) if se else None,
            "average_ppv": float(np.mean(ppv)) if ppv else None,
        }
    shares = [c["normal_misclassified"] for c in rows if c["normal_misclassified"] is not None]
    wrong = sum(round(c["normal_misclassified"] * c["normal_detected"]) for c in rows if c["normal_detected"])
    out["normal_misclassified_median"] = float(np.median(shares)) if shares else None
    out["normal_misclassified_gross"] = ratio(wrong, sum(c["normal_detected"] for c in rows))
    out["confusion"] = {
        r: {k: sum(c["confusion"][r][k] for c in rows) for k in rows[0]["confusion"][r]} for r in rows[0]["confusion"]
    }
    return out


def write_evaluation(record: str, truth_path, scores_path, signal_path, out_path) -> dict:
    """Rule ``evaluate``'s stage: the record's figures against its truth (:func:`evaluate`, with the Holter
    figures where the truth is a WFDB annotation file), written to ``evaluation.json`` atomically.

    Parameters
    ----------
    record : str
        The record's name (for messages).
    truth_path : path-like
        The records sheet's ``truth``: a CSV (``sample``, ``label``) or a WFDB annotation file.
    scores_path, signal_path : path-like
        The record's ``scores.parquet`` and ``signal.parquet``.
    out_path : path-like
        Where ``evaluation.json`` goes.

    Returns
    -------
    dict
        The figures written.
    """
    from beatflow.errors import BeatflowError
    from beatflow.io.atomic import atomic_path
    from beatflow.io.tables import read_frame, signal_info, signal_samples
    from beatflow.io.truth import is_annotation_file, read_truth

    length = signal_samples(signal_path)
    try:
        truth, excluded = read_truth(truth_path, length)
    except BeatflowError as exc:
        raise BeatflowError(exc.problem, record=record, path=str(truth_path)) from exc
    fs, _ = signal_info(signal_path)
    result = {"record": record, **evaluate(truth, read_frame(scores_path), fs, excluded)}
    if is_annotation_file(pathlib.Path(truth_path)):  # rhythm annotations: the Holter summary against the reference's
        from beatflow.holter import holter_evaluation

        result["holter"] = holter_evaluation(record, scores_path, signal_path, truth_path)
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    return result
