"""Fusion beats (AAMI F): a sinus impulse and a ventricular one depolarise the ventricles together, so the QRS
lies between the record's sinus and ventricular shapes, on the sinus beat's time, after its sinus P wave
(the definition EC57 and the MIT-BIH annotators use; Marriott's criteria). The trees see one beat against the
sinus template only and class such a beat V or N; a beat they class V becomes F where all of these hold:

1. The record has at least :data:`MIN_VENTRICULAR` beats classed V with ``class_p`` ≥ :data:`CONFIDENT` that
   fail condition 2 or 3 (so cannot be fusion beats): the median of their QRS windows, each aligned to the
   median (:func:`beatflow.dsp.templates.template`), is the record's ventricular template; that of its
   regular N beats the sinus template (at most :data:`TEMPLATE_BEATS` of each, spread over the record).
2. It comes on time: its RR interval before within :data:`ON_TIME` of the local median (a ventricular premature
   beat is early; a fusion beat needs the sinus impulse to have arrived).
3. A P wave of the sinus shape precedes it (``p_corr_mean`` ≥ :data:`P_WAVE`).
4. Its QRS (both leads, :data:`~beatflow.classify.features.WINDOWS_S`) is explained as ``a·sinus +
   b·ventricular`` (``a, b > 0``, each template at its best shift within
   :data:`~beatflow.classify.features.SHIFT_S`) better, by at least :data:`MIN_GAIN` of its variance, than by
   either template alone, with a ventricular share ``b‖V‖ / (a‖S‖ + b‖V‖)`` of at most :data:`MAX_SHARE`.

Windows are read about each beat only (:func:`beatflow.holter.af.samples_at`: a lead on the GPU or in a
parquet file gives only those samples), band-passed as the features are and resampled to
:data:`~beatflow.classify.features.FEATURE_FS`, so that the thresholds hold at any sampling rate.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from beatflow.classify.features import (
    BAND_HZ,
    FEATURE_FS,
    MIN_REGULAR,
    SHIFT_S,
    WINDOWS_S,
    column,
    is_regular,
    leads_and_peaks,
    window_samples,
)
from beatflow.dsp.templates import shifted, spread, template

MIN_VENTRICULAR = 10
CONFIDENT = 0.9
TEMPLATE_BEATS = 256
ON_TIME = 0.10
P_WAVE = 0.5
MIN_GAIN = 0.08
MAX_SHARE = 0.8
HALF_S = 0.5  # each window is read this far either side of its R peak, filtered, then cut to the QRS


def on_time(prematurity: np.ndarray) -> np.ndarray:
    """Which of the intervals ``prematurity`` (each a ratio to its local median, e.g. ``rr_pre_local``) come on
    time: within :data:`ON_TIME` of it (False where NaN)."""
    with np.errstate(invalid="ignore"):
        return np.abs(prematurity - 1) <= ON_TIME


def candidates(features: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """The beats (indices) classed V that meet conditions 2 and 3 of the module docstring."""
    with np.errstate(invalid="ignore"):
        p_wave = column(features, "p_corr_mean") >= P_WAVE
    return np.flatnonzero((cls == "V") & on_time(column(features, "rr_pre_local")) & p_wave)


def qrs_windows(leads: list, fs: float, peaks: np.ndarray, pad: int) -> np.ndarray:
    """``[beats, leads, W + 2 pad]`` QRS windows at :data:`FEATURE_FS` about ``peaks`` (samples of ``leads``),
    ``pad`` samples wider each side, each lead's window centred."""
    from scipy.signal import resample_poly

    from beatflow.detect.peaks import window_index
    from beatflow.dsp.filters import butter_band_pass
    from beatflow.holter.af import samples_at

    rate = Fraction(FEATURE_FS / fs).limit_denominator(1000)
    half = round(HALF_S * fs)
    centre = round(half * float(rate))
    lo, hi = window_samples(FEATURE_FS, WINDOWS_S["qrs"])
    lo, hi = lo - pad, hi + pad
    out = []
    for x in leads:
        index = window_index(peaks, half, len(x), np)
        seg = butter_band_pass(samples_at(x, index).astype(np.float64), fs, *BAND_HZ)
        seg = resample_poly(seg, rate.numerator, rate.denominator, axis=1)[:, centre + lo : centre + hi]
        out.append(seg - seg.mean(-1, keepdims=True))
    return np.stack(out, 1)


