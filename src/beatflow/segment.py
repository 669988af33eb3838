"""segment: first lead → Ricker-wavelet responses at two widths (FFT convolution) → non-maximum suppression
(Numba) → R peaks above an adaptive threshold → ``beats.parquet`` (beat, peak, start, length, kept).

The narrow wavelet matches normal QRS complexes, the wide one the broad complexes of ventricular and
aberrant beats (which the narrow one sees at a third of a normal beat's response, as low as muscle noise).
Each response is oriented (QRS up) and divided by its own local reference, the running median of block
maxima, so the detector works on the larger of two dimensionless envelopes. The second lead, where the
record has one and it shows the first lead's beats, is averaged into the envelope where the first lead is
the noisier (:mod:`beatflow.fusion`) and confirms or refutes the peaks the noise veto suspects
(:func:`lead_support`); the peaks stay on the first lead.

Written once against the array module ``xp`` (cupy on the GPU, numpy on the CPU).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from .convolve import convolve_same
from .errors import BeatflowError
from .params import FromConfig
from .wavelet import ricker_bank

log = logging.getLogger("beatflow")

MEDIAN_BLOCKS = 7  # the threshold follows the median block maximum over ±7 blocks (≈ ±14 s by default)
SUPPORT_S = 0.04  # the second lead's QRS is looked for within this of the first lead's peak


@dataclass(frozen=True)
class SegmentParams(FromConfig):
    """``segment.*`` config keys; windows in seconds."""

    wavelet_width_s: float = 0.015
    wide_wavelet_width_s: float = 0.03
    nms_window_s: float = 0.3
    min_rr_s: float = 0.25
    max_rr_s: float = 3.0
    threshold: float = 0.6
    pre_peak_s: float = 0.25
    veto_rr: float = 1.2
    veto_correlation: float = 0.9
    veto_strength: float = 1.2
    veto_support: float = 0.2
    fuse_leads: bool = True
    search_back: float = 1.5

    @property
    def widths_s(self) -> tuple[float, ...]:
        """The Ricker widths the detector uses (a wide width of 0 turns the second one off)."""
        return (self.wavelet_width_s,) + ((self.wide_wavelet_width_s,) if self.wide_wavelet_width_s else ())

    def block(self, fs: float) -> int:
        """Samples in a reference block (``max_rr_s``: at least one beat in each)."""
        return max(1, math.ceil(self.max_rr_s * fs))

    def nms_half(self, fs: float) -> int:
        """Half the NMS window in samples."""
        return max(1, round(self.nms_window_s * fs / 2))


def wavelet_responses(x, fs: float, widths_s, backend, work_bytes: int | None = None):
    """Convolutions of ``x`` with the Ricker wavelet at each of ``widths_s``: ``[widths, n]`` float32, by FFT in
    bounded memory, one transform of ``x`` for every width; the ends are reflected (zero padding would turn a
    baseline offset into a step there)."""
    return convolve_same(x - x.mean(), ricker_bank(fs, widths_s), backend.xp, work_bytes)


def _rolling_median(values, k: int, xp):
    padded = xp.pad(values, k, mode="edge")
    n = values.shape[0]
    return xp.median(xp.stack([padded[i:i + n] for i in range(2 * k + 1)]), axis=0)


def polarity_and_reference(r, block: int, xp):
    """The sign that turns QRS complexes up, and the per-block reference amplitude of ``sign * r``."""
    n_blocks = max(1, r.shape[0] // block)
    body = r[: n_blocks * block].reshape(n_blocks, block)
    up, down = body.max(axis=1), -body.min(axis=1)
    median_down, median_up = xp.median(xp.stack([down, up]), axis=1).tolist()  # one device-to-host read
    sign = -1.0 if median_down > median_up else 1.0
    reference = _rolling_median(down if sign < 0 else up, MEDIAN_BLOCKS, xp)
    floor = 0.5 * xp.median(reference)  # long pauses and flat stretches must not lower the bar to noise
    return sign, xp.maximum(xp.maximum(reference, floor), np.finfo(reference.dtype).tiny)  # a flat line: 0


def per_block(r, reference, block: int):
    """Divide ``r`` in place by the reference of its block (the last block's for the samples after it)."""
    n_full = min(r.shape[0] // block, reference.shape[0]) * block
    r[:n_full].reshape(-1, block)[...] /= reference[: n_full // block, None]
    r[n_full:] /= reference[-1]
    return r


def detection_envelope(x, fs: float, p: SegmentParams, backend, work_bytes: int | None = None,
                       absolute: bool = False):
    """The larger, sample by sample, of the oriented wavelet responses at ``p.widths_s``, each in units of
    its own local reference (so ``p.threshold`` is a fraction of a typical beat's response); ``absolute``:
    of their magnitudes instead (either polarity counts; the orientation is then always up)."""
    xp = backend.xp
    block = p.block(fs)
    responses = wavelet_responses(x, fs, p.widths_s, backend, work_bytes)
    for r in responses:
        if absolute:
            xp.abs(r, out=r)
        sign, reference = polarity_and_reference(r, block, xp)
        per_block(r, sign * reference, block)  # orient and scale in one pass
    return responses.max(axis=0)


def nms_mask(r, half: int, backend, floor: float = -np.inf):
    """Samples above ``floor`` that are the maximum of ±``half`` samples (Numba CUDA kernel on GPU, njit on
    CPU)."""
    from . import kernels

    if backend.gpu:
        out = backend.xp.empty(r.shape[0], dtype=backend.xp.bool_)
        kernels.nms_cuda(r, half, out, floor)
        return out
    return kernels.nms_cpu(np.ascontiguousarray(r), half, floor)


def window_index(peaks, half: int, n: int, xp):
    """``[peaks, 2·half + 1]`` sample indices of the window ±``half`` around each peak, clipped to ``[0, n)``."""
    return xp.clip(peaks[:, None] + xp.arange(-half, half + 1)[None, :], 0, n - 1)


def lead_support(lead, fs: float, peaks, xp):
    """At each of ``peaks``, the largest value of another lead's magnitude envelope ``lead``
    (:func:`detection_envelope` with ``absolute``) within ±``SUPPORT_S``: about 1 or more where that lead shows
    a QRS complex too, near 0 where it is quiet."""
    return lead[window_index(peaks, max(1, round(SUPPORT_S * fs)), lead.shape[0], xp)].max(axis=1)


def candidates(envelope, fs: float, p: SegmentParams, backend):
    """The NMS peaks of ``envelope`` above ``p.threshold`` (``xp`` int64)."""
    return backend.xp.flatnonzero(nms_mask(envelope, p.nms_half(fs), backend, p.threshold))


def detect_peaks(x, fs: float, p: SegmentParams, backend, work_bytes: int | None = None, second=None) -> np.ndarray:
    """R-peak sample indices (host int64, increasing) of the signal ``x`` (an ``xp`` float32 array): the NMS
    peaks of the envelope above ``p.threshold``, less those the noise veto drops (:mod:`beatflow.veto`), plus
    the beat-shaped ones below it that long intervals hide (:mod:`beatflow.searchback`). Where
    the ``second`` lead (optional, same length) shows the first lead's beats, the envelope is the two leads'
    noise-weighted mean (``fuse_leads``) and the veto asks it too (``veto_support``).

    Memory, per sample: the signal, its centred copy and the two wavelet responses (16 bytes), then the
    envelope and a byte mask; with a second lead, that lead and the first lead's envelope stay while the
    second's is made (24 bytes); then the signal, the veto's band-passed copy of it and the envelopes, with a
    second lead its signal and the fused envelope too (24 bytes); plus ``work_bytes`` for the convolutions."""
    from .searchback import search_back
    from .veto import noise_veto, qrs_band

    envelope = detection_envelope(x, fs, p, backend, work_bytes)
    peaks = candidates(envelope, fs, p, backend)
    fuse = second is not None and p.fuse_leads
    if peaks.shape[0] < 3 or (p.veto_rr <= 0 and not fuse and p.search_back <= 0):
        return backend.to_host(peaks).astype(np.int64)
    lead = None
    if second is not None and (fuse or p.veto_support > 0):
        lead = detection_envelope(second, fs, p, backend, work_bytes, absolute=True)
    band = qrs_band(x, fs, backend.xp, work_bytes)
    if fuse:
        envelope, peaks = fused_detection(envelope, peaks, lead, band, fs, p, backend)
    support = lead_support(lead, fs, peaks, backend.xp) if lead is not None and p.veto_support > 0 else None
    kept = noise_veto(band, fs, peaks, envelope[peaks], p, backend, support)
    return search_back(kept, envelope, band, fs, p, backend)


def fused_detection(envelope, peaks, lead, band, fs: float, p: SegmentParams, backend):
    """``(envelope, peaks)`` of the two leads (:mod:`beatflow.fusion`) if the second lead's envelope ``lead``
    shows the first lead's beat-shaped ``peaks`` (:func:`beatflow.veto.second_lead_confirms`), else as given."""
    from .fusion import fused_envelope, snap
    from .veto import qrs_correlation, second_lead_confirms

    xp = backend.xp
    correlation = qrs_correlation(band, fs, peaks, envelope[peaks], xp)
    if not second_lead_confirms(backend.to_host(lead_support(lead, fs, peaks, xp)), backend.to_host(correlation), p):
        log.info("detection on the first lead alone: the second lead does not show its beats")
        return envelope, peaks
    log.info("detection on both leads, each weighted by its local noise (the second shows the first lead's beats)")
    fused = fused_envelope(envelope, lead, fs, xp)
    return fused, snap(candidates(fused, fs, p, backend), envelope, fs, xp, floor=p.threshold / 2)


def beats_table(peaks: np.ndarray, n_samples: int, fs: float, p: SegmentParams):
    """The ``beats.parquet`` table from host peak indices: windows start ``pre_peak_s`` before each peak and
    last until the next peak (the last beat: to the end of the recording). ``kept`` = inside the recording
    and ``min_rr_s ≤ length ≤ max_rr_s``."""
    import pandas as pd

    pre = round(p.pre_peak_s * fs)
    start = peaks - pre
    length = np.diff(peaks, append=n_samples)
    in_range = (length >= p.min_rr_s * fs) & (length <= p.max_rr_s * fs)
    complete = (start >= 0) & (np.arange(len(peaks)) < len(peaks) - 1)
    return pd.DataFrame({
        "beat": np.arange(len(peaks), dtype=np.int64),
        "peak": peaks.astype(np.int64),
        "start": np.maximum(start, 0).astype(np.int64),
        "length": length.astype(np.int64),
        "kept": in_range & complete,
    })


def segment(record: str, signal_path, out_path, p: SegmentParams, backend, work_bytes: int | None = None) -> None:
    """Detect the beats of one record and write ``beats.parquet``."""
    from .tables import read_signal, signal_info, write_frame

    fs, leads = signal_info(signal_path)
    signals, _ = read_signal(signal_path, backend, leads[:2])
    x, second = signals[leads[0]], signals.get(leads[1]) if len(leads) > 1 else None
    duration = x.shape[0] / fs
    if duration < 4 * p.max_rr_s:
        raise BeatflowError(f"recording is {duration:.1f} s long; need at least {4 * p.max_rr_s:.1f} s",
                            record=record, path=str(signal_path))
    try:
        peaks = detect_peaks(x, fs, p, backend, work_bytes, second)
    except MemoryError as exc:  # cupy's and RMM's out-of-memory errors are MemoryErrors
        raise BeatflowError(f"out of {backend.name.upper()} memory segmenting {x.shape[0]} samples "
                            f"({x.nbytes / 1e9:.1f} GB per lead): run this record with device: cpu or on a "
                            "GPU with more memory", record=record, path=str(signal_path)) from exc
    if len(peaks) < 3:
        raise BeatflowError(f"found {len(peaks)} beat(s) in lead {leads[0]!r}: flat line or no ECG?",
                            record=record, path=str(signal_path))
    table = beats_table(peaks, x.shape[0], fs, p)
    write_frame(table, out_path)
    log.info("segment %s: %d beats (%d kept), mean heart rate %.1f bpm, lead %s", record, len(table),
             int(table.kept.sum()), 60 * (len(peaks) - 1) / ((peaks[-1] - peaks[0]) / fs), leads[0])
