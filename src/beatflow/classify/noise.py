"""Beats classed V whose shape noise hides: Q (EC57's unclassifiable), or N where a bigeminy's timing says
conducted. Noise that reaches the QRS band (muscle, electrode motion) makes a sinus beat's shape unlike the record's
templates and is itself detected now and then; the trees, which learnt shape against those templates, call such
beats V, and a few in a row make a false ventricular run. A beat classed V whose QRS, in the clearest of its leads,
rises less than :data:`MIN_SNR` times above the peaks of that lead's local noise, and whose shape recurs in none of
its leads, is Q: the evidence of a ventricular origin is the shape, and there is none to read (the Holter practice
of leaving beats in artefact unclassified rather than counting them as ectopy). A shape that recurs is read: the
detector's test (:func:`beatflow.detect.veto.recurring` on each lead's QRS band, the beats classed V its suspects:
look-alikes among 1 % of the beats) keeps a ventricular tachycardia whose wide complexes fill the QRS band between
its beats (MIT-BIH 205), where a burst's detections and the sinus beats it deforms have none.

Where the shape is hard to read, the rhythm says more. A beat classed V between two beats classed V, at the end
of an interval more than ``ONSET`` longer than both around it, at least ``1 − ONSET`` of the sustained sinus
interval (``rr_pre_sustained``: a pause, not a beat of a fast ventricular rhythm), and with the beat two before
or two after it also at the end of such an interval (the pattern alternates), sits where a ventricular bigeminy
puts its conducted beat; where its QRS rises less than :data:`PAUSE_SNR` times above its leads' noise, it is N
(:func:`conducted_in_noise`): a burst deforms the conducted beat of MIT-BIH 106's bigeminy and the trees read
`V N V` as a ventricular run. A clear QRS (the middle beat of MIT-BIH 223's triplets after a pause, of a shape of
its own) keeps its class.

Per lead, about each such beat: the lead band-passed to the detector's QRS band
(:data:`beatflow.detect.veto.BAND_HZ`, baseline wander and T waves out), the QRS amplitude its largest magnitude
within :data:`QRS_S` of the R peak, the noise the :data:`NOISE_QUANTILE` quantile of the magnitude within
:data:`HALF_S` of it and farther than :data:`CLEAR_S` from every detected beat (noise alone comes to about 1.5:
the largest of a QRS window's samples against the 90th percentile of others like them). Windows are read about
those beats only (:func:`beatflow.holter.af.samples_at`: a lead on the GPU or in a parquet file gives only those
samples).
"""

from __future__ import annotations

import numpy as np

MIN_SNR = 3.0  # a QRS under three times its lead's local noise peaks in every lead cannot be classed by its shape
PAUSE_SNR = 5.0  # ... and under five times does not outweigh the timing of a bigeminy's conducted beat
QRS_S = 0.05  # s: the QRS amplitude is looked for within this of the R peak
HALF_S = 1.0  # s: the local noise is measured within this of the R peak
NOISE_QUANTILE = 0.9  # ... as this quantile of the band's magnitude (the noise's peaks, not its typical size)
CLEAR_S = 0.12  # s: ... on the samples farther than this from every beat (QRS complexes out)
PAD_S = 0.5  # s: read this much more each side and filter it, so that the filter's edges fall outside


def snr(leads: list, fs: float, peaks: np.ndarray, which: np.ndarray) -> np.ndarray:
    """For the beats ``which`` (indices into ``peaks``, samples of ``leads``, increasing), the largest over the
    ``leads`` of the QRS amplitude over the local noise (the module docstring); infinite where a window holds
    no sample clear of the beats (a rate over 250 bpm)."""
    from beatflow.detect.peaks import window_index
    from beatflow.detect.veto import BAND_HZ
    from beatflow.dsp.filters import butter_band_pass
    from beatflow.holter.af import samples_at

    half, pad = round(HALF_S * fs), round(PAD_S * fs)
    at = peaks[which]
    around = at[:, None] + np.arange(-half, half + 1)[None, :]
    after = np.searchsorted(peaks, around)
    nearest = np.minimum(
        np.abs(around - peaks[np.maximum(after - 1, 0)]), np.abs(peaks[np.minimum(after, len(peaks) - 1)] - around)
    )
    clear = nearest > round(CLEAR_S * fs)
    some = clear.any(1)
    qrs = np.abs(around - at[:, None]) <= round(QRS_S * fs)
    best = np.zeros(len(at))
    for x in leads:
        index = window_index(at, half + pad, len(x), np)
        band = np.abs(butter_band_pass(samples_at(x, index).astype(np.float64), fs, *BAND_HZ))[:, pad:-pad]
        amplitude = np.where(qrs, band, 0.0).max(1)
        noise = np.full(len(at), np.nan)
        noise[some] = np.nanquantile(np.where(clear[some], band[some], np.nan), NOISE_QUANTILE, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(np.isnan(noise), np.inf, amplitude / noise)
        best = np.maximum(best, ratio)
    return best


def recurs(leads: list, fs: float, peaks: np.ndarray, suspect: np.ndarray) -> np.ndarray:
    """Mask over ``peaks`` of the ``suspect`` beats whose QRS shape recurs among the suspects in any of the
    ``leads`` (numpy or cupy arrays: :func:`beatflow.detect.veto.recurring` on each lead's QRS band, where the lead
    lies)."""
    from beatflow.backend import backend_of
    from beatflow.detect.veto import qrs_band, recurring

    out = np.zeros(len(peaks), bool)
    for x in leads:
        backend = backend_of(x)
        out |= recurring(qrs_band(x, fs, backend.xp), fs, peaks, suspect, backend)
    return out


def too_noisy(cls: np.ndarray, time_s: np.ndarray, signal) -> np.ndarray:
    """Which beats (a boolean mask) the module docstring turns from V to Q; ``signal``: a callable returning
    ``(leads, fs)``, called only where the record has beats classed V; the shapes compared only where some of
    them rise under :data:`MIN_SNR`."""
    from beatflow.classify.features import leads_and_peaks

    out = np.zeros(len(cls), bool)
    which = np.flatnonzero(cls == "V")
    if len(which) == 0:
        return out
    leads, fs, peaks = leads_and_peaks(signal, time_s)
    low = which[snr(leads, fs, peaks, which) < MIN_SNR]
    if len(low):
        out[low] = ~recurs(leads, fs, peaks, cls == "V")[low]
    return out


def conducted_in_noise(cls: np.ndarray, time_s: np.ndarray, features: np.ndarray, signal) -> np.ndarray:
    """Which beats (a boolean mask) the module docstring's second rule turns from V to N; ``signal`` as for
    :func:`too_noisy`, called only where such a beat is found. ``features``: the beats'
    :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.context import beat_log_rr, early_and_late, ends_pause, flanked
    from beatflow.classify.features import leads_and_peaks

    out = np.zeros(len(cls), bool)
    _, late = early_and_late(beat_log_rr(time_s))
    v = cls == "V"
    paused = ends_pause(late, features)
    alternates = np.r_[False, False, late[:-2]] | np.r_[late[2:], False, False]
    which = np.flatnonzero(v & paused & alternates & flanked(v))
    if len(which) == 0:
        return out
    leads, fs, peaks = leads_and_peaks(signal, time_s)
    out[which[snr(leads, fs, peaks, which) < PAUSE_SNR]] = True
    return out
