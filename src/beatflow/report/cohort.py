"""cohort: one row per record from its outputs and Snakemake benchmark files → ``results/cohort/summary.parquet``
(beats of each class, morphology families, anomalies by reason; with truth the detection and class figures),
and a cohort figure (anomalies per hour by reason, heart rate) for the report."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from beatflow.report.colours import REASON_COLOURS

log = logging.getLogger("beatflow")


def record_summary(record: str, scores_path, signal_path, benchmarks: dict[str, Path]) -> dict:
    """Duration, beats (and of each class), morphology families, mean heart rate, anomalies by reason, backend and
    seconds per stage of one record."""
    import pyarrow.parquet as pq

    from beatflow.io.tables import read_frame, read_metadata, signal_info

    fs, _ = signal_info(signal_path)
    scores = read_frame(scores_path)
    peaks = scores.peak.to_numpy()
    span_s = (peaks[-1] - peaks[0]) / fs if len(peaks) > 1 else np.nan
    reasons = scores.reason[scores.anomaly].value_counts()
    row = {
        "record": record,
        "duration_s": pq.read_metadata(signal_path).num_rows / fs,
        "beats": len(scores),
        "kept": int((scores.split != "pruned").sum()),
        "mean_hr_bpm": 60 * (len(peaks) - 1) / span_s if span_s > 0 else np.nan,
        "anomalies": int(scores.anomaly.sum()),
        "anomalies_morphology": int(reasons.get("morphology", 0)),
        "anomalies_rhythm": int(reasons.get("rhythm", 0)),
        "backend": read_metadata(scores_path).get("backend", "unknown"),
    }
    if "class" in scores:
        counts = scores["class"].value_counts()
        row.update({f"beats_{c}": int(counts.get(c, 0)) for c in CLASSES})
        row["families"] = int(scores.family.max()) + 1
    for stage, path in benchmarks.items():
        row[f"wall_s_{stage}"] = _benchmark_seconds(path)
    return row


def _benchmark_seconds(path) -> float:
    """Wall seconds from a Snakemake ``benchmark:`` file (first data row, column ``s``)."""
    import pandas as pd

    return float(pd.read_csv(path, sep="\t")["s"].iloc[0])


def summary_table(rows: list[dict]):
    import pandas as pd

    table = pd.DataFrame(rows)
    table["anomalies_per_hour"] = table.anomalies / (table.duration_s / 3600)
    return table


def cohort_plot(table):
    """Anomalies per hour by reason (stacked), one bar per record, and each record's mean heart rate: the axes
    in words with their units."""
    from beatflow.report.plots import load_holoviews

    hv = load_holoviews()
    hours = table.duration_s / 3600
    long = [
        (r, reason, n / h)
        for r, h, m, rh in zip(table.record, hours, table.anomalies_morphology, table.anomalies_rhythm, strict=True)
        for reason, n in (("morphology", m), ("rhythm", rh))
    ]
    record = hv.Dimension("record", label="record")
    reason = hv.Dimension("reason", label="flagged for")
    per_hour = hv.Dimension("anomalies_per_hour", label="flagged beats per hour (1/h)")
    rate = hv.Dimension("mean_hr_bpm", label="mean heart rate (bpm)")
    title = f"cohort of {len(table)} record(s)"
    bars = hv.Bars(long, kdims=[record, reason], vdims=[per_hour]).relabel(f"{title}: flagged beats per hour")
    rates = hv.Bars(table[["record", "mean_hr_bpm"]], kdims=[record], vdims=[rate]).relabel("mean heart rate")
    colour = hv.dim("reason").categorize(REASON_COLOURS)
    bars = bars.opts(
        hv.opts.Bars(color=colour, xlabel="record", legend_position="right", backend="bokeh"),
        hv.opts.Bars(color=colour, xlabel="record", legend_position="right", backend="matplotlib"),
    )
    return (bars + rates).opts(
        hv.opts.Bars(stacked=True, width=600, height=350, xrotation=45, tools=["hover"], backend="bokeh"),
        hv.opts.Bars(stacked=True, xrotation=45, fig_inches=(6, 3.5), backend="matplotlib"),
        hv.opts.Layout(hspace=0.9, sublabel_format="", backend="matplotlib"),  # room for the first legend
    )


EVALUATION_COLUMNS = ("sensitivity", "ppv", "f1", "normal_flagged")
CLASSES = ("N", "S", "V", "F", "Q")


def evaluation_columns(evaluation: dict) -> dict:
    """A record's detection figures, share of normal beats flagged, AUROC of each class against N and, with
    classes, the V and S sensitivity and +P (EC57) and the share of normal beats classed other than N."""
    row = {k: evaluation[k] for k in EVALUATION_COLUMNS}
    row.update({f"auroc_{label}": v["auroc"] for label, v in evaluation["per_label"].items()})
    classes = evaluation.get("classes")
    if classes is not None:
        for label in ("V", "S"):
            row[f"{label}_se"], row[f"{label}_ppv"] = classes[label]["se"], classes[label]["ppv"]
        row["normal_misclassified"] = classes["normal_misclassified"]
    return row


def write_cohort(
    records: list[str], inputs: dict, summary_path, plot_stem, evaluations: dict | None = None, evaluation_path=None
) -> None:
    """Rule ``cohort``'s stage: one row per record (:func:`record_summary`), its figure, and with truth the
    cohort's evaluation figures.

    Parameters
    ----------
    records : list of str
        The records, in the table's order.
    inputs : dict
        Record → ``scores``, ``signal`` (paths) and ``benchmarks`` (stage → benchmark file).
    summary_path : path-like
        Where the table (parquet) goes.
    plot_stem : path-like
        The figure's path without its suffix.
    evaluations : dict, optional
        Record → ``evaluation.json``, for the records with truth.
    evaluation_path : path-like, optional
        Where their gross and record-average figures (:func:`beatflow.evaluate.cohort_figures`) go.
    """
    import json

    from beatflow.evaluate import cohort_figures
    from beatflow.io.atomic import atomic_path
    from beatflow.io.tables import write_frame
    from beatflow.report.plots import save

    figures = {r: json.loads(Path(path).read_text()) for r, path in (evaluations or {}).items()}
    rows = [record_summary(r, inputs[r]["scores"], inputs[r]["signal"], inputs[r]["benchmarks"]) for r in records]
    for row in rows:
        row.update(evaluation_columns(figures[row["record"]]) if row["record"] in figures else {})
    table = summary_table(rows)
    write_frame(table, summary_path)
    if evaluation_path is not None:
        with atomic_path(evaluation_path) as tmp:
            tmp.write_text(json.dumps(cohort_figures(figures), indent=2) + "\n")
    save(cohort_plot(table), Path(plot_stem))
    log.info(
        "cohort: %d record(s), %.1f h, %d beats, %d anomalies",
        len(table),
        table.duration_s.sum() / 3600,
        int(table.beats.sum()),
        int(table.anomalies.sum()),
    )
