"""Atrial fibrillation from RR intervals: the low-complexity detector of Petrėnas, Marozas and Sörnmo
(Computers in Biology and Medicine 65:184–191, 2015; MIT-BIH AFDB Se 97.1 %, Sp 98.3 %), with the beat classes
used where the paper has none.

The detector, per RR interval ``r(n)`` (seconds):

1. ectopic-beat filtering: a 3-point median ``r_m(n) = median{r(n-1), r(n), r(n+1)}`` removes an isolated
   premature beat's short-long pair;
2. the RR trend ``r̄(n)``: forward-backward exponential average of ``r`` (α = 0.02);
3. irregularity ``M(n)``: the share of the 28 pairs of the last N = 8 median-filtered intervals that differ by
   at least γ = 30 ms, smoothed by the same averager and divided by the trend: ``I(n) = M̄(n) / r̄(n)``
   (irregularity per second, so that a fast irregular rhythm scores higher);
4. bigeminy suppression: ``B(n) = (Σ r_m / Σ r − 1)²`` over the same 8 intervals, smoothed; in bigeminy the
   median filter only swaps the short and long intervals, so ``B̄`` stays near 0 and the output is ``B̄``
   itself (below threshold); elsewhere (``B̄ ≥ δ = 2·10⁻⁴``) the output is ``I(n)``;
5. AF where the output exceeds η = 0.725.

Published constants (the paper's), none per record. What beatflow adds:

- beats classed ventricular (``V``) or fusion (``F``) are taken out before step 1: both intervals that touch
  such a beat are dropped and the series closes over them (a premature ventricular beat's morphology is
  reliable, and a run of them is not AF). Supraventricular (``S``) beats are kept: a classifier that calls
  beats S by their prematurity calls many AF beats S, and dropping them would hide the AF;
- the series is cut at every interval that is not analysable (next to a ``Q`` beat, in an excluded stretch,
  or a gap without beats): each stretch is analysed on its own;
- an episode is kept when it lasts at least :data:`MIN_EPISODE_S` = 30 s, the clinical definition of an AF
  episode (ESC guidelines; the detector's 8-beat window otherwise fires on brief runs of irregular ectopy);
- and when the majority of its successive RR differences exceed 50 ms (pNN50 ≥ :data:`PNN50_MIN` = 0.5 over
  its intervals, ectopic ones left out): AF is irregular from beat to beat, while the 8-beat pairwise count
  also fires on the slow respiratory modulation of a fast sinus rhythm (MIT-BIH 215: 71 s of sinus
  tachycardia at I ≈ 0.75, pNN50 0.04; AF in 201 and 203: pNN50 0.78–0.80, 60-beat windows ≥ 0.60 in 99 %;
  pNN50 is the RR feature that best separates AF, Akande et al., CinC 2023).
"""

from __future__ import annotations

import numpy as np

N_WINDOW = 8           # beats in the irregularity window
GAMMA_S = 0.03         # pairwise RR difference that counts as irregular (s)
ALPHA = 0.02           # exponential averager's smoothing factor
DELTA = 2e-4           # bigeminy suppression threshold on B̄
ETA = 0.725            # detection threshold on I (1/s)
MIN_EPISODE_S = 30.0   # shortest AF episode reported
PNN50_MIN = 0.5        # an episode's share of successive RR differences > 50 ms must reach this
ECTOPIC = ("V", "F")   # classes whose intervals leave the RR series


def median3(r: np.ndarray) -> np.ndarray:
    """3-point running median, the ends repeating their neighbour."""
    if len(r) < 3:
        return r.copy()
    padded = np.concatenate([r[:1], r, r[-1:]])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, 3), axis=1)


