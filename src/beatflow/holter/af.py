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
per record (how these stages alone fare on DS1: ``docs/experiments/holter.md`` §14). What beatflow adds:

- beats classed ventricular (``V``) or fusion (``F``) are taken out before step 1: both intervals that touch
  such a beat are dropped and the series closes over them (a premature ventricular beat's morphology is
  reliable, and a run of them is not AF). Supraventricular (``S``) beats are kept: a classifier that calls
  beats S by their prematurity calls many AF beats S, and dropping them would hide the AF;
- the series is cut at every interval that is not analysable (in an excluded stretch, or a gap without
  beats) and at every run of :data:`RUN_BEATS` or more ``V`` beats (the
  MIT-BIH annotators end AF at ventricular tachycardia, ``(VT``, and the summary's runs are not counted inside
  AF): each stretch is analysed on its own;
- steps 2–5 run twice, with the paper's α = 0.02 (some 50 beats) and with :data:`ALPHA_SHORT` = 0.1 (some 10
  beats), and a candidate is where either output exceeds η: a paroxysm of 10–40 s (15–60 beats) barely moves
  the long averager, whose zero-phase smoothing also blurs each edge by tens of beats;
- a candidate is kept when the majority of its successive RR differences exceed 50 ms (pNN50 ≥
  :data:`PNN50_MIN` = 0.5 over its intervals, ectopic ones left out): AF is irregular from beat to beat, while
  the 8-beat pairwise count also fires on the slow respiratory modulation of a fast sinus rhythm (pNN50 is the
  RR feature that best separates AF, Akande et al., CinC 2023);
