"""The noise veto: drop detected peaks that are noise by rhythm and by shape together.

In heavy muscle noise the detector's envelope has peaks as large as QRS complexes; amplitude alone cannot
tell them apart. A candidate is dropped when all three hold:

* *rhythm*: without it, the interval between its neighbours is below ``veto_rr`` × the local reference RR
  (it splits an ordinary interval in two; a premature beat does not, since the beat after it comes late);
* *shape*: its QRS (±``HALF_WINDOW_S``, band-passed ``BAND_HZ``) correlates with the record's median beat below
  ``veto_correlation`` (normal and premature sinus beats correlate near 1, noise near 0.6);
* *strength*: its envelope is below ``veto_strength`` × the smaller of its neighbours'.

Candidates are visited weakest first (envelope × correlation) and the neighbour links updated as they go,
so a beat next to a noise peak is judged against its true neighbours once the noise peak is gone. The local
reference RR comes from the candidates' own intervals, which noise shortens; so the walk is repeated, with the
reference of the survivors, until it drops nothing more (two or three passes; at most ``MAX_PASSES``).
The correlation is computed with the array module ``xp`` where the signal is; the walk runs on the host
over the peaks only (a beat-sized array).
"""

from __future__ import annotations

import numba
import numpy as np

HALF_WINDOW_S = 0.06  # the QRS window compared with the template
BAND_HZ = (5.0, 40.0)  # the QRS band: baseline and T waves out
RR_WINDOW = 15  # candidate intervals in the local reference RR
RR_QUANTILE = 0.75  # the sinus interval even in bigeminy (see score.rhythm_ratio)
MAX_PASSES = 8


def qrs_correlation(x, fs: float, peaks, strength, xp, work_bytes: int | None = None):
    """Pearson correlation of each peak's QRS window with the median window of the stronger half of the peaks."""
    from .filters import band_pass

    y = band_pass([x], fs, *BAND_HZ, xp, work_bytes)[0]
    half = max(1, round(HALF_WINDOW_S * fs))
    index = xp.clip(peaks[:, None] + xp.arange(-half, half + 1)[None, :], 0, y.shape[0] - 1)
    windows = y[index]
    windows -= windows.mean(axis=1, keepdims=True)
    template = xp.median(windows[strength >= xp.median(strength)], axis=0)
    norms = xp.linalg.norm(windows, axis=1) * xp.linalg.norm(template)
    return windows @ template / xp.maximum(norms, np.finfo(np.float32).tiny)


def reference_rr(peaks: np.ndarray) -> np.ndarray:
    """Per peak, the upper quartile of the ``RR_WINDOW`` candidate intervals around it (samples)."""
    import pandas as pd

    rr = np.diff(peaks).astype(np.float64)
    local = pd.Series(rr).rolling(RR_WINDOW, center=True, min_periods=1).quantile(RR_QUANTILE).to_numpy()
    return np.concatenate([local[:1], local])


@numba.njit(cache=True)
def vetoed(peaks, strength, correlation, reference, max_merged, max_strength, max_correlation):
    """Boolean mask of the peaks the veto drops (host arrays; see the module docstring)."""
    n = peaks.shape[0]
    drop = np.zeros(n, np.bool_)
    before = np.arange(n) - 1
    after = np.arange(n) + 1
    for i in np.argsort(strength * correlation, kind="mergesort"):
        a, b = before[i], after[i]
        if a < 0 or b >= n:
            continue
        if (correlation[i] < max_correlation and strength[i] < max_strength * min(strength[a], strength[b])
                and peaks[b] - peaks[a] < max_merged * reference[i]):
            drop[i] = True
            after[a], before[b] = b, a
    return drop


def noise_veto(x, fs: float, peaks, strength, p, backend, work_bytes: int | None = None) -> np.ndarray:
    """Host int64 peaks that survive the veto; ``peaks`` and ``strength`` (envelope at each) are ``xp`` arrays."""
    if p.veto_rr <= 0 or peaks.shape[0] < 3:
        return backend.to_host(peaks).astype(np.int64)
    correlation = qrs_correlation(x, fs, peaks, strength, backend.xp, work_bytes)
    peaks, strength, correlation = (backend.to_host(a) for a in (peaks, strength, correlation))
    peaks, strength, correlation = peaks.astype(np.int64), strength.astype(np.float64), correlation.astype(np.float64)
    for _ in range(MAX_PASSES):
        drop = vetoed(peaks, strength, correlation, reference_rr(peaks), p.veto_rr, p.veto_strength,
                      p.veto_correlation)
        if not drop.any():
            break
        peaks, strength, correlation = peaks[~drop], strength[~drop], correlation[~drop]
    return peaks
