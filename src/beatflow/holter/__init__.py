"""The Holter summary (``holter.json``): heart rate, ectopy, pauses, atrial fibrillation and HRV of one record,
from the beats' times and AAMI classes; the same summary from WFDB reference annotations and the agreement of
the two.

Entry points: :func:`summarise` / :func:`write_holter` (from ``scores.parquet`` and ``signal.parquet``),
:func:`summary_from_beats` (from arrays), :func:`reference_summary` (from a WFDB ``.atr``), :func:`agreement`
and :func:`gross` (output against reference, per record and over records), :func:`write_heart_rate_figure`
(in :mod:`beatflow.holter.figure`, imports holoviews), ``python -m beatflow.holter results/208`` (the report
page)."""

from beatflow.holter.agreement import agreement, gross, holter_evaluation  # noqa: F401
from beatflow.holter.reference import reference_summary  # noqa: F401
from beatflow.holter.summary import summarise, summary_from_beats, write_holter, write_json  # noqa: F401
