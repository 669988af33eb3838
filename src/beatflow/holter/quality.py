"""Signal quality per lead and per second, and the artefact episodes of ``holter.json`` (the stretches where no
lead is readable).

Each lead is cut into windows of :data:`WINDOW_S`; a window is *unreadable* for one of these reasons (the
first that holds, in this order):

- ``flat line``: the window's peak-to-peak range is below :data:`FLAT_RATIO` of the lead's median range
  (a disconnected or dead channel);
- ``saturation``: :data:`SATURATION_SHARE` of its samples or more lie at the lead's extremes (within
  :data:`RAIL` of its range: the amplifier at its rail);
- ``lead-off``: the window is *quiet* — its baseline moves (range at least :data:`LEAD_OFF_RANGE` of the
  lead's median range) while its QRS band (5–15 Hz) holds under :data:`LEAD_OFF_RATIO` of the lead's median
  QRS-band power — and another lead is readable and not quiet there (an electrode off the skin: the
  amplifier's slow recovery while the other lead shows the beats; where every lead is quiet, as in a pause,
  none is called off);
- ``noise``: over the :data:`SPAN_S` around it, the spectral quality index pSQI, power in 5–15 Hz over power
  in 5–40 Hz (Li, Mark and Clifford, Physiol Meas 29:15–32, 2008; Clifford et al., Physiol Meas
  33:1419–1433, 2012: 0.5–0.8 in clean ECG), is below :data:`PSQI_MIN` while the 5–40 Hz power reaches
  :data:`NOISE_POWER` of the lead's median (muscle and electrode noise put their power above the QRS band;
  faint noise hides no beat).

A stretch where every lead is unreadable is an artefact episode. A real asystole is none of these (its leads
are quiet but neither flat, at a rail, off nor noisy), so a pause is not mistaken for an artefact.
"""

from __future__ import annotations

import numpy as np

from beatflow.dsp.filters import butter_sos

WINDOW_S = 1.0
SPAN_S = 5.0  # the spectral indices' window, centred on each WINDOW_S
FLAT_RATIO = 0.01
RAIL = 0.005
SATURATION_SHARE = 0.2
LEAD_OFF_RATIO = 0.01
LEAD_OFF_RANGE = 0.1
PSQI_MIN = 0.3
NOISE_POWER = 0.1
QRS_BAND_HZ = (5.0, 15.0)
WIDE_BAND_HZ = (5.0, 40.0)
REASONS = ("flat line", "saturation", "lead-off", "noise")
CHUNK_WINDOWS = 3600  # windows measured at a time: host memory stays bounded on a two-week record


