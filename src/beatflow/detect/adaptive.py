"""Adaptive thresholding of the detection envelope's candidate peaks (Pan and Tompkins, IEEE TBME 32(3),
1985; Hamilton and Tompkins, IEEE TBME 33(12), 1986).

The envelope's NMS peaks above a low floor are visited in time order, on the host (a beat-sized array). Two
running estimates follow the record: the signal level ``SPK`` (peaks taken as beats) and the noise level
``NPK`` (the others), each an exponential average with weight ``LEARN`` (1/8, as Pan and Tompkins). A peak
is a beat when it reaches ``THR = NPK + THRESHOLD_FRACTION × (SPK − NPK)`` (their 0.25) and

* it is at least ``refractory_s`` (200 ms: no second ventricular depolarisation is possible sooner) after the
  previous beat; a larger peak inside the refractory period replaces the previous beat instead;
* *T-wave discrimination*: when it is within :data:`T_WAVE_S` of the previous beat, its maximum slope is at
  least ``T_SLOPE`` (half) that of the previous beat (a T wave rises slowly) or its envelope is larger than
  the previous beat's. The second clause is ours: a slow peak larger than the QRS before it, that soon, is a
  wide premature (ventricular) complex, not its T wave. A peak taken for a T wave is the heart's, not noise,
  so it does not update ``NPK`` (T waves larger than the QRS would otherwise lift the threshold over the QRS
  complexes).

*Search-back*: when no beat has come for ``SEARCH_BACK_RR`` (1.66) × the mean of the last ``RR_AVERAGE`` (8)
intervals, the largest peak since the previous beat that reaches ``THR / 2`` and passes the refractory and
T-wave tests becomes a beat (and updates ``SPK`` with weight 1/4, as theirs).

After the pass, the T-wave test is applied both ways (:func:`p_or_t_wave`): of two beats closer than
:data:`T_WAVE_S`, the slower and smaller one goes, so a P wave taken before its QRS (Hamilton and Tompkins
ignore peaks that precede *or* follow larger ones) goes too; so does one with under :data:`FLAT_SLOPE` of the
other's slope whatever its size (a tall T wave in a chest lead), and, closer than :data:`CLOSE_QRS_S`, one no
steeper than the other and under :data:`WAVE_SHARE` of its envelope (a P wave as steep as a small QRS, MIT-BIH
108's first lead).

``SPK`` starts at 1 (the envelope is in units of the record's typical beat), ``NPK`` at 0; both are in the
envelope's dimensionless units, and the slopes are only compared with each other, so nothing depends on the
sampling rate or the gain.
"""

from __future__ import annotations

import numba
import numpy as np

LEARN = 0.125  # Pan and Tompkins' running-estimate weight
SEARCH_LEARN = 0.25  # ... for a beat found by search-back
THRESHOLD_FRACTION = 0.25  # THR = NPK + 0.25 (SPK - NPK)
SEARCH_BACK_RR = 1.66  # search back after 166 % of the mean RR without a beat
RR_AVERAGE = 8  # intervals in the mean RR
T_WAVE_S = 0.36  # s: a peak this close to a beat may be its T (or P) wave; the lone-lead veto's interval too
T_SLOPE = 0.5  # ... and is, if its maximum slope is below half the beat's
SLOPE_HALF_S = 0.04  # the maximum slope is looked for within ±40 ms of the peak
FLAT_SLOPE = 0.15  # ... and is, whatever its size, below 0.15 of the beat's (wide QRS complexes: 0.27 and more)
CLOSE_QRS_S = 0.25  # s: two QRS complexes this close are all but unknown (the ventricles' refractory period)
WAVE_SHARE = 0.8  # ... so of two peaks this close, one under 0.8 of the other's envelope is its P or T wave


def max_slope(band, fs: float, peaks, xp):
    """At each of ``peaks``, the largest magnitude of the first difference of the band-passed lead ``band``
    within ±``SLOPE_HALF_S`` (a gather of beat-sized windows)."""
    from beatflow.detect.peaks import window_index

    index = window_index(peaks, max(1, round(SLOPE_HALF_S * fs)), band.shape[0], xp)
    w = band[index]
    return xp.abs(xp.diff(w, axis=1)).max(axis=1)


