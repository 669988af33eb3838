"""segment: first lead → Ricker-wavelet responses at two widths (FFT convolution) → non-maximum suppression
(Numba) → R peaks chosen by an adaptive threshold (Pan–Tompkins, :mod:`beatflow.detect.adaptive`) →
``beats.parquet`` (beat, peak, start, length, kept; the pruning bounds and window offset in its metadata).

The narrow wavelet matches normal QRS complexes, the wide one the broad complexes of ventricular and
aberrant beats. Each response is taken in magnitude (``both_polarities``: a record's ventricular beats are
often of the opposite polarity to its sinus beats) and divided by its own local reference, the running
median of block maxima, so the detector works on the larger of two dimensionless envelopes. The second lead,
where the record has one and it shows the first lead's beats, is averaged into the envelope where the first
lead is the noisier (:mod:`beatflow.detect.fusion`) and confirms or refutes the peaks the noise veto
suspects (:func:`lead_support`); the peaks stay on the first lead.

Written once against the array module ``xp`` (cupy on the GPU, numpy on the CPU).
"""

from __future__ import annotations

import logging

import numpy as np

from beatflow.detect.envelope import detection_envelope
from beatflow.detect.params import SegmentParams, SegmentSamples
from beatflow.detect.peaks import candidates, lead_support
from beatflow.errors import BeatflowError

log = logging.getLogger("beatflow")

PLAUSIBLE_RR_S = (0.3, 2.0)  # a record's median RR outside this (200 or 30 bpm): likely a wrong fs
PLAUSIBLE_QRS_S = (0.01, 0.2)  # median QRS width at half its height (real records: 0.02-0.05 s)


def detect_peaks(x, s: SegmentSamples, backend, work_bytes: int | None = None, second=None) -> np.ndarray:
    """R-peak sample indices of the signal ``x``.

    1. The envelope: both polarities of the Ricker responses (``both_polarities``), in units of a typical beat.
    2. Candidates: its NMS peaks above ``candidate_floor`` (``adaptive``; else above ``threshold``). Where the
       ``second`` lead (optional, same length) shows the first lead's beats, the envelope is the two leads'
       noise-weighted mean (``fuse_leads``) and the peaks snap back to the first lead.
    3. ``adaptive``: Pan and Tompkins' adaptive threshold with search-back, refractory period (``refractory_s``)
       and T-wave test, then the same test both ways (P and T waves, :mod:`beatflow.detect.adaptive`).
    4. ``lone_lead_veto``: a peak within :data:`beatflow.detect.adaptive.T_WAVE_S` of a beat that the second
       lead shows, and that the second lead does not show itself, goes
       (:func:`beatflow.detect.veto.unsupported`).
    5. The noise veto (``veto_rr``; a recurring QRS shape, ``veto_recurring``, or a peak a quiet second lead
       shows as a beat is beat-shaped) and, where ``search_back`` > 0, the search-back (:mod:`.searchback`).

    Memory, per sample: the signal, its centred copy and the two wavelet responses (16 bytes), then the
    envelope and a byte mask; with a second lead, that lead and the first lead's envelope stay while the
    second's is made (24 bytes); then the signal, the veto's band-passed copy of it and the envelopes, with a
    second lead its signal and the fused envelope too (24 bytes); plus ``work_bytes`` for the convolutions.

    Parameters
    ----------
    x : array
        The first lead, float32, numpy or cupy (``backend.xp``).
    s : SegmentSamples
        The ``segment.*`` keys at the signal's rate (:meth:`SegmentParams.in_samples`).
    backend : Backend
        Where the arrays live; the NMS kernel is launched there.
    work_bytes : int, optional
        Memory the convolutions may use at once (None: chosen from the free memory).
    second : array, optional
        The second lead, same length and module as ``x``.

    Returns
    -------
    numpy.ndarray
        The R peaks' sample indices, int64, increasing, on the host.
    """
    from beatflow.detect.searchback import search_back
    from beatflow.detect.veto import noise_veto, qrs_band

    fs, p = s.fs, s.p
    envelope = detection_envelope(x, s, backend.xp, work_bytes, absolute=p.both_polarities)
    floor = p.candidate_floor if p.adaptive else p.threshold
    peaks = candidates(envelope, s.nms_half, backend, floor)
    fuse = second is not None and p.fuse_leads
    if peaks.shape[0] < 3 or (p.veto_rr <= 0 and not fuse and p.search_back <= 0 and not p.adaptive):
        return backend.to_host(peaks).astype(np.int64)
    with_lead = second is not None and (fuse or p.veto_support > 0)
    lead, noise = second_lead(second, s, backend, work_bytes) if with_lead else (None, None)
    band = qrs_band(x, fs, backend.xp, work_bytes)
    if fuse:
        envelope, peaks = fused_detection(envelope, peaks, lead, noise, band, s, backend, floor)
    if p.adaptive:
        peaks = adaptive_peaks(envelope, peaks, band, s, backend)
    support = lead_support(lead, fs, peaks, backend.xp) if lead is not None and p.veto_support > 0 else None
    if support is not None and p.lone_lead_veto and peaks.shape[0] >= 3:
        peaks, support = lone_lead_veto(peaks, support, band, envelope, s, backend)
    kept = noise_veto(band, fs, peaks, envelope[peaks], p, backend, support, noise)
    return search_back(kept, envelope, band, s, backend)