def _band_power(sos: np.ndarray, frames: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``frames``, the mean power of the rows end to end through the causal filter ``sos`` from
    ``state``; and the state after them."""
    from scipy.signal import sosfilt

    y, state = sosfilt(sos, frames.ravel(), zi=state)
    return (y.reshape(frames.shape) ** 2).mean(axis=1, dtype=np.float64), state


def _window_stats(x, fs: float, w: int, n: int) -> dict[str, np.ndarray]:
    """Per window of ``w`` samples (the first ``n``) of lead ``x`` (an array or a
    :class:`beatflow.io.tables.LeadStretches`, read a block of :data:`CHUNK_WINDOWS` windows at a time): the
    peak-to-peak range (``ptp``), the share of samples within :data:`RAIL` of the lead's extremes (``at_rail``;
    1 for a constant lead), and the mean power of the lead through causal Butterworth filters of the QRS band
    and the wide band (``qrs``, ``wide``), their state carried from block to block. The samples and the filters are
    float32, the signal's own precision (scipy filters float32 four times as fast as float64; the powers are summed
    in float64). Each band filters in a thread of its own while the next block is read (scipy's filters release the
    GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    from beatflow.io.tables import lead_blocks, lead_range

    lo, hi = lead_range(x)
    rail = RAIL * (hi - lo)
    bands = {
        name: butter_sos(fs, *hz).astype(np.float32) for name, hz in (("qrs", QRS_BAND_HZ), ("wide", WIDE_BAND_HZ))
    }
    state = {name: np.zeros((len(sos), 2), np.float32) for name, sos in bands.items()}
    out = {name: np.empty(n) for name in ("ptp", "at_rail", *bands)}
    filtering: dict = {}  # band → (its rows, the future of its power and state) of the block before

    def collect():
        for name, (rows, future) in filtering.items():
            out[name][rows], state[name] = future.result()

    a = 0
    with ThreadPoolExecutor(max_workers=len(bands)) as pool:
        for block in lead_blocks(x, CHUNK_WINDOWS * w):
            b = min(n, a + block.shape[0] // w)
            if b <= a:
                break
            frames = np.asarray(block[: (b - a) * w], dtype=np.float32).reshape(b - a, w)
            out["ptp"][a:b] = np.ptp(frames, axis=1)
            out["at_rail"][a:b] = ((frames <= lo + rail) | (frames >= hi - rail)).mean(axis=1) if hi > lo else 1.0
            collect()  # the block before's filters end before this block's start from their state
            filtering = {
                name: (slice(a, b), pool.submit(_band_power, sos, frames, state[name])) for name, sos in bands.items()
            }
            a = b
        collect()
    return out


def _centred_sum(p: np.ndarray, span: int) -> np.ndarray:
    """The sum of ``p`` over ``span`` values centred on each (fewer at the ends), ``p``'s length."""
    start = (span - 1) // 2
    return np.convolve(p, np.ones(span), mode="full")[start : start + len(p)]


def lead_quality(x, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Per window of :data:`WINDOW_S`: the index in :data:`REASONS` + 1 of why the lead is unreadable (lead-off
    left to :func:`signal_quality`), 0 where it is readable; and whether the window is quiet (see the module
    docstring). A last partial window is left readable."""
    w = max(int(round(WINDOW_S * fs)), 1)
    n = len(x) // w
    if n == 0:
        return np.zeros(0, dtype=np.int8), np.zeros(0, dtype=bool)
    stats = _window_stats(x, fs, w, n)
    ptp, at_rail, qrs = stats["ptp"], stats["at_rail"], stats["qrs"]
    typical = np.median(ptp)
    span = max(int(round(SPAN_S / WINDOW_S)), 1)
    qrs_span, wide = _centred_sum(qrs, span), _centred_sum(stats["wide"], span)
    psqi = np.divide(qrs_span, wide, out=np.ones(n), where=wide > 0)
    out = np.zeros(n, dtype=np.int8)
    for code, bad in (
        (4, (psqi < PSQI_MIN) & (wide >= NOISE_POWER * np.median(wide))),
        (2, at_rail >= SATURATION_SHARE),  # a constant lead is at its rails, but flat first
        (1, ptp <= FLAT_RATIO * typical),
    ):
        out[bad] = code  # the last assignment wins: flat line before saturation before noise
    quiet = (ptp >= LEAD_OFF_RANGE * typical) & (qrs < LEAD_OFF_RATIO * np.median(qrs))
    return out, quiet


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[(first, end), …]`` (end exclusive) of the runs of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def signal_quality(leads: dict[str, np.ndarray], fs: float) -> dict:
    """The quality of every lead: ``{"window_s", "codes": {lead: per-window codes (lead_quality)},
    "unreadable": {lead: [(start_s, end_s), …]}, "artefact": [{start_s, end_s, leads}]}``; an artefact
    episode's ``leads`` maps each lead to why it is unreadable there (the reason of most of its windows)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(leads))) as pool:  # scipy's filters and numpy release the GIL
        measured = dict(zip(leads, pool.map(lambda x: lead_quality(x, fs), leads.values()), strict=True))
    n = min((len(c) for c, _ in measured.values()), default=0)
    codes = {name: c[:n].copy() for name, (c, _) in measured.items()}
    seeing = {name: (c[:n] == 0) & ~q[:n] for name, (c, q) in measured.items()}  # readable and not quiet
    for name, (c, q) in measured.items():
        others = np.zeros(n, dtype=bool)
        for other, sees in seeing.items():
            if other != name:
                others |= sees
        codes[name][(codes[name] == 0) & q[:n] & others] = 3
    unreadable = {name: [(s * WINDOW_S, e * WINDOW_S) for s, e in runs_of(c > 0)] for name, c in codes.items()}
    none_readable = np.ones(n, dtype=bool)
    for c in codes.values():
        none_readable &= c > 0
    artefact = []
    for s, e in runs_of(none_readable) if codes else []:
        why = {name: REASONS[int(np.bincount(c[s:e], minlength=5)[1:].argmax())] for name, c in codes.items()}
        artefact.append({"start_s": s * WINDOW_S, "end_s": e * WINDOW_S, "leads": why})
    return {"window_s": WINDOW_S, "codes": codes, "unreadable": unreadable, "artefact": artefact}


def readable(quality: dict | None, lead: str, a: float, b: float) -> bool:
    """Whether ``lead`` is readable all through ``[a, b]`` s (True without a quality measure)."""
    if quality is None:
        return True
    return all(e <= a or s >= b for s, e in quality["unreadable"].get(lead, []))
