"""Agreement between an output Holter summary and the reference one (both ``holter.json`` dicts).

- heart rate: the mean rate's error (output − reference, bpm) and the share of the minutes (both rated) whose
  rates are within :data:`MINUTE_TOLERANCE_BPM`;
- ventricular and supraventricular couplets and runs (≥ 3 beats), like ``rxr``: a reference one counts as found
  when an output one overlaps it (each widened by :data:`BEAT_TOLERANCE_S`, the beat-matching tolerance), an
  output one as true when it overlaps a reference one: ``se`` = found / reference, ``ppv`` = true / output;
- AF, like ``epicmp``: episodes by overlap (``se``, ``ppv`` as above) and by duration (``duration_se`` = overlap /
  reference AF time, ``duration_ppv`` = overlap / output AF time), and ``false_s``, output AF time outside the
  reference's;
- pauses: both counts, and pauses matched by overlap;
- HRV: each figure's relative error (output − reference) / reference.

Counts stay in the result (``reference``, ``output``, ``found``, ``true``) so that gross figures sum over
records before dividing (:func:`gross`). A ratio with a zero denominator is ``None``."""

from __future__ import annotations

import numpy as np

from beatflow.holter.summary import merge_intervals, overlap_length, total_length

BEAT_TOLERANCE_S = 0.15
MINUTE_TOLERANCE_BPM = 2.0
HRV_KEYS = ("sdnn_ms", "sdann_ms", "sdnn_index_ms", "rmssd_ms", "pnn50")


def ratio(num: float, den: float):
    return None if not den else float(num) / float(den)


def overlaps(a: list[tuple[float, float]], b: list[tuple[float, float]], tol: float = 0.0) -> int:
    """How many intervals of ``a`` overlap (touching counts) at least one interval of ``b``, each interval widened
    by ``tol`` on both sides."""
    if not a or not b:
        return 0
    b_sorted = sorted(b)
    starts = np.array([s - tol for s, _ in b_sorted])
    ends_max = np.maximum.accumulate(np.array([e + tol for _, e in b_sorted]))
    found = 0
    for s, e in a:
        # candidates: b intervals starting before a's widened end; overlap if the largest end so far reaches a's start
        k = int(np.searchsorted(starts, e + tol, side="right"))
        if k and ends_max[k - 1] >= s - tol:
            found += 1
    return found


def match_figures(out: list, ref: list, tol: float = BEAT_TOLERANCE_S) -> dict:
    """``rxr``-like counts and ratios for two lists of ``(start_s, end_s)``."""
    found, true = overlaps(ref, out, tol), overlaps(out, ref, tol)
    return {
        "reference": len(ref),
        "output": len(out),
        "found": found,
        "true": true,
        "se": ratio(found, len(ref)),
        "ppv": ratio(true, len(out)),
    }


def _spans(items) -> list[tuple[float, float]]:
    return [(float(x["start_s"]), float(x["end_s"])) for x in items]


def agreement(output: dict, reference: dict) -> dict:
    """Each figure of the output summary against the reference summary (see the module docstring).

    Parameters
    ----------
    output, reference : dict
        Two ``holter.json`` dicts of one record.

    Returns
    -------
    dict
        ``record``, ``heart_rate``, ``ventricular``, ``supraventricular``, ``af``, ``pauses`` and ``hrv``, each
        with its counts and ratios.
    """
    ectopy = {
        kind: ectopy_agreement(output[kind], reference[kind], kind == "ventricular")
        for kind in ("ventricular", "supraventricular")
    }
    p_o = [(p["start_s"], p["start_s"] + p["duration_s"]) for p in output["pauses"]]
    p_r = [(p["start_s"], p["start_s"] + p["duration_s"]) for p in reference["pauses"]]
    hrv = {}
    for key in HRV_KEYS:
        o, r = output["hrv"][key], reference["hrv"][key]
        hrv[key] = {
            "reference": r,
            "output": o,
            "relative_error": None if o is None or r is None or r == 0 else round((o - r) / r, 4),
        }
    return {
        "record": output.get("record"),
        "heart_rate": heart_rate_agreement(output, reference),
        **ectopy,
        "af": af_agreement(output["af"], reference["af"]),
        "pauses": match_figures(p_o, p_r),
        "hrv": hrv,
    }


def heart_rate_agreement(output: dict, reference: dict) -> dict:
    """The mean rate's error and the minutes (rated in both) whose rates agree within
    :data:`MINUTE_TOLERANCE_BPM`."""
    hr_o, hr_r = output["heart_rate"], reference["heart_rate"]
    mean_err = (
        hr_o["mean_bpm"] - hr_r["mean_bpm"] if hr_o["mean_bpm"] is not None and hr_r["mean_bpm"] is not None else None
    )
    ref_min = {m["start_s"]: m["bpm"] for m in hr_r["minutes"] if m["bpm"] is not None}
    pairs = [
        (m["bpm"], ref_min[m["start_s"]]) for m in hr_o["minutes"] if m["bpm"] is not None and m["start_s"] in ref_min
    ]
    within = sum(abs(o - r) <= MINUTE_TOLERANCE_BPM for o, r in pairs)
    return {
        "mean_bpm_error": None if mean_err is None else round(mean_err, 2),
        "minutes": len(pairs),
        "minutes_within": within,
        "minutes_within_share": ratio(within, len(pairs)),
    }


