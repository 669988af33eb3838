"""Times in a Holter report, its pages and its figures: clock times when the recording's start is known
(``holter.json``'s ``start``, ISO 8601), elapsed time from the start otherwise; and the ticks of a time axis
at round clock (or elapsed) times."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np

from beatflow.timefmt import clock

# a time axis's tick steps (seconds), the first that gives few enough ticks is used
STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 14400, 21600, 43200)


def at(seconds: float, start: str | None) -> str:
    """``HH:MM:SS``: the time of day ``seconds`` after ``start`` (ISO 8601), or elapsed without one."""
    if start is None:
        return clock(seconds)
    return (datetime.fromisoformat(start) + timedelta(seconds=float(seconds))).strftime("%H:%M:%S")


def note(start: str | None) -> str:
    """What the report's times are."""
    if start is None:
        return "Times are elapsed from the start of the recording (hh:mm:ss): its start is unknown."
    return f"Clock times; the recording started {datetime.fromisoformat(start):%Y-%m-%d %H:%M:%S}."


def axis_label(start: str | None, unit: str = "hh:mm:ss") -> str:
    """A time axis's label: ``clock time, 2026-11-29 (hh:mm:ss)`` (the start's date), or ``time from the
    start (hh:mm:ss)`` without a start."""
    if start is None:
        return f"time from the start ({unit})"
    return f"clock time from {datetime.fromisoformat(start):%Y-%m-%d} ({unit})"


def day_offset_s(start: str | None) -> float:
    """Seconds from the midnight before ``start`` to it (0 without a start): elapsed time plus this is the
    time of day, in seconds (past 86 400 after midnight)."""
    if start is None:
        return 0.0
    s = datetime.fromisoformat(start)
    return (s - s.replace(hour=0, minute=0, second=0, microsecond=0)).total_seconds()


def ticks(lo_s: float, hi_s: float, start: str | None, max_ticks: int = 10, steps=STEPS_S) -> list[tuple[float, str]]:
    """``(seconds from the start, label)`` ticks from ``lo_s`` to ``hi_s`` at round clock times (round elapsed
    times without a start), at the first of ``steps`` (seconds) that gives at most ``max_ticks``, labelled
    ``HH:MM:SS``."""
    step = next((s for s in steps if (hi_s - lo_s) / s + 1 <= max_ticks), steps[-1])
    offset = day_offset_s(start)
    first = math.ceil((lo_s + offset) / step - 1e-9) * step - offset
    day = 86400 if start is not None else math.inf  # a clock turns at midnight
    return [(float(s), clock(round(s + offset) % day)) for s in np.arange(first, hi_s + 1e-9, step)]
