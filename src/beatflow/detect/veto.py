"""The noise veto: drop detected peaks that are noise by rhythm and by shape together.

In heavy muscle noise the detector's envelope has peaks as large as QRS complexes; amplitude alone cannot
tell them apart. A candidate is dropped when all three hold:

* *rhythm*: without it, the interval between its neighbours is below ``veto_rr`` × the local reference RR
  (it splits an ordinary interval in two; a premature beat does not, since the beat after it comes late);
* *shape*: its QRS (±``HALF_WINDOW_S``, band-passed ``BAND_HZ``) correlates with the record's median beat below
  ``veto_correlation`` (normal and premature sinus beats correlate near 1, noise near 0.6);
* *strength*: its envelope is below ``veto_strength`` × the smaller of its neighbours'.

Where the record has a second lead that shows the first lead's beat-shaped peaks (its support, see
:func:`beatflow.detect.peaks.lead_support`, is at least ``2 × veto_support`` at 95 % of them), a candidate that
is not beat-shaped and has support below ``veto_support`` there is dropped on that alone: noise in one lead,
no QRS in the other. A ventricular or aberrant beat is not beat-shaped either, but shows in both leads; one the
second lead shows as a beat (support at least ``BEAT_SHOWN × veto_support``) where that lead is quiet (its local
noise, :func:`beatflow.detect.fusion.local_noise`, below ``veto_support``) counts as beat-shaped, so that the
beats of a ventricular couplet or run, which split the sinus interval and may be weaker in the first lead than
their neighbours, are kept; in noise that reaches both leads, a peak as large as a beat in the second lead is no
evidence of one.

A candidate whose QRS recurs in the record (:func:`recurring`: it correlates at 0.9 or more, at the best shift
within 20 ms, with at least 1 % of the suspects, and 5) counts as beat-shaped: a second morphology of the
record's own beats (ventricular couplets and runs, aberrant beats) is spared, as noise, which has no look-alikes,
is not. The shift is needed because the R peak the detector picks on a wide or notched QRS wanders by a few
samples from beat to beat, and more samples the higher the rate: unaligned, a ventricular family's windows
missed the 0.9 at 250 Hz where they met it at 128 Hz.

Candidates that are not beat-shaped are visited weakest first (envelope × correlation) and the neighbour
links updated as they go, so a beat next to a noise peak is judged against its true neighbours once the
noise peak is gone. The local reference RR comes from the candidates' own intervals, which noise shortens;
so the walk is repeated, with the reference of the survivors, until it drops nothing more (two or three
passes; at most ``MAX_PASSES``).
The correlation is computed with the array module ``xp`` where the signal is; the walk runs on the host
over the peaks only (a beat-sized array).
"""

from __future__ import annotations

import numba
import numpy as np

from beatflow.detect.adaptive import CLOSE_QRS_S, WAVE_SHARE

HALF_WINDOW_S = 0.06  # the QRS window compared with the template
BAND_HZ = (5.0, 40.0)  # the QRS band: baseline and T waves out
RR_WINDOW = 15  # candidate intervals in the local reference RR
RR_QUANTILE = 0.75  # the sinus interval even in bigeminy (see score.rhythm_ratio)
MAX_PASSES = 8
RECUR_FRACTION = 0.01  # a QRS shape that recurs at 1 % of the candidates (and at least RECUR_MIN) is a beat's
RECUR_MIN = 5
RECUR_CORRELATION = 0.9  # as veto_correlation's default: "the same shape"
RECUR_REFERENCE = 512  # suspects compared with at most this many others (bounded work on a long record)
RECUR_SHIFT_S = 0.02  # s: two windows compared at their best shift within this (R peaks wander on a wide QRS)
T_APEX_S = 0.30  # s: a T wave peaks within this of its beat's R peak (QT about 0.4 s, its apex some 0.1 s before)
SHOWN = 2.0  # the second lead shows a peak where its support is this many × veto_support
BEAT_SHOWN = 4.0  # ... and shows it as a beat at this many × veto_support (0.8 of its typical beat by default)
SECOND_LEAD_SHARE = 0.5  # of two peaks within CLOSE_QRS_S, one the second lead shows at under half the other's


def qrs_band(x, fs: float, xp, work_bytes: int | None = None):
    """The lead band-passed to the QRS band (baseline and T waves out), for :func:`qrs_correlation`."""
    from beatflow.dsp.filters import band_pass

    return band_pass([x], fs, *BAND_HZ, xp, work_bytes)[0]


def qrs_windows(y, fs: float, peaks, xp):
    """``[peaks, window]``: each peak's QRS window (±``HALF_WINDOW_S``) of the band-passed lead ``y``
    (:func:`qrs_band`), its mean removed."""
    from beatflow.detect.peaks import window_index

    windows = y[window_index(peaks, max(1, round(HALF_WINDOW_S * fs)), y.shape[0], xp)]
    windows -= windows.mean(axis=1, keepdims=True)
    return windows