- its edges are then placed with a short window (:func:`place_edges`): within :data:`EDGE_BEATS` intervals of
  each, at the change point (Page's CUSUM: the extreme of a cumulative sum) of the paper's own statistic taken
  per interval without the averagers, ``M(n)/r_m(n) − η`` with ``M`` over the N + 1 = 9 intervals centred on ``n``:
  positive in AF, negative in sinus rhythm, and in a slow irregular rhythm (an escape rhythm after AF ends)
  too, since the statistic is per second. Overlapping episodes merge;
- with the classes, an episode needs the same irregularity on its NN intervals (:func:`nn_irregular`: both
  beats ``N``, as HRV's NN series; pNN50 ≥ :data:`PNN50_MIN` over at least :data:`N_WINDOW` differences of
  successive NN intervals): keeping S beats (above) lets runs of premature atrial beats read as AF, while
  between them the sinus rhythm is regular;
- an episode is irregular without a pattern (:func:`pattern_ratio` at least :data:`PATTERN_MIN`): AF is
  irregularly irregular, its intervals independent, while bigeminy and trigeminy are irregular in a pattern
  that repeats every two or three beats, which the ectopic-beat filter and bigeminy suppression of steps 1
  and 4 miss where premature beats the classes call N mix with runs and couplets (the Lorenz-plot reasoning
  of Sarkar, Ritscher and Mehra, IEEE TBME 55:1219–1224, 2008);
- an episode is reported when it lasts at least :data:`MIN_EPISODE_S` = 10 s (shorter irregular stretches are
  ectopy as often as AF; the clinical 30 s "AF episode" is a filter on the reported list);
- and, when the signal is at hand, when its beats show no consistent P wave in any lead
  (:func:`p_wave_consistency` below :data:`P_WAVE_MAX` = 0.5 in every lead): the mean correlation of each
  beat's stretch 300–80 ms before its R peak with their average, over the episode's beats that are not
  premature (RR at least the episode's median) and not classed V, F or Q. Sinus beats share a P wave there; in
  AF the fibrillatory waves are not locked to the QRS. The threshold lies in the gap between the values of AF
  and of other candidate episodes; the check is what stops ectopy that the classes missed from reading as AF
  (``docs/experiments/holter.md`` §14). Before that check, the episode's edges are trimmed, :data:`P_TRIM_BEATS` = 15
  beats at a time (while 30 or more remain), while such an edge window's consistency reaches :data:`P_TRIM` =
  0.7 (above what edge windows inside AF reach): sinus rhythm with P waves next to AF, whose RR irregularity
  (frequent ectopy) the RR stages cannot tell from AF.
"""

from __future__ import annotations

import numpy as np

from beatflow.dsp.filters import BUTTER_MIN_SAMPLES, butter_band_pass
from beatflow.holter.quality import runs_of

N_WINDOW = 8  # beats in the irregularity window
GAMMA_S = 0.03  # pairwise RR difference that counts as irregular (s)
ALPHA = 0.02  # exponential averager's smoothing factor
ALPHA_SHORT = 0.1  # the short-window averager's, for paroxysms of a few tens of beats
EDGE_BEATS = 40  # an episode's edge moves at most this many intervals from where the RR stages put it
DELTA = 2e-4  # bigeminy suppression threshold on B̄
ETA = 0.725  # detection threshold on I (1/s)
MIN_EPISODE_S = 10.0  # shortest AF episode reported
PNN50_MIN = 0.5  # an episode's share of successive RR differences > 50 ms must reach this
P_WAVE_MAX = 0.5  # an episode whose beats' P-wave consistency reaches this is not AF
P_WINDOW_S = (0.30, 0.08)  # the P wave's window before the R peak (s)
P_MIN_BEATS = 8  # fewer usable beats than this show nothing
P_TRIM = 0.7  # an episode's edge window of P_TRIM_BEATS beats with this P-wave consistency is trimmed
P_TRIM_BEATS = 15  # on MIT-BIH 201 (tuned there; 30 before): docs/experiments/holter.md §14
P_MAX_BEATS = 300
PATTERN_LAGS = (2, 3)  # bigeminy, trigeminy
PATTERN_MIN = 0.5  # an episode whose pattern_ratio is below this repeats a pattern: not AF (halfway from 0 to 1)
ECTOPIC = ("V", "F")  # classes whose intervals leave the RR series
RUN_BEATS = 3  # a run: this many consecutive ectopic beats or more (a V run, ventricular tachycardia, ends AF)


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
    holds back a recording that starts in AF for some 20 beats); the first interval takes the second's. The
    pairs ``lag`` beats apart are counted for each lag by a running sum of those that differ."""
    rm = np.asarray(rm, dtype=np.float64)
    count = np.zeros(len(rm))
    for lag in range(1, n):
        running = np.zeros(len(rm) + 1)  # running[j + 1]: the pairs (i, i + lag) differing, up to i + lag = j
        running[lag + 1 :] = np.cumsum(np.abs(rm[lag:] - rm[:-lag]) >= gamma)
        count += running[1:] - running[np.maximum(np.arange(len(rm)) - (n - 1 - lag), 0)]
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


def detector_output(r: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """The detector's output ``O(n)`` for one uninterrupted RR series (seconds), its averagers' factor
    ``alpha``; AF where ``O > ETA``."""
    r = np.asarray(r, dtype=np.float64)
    if len(r) == 0:
        return r.copy()
    rm = median3(r)
    i_ratio = averager(irregularity(rm), alpha) / averager(r, alpha)
    b_smooth = averager(bigeminy(r, rm), alpha)
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
        Each beat's AAMI class: intervals touching a beat of a class in ``ectopic`` leave the RR series, runs
        of :data:`RUN_BEATS` ``V`` beats cut it, an episode must be irregular on its NN intervals. None: no beat is
        left out, nothing cut, no NN gate.
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
        Returns ``(leads, fs)``, lead name → numpy array; called only when an episode is to be checked for P
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
    c = None if classes is None else np.asarray(classes).astype(str)
    if c is not None:
        v_run = ventricular_runs(c)
        ok &= ~(v_run[:-1] | v_run[1:])
    keep = ok.copy()
    if c is not None and len(ectopic):
        ect = np.isin(c, list(ectopic))
        keep &= ~(ect[:-1] | ect[1:])
    flags, jump, evidence = rr_flags(t, ok, keep)
    episodes = _merge([place_edges(s, e, evidence, ok) for s, e in gated_episodes(flags, jump, pnn50_min)])
    episodes = [(s, e) for s, e in episodes if t[e] - t[s] >= min_episode_s]
    if c is not None:
        episodes = [(s, e) for s, e in episodes if nn_irregular(t, c, ok, s, e)]
    episodes = [(s, e) for s, e in episodes if pattern_ratio(t, keep, s, e) >= PATTERN_MIN]
    if signal is not None and episodes:
        episodes = p_wave_check(t, c, episodes, signal, min_episode_s)
    return [(float(t[s]), float(t[e])) for s, e in episodes]


def ventricular_runs(classes: np.ndarray) -> np.ndarray:
    """Per beat, whether it belongs to a run of :data:`RUN_BEATS` or more consecutive ``V`` beats."""
    out = np.zeros(len(classes), dtype=bool)
    for s, e in runs_of(classes == "V"):
        if e - s >= RUN_BEATS:
            out[s:e] = True
    return out


def rr_flags(t: np.ndarray, ok: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The RR stages over each stretch of intervals not cut by one that is not ``ok`` (the ectopic intervals
    inside, not ``keep``, skipped over), per interval: ``flags`` (AF by either scale's output; a run over kept
    intervals covers the skipped ones between them), ``jump`` (1 where the interval differs by more than 50 ms
    from the kept one before it, NaN where not compared) and ``evidence`` (``M(n)/r_m(n) − η``, ``M`` over the 9
    intervals centred on ``n``; 0 where not kept)."""
    n_rr = len(ok)
    flags = np.zeros(n_rr, dtype=bool)
    jump = np.full(n_rr, np.nan)
    evidence = np.zeros(n_rr)
    cuts = np.flatnonzero(~ok)
    bounds = np.concatenate([[-1], cuts, [n_rr]])
    h = (N_WINDOW + 1) // 2
    for lo, hi in zip(bounds[:-1] + 1, bounds[1:], strict=True):
        idx = np.flatnonzero(keep[lo:hi]) + lo
        if len(idx) < N_WINDOW:
            continue
        r = t[idx + 1] - t[idx]
        jump[idx[1:]] = np.abs(np.diff(r)) > 0.05
        rm = median3(r)
        m = irregularity(rm, N_WINDOW + 1)
        evidence[idx] = np.concatenate([m[h:], np.full(h, m[-1])]) / rm - ETA
        af = (detector_output(r) > ETA) | (detector_output(r, ALPHA_SHORT) > ETA)
        flags_in = np.zeros(hi - lo, dtype=bool)
        for s, e in runs_of(af):
            flags_in[idx[s] - lo : idx[e - 1] - lo + 1] = True
        flags[lo:hi] = flags_in
    return flags, jump, evidence


def gated_episodes(flags: np.ndarray, jump: np.ndarray, pnn50_min: float) -> list[tuple[int, int]]:
    """The runs of ``flags`` as ``(first beat, last beat)`` whose share of ``jump`` reaches ``pnn50_min``."""
    episodes = []
    for s, e in runs_of(flags):
        share = np.nanmean(jump[s:e]) if np.isfinite(jump[s:e]).any() else 0.0
        if share >= pnn50_min:
            episodes.append((s, e))
    return episodes


def _stretch(s: int, e: int, ok: np.ndarray) -> tuple[int, int]:
    """The first and the end (exclusive) interval of the stretch of ``ok`` intervals that holds ``s``…``e``."""
    cuts = np.flatnonzero(~ok)
    lo = int(cuts[cuts < s].max()) + 1 if (cuts < s).any() else 0
    hi = int(cuts[cuts >= e].min()) if (cuts >= e).any() else len(ok)
    return lo, hi


def nn_irregular(t: np.ndarray, classes: np.ndarray, ok: np.ndarray, s: int, e: int) -> bool:
    """Whether an episode is irregular on its NN intervals (both beats ``N``, analysable), as HRV's NN series
    leaves ectopic beats' intervals out (Task Force of the ESC and NASPE, Circulation 93:1043, 1996): at
    least :data:`N_WINDOW` differences of successive NN intervals, and a share :data:`PNN50_MIN` of them over
    50 ms. Sinus rhythm with frequent premature beats (atrial bigeminy) is irregular only through them."""
    n = classes[s : e + 1] == "N"
    nn = n[:-1] & n[1:] & ok[s:e]
    succ = nn[:-1] & nn[1:]
    if succ.sum() < N_WINDOW:
        return False
    return bool(np.mean(np.abs(np.diff(np.diff(t[s : e + 1])))[succ] > 0.05) >= PNN50_MIN)


def pattern_ratio(t: np.ndarray, keep: np.ndarray, s: int, e: int) -> float:
    """How little an episode's RR intervals (the ``keep`` ones from beat ``s`` to ``e``, in a row) repeat a
    pattern: the mean difference from the interval :data:`PATTERN_LAGS` before (the smaller), over the mean
    difference from the one before. About 1 in AF, whose intervals are independent; near 0 in bigeminy (lag 2)
    and trigeminy (lag 3), which are irregular in a repeating pattern. Means, not medians: over the 15 intervals
    of a 10 s paroxysm of independent intervals the ratio of means falls below one half once in 90, that of
    medians once in 10. 1 with too few intervals."""
    idx = np.flatnonzero(keep[s:e]) + s
    r = t[idx + 1] - t[idx]
    if len(r) < N_WINDOW:
        return 1.0
    successive = np.mean(np.abs(np.diff(r)))
    if successive <= 0:
        return 1.0
    return float(min(np.mean(np.abs(r[k:] - r[:-k])) for k in PATTERN_LAGS) / successive)


def place_edges(s: int, e: int, evidence: np.ndarray, ok: np.ndarray) -> tuple[int, int]:
    """An episode's first and last beat placed where the rhythm changes: within :data:`EDGE_BEATS` intervals of
    each edge (inside its stretch of ``ok`` intervals, and not past the episode's middle), the split that best
    fits a step from sinus rhythm (``evidence`` < 0) to AF (> 0), the extreme of the evidence's cumulative sum
    (Page's CUSUM change point)."""
    cuts = np.flatnonzero(~ok)
    lo = int(cuts[cuts < s].max()) + 1 if (cuts < s).any() else 0
    hi = int(cuts[cuts >= e].min()) if (cuts >= e).any() else len(ok)
    mid = (s + e) // 2
    a, b = max(lo, s - EDGE_BEATS), min(mid, s + EDGE_BEATS)
    if b > a:
        s = a + int(np.argmin(np.concatenate([[0.0], np.cumsum(evidence[a:b])])))
    a, b = max(mid, e - EDGE_BEATS), min(hi, e + EDGE_BEATS)
    if b > a:
        e = a + int(np.argmax(np.concatenate([[0.0], np.cumsum(evidence[a:b])])))
    return s, e


def _merge(episodes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping ``(first beat, last beat)`` episodes merged."""
    out: list[list[int]] = []
    for s, e in sorted(episodes):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        elif e > s:
            out.append([s, e])
    return [(s, e) for s, e in out]


def p_wave_check(
    t: np.ndarray, classes, episodes: list[tuple[int, int]], signal, min_episode_s: float
) -> list[tuple[int, int]]:
    """The episodes, their edges trimmed (:func:`_trim_edges`), that still last ``min_episode_s`` and whose
    beats show no consistent P wave in any lead (below :data:`P_WAVE_MAX`)."""
    leads, fs = signal()
    x = list(leads.values())
    supra = (
        np.ones(len(t), dtype=bool) if classes is None else ~np.isin(np.asarray(classes).astype(str), ["V", "F", "Q"])
    )
    kept = []
    for s, e in episodes:
        s, e = _trim_edges(x, fs, t, supra, s, e)
        if t[e] - t[s] >= min_episode_s and _p_wave(x, fs, t, supra, s, e, P_MIN_BEATS, None) < P_WAVE_MAX:
            kept.append((s, e))
    return kept


def _trim_edges(x, fs, t, supra, s: int, e: int) -> tuple[int, int]:
    """Trim an episode's edge windows of :data:`P_TRIM_BEATS` beats while they show P waves (:data:`P_TRIM`) and
    at least two such windows remain."""
    while e - s > 2 * P_TRIM_BEATS and _p_wave(x, fs, t, supra, s, s + P_TRIM_BEATS, P_MIN_BEATS, 0.0) >= P_TRIM:
        s += P_TRIM_BEATS
    while e - s > 2 * P_TRIM_BEATS and _p_wave(x, fs, t, supra, e - P_TRIM_BEATS, e, P_MIN_BEATS, 0.0) >= P_TRIM:
        e -= P_TRIM_BEATS
    return s, e


def _p_wave(x: list, fs, t, supra, s: int, e: int, min_beats: int, default) -> float:
    """P-wave consistency of beats s..e (those not premature, with room for the P window, not V/F/Q), the
    highest over the leads ``x`` (a P wave that one lead shows is there); ``default`` (or -inf, i.e. "no P
    waves seen") when too few beats."""
    beats = np.arange(s, e + 1)
    beats = beats[supra[beats] & (beats > 0)]
    if len(beats) == 0:
        return -np.inf if default is None else default
    rr_before = t[beats] - t[beats - 1]
    # not premature (RR at least the stretch's median) and room for the P window: beats that follow a sinus
    # or fibrillating atrium, not premature ectopics the classes missed
    beats = beats[(rr_before >= np.median(rr_before)) & (rr_before > P_WINDOW_S[0] + 0.15)]
    values = [v for v in (p_wave_consistency(lead, fs, t[beats], min_beats) for lead in x) if v is not None]
    return max(values) if values else (-np.inf if default is None else default)


def samples_at(x, index: np.ndarray) -> np.ndarray:
    """``x[index]`` as numpy: a lead on the GPU (cupy) gives only these samples to the host, a
    :class:`beatflow.io.tables.LeadStretches` reads only the row groups that hold them."""
    from beatflow.backend import backend_of

    backend = backend_of(x)
    if backend.gpu:
        return backend.to_host(x[backend.xp.asarray(index)])
    return np.asarray(x[index])


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
    seg = samples_at(x, samples[:, None] + np.arange(-pre, post)[None, :]).astype(np.float64)
    if len(seg) <= BUTTER_MIN_SAMPLES:  # as it has always been: so few beats are centred, not filtered (the
        seg = seg - np.median(seg)  # short-signal test counted the rows, not the samples); kept: same results
    else:
        seg = butter_band_pass(seg, fs, 0.5, 40.0)
    seg = seg[:, pre - lo : pre - hi]
    seg = seg - seg.mean(axis=1, keepdims=True)
    avg = seg.mean(axis=0)
    norms = np.linalg.norm(seg, axis=1) * np.linalg.norm(avg)
    ok = norms > 0
    if ok.sum() < min_beats:
        return None
    return float(np.mean((seg[ok] @ avg) / norms[ok]))
