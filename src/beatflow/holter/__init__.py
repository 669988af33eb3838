"""The Holter summary (``holter.json``): heart rate, ectopy, pauses, atrial fibrillation and HRV of one record,
from the beats' times and AAMI classes; the same summary from WFDB reference annotations and the agreement of
the two. Entry points: :func:`summarise`, :func:`write_holter`, :func:`reference_summary`, :func:`agreement`."""

from beatflow.holter.summary import summarise, summary_from_beats, write_holter  # noqa: F401