def second_lead(second, s: SegmentSamples, backend, work_bytes: int | None):
    """The second lead's detection envelope (both polarities) and its local noise profile
    (:func:`beatflow.detect.fusion.lead_noise`), for the fusion and the noise veto."""
    from beatflow.detect.fusion import lead_noise

    lead = detection_envelope(second, s, backend.xp, work_bytes, absolute=True)
    return lead, lead_noise(lead, s.fs, backend.xp)


def adaptive_peaks(envelope, peaks, band, s: SegmentSamples, backend):
    """The ``peaks`` that Pan and Tompkins' adaptive threshold takes (on the host: each peak's envelope and the
    QRS band's maximum slope there, :func:`beatflow.detect.adaptive.adaptive_select`), on ``backend``."""
    from beatflow.detect.adaptive import adaptive_select, max_slope

    xp, fs = backend.xp, s.fs
    strength = lead_support(envelope, fs, peaks, xp)  # the fused peak's, where a snap moved it
    host = [backend.to_host(a) for a in (peaks, strength, max_slope(band, fs, peaks, xp))]
    return xp.asarray(adaptive_select(*host, fs, s.p))


def lone_lead_veto(peaks, support, band, envelope, s: SegmentSamples, backend):
    """``(peaks, support)`` without the peaks that :func:`beatflow.detect.veto.unsupported` finds within
    :data:`beatflow.detect.adaptive.T_WAVE_S` of a beat that the second lead shows (``support``: the second
    lead's QRS response at each peak); whether that lead shows the first lead's beats all through the record
    (:func:`beatflow.detect.veto.second_lead_confirms`, on the QRS band ``band`` and the ``envelope``) sets
    how little it must show of a peak for the peak to go."""
    from beatflow.detect.adaptive import T_WAVE_S
    from beatflow.detect.veto import qrs_correlation, second_lead_confirms, unsupported

    xp, host_support = backend.xp, backend.to_host(support)
    correlation = backend.to_host(qrs_correlation(band, s.fs, peaks, envelope[peaks], xp))
    confirmed = second_lead_confirms(host_support, correlation, s.p)
    t = backend.to_host(peaks) / s.fs
    strength = backend.to_host(lead_support(envelope, s.fs, peaks, xp))  # the fused peak's, where a snap moved it
    keep = xp.asarray(~unsupported(t, host_support, strength, s.p.veto_support, T_WAVE_S, confirmed))
    return peaks[keep], support[keep]


