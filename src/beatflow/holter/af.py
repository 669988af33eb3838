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

Published constants (the paper's, as a public re-implementation lists them: tabaraei/LTAF-detection), none
per record (how these stages alone fare on DS1: ``docs/experiments.md``). What beatflow adds:

- beats classed ventricular (``V``) or fusion (``F``) are taken out before step 1: both intervals that touch
  such a beat are dropped and the series closes over them (a premature ventricular beat's morphology is
  reliable, and a run of them is not AF). Supraventricular (``S``) beats are kept: a classifier that calls
  beats S by their prematurity calls many AF beats S, and dropping them would hide the AF;
- the series is cut at every interval that is not analysable (next to a stretch of ``Q`` beats, in an
  excluded stretch, or a gap without beats): each stretch is analysed on its own;
- an episode is kept when it lasts at least :data:`MIN_EPISODE_S` = 30 s, the clinical definition of an AF
  episode (ESC guidelines; the detector's 8-beat window otherwise fires on brief runs of irregular ectopy);
- and when the majority of its successive RR differences exceed 50 ms (pNN50 ≥ :data:`PNN50_MIN` = 0.5 over
  its intervals, ectopic ones left out): AF is irregular from beat to beat, while the 8-beat pairwise count
  also fires on the slow respiratory modulation of a fast sinus rhythm (pNN50 is the RR feature that best
  separates AF, Akande et al., CinC 2023);
- and, when the signal is at hand, when its beats show no consistent P wave (:func:`p_wave_consistency` below
  :data:`P_WAVE_MAX` = 0.5): the mean correlation of each beat's stretch 300–80 ms before its R peak with their
  average, over the episode's beats that are not premature (RR at least the episode's median) and not classed
  V, F or Q. Sinus beats share a P wave there; in AF the fibrillatory waves are not locked to the QRS. The
  threshold lies in the gap between the values of AF and of other candidate episodes; the check is what
  stops ectopy that the classes missed from reading as AF (``docs/experiments.md``).
  An accepted episode's edges are then trimmed, :data:`P_TRIM_BEATS` = 30 beats at a time, while such an
  edge window's consistency reaches :data:`P_TRIM` = 0.7 (above what edge windows inside AF reach): the
  zero-phase smoothing carries the RR stages' decision some beats into the sinus rhythm on either side.
"""

from __future__ import annotations

import numpy as np

from beatflow.holter.quality import band_pass

N_WINDOW = 8  # beats in the irregularity window
GAMMA_S = 0.03  # pairwise RR difference that counts as irregular (s)
ALPHA = 0.02  # exponential averager's smoothing factor
DELTA = 2e-4  # bigeminy suppression threshold on B̄
ETA = 0.725  # detection threshold on I (1/s)
MIN_EPISODE_S = 30.0  # shortest AF episode reported
PNN50_MIN = 0.5  # an episode's share of successive RR differences > 50 ms must reach this
P_WAVE_MAX = 0.5  # an episode whose beats' P-wave consistency reaches this is not AF
P_WINDOW_S = (0.30, 0.08)  # the P wave's window before the R peak (s)
P_MIN_BEATS = 20
P_TRIM = 0.7  # an episode's edge window of P_TRIM_BEATS beats with this P-wave consistency is trimmed
P_TRIM_BEATS = 30
P_TRIM_MIN_BEATS = 8
P_MAX_BEATS = 300
ECTOPIC = ("V", "F")  # classes whose intervals leave the RR series


def median3(r: np.ndarray) -> np.ndarray:
    """3-point running median, the ends repeating their neighbour."""
    if len(r) < 3:
        return r.copy()
    padded = np.concatenate([r[:1], r, r[-1:]])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, 3), axis=1)


def exponential_average(x: np.ndarray, alpha: float = ALPHA, block: int = 256) -> np.ndarray:
    """``y(n) = (1-α) y(n-1) + α x(n)`` started at ``y(-1) = x(0)``, in numpy: within blocks of ``block`` samples
    a scaled cumulative sum (``(1-α)^-block`` stays small: 176 for α = 0.02), across blocks a short loop. Equal
    to ``scipy.signal.lfilter`` to rounding, without importing scipy.signal (slow to import)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n == 0:
        return x.copy()
    beta = 1.0 - alpha
    nb = -(-n // block)
    xb = np.zeros(nb * block)
    xb[:n] = x
    xb = xb.reshape(nb, block)
    j = np.arange(block)
    partial = alpha * beta**j * np.cumsum(xb * beta ** (-j), axis=1)
    carry = np.empty(nb)
    prev = x[0]
    for k in range(nb):
        carry[k] = prev
        prev = beta**block * prev + partial[k, -1]
    y = partial + beta ** (j + 1)[None, :] * carry[:, None]
    return y.reshape(-1)[:n]


def averager(x: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Forward-backward exponential average (zero phase), started at the series' first (and, backwards, last)
    value."""
    forward = exponential_average(x, alpha)
    return exponential_average(forward[::-1], alpha)[::-1]


def irregularity(rm: np.ndarray, n: int = N_WINDOW, gamma: float = GAMMA_S) -> np.ndarray:
    """``M(k)``: share of the pairs among ``rm[k-n+1..k]`` differing by ≥ ``gamma``. The first n-1 windows are
    short: their share is over the pairs they have (the paper, causal, counts the missing ones as regular, which
    holds back a recording that starts in AF for some 20 beats); the first interval takes the second's."""
    padded = np.concatenate([np.full(n - 1, np.nan), rm])
    w = np.lib.stride_tricks.sliding_window_view(padded, n)
    count = np.zeros(len(rm))
    for j in range(n - 1):
        count += np.nansum(np.abs(w[:, j + 1 :] - w[:, j : j + 1]) >= gamma, axis=1)
    have = np.minimum(np.arange(1, len(rm) + 1), n)
    pairs = have * (have - 1) / 2.0
    m = np.divide(count, pairs, out=np.zeros(len(rm)), where=pairs > 0)
    if len(m) > 1:
        m[0] = m[1]
    return m


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


def detect_af(
    time_s: np.ndarray,
    classes: np.ndarray | None = None,
    valid: np.ndarray | None = None,
    min_episode_s: float = MIN_EPISODE_S,
    ectopic=ECTOPIC,
    pnn50_min: float = PNN50_MIN,
    signal=None,
) -> list[tuple[float, float]]:
    """AF episodes from beat times and their classes (see the module docstring).

    Parameters
    ----------
    time_s : numpy.ndarray
        Beat times in seconds, increasing.
    classes : numpy.ndarray of str, optional
        Each beat's AAMI class; intervals touching a beat of a class in ``ectopic`` leave the RR series.
        None: no beat is left out.
    valid : numpy.ndarray of bool, optional
        ``valid[i]``: whether the interval from beat i to beat i+1 can be analysed (default: all); the series
        is cut at the others.
    min_episode_s : float, optional
        Shortest episode kept (0 turns the gate off, for ablation).
    ectopic : sequence of str, optional
        The classes whose intervals leave the series.
    pnn50_min : float, optional
        Share of successive RR differences over 50 ms an episode must reach (0 turns the gate off).
    signal : callable, optional
        Returns ``(x, fs)``, one lead as a numpy array; called only when an episode is to be checked for P
        waves (so that a record without candidate episodes reads no signal). None skips the P-wave check.

    Returns
    -------
    list of (float, float)
        The episodes ``[(start_s, end_s), …]``, from the time of their first beat to that of their last.
    """
    t = np.asarray(time_s, dtype=np.float64)
    n_rr = max(len(t) - 1, 0)
    if n_rr == 0:
        return []
    ok = np.ones(n_rr, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).copy()
    keep = ok.copy()
    if classes is not None and len(ectopic):
        ect = np.isin(np.asarray(classes).astype(str), list(ectopic))
        keep &= ~(ect[:-1] | ect[1:])
    flags, jump = rr_flags(t, ok, keep)
    episodes = gated_episodes(t, flags, jump, min_episode_s, pnn50_min)
    if signal is not None and episodes:
        episodes = p_wave_check(t, classes, episodes, signal, min_episode_s)
    return [(float(t[s]), float(t[e])) for s, e in episodes]


def rr_flags(t: np.ndarray, ok: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The RR stages over each stretch of intervals not cut by one that is not ``ok`` (the ectopic intervals
    inside, not ``keep``, skipped over): per interval, ``flags`` (AF by the detector's output; a run over kept
    intervals covers the skipped ones between them) and ``jump`` (1 where the interval differs by more than
    50 ms from the kept one before it, NaN where not compared)."""
    n_rr = len(ok)
    flags = np.zeros(n_rr, dtype=bool)
    jump = np.full(n_rr, np.nan)
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
        starts, ends = _runs(af)
        for s, e in zip(starts, ends, strict=True):
            flags_in[idx[s] - lo : idx[e - 1] - lo + 1] = True
        flags[lo:hi] = flags_in
    return flags, jump


def gated_episodes(
    t: np.ndarray, flags: np.ndarray, jump: np.ndarray, min_episode_s: float, pnn50_min: float
) -> list[tuple[int, int]]:
    """The runs of ``flags`` as ``(first beat, last beat)`` that last ``min_episode_s`` and whose share of
    ``jump`` reaches ``pnn50_min``."""
    starts, ends = _runs(flags)
    episodes = []
    for s, e in zip(starts, ends, strict=True):
        share = np.nanmean(jump[s:e]) if np.isfinite(jump[s:e]).any() else 0.0
        if t[e] - t[s] >= min_episode_s and share >= pnn50_min:
            episodes.append((s, e))
    return episodes


def p_wave_check(
    t: np.ndarray, classes, episodes: list[tuple[int, int]], signal, min_episode_s: float
) -> list[tuple[int, int]]:
    """The episodes whose beats show no consistent P wave (below :data:`P_WAVE_MAX`), their edges trimmed
    (:func:`_trim_edges`), that still last ``min_episode_s``."""
    x, fs = signal()
    supra = (
        np.ones(len(t), dtype=bool) if classes is None else ~np.isin(np.asarray(classes).astype(str), ["V", "F", "Q"])
    )
    kept = []
    for s, e in episodes:
        if _p_wave(x, fs, t, supra, s, e, P_MIN_BEATS, None) >= P_WAVE_MAX:
            continue
        s, e = _trim_edges(x, fs, t, supra, s, e)
        if t[e] - t[s] >= min_episode_s:
            kept.append((s, e))
    return kept


def _trim_edges(x, fs, t, supra, s: int, e: int) -> tuple[int, int]:
    """Trim an episode's edge windows of :data:`P_TRIM_BEATS` beats while they show P waves (:data:`P_TRIM`):
    sinus rhythm the smoothing carried into the episode."""
    while e - s > P_TRIM_BEATS and _p_wave(x, fs, t, supra, s, s + P_TRIM_BEATS, P_TRIM_MIN_BEATS, 0.0) >= P_TRIM:
        s += P_TRIM_BEATS
    while e - s > P_TRIM_BEATS and _p_wave(x, fs, t, supra, e - P_TRIM_BEATS, e, P_TRIM_MIN_BEATS, 0.0) >= P_TRIM:
        e -= P_TRIM_BEATS
    return s, e


def _p_wave(x, fs, t, supra, s: int, e: int, min_beats: int, default) -> float:
    """P-wave consistency of beats s..e (those not premature, with room for the P window, not V/F/Q);
    ``default`` (or -inf, i.e. "no P waves seen") when too few beats."""
    beats = np.arange(s, e + 1)
    beats = beats[supra[beats] & (beats > 0)]
    if len(beats) == 0:
        return -np.inf if default is None else default
    rr_before = t[beats] - t[beats - 1]
    # not premature (RR at least the stretch's median) and room for the P window: beats that follow a sinus
    # or fibrillating atrium, not premature ectopics the classes missed
    beats = beats[(rr_before >= np.median(rr_before)) & (rr_before > P_WINDOW_S[0] + 0.15)]
    value = p_wave_consistency(x, fs, t[beats], min_beats)
    return (-np.inf if default is None else default) if value is None else value


def p_wave_consistency(x: np.ndarray, fs: float, r_times_s: np.ndarray, min_beats: int = P_MIN_BEATS) -> float | None:
    """Mean correlation of each beat's pre-R stretch (:data:`P_WINDOW_S`) with the stretches' average; None
    with fewer than :data:`P_MIN_BEATS` beats. At most :data:`P_MAX_BEATS` beats, evenly spread, each read as
    1.5 s before to 0.5 s after its R peak and band-passed 0.5–40 Hz (2nd-order Butterworth, zero phase): the
    cost does not grow with the episode."""
    lo, hi = int(round(P_WINDOW_S[0] * fs)), int(round(P_WINDOW_S[1] * fs))
    pre, post = int(round(1.5 * fs)), int(round(0.5 * fs))
    samples = np.round(np.asarray(r_times_s) * fs).astype(np.int64)
    samples = samples[(samples - pre >= 0) & (samples + post < len(x))]
    if len(samples) < min_beats:
        return None
    if len(samples) > P_MAX_BEATS:
        samples = samples[np.linspace(0, len(samples) - 1, P_MAX_BEATS).astype(np.int64)]
    seg = np.asarray(x)[samples[:, None] + np.arange(-pre, post)[None, :]].astype(np.float64)
    seg = band_pass(seg, fs, 0.5, 40.0)[:, pre - lo : pre - hi]
    seg = seg - seg.mean(axis=1, keepdims=True)
    avg = seg.mean(axis=0)
    norms = np.linalg.norm(seg, axis=1) * np.linalg.norm(avg)
    ok = norms > 0
    if ok.sum() < min_beats:
        return None
    return float(np.mean((seg[ok] @ avg) / norms[ok]))


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) indices of the runs of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