def qrs_correlation(y, fs: float, peaks, strength, xp):
    """Pearson correlation of each peak's QRS window of the band-passed lead ``y`` (:func:`qrs_band`) with the
    median window of the stronger half of the peaks."""
    windows = qrs_windows(y, fs, peaks, xp)
    template = xp.median(windows[strength >= xp.median(strength)], axis=0)
    norms = xp.linalg.norm(windows, axis=1) * xp.linalg.norm(template)
    return windows @ template / xp.maximum(norms, np.finfo(np.float32).tiny)


def recurring(y, fs: float, peaks, suspect, backend):
    """Mask (host) of the ``suspect`` peaks (host bool mask over ``peaks``) whose QRS window of the band-passed
    lead ``y`` correlates at ``RECUR_CORRELATION`` or more, at the best shift within ``RECUR_SHIFT_S``, with at
    least ``max(RECUR_MIN, RECUR_FRACTION × len(peaks))`` other suspects (each compared with up to
    ``RECUR_REFERENCE`` of them, evenly spread): a second morphology of the record's own beats (ventricular,
    aberrant), learned from the record. Noise peaks have no such look-alikes."""
    xp = backend.xp
    out = np.zeros(suspect.shape[0], dtype=bool)
    index = np.flatnonzero(suspect)
    need = max(RECUR_MIN, RECUR_FRACTION * suspect.shape[0])
    if index.shape[0] <= need:
        return out

    def unit(windows):
        return windows / xp.maximum(xp.linalg.norm(windows, axis=1, keepdims=True), np.finfo(np.float32).tiny)

    at = xp.asarray(peaks[index])
    windows = unit(qrs_windows(y, fs, at, xp))
    step = max(1, -(-index.shape[0] // RECUR_REFERENCE))
    shift = round(RECUR_SHIFT_S * fs)
    best = None
    for lag in range(-shift, shift + 1):  # the reference windows moved, one lag at a time (memory: one matrix)
        moved = windows[::step] if lag == 0 else unit(qrs_windows(y, fs, at[::step] + lag, xp))
        alike = windows @ moved.T
        best = alike if best is None else xp.maximum(best, alike)
    itself = xp.arange(index.shape[0]) % step == 0  # a reference matches itself at lag 0
    counts = ((best >= RECUR_CORRELATION).sum(axis=1) - itself) * step  # the reference: 1/step of the suspects
    out[index] = backend.to_host(counts) >= need
    return out


def reference_rr(peaks: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each peak index in ``at``: the upper quartile of the up to ``RR_WINDOW`` candidate intervals centred on
    the interval that ends at it (samples; fewer at the ends of the recording)."""
    rr = np.diff(peaks).astype(np.float64)
    centre = np.maximum(at - 1, 0)[:, None] + np.arange(-(RR_WINDOW // 2), RR_WINDOW // 2 + 1)[None, :]
    inside = (centre >= 0) & (centre < rr.shape[0])
    ordered = np.sort(np.where(inside, rr[np.clip(centre, 0, rr.shape[0] - 1)], np.inf), axis=1)
    last = inside.sum(axis=1) - 1
    position = RR_QUANTILE * last  # np.quantile's linear interpolation, per row
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, last)
    below, above = (np.take_along_axis(ordered, k[:, None], axis=1)[:, 0] for k in (low, high))
    return below + (above - below) * (position - low)


@numba.njit(cache=True)
def vetoed(peaks, strength, suspects, reference, max_merged, max_strength):
    """Boolean mask of the peaks the veto drops, visiting ``suspects`` (the peaks that are not beat-shaped,
    weakest first; ``reference`` is the reference RR at each) on host arrays (see the module docstring)."""
    n = peaks.shape[0]
    drop = np.zeros(n, np.bool_)
    before = np.arange(n) - 1
    after = np.arange(n) + 1
    for k in range(suspects.shape[0]):
        i = suspects[k]
        a, b = before[i], after[i]
        if a < 0 or b >= n:
            continue
        if (
            strength[i] < max_strength * min(strength[a], strength[b])
            and peaks[b] - peaks[a] < max_merged * reference[k]
        ):
            drop[i] = True
            after[a], before[b] = b, a
    return drop


def unsupported(
    t: np.ndarray, support: np.ndarray, strength: np.ndarray, veto_support: float, close_s: float, confirmed: bool
) -> np.ndarray:
    """Mask of the beats (times ``t`` in s, increasing) closer than ``close_s`` to a neighbouring beat that the
    second lead shows while it does not show them: ``support`` (host, see :func:`beatflow.detect.peaks.lead_support`)
    at least ``2 × veto_support`` at the neighbour and below ``veto_support`` at the beat. Two QRS complexes
    that close are rare; a P or T wave or an artefact in the first lead alone next to a beat is not, and
    ventricular depolarisation shows in every working lead. Asking the neighbour makes it local: where the
    second lead is off, flat or buried, nothing is dropped. Within :data:`T_APEX_S` after a beat, where the
    second lead shows the first lead's beats through the record (``confirmed``, :func:`second_lead_confirms`),
    a peak below ``2 × veto_support`` there goes too: a ventricular beat's tall T wave, which reaches about a
    quarter of a beat in the second lead's QRS band.

    Within :data:`~beatflow.detect.adaptive.CLOSE_QRS_S` of a beat the second lead shows (``veto_support`` or
    more), a peak goes where the second lead shows it at under :data:`SECOND_LEAD_SHARE` of that beat and the
    first lead (``strength``, the detection envelope at each beat) at under
    :data:`~beatflow.detect.adaptive.WAVE_SHARE` of it: a P wave as large as a small QRS in the first lead
    (MIT-BIH 108), where the second lead's QRS is too small for the absolute test."""
    support = np.asarray(support, dtype=np.float64)
    strength = np.asarray(strength, dtype=np.float64)
    gap = np.diff(t)
    close = gap < close_s
    low, shown = support < veto_support, support >= SHOWN * veto_support
    t_wave = confirmed & (gap < T_APEX_S) & ~shown[1:]  # of the peak that ends each interval
    before_a_beat = close & low[:-1] & shown[1:]
    after_a_beat = close & (low[1:] | t_wave) & shown[:-1]
    near = gap < CLOSE_QRS_S

    def faint(peak: slice, beat: slice) -> np.ndarray:  # per interval: its ``peak`` end beside its ``beat`` end
        second_lead = ~low[beat] & (support[peak] < SECOND_LEAD_SHARE * support[beat])
        return near & second_lead & (strength[peak] < WAVE_SHARE * strength[beat])

    first, last = slice(None, -1), slice(1, None)
    before_a_beat |= faint(first, last)
    after_a_beat |= faint(last, first)
    return np.r_[before_a_beat, False] | np.r_[False, after_a_beat]


def second_lead_confirms(support: np.ndarray | None, correlation: np.ndarray, p) -> bool:
    """Whether the second lead shows the first lead's beats: its support at 95 % of the beat-shaped peaks (and
    at least 10 of them) is ``2 × veto_support`` or more. A lead that is off, flat or buried in noise does not."""
    if support is None:
        return False
    shaped = support[correlation >= p.veto_correlation]
    return shaped.shape[0] >= 10 and float(np.quantile(shaped, 0.05)) >= SHOWN * p.veto_support


def surviving(
    peaks: np.ndarray,
    strength: np.ndarray,
    correlation: np.ndarray,
    p,
    support: np.ndarray | None = None,
    recurring: np.ndarray | None = None,
    second_noise: np.ndarray | None = None,
) -> np.ndarray:
    """The peaks (host int64) the veto keeps, from host arrays: ``strength`` is the envelope at each peak,
    ``correlation`` its :func:`qrs_correlation`, ``support`` the second lead's there (None: no second lead)
    and ``second_noise`` that lead's local noise there (None: not known, no peak counts as shown as a beat);
    ``p`` has the ``veto_*`` parameters."""
    peaks, strength, correlation = peaks.astype(np.int64), strength.astype(np.float64), correlation.astype(np.float64)
    if recurring is not None:  # a recurring second morphology is beat-shaped too
        correlation = np.where(recurring, np.maximum(correlation, p.veto_correlation), correlation)
    if second_lead_confirms(support, correlation, p):
        keep = (correlation >= p.veto_correlation) | (support >= p.veto_support)
        quiet = second_noise < p.veto_support if second_noise is not None else np.zeros(len(peaks), bool)
        beat = quiet & (support >= BEAT_SHOWN * p.veto_support)  # a quiet second lead shows a beat: beat-shaped too
        correlation = np.where(beat, np.maximum(correlation, p.veto_correlation), correlation)
        peaks, strength, correlation = peaks[keep], strength[keep], correlation[keep]
    for _ in range(MAX_PASSES):
        suspects = np.flatnonzero(correlation < p.veto_correlation)
        suspects = suspects[np.argsort(strength[suspects] * correlation[suspects], kind="stable")]
        drop = vetoed(peaks, strength, suspects, reference_rr(peaks, suspects), p.veto_rr, p.veto_strength)
        if not drop.any():
            break
        peaks, strength, correlation = peaks[~drop], strength[~drop], correlation[~drop]
    return peaks


def noise_veto(band, fs: float, peaks, strength, p, backend, support=None, lead_noise=None) -> np.ndarray:
    """Host int64 peaks that survive the veto; ``band`` is the first lead's :func:`qrs_band`, ``peaks``,
    ``strength`` (envelope at each) and ``support`` (the second lead's at each, or None) are ``xp`` arrays;
    ``lead_noise`` is the second lead's local noise profile (:func:`beatflow.detect.fusion.lead_noise`, or
    None)."""
    from beatflow.detect.fusion import local_noise

    if p.veto_rr <= 0 or peaks.shape[0] < 3:
        return backend.to_host(peaks).astype(np.int64)
    correlation = qrs_correlation(band, fs, peaks, strength, backend.xp)
    host = [backend.to_host(a) for a in (peaks, strength, correlation)]
    again = recurring(band, fs, host[0], host[2] < p.veto_correlation, backend) if p.veto_recurring else None
    support = None if support is None else backend.to_host(support).astype(np.float64)
    second_noise = None if support is None or lead_noise is None else local_noise(lead_noise, host[0], backend)
    return surviving(*host, p, support, again, second_noise)