def fused_detection(envelope, peaks, lead, noise, band, s: SegmentSamples, backend, floor: float):
    """``(envelope, peaks)`` of the two leads (:mod:`beatflow.detect.fusion`) if the second lead's envelope ``lead``
    (its local noise profile ``noise``) shows the first lead's beat-shaped ``peaks``
    (:func:`beatflow.detect.veto.second_lead_confirms`), else as given; ``floor`` is the candidates' (the fused
    envelope's NMS floor)."""
    from beatflow.detect.fusion import fused_envelope, snap
    from beatflow.detect.veto import SHOWN, qrs_correlation, second_lead_confirms

    xp, fs, p = backend.xp, s.fs, s.p
    correlation = qrs_correlation(band, fs, peaks, envelope[peaks], xp)
    if not second_lead_confirms(backend.to_host(lead_support(lead, fs, peaks, xp)), backend.to_host(correlation), p):
        log.info("detection on the first lead alone: the second lead does not show its beats")
        return envelope, peaks
    log.info("detection on both leads, each weighted by its local noise (the second shows the first lead's beats)")
    fused = fused_envelope(envelope, lead, fs, xp, noise)
    # a fused peak is the first lead's where that lead shows something (with the adaptive threshold the candidate
    # floor, itself half of Pan and Tompkins' lowest threshold, else half the fixed threshold); elsewhere the second
    # lead's where it shows a beat as the lone-lead veto understands it (veto_support 0: it is not asked)
    snap_floor = floor if p.adaptive else p.threshold / 2
    shown = SHOWN * p.veto_support if p.veto_support > 0 else np.inf
    peaks = candidates(fused, s.nms_half, backend, floor)
    return fused, snap(peaks, envelope, lead, fs, xp, floor=snap_floor, shown=shown)


def beats_table(peaks: np.ndarray, n_samples: int, s: SegmentSamples):
    """The ``beats.parquet`` table from host peak indices: windows start ``s.pre_peak`` samples before each
    peak and last until the next peak (the last beat: to the end of the recording). ``kept`` = inside the
    recording and ``s.min_rr ≤ length ≤ s.max_rr``."""
    import pandas as pd

    start = peaks - s.pre_peak
    length = np.diff(peaks, append=n_samples)
    in_range = (length >= s.min_rr) & (length <= s.max_rr)
    complete = (start >= 0) & (np.arange(len(peaks)) < len(peaks) - 1)
    return pd.DataFrame(
        {
            "beat": np.arange(len(peaks), dtype=np.int64),
            "peak": peaks.astype(np.int64),
            "start": np.maximum(start, 0).astype(np.int64),
            "length": length.astype(np.int64),
            "kept": in_range & complete,
        }
    )


def beats_metadata(p: SegmentParams) -> dict[str, str]:
    """The key-value metadata of ``beats.parquet``: the segment parameters that later stages read from it
    (:func:`beatflow.io.tables.beats_parameters`)."""
    from beatflow.io.tables import BEATS_METADATA

    return {name: repr(float(getattr(p, name))) for name in BEATS_METADATA}


