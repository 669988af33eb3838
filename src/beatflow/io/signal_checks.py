"""Signal checks at ingest: gaps of missing / NaN / Inf samples, and clipping at the amplifier's rails.

Policy (documented in docs/design.md): gaps up to ``max_gap_s`` are filled by linear interpolation and
reported; a longer gap is an error (interpolating it would invent heartbeats). A flat lead (one value
throughout) is an error, and so is a lead with more than ``max_clipped_fraction`` of its samples in flat runs
at its minimum or maximum value; any clipping above 0.1 % is a warning.
"""

from __future__ import annotations

import logging

from beatflow.errors import BeatflowError
from beatflow.timefmt import clock

log = logging.getLogger("beatflow")

CLIPPING_WARNING = 0.001


def fill_gaps(values, fs: float, max_gap_s: float, lead: str, xp):
    """``values`` with short non-finite gaps interpolated; raise on a gap longer than ``max_gap_s``."""
    bad = ~xp.isfinite(values)
    n_bad = int(xp.count_nonzero(bad))
    if n_bad == 0:
        return values
    if n_bad == values.shape[0]:
        raise BeatflowError(f"lead {lead!r} has no finite value")
    edges = xp.diff(xp.concatenate([xp.zeros(1, xp.int8), bad.astype(xp.int8), xp.zeros(1, xp.int8)]))
    starts, ends = xp.flatnonzero(edges == 1), xp.flatnonzero(edges == -1)
    longest = int(xp.argmax(ends - starts))
    length = int(ends[longest] - starts[longest])
    if length > max_gap_s * fs:
        raise BeatflowError(
            f"lead {lead!r} has a gap of {length} missing, NaN or infinite samples "
            f"({length / fs:.2f} s) at {clock(int(starts[longest]) / fs)}; gaps up to "
            f"ingest.max_gap_s = {max_gap_s} s are interpolated"
        )
    good = xp.flatnonzero(~bad)
    filled = values.copy()
    filled[bad] = xp.interp(xp.flatnonzero(bad), good, values[good]).astype(values.dtype)
    log.warning(
        "lead %s: interpolated %d missing/NaN/Inf sample(s) in %d gap(s), the longest %.3f s",
        lead,
        n_bad,
        int(starts.shape[0]),
        length / fs,
    )
    return filled


def check_clipping(values, max_fraction: float, lead: str, xp) -> float:
    """Fraction of samples in flat runs (two or more) at the lead's minimum or maximum; raise above
    ``max_fraction``, or when the lead is flat (one value throughout). A single extreme sample (an R peak) is
    not clipping; a flat top is."""
    low, high = float(values.min()), float(values.max())
    if low == high:
        raise BeatflowError(f"lead {lead!r} is flat: every sample is {low:g} (a lead that is not connected?)")
    clipped = xp.zeros(values.shape[0], dtype=bool)
    for rail in (values >= high, values <= low):
        pair = rail[1:] & rail[:-1]
        clipped[1:] |= pair
        clipped[:-1] |= pair
    fraction = float(xp.count_nonzero(clipped)) / values.shape[0]
    if fraction > max_fraction:
        raise BeatflowError(
            f"lead {lead!r} is clipped: {100 * fraction:.1f} % of samples sit at its minimum or "
            f"maximum (limit ingest.max_clipped_fraction = {max_fraction})"
        )
    if fraction > CLIPPING_WARNING:
        log.warning("lead %s: %.2f %% of samples at the rails (clipped?)", lead, 100 * fraction)
    return fraction