@numba.njit(cache=True)
def _select(t, value, slope, refractory, t_wave, init_rr):
    n = t.shape[0]
    beat = np.zeros(n, np.bool_)
    spk, npk = 1.0, 0.0
    last = -1  # index of the previous beat
    rr = np.full(RR_AVERAGE, init_rr)
    n_rr = 0
    best = -1  # the largest non-beat peak since the previous beat that passed the timing tests
    for i in range(n):
        thr = npk + THRESHOLD_FRACTION * (spk - npk)
        v = value[i]
        if last >= 0 and t[i] - t[last] < refractory:
            if v > value[last] and v >= thr:  # the larger of two peaks within the refractory period
                beat[last] = False
                beat[i] = True
                last = i
            else:
                npk = LEARN * v + (1 - LEARN) * npk
            continue
        t_wave_like = last >= 0 and t[i] - t[last] < t_wave and slope[i] < T_SLOPE * slope[last] and v < value[last]
        mean_rr = rr.mean()
        # search-back: the interval up to this peak is long and holds a peak above half the threshold
        if last >= 0 and best >= 0 and t[i] - t[last] > SEARCH_BACK_RR * mean_rr and value[best] >= thr / 2:
            beat[best] = True
            spk = SEARCH_LEARN * value[best] + (1 - SEARCH_LEARN) * spk
            rr[n_rr % RR_AVERAGE] = t[best] - t[last]
            n_rr += 1
            last = best
            best = -1
            if t[i] - t[last] < refractory:
                npk = LEARN * v + (1 - LEARN) * npk
                continue
            t_wave_like = t[i] - t[last] < t_wave and slope[i] < T_SLOPE * slope[last] and v < value[last]
        if v >= thr and not t_wave_like:
            beat[i] = True
            spk = LEARN * v + (1 - LEARN) * spk
            if last >= 0:
                rr[n_rr % RR_AVERAGE] = t[i] - t[last]
                n_rr += 1
            last = i
            best = -1
        elif not t_wave_like:  # a T wave is the heart's, not noise: it must not raise the noise level
            npk = LEARN * v + (1 - LEARN) * npk
            if best < 0 or v > value[best]:
                best = i
    return beat


def adaptive_select(peaks: np.ndarray, value: np.ndarray, slope: np.ndarray, fs: float, p) -> np.ndarray:
    """The candidate ``peaks`` (host int64, increasing) taken as beats; ``value`` is the envelope and ``slope``
    the :func:`max_slope` at each (host arrays)."""
    if peaks.shape[0] == 0:
        return peaks
    t = peaks.astype(np.float64) / fs
    init_rr = 1.0  # s: a resting heart rate until eight intervals are known
    slope = slope.astype(np.float64)
    keep = _select(t, value.astype(np.float64), slope, p.refractory_s, T_WAVE_S, init_rr)
    return peaks[keep][~p_or_t_wave(t[keep], slope[keep], value[keep])]


def p_or_t_wave(t: np.ndarray, slope: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Mask of the beats (times ``t`` in s, increasing) that are a P or T wave of a beat beside them: within
    :data:`T_WAVE_S` of it with less than :data:`T_SLOPE` times its maximum slope and a smaller envelope ``value``
    (Pan and Tompkins' T-wave test, applied both ways, as Hamilton and Tompkins ignore peaks that precede or
    follow larger ones), or with less than :data:`FLAT_SLOPE` times its slope; within :data:`CLOSE_QRS_S` of it,
    no steeper and under :data:`WAVE_SHARE` of its envelope."""
    gap = np.diff(t)
    close, near = gap < T_WAVE_S, gap < CLOSE_QRS_S

    def wave(peak: slice, beat: slice) -> np.ndarray:  # per interval: its ``peak`` end beside its ``beat`` end
        slow = slope[peak] < T_SLOPE * slope[beat]
        flat = slope[peak] < FLAT_SLOPE * slope[beat]
        small = value[peak] < WAVE_SHARE * value[beat]
        return close & ((slow & (value[peak] < value[beat])) | flat) | near & (slope[peak] <= slope[beat]) & small

    first, last = slice(None, -1), slice(1, None)
    return np.r_[wave(first, last), False] | np.r_[False, wave(last, first)]