def mixture(beats: np.ndarray, sinus: np.ndarray, ventricular: np.ndarray, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Per beat of ``beats`` ``[beats, leads, W]`` (centred), against the templates ``[leads, W + 2 pad]``:
    the gain in explained variance of the best ``a·S + b·V`` (``a, b > 0``, each template at any shift) over
    the better template alone, and that fit's ventricular share (condition 4 of the module docstring; -inf and
    NaN where no fit has both weights positive)."""
    s, v = shifted(sinus, pad), shifted(ventricular, pad)  # [shifts, leads, W]
    ww = (beats * beats).sum((1, 2))[:, None, None]
    bs = np.einsum("blw,slw->bs", beats, s)[:, :, None]  # [beats, sinus shifts, 1]
    bv = np.einsum("blw,slw->bs", beats, v)[:, None, :]  # [beats, 1, ventricular shifts]
    ss = (s * s).sum((1, 2))[None, :, None]
    vv = (v * v).sum((1, 2))[None, None, :]
    sv = np.einsum("slw,tlw->st", s, v)[None]
    det = np.maximum(ss * vv - sv * sv, 1e-30)
    a, b = (bs * vv - bv * sv) / det, (bv * ss - bs * sv) / det
    both = (a > 0) & (b > 0)
    explained = np.where(both, (a * bs + b * bv) / ww, -np.inf).reshape(len(beats), -1)
    share = np.where(both, b * np.sqrt(vv) / np.where(both, a * np.sqrt(ss) + b * np.sqrt(vv), 1), np.nan)
    alone = np.maximum((bs**2 / ss / ww).max((1, 2)), (bv**2 / vv / ww).max((1, 2)))
    best = explained.argmax(1)
    rows = np.arange(len(beats))
    return explained[rows, best] - alone, share.reshape(len(beats), -1)[rows, best]


def fusion_beats(features: np.ndarray, cls: np.ndarray, class_p: np.ndarray, time_s: np.ndarray, signal) -> np.ndarray:
    """Which beats (a boolean mask) the module docstring turns from V to F; ``signal``: a callable returning
    ``(leads, fs)``, called only where a record has candidates."""
    out = np.zeros(len(cls), bool)
    chosen = candidates(features, cls)
    ventricular = np.setdiff1d(np.flatnonzero((cls == "V") & (class_p >= CONFIDENT)), chosen)
    regular = is_regular(*(column(features, k) for k in ("rr_pre_local", "rr_post_local", "irregularity")))
    sinus = np.flatnonzero((cls == "N") & regular)
    if len(chosen) == 0 or len(ventricular) < MIN_VENTRICULAR or len(sinus) < MIN_REGULAR:
        return out
    leads, fs, peaks = leads_and_peaks(signal, time_s)
    leads = leads[:2]
    pad = max(1, round(SHIFT_S * FEATURE_FS))
    sinus_template = template(qrs_windows(leads, fs, peaks[spread(sinus, TEMPLATE_BEATS)], 2 * pad), pad)
    v_template = template(qrs_windows(leads, fs, peaks[spread(ventricular, TEMPLATE_BEATS)], 2 * pad), pad)
    beats = qrs_windows(leads, fs, peaks[chosen], 0)
    gain, share = mixture(beats, sinus_template, v_template, pad)
    with np.errstate(invalid="ignore"):
        out[chosen] = (gain >= MIN_GAIN) & (share <= MAX_SHARE)
    return out