def segment(record: str, inputs: dict, outputs: dict, p: SegmentParams, backend, work_bytes: int | None = None) -> None:
    """Detect the beats of one record and write ``beats.parquet``.

    Parameters
    ----------
    record : str
        The record's name (for messages).
    inputs : dict
        ``signal``: its ``signal.parquet``.
    outputs : dict
        ``beats``: the ``beats.parquet`` to write.
    p : SegmentParams
        The ``segment.*`` config keys, converted to samples here at the signal's rate.
    backend : Backend
        Where to compute (:func:`beatflow.backend.select_backend`).
    work_bytes : int, optional
        Device memory the convolutions may use at once (None: chosen from the free memory).

    Raises
    ------
    BeatflowError
        When the recording is shorter than 4 ``max_rr_s``, has fewer than 3 beats, or does not fit in memory.
    """
    from beatflow.io.tables import read_signal, signal_info, write_frame

    signal_path = inputs["signal"]

    def failure(problem: str) -> BeatflowError:
        return BeatflowError(problem, record=record, path=str(signal_path))

    fs, leads = signal_info(signal_path)
    signals, _ = read_signal(signal_path, backend, leads[:2])
    x, second = signals[leads[0]], signals.get(leads[1]) if len(leads) > 1 else None
    duration = x.shape[0] / fs
    if duration < 4 * p.max_rr_s:
        raise failure(f"recording is {duration:.1f} s long; need at least {4 * p.max_rr_s:.1f} s")
    s = p.in_samples(fs)
    try:
        peaks = detect_peaks(x, s, backend, work_bytes, second)
    except MemoryError as exc:  # cupy's and RMM's out-of-memory errors are MemoryErrors
        raise failure(
            f"out of {backend.name.upper()} memory segmenting {x.shape[0]} samples ({x.nbytes / 1e9:.1f} GB "
            "per lead): run this record with device: cpu or on a GPU with more memory"
        ) from exc
    if len(peaks) < 3:
        raise failure(f"found {len(peaks)} beat(s) in lead {leads[0]!r}: flat line or no ECG?")
    table = beats_table(peaks, x.shape[0], s)
    write_frame(table, outputs["beats"], beats_metadata(p))
    log.info(
        "segment %s: %d beats (%d kept), mean heart rate %.1f bpm, lead %s",
        record,
        len(table),
        int(table.kept.sum()),
        60 * (len(peaks) - 1) / ((peaks[-1] - peaks[0]) / fs),
        leads[0],
    )
    warn_if_implausible(record, x, peaks, fs, backend)


def implausible_rate(x, peaks: np.ndarray, fs: float, backend) -> str | None:
    """What is wrong where the median RR or QRS width is outside :data:`PLAUSIBLE_RR_S` or
    :data:`PLAUSIBLE_QRS_S` (a wrong sampling rate, most likely); None where both are plausible or there are
    too few beats to tell."""
    if len(peaks) < 3:
        return None
    rr_s, qrs_s = float(np.median(np.diff(peaks))) / fs, qrs_width_s(x, peaks, fs, backend)
    if PLAUSIBLE_RR_S[0] <= rr_s <= PLAUSIBLE_RR_S[1] and PLAUSIBLE_QRS_S[0] <= qrs_s <= PLAUSIBLE_QRS_S[1]:
        return None
    return (
        f"median RR {rr_s:.3f} s ({60 / rr_s:.0f} bpm) and median QRS width {1000 * qrs_s:.0f} ms are implausible "
        f"at the stated {fs:g} Hz: is the record's sampling rate right?"
    )


def warn_if_implausible(record: str, x, peaks: np.ndarray, fs: float, backend) -> None:
    """Log :func:`implausible_rate`'s warning, if any."""
    problem = implausible_rate(x, peaks, fs, backend)
    if problem:
        log.warning("segment %s: %s", record, problem)


def qrs_width_s(x, peaks: np.ndarray, fs: float, backend) -> float:
    """The median width (s) of the QRS complexes at half their height, over up to 500 beats spread over the
    record (the first lead, from its median in 0.3 s around each peak)."""
    half = max(2, int(0.15 * fs))
    inside = peaks[(peaks >= half) & (peaks < x.shape[0] - half)]
    chosen = inside[np.linspace(0, len(inside) - 1, min(len(inside), 500)).astype(np.int64)]
    windows = backend.to_host(x[backend.xp.asarray(chosen[:, None] + np.arange(-half, half + 1))])
    height = np.abs(windows - np.median(windows, axis=1, keepdims=True))
    above = height >= height[:, half : half + 1] / 2
    return float(np.median(np.argmin(above[:, half:], axis=1) + np.argmin(above[:, half::-1], axis=1))) / fs