def averager(x: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Forward-backward exponential average ``y(n) = (1-α) y(n-1) + α x(n)`` (zero phase), started at the
    series' first (and, backwards, last) value."""
    from scipy.signal import lfilter

    b, a = [alpha], [1.0, alpha - 1.0]
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return x.copy()
    forward = lfilter(b, a, x, zi=[(1 - alpha) * x[0]])[0]
    backward = lfilter(b, a, forward[::-1], zi=[(1 - alpha) * forward[-1]])[0]
    return backward[::-1]


def irregularity(rm: np.ndarray, n: int = N_WINDOW, gamma: float = GAMMA_S) -> np.ndarray:
    """``M(k)``: share of the pairs among ``rm[k-n+1..k]`` differing by ≥ ``gamma`` (the first n-1 windows are
    short: their missing pairs count as regular, as in the paper's causal start)."""
    padded = np.concatenate([np.full(n - 1, np.nan), rm])
    w = np.lib.stride_tricks.sliding_window_view(padded, n)
    count = np.zeros(len(rm))
    for j in range(n - 1):
        count += np.nansum(np.abs(w[:, j + 1:] - w[:, j:j + 1]) >= gamma, axis=1)
    return count * 2.0 / (n * (n - 1))


def bigeminy(r: np.ndarray, rm: np.ndarray, n: int = N_WINDOW) -> np.ndarray:
    """``B(k) = (Σ rm / Σ r − 1)²`` over the last ``n`` intervals."""
    cr, cm = np.concatenate([[0.0], np.cumsum(r)]), np.concatenate([[0.0], np.cumsum(rm)])
    k = np.arange(1, len(r) + 1)
    lo = np.maximum(k - n, 0)
    return ((cm[k] - cm[lo]) / (cr[k] - cr[lo]) - 1.0) ** 2


def detector_output(r: np.ndarray) -> np.ndarray:
    """The detector's output ``O(n)`` for one uninterrupted RR series (seconds); AF where ``O > ETA``."""
    r = np.asarray(r, dtype=np.float64)
    if len(r) == 0:
        return r.copy()
    rm = median3(r)
    i_ratio = averager(irregularity(rm)) / averager(r)
    b_smooth = averager(bigeminy(r, rm))
    return np.where(b_smooth >= DELTA, i_ratio, b_smooth)


def detect_af(time_s: np.ndarray, classes: np.ndarray | None = None, valid: np.ndarray | None = None,
              min_episode_s: float = MIN_EPISODE_S, ectopic=ECTOPIC,
              pnn50_min: float = PNN50_MIN) -> list[tuple[float, float]]:
    """AF episodes ``[(start_s, end_s), …]`` from beat times (seconds, increasing) and their classes.

    ``valid[i]`` says whether the interval from beat i to beat i+1 can be analysed (default: all); the series is
    cut at the others. Intervals touching a beat of a class in ``ectopic`` are left out of the series.
    ``min_episode_s`` and ``pnn50_min`` are the episode gates (0 turns each off, for ablation)."""
    t = np.asarray(time_s, dtype=np.float64)
    n_rr = max(len(t) - 1, 0)
    if n_rr == 0:
        return []
    ok = np.ones(n_rr, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).copy()
    keep = ok.copy()
    if classes is not None and len(ectopic):
        ect = np.isin(np.asarray(classes).astype(str), list(ectopic))
        keep &= ~(ect[:-1] | ect[1:])
    # stretches: runs of intervals not cut by an invalid one; ectopic intervals inside are skipped over
    flags = np.zeros(n_rr, dtype=bool)
    jump = np.full(n_rr, np.nan)  # 1 where an interval differs by > 50 ms from the kept one before it
    cuts = np.flatnonzero(~ok)
    bounds = np.concatenate([[-1], cuts, [n_rr]])
    for lo, hi in zip(bounds[:-1] + 1, bounds[1:], strict=True):
        idx = np.flatnonzero(keep[lo:hi]) + lo
        if len(idx) < N_WINDOW:
            continue
        r = t[idx + 1] - t[idx]
        jump[idx[1:]] = np.abs(np.diff(r)) > 0.05
        af = detector_output(r) > ETA
        flags_in = np.zeros(hi - lo, dtype=bool)
        # an AF run over kept intervals covers the skipped ectopic intervals between them
        starts, ends = _runs(af)
        for s, e in zip(starts, ends, strict=True):
            flags_in[idx[s] - lo: idx[e - 1] - lo + 1] = True
        flags[lo:hi] = flags_in
    starts, ends = _runs(flags)
    episodes = []
    for s, e in zip(starts, ends, strict=True):
        share = np.nanmean(jump[s:e]) if np.isfinite(jump[s:e]).any() else 0.0
        if t[e] - t[s] >= min_episode_s and share >= pnn50_min:
            episodes.append((float(t[s]), float(t[e])))
    return episodes


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) indices of the runs of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
