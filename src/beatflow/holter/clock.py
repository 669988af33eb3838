"""Times in a Holter report: clock times when the recording's start is known (``holter.json``'s ``start``),
elapsed time from the start otherwise."""

from __future__ import annotations

from datetime import datetime, timedelta

from beatflow.timefmt import clock


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