def ectopy_agreement(o: dict, r: dict, ventricular: bool) -> dict:
    """Runs and couplets matched by overlap, isolated beats counted (and bigeminy, trigeminy time when
    ``ventricular``), of one class's part of the output (``o``) and reference (``r``) summaries."""
    out = {
        "runs": match_figures(_spans(o["runs"]), _spans(r["runs"])),
        "couplets": match_figures(_spans(o.get("couplets_list", [])), _spans(r.get("couplets_list", []))),
        "isolated": {"reference": r["isolated"], "output": o["isolated"]},
    }
    if ventricular:
        for key in ("bigeminy_s", "trigeminy_s"):
            out[key] = {"reference": r[key], "output": o[key]}
    return out


def af_agreement(af_out: dict, af_ref: dict) -> dict:
    """AF episodes matched by overlap and AF time (``epicmp``-like), and both burdens."""
    af_o = merge_intervals(_spans(af_out["episodes"]))
    af_r = merge_intervals(_spans(af_ref["episodes"]))
    ov = overlap_length(af_o, af_r)
    t_o, t_r = total_length(af_o), total_length(af_r)
    return {
        **match_figures(af_o, af_r, 0.0),
        "reference_s": round(t_r, 2),
        "output_s": round(t_o, 2),
        "overlap_s": round(ov, 2),
        "false_s": round(t_o - ov, 2),
        "duration_se": ratio(ov, t_r),
        "duration_ppv": ratio(ov, t_o),
        "burden": {"reference": af_ref["burden"], "output": af_out["burden"]},
    }


def gross(agreements: list[dict]) -> dict:
    """Figures over records: counts summed before dividing; HRV relative errors as medians of their absolute
    values; the mean-rate error's largest absolute value; AF time outside the reference's in records without
    reference AF.

    Parameters
    ----------
    agreements : list of dict
        :func:`agreement` of each record.

    Returns
    -------
    dict
        The gross figures, keyed as in :func:`agreement` (with ``records``).
    """

    def summed(path):
        parts = [a for a in agreements]
        for key in path:
            parts = [p[key] for p in parts]
        keys = ("reference", "output", "found", "true")
        tot = {k: int(sum(p[k] for p in parts)) for k in keys}
        return {**tot, "se": ratio(tot["found"], tot["reference"]), "ppv": ratio(tot["true"], tot["output"])}

    out = {"records": len(agreements)}
    errs = [abs(a["heart_rate"]["mean_bpm_error"]) for a in agreements if a["heart_rate"]["mean_bpm_error"] is not None]
    out["mean_bpm_error_max_abs"] = max(errs) if errs else None
    m, w = (sum(a["heart_rate"][k] for a in agreements) for k in ("minutes", "minutes_within"))
    out["minutes_within_share"] = ratio(w, m)
    for kind in ("ventricular", "supraventricular"):
        out[kind] = {"runs": summed((kind, "runs")), "couplets": summed((kind, "couplets"))}
    af = summed(("af",))
    ov, t_r, t_o = (sum(a["af"][k] for a in agreements) for k in ("overlap_s", "reference_s", "output_s"))
    af.update(
        {
            "reference_s": round(t_r, 2),
            "output_s": round(t_o, 2),
            "overlap_s": round(ov, 2),
            "duration_se": ratio(ov, t_r),
            "duration_ppv": ratio(ov, t_o),
            "false_s_without_reference_af": round(
                sum(a["af"]["output_s"] for a in agreements if a["af"]["reference_s"] == 0), 2
            ),
        }
    )
    out["af"] = af
    out["pauses"] = summed(("pauses",))
    out["hrv_median_abs_relative_error"] = {}
    for key in HRV_KEYS:
        vals = [abs(a["hrv"][key]["relative_error"]) for a in agreements if a["hrv"][key]["relative_error"] is not None]
        out["hrv_median_abs_relative_error"][key] = float(np.median(vals)) if vals else None
    return out


def holter_evaluation(record: str, scores_path, signal_path, atr_path) -> dict:
    """What ``evaluation.json`` gains under ``holter`` with WFDB truth: ``{"reference": the summary from the
    annotations, "agreement": agreement(output, reference)}``, the output summary recomputed with the
    reference's ventricular flutter/fibrillation episodes left out (as EC57 leaves them out, and as the
    reference summary does; ``holter.json`` itself knows nothing of the annotations).

    Parameters
    ----------
    record : str
        The record's name.
    scores_path, signal_path : path-like
        The record's ``scores.parquet`` and ``signal.parquet``.
    atr_path : path-like
        The record's WFDB annotation file.

    Returns
    -------
    dict
        ``{"reference": dict, "agreement": dict}``.
    """
    from beatflow.holter.reference import read_reference, reference_summary
    from beatflow.holter.summary import summarise

    reference = reference_summary(atr_path, record=record)
    output = summarise(record, scores_path, signal_path, excluded=read_reference(atr_path)["vf_s"])
    return {"reference": reference, "agreement": agreement(output, reference)}
