"""Per-beat features of the beat classifier, in units that hold across sampling rates, leads and patients:
every interval is a ratio to the beat's own local rhythm (no absolute rate or width: a sinus tachycardia or a
bundle-branch block is the record's normal), every shape a correlation or log ratio against the record's own
sinus template, every lead-wise figure summarised over the leads (so that neither the leads' order nor their
names matter).

1. *Resample* each lead to :data:`FEATURE_FS` (so that widths, slopes and noise read alike at any sampling
   rate) and *band-pass* it (:data:`BAND_HZ`, :func:`beatflow.dsp.filters.band_pass`).
2. *Local rhythm*: RR before and after each beat, their running median and upper quartile over
   :data:`LOCAL_BEATS` intervals each side, and the running median successive difference (irregularity:
   atrial fibrillation; against the interval two before, so that bigeminy is not), and the slow rhythm (upper
   decile over :data:`WIDE_BEATS` and :data:`SUSTAINED_BEATS` each side: the sinus interval where premature
   beats outnumber sinus ones, and around a sustained tachycardia)
   — after de Chazal et al. 2004 (local and average RR) and Teijeiro et al. 2018 (rhythm context).
3. *Sinus template*: the median beat of the regular beats (both intervals within :data:`REGULAR` of the local
   median, at a regular stretch), so that the template is the sinus beat even where premature beats
   outnumber it; each beat aligned to it at the best shift within :data:`SHIFT_S`.
4. *Shape*: per window (P wave, QRS, T wave: :data:`WINDOWS_S`) and lead, the correlation with the template
   and the log RMS ratio to it; the QRS width (RMS time spread of its slope energy) as a log ratio to the
   template's; the beat's high-frequency content against the template's (noise); the P-wave window again with
   the template placed at the previous R peak subtracted (average beat subtraction: the previous beat's T wave
   taken out, so that a premature beat's own P wave shows, or its absence), against the template's P wave; only
   the template's first sinus interval is subtracted, so that at fast rates the P wave on the T wave stays.
   A window that runs past the record's start or end is not measured (NaN).
   A lead whose QRS window holds under :data:`LEAD_BLANK` of its template's RMS does not show the beat (an
   electrode off, an amplifier at its rail: the detector then took the beat from the other lead) and is left
   out of that beat's lead-wise summaries, unless no lead shows it.
5. *Context*: the previous and next beats' QRS correlation and prematurity (runs, couplets), and the running
   median of the P-wave and QRS correlations (P waves absent for a stretch: atrial fibrillation or flutter).
6. *Family*: the record's beats grouped by shape (:data:`FAMILIES`, k-means over :data:`FAMILY_BY` in units of
   the record's own spread; groups of one shape, :data:`FAMILY_SAME`, then merged, so that a record of one
   shape is one family however finely the k-means cut it), and per
   beat its family's share of the record and median prematurity, P-wave and QRS correlation, so that one
   record's beats of one shape agree (a ventricular family is premature as a whole, without P waves).
"""

from __future__ import annotations

import warnings

import numpy as np

from beatflow.dsp.templates import ALIGN_PASSES

BAND_HZ = (0.5, 40.0)
FEATURE_FS = 250.0  # shapes are compared at this rate, whatever the record's (128-500 Hz alike)
WINDOWS_S = {"p": (-0.30, -0.08), "qrs": (-0.10, 0.12), "t": (0.12, 0.40)}  # about the R peak
SHIFT_S = 0.05  # a beat is aligned to the template at its best shift within this
LOCAL_BEATS = 16  # the local rhythm: running statistics over this many intervals each side
WIDE_BEATS = 64  # the slowest local rhythm (sinus where premature beats are the majority): this many each side
SUSTAINED_BEATS = 256  # ... and over this many each side (the sinus interval around a sustained tachycardia)
LEAD_BLANK = float(np.exp(-2.0))  # a lead whose QRS is under this share of its template's RMS does not show it
REGULAR = 0.15  # a regular beat: both its intervals within this fraction of the local median
MIN_REGULAR = 20  # fewer regular beats than this: the template is the median of every beat
TEMPLATE_BEATS = 4096  # the template is the median of at most this many beats, spread over the record
FAMILIES = 8  # shape groups of a record (k-means over its beats' QRS and T-wave features)
FAMILY_BY = ("qrs_corr_mean", "qrs_amp_mean", "qrs_width_ratio", "t_corr_mean", "t_amp_mean")
FAMILY_SAME = 0.2  # groups whose medians differ by less in each of those (a correlation, a log ratio) are one
CHUNK = 16384  # beats whose windows are cut at a time on the host ...
DEVICE_CHUNK = 131072  # ... and on the device (some 150 MB a window: fewer, larger kernels)

TIMING = (
    "rr_pre_local",
    "rr_pre_upper",
    "rr_post_local",
    "rr_post_pre",
    "rr_pre_prev",
    "rr_pre_slow",
    "rr_pre_sustained",
    "irregularity",
    "irregularity_alternate",
    "prev_rr_pre_local",
    "next_rr_post_local",
)
SHAPE = tuple(f"{w}_{m}_{agg}" for w in WINDOWS_S for m in ("corr", "amp") for agg in ("mean", "min", "max")) + (
    "qrs_width_ratio",
    "noise_max",
    "p_alone_corr",
    "p_alone_amp",
    "prev_qrs_corr",
    "next_qrs_corr",
    "local_p_corr",
    "local_qrs_corr",
    "p_corr_contrast",
    "qrs_corr_contrast",
    "family_share",
    "family_rr_pre_local",
    "family_p_corr",
    "family_qrs_corr",
)
NAMES = TIMING + SHAPE


def _rolling(values: np.ndarray, size: int, q: float) -> np.ndarray:
    """The running ``q`` percentile of ``values`` over ``size`` values centred on each (scipy's rank filter,
    the record's ends repeated); a NaN counts as its nearest finite neighbour."""
    from scipy.ndimage import percentile_filter

    finite = np.isfinite(values)
    if not finite.any():
        return np.full(len(values), np.nan)
    index = np.arange(len(values))
    known = index[finite]
    right = np.minimum(np.searchsorted(known, index), len(known) - 1)  # the first finite value at or after
    left = np.maximum(right - 1, 0)
    nearest = np.where(index - known[left] <= np.abs(known[right] - index), known[left], known[right])
    return percentile_filter(values[nearest], q, size=size, mode="nearest")


def timing(peaks: np.ndarray, fs: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each beat's interval features (step 2 of the module docstring), and which beats are regular (step 3).
    ``irregularity_alternate`` compares each interval with the one two before: low in bigeminy, high in
    atrial fibrillation."""
    rr = np.diff(peaks.astype(np.float64)) / fs
    pre = np.r_[np.nan, rr]
    post = np.r_[rr, np.nan]
    size = 2 * LOCAL_BEATS + 1
    local = _rolling(pre, size, 50)
    upper = _rolling(pre, size, 75)
    diff = np.abs(np.r_[np.nan, np.diff(pre)])
    irregular = _rolling(diff, size, 50) / local
    alternate = _rolling(np.abs(pre - np.r_[np.nan, np.nan, pre[:-2]]), size, 50) / local
    slow = _rolling(pre, 2 * WIDE_BEATS + 1, 90)
    sustained = _rolling(pre, 2 * SUSTAINED_BEATS + 1, 90)
    prev = np.r_[np.nan, pre[:-1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        pre_local, post_local = pre / local, post / local
        out = {
            "rr_pre_local": pre_local,
            "rr_pre_upper": pre / upper,
            "rr_post_local": post_local,
            "rr_post_pre": post / pre,
            "rr_pre_prev": pre / prev,
            "rr_pre_slow": pre / slow,
            "rr_pre_sustained": pre / sustained,
            "irregularity": irregular,
            "irregularity_alternate": alternate,
            "prev_rr_pre_local": np.r_[np.nan, pre_local[:-1]],
            "next_rr_post_local": np.r_[post_local[1:], np.nan],
        }
    return out, is_regular(pre_local, post_local, irregular)


def is_regular(rr_pre_local, rr_post_local, irregularity) -> np.ndarray:
    """Which beats are regular (step 3 of the module docstring): both intervals within :data:`REGULAR` of the
    local median, at a stretch whose irregularity is below it."""
    with np.errstate(invalid="ignore"):
        return (np.abs(rr_pre_local - 1) < REGULAR) & (np.abs(rr_post_local - 1) < REGULAR) & (irregularity < REGULAR)


def column(features: np.ndarray, name: str) -> np.ndarray:
    """The feature ``name`` of every beat, from a matrix of :data:`NAMES` columns."""
    return features[:, NAMES.index(name)]


def _chunk(xp) -> int:
    return CHUNK if xp is np else DEVICE_CHUNK


def _cut(x, centres, lo: int, hi: int, xp):
    """``[beats, leads, hi - lo]`` windows of ``x`` ``[leads, n]`` from ``centre + lo`` to ``centre + hi``,
    clipped at the record's edges."""
    idx = xp.clip(centres[:, None] + xp.arange(lo, hi)[None, :], 0, x.shape[1] - 1)
    return xp.ascontiguousarray(x[:, idx].transpose(1, 0, 2))


def _past_the_ends(centres, lo: int, hi: int, n: int):
    """Whether each window from ``centre + lo`` to ``centre + hi`` runs past a record of ``n`` samples: its
    clipped samples repeat the edge (a flat stretch whose log amplitude is rounding noise), so such a window is
    not measured (NaN)."""
    return (centres + lo < 0) | (centres + hi > n)


def _centred(w):
    return w - w.mean(-1, keepdims=True)


def _corr_amp(w, template, xp):
    """Per beat and lead, the correlation of windows ``w`` ``[beats, leads, W]`` with ``template``
    ``[leads, W]`` and the log RMS ratio."""
    a, b = _centred(w), _centred(template)[None]
    na, nb = xp.sqrt((a * a).sum(-1)), xp.sqrt((b * b).sum(-1))
    corr = (a * b).sum(-1) / xp.maximum(na * nb, 1e-12)
    return corr, xp.log(xp.maximum(na, 1e-9) / xp.maximum(nb, 1e-9))


def _shown(w, template, xp):
    """``[beats, leads]``: whether each lead shows each beat, from its QRS windows ``w`` ``[beats, leads, W]``
    and their ``template`` (:data:`LEAD_BLANK`); where no lead does, every lead counts."""
    rms = xp.sqrt((_centred(w) ** 2).mean(-1))
    shown = rms >= LEAD_BLANK * xp.sqrt((_centred(template) ** 2).mean(-1))[None]
    return shown | ~shown.any(-1, keepdims=True)


def _over_leads(v, shown, xp) -> dict:
    """The ``mean``, ``min`` and ``max`` over leads of ``v`` ``[beats, leads]``, of the leads that show each beat."""
    count = shown.sum(-1)
    return {
        "mean": xp.where(shown, v, 0).sum(-1) / count,
        "min": xp.where(shown, v, xp.inf).min(-1),
        "max": xp.where(shown, v, -xp.inf).max(-1),
    }


def _spread(w, xp):
    """RMS time spread (samples) of the slope energy of ``w`` ``[..., leads, W]`` summed over leads, above its
    median (the noise floor)."""
    e = xp.diff(w, axis=-1) ** 2
    e = e.sum(-2)
    e = xp.maximum(e - xp.median(e, -1, keepdims=True), 0)
    t = xp.arange(e.shape[-1], dtype=xp.float64)
    total = xp.maximum(e.sum(-1), 1e-30)
    centre = (e * t).sum(-1) / total
    return xp.sqrt((e * (t - centre[..., None]) ** 2).sum(-1) / total)


def _without_previous(w, centres, previous, whole, lo: int, whole_lo: int, sinus_rr: int, xp):
    """Windows ``w`` ``[beats, leads, W]`` starting ``lo`` samples from ``centres``, less the sinus beat
    ``whole`` ``[leads, V]`` (starting ``whole_lo`` from its R peak) placed at each beat's ``previous`` R peak:
    the window with the previous beat's T wave taken out (average beat subtraction). Only the template's first
    ``sinus_rr`` samples are subtracted: past them, at the record's sinus interval, lies the next sinus beat's
    own window (at fast rates the template's T wave carries the next P wave, which must stay)."""
    pos = (centres - previous)[:, None] + xp.arange(lo - whole_lo, lo - whole_lo + w.shape[-1])[None, :]
    inside = (pos >= 0) & (pos < min(whole.shape[-1], sinus_rr))
    before = whole[:, xp.clip(pos, 0, whole.shape[-1] - 1)].transpose(1, 0, 2)
    return w - before * inside[:, None, :]


def _best_shift(x, peaks, template, lo: int, shift: int, xp):
    """Per beat, the shift within ``±shift`` samples where its QRS correlates best with ``template``
    ``[leads, W]`` (summed over leads), its window starting ``lo`` samples from the peak."""
    width = template.shape[-1]
    b = _centred(template)[None]
    out = xp.zeros(len(peaks), xp.int64)
    chunk = _chunk(xp)
    for start in range(0, len(peaks), chunk):
        w = _cut(x, peaks[start : start + chunk], lo - shift, lo + width + shift, xp)
        best = xp.full(len(w), -xp.inf)
        for s in range(2 * shift + 1):
            seg = _centred(w[..., s : s + width])
            c = ((seg * b).sum(-1) / xp.maximum(xp.sqrt((seg * seg).sum(-1) * (b * b).sum(-1)), 1e-12)).sum(-1)
            better = c > best
            best[better] = c[better]
            out[start : start + len(w)][better] = s - shift
    return out


def leads_and_peaks(signal, time_s: np.ndarray) -> tuple[list, float, np.ndarray]:
    """The leads (a list), their rate and the beats' samples from ``signal`` (a callable returning ``(leads, fs)``,
    leads a name → array mapping) and the beats' times."""
    leads, fs = signal()
    return list(leads.values()), fs, np.round(np.asarray(time_s) * fs).astype(np.int64)


def window_samples(fs: float, window: tuple[float, float]) -> tuple[int, int]:
    return round(window[0] * fs), max(round(window[0] * fs) + 3, round(window[1] * fs))


def _templates(x, peaks, fs: float, chosen, xp) -> tuple[dict, object]:
    """The sinus templates of each window (step 3 of the module docstring) from the beats at ``peaks[chosen]``,
    and every beat's peak aligned to them."""
    shift = max(1, round(SHIFT_S * fs))
    spans = {name: window_samples(fs, w) for name, w in WINDOWS_S.items()}
    lo, hi = spans["qrs"]
    template_beats = peaks[chosen]
    for _ in range(ALIGN_PASSES - 1):  # the template's beats aligned to their own median, and again
        template = xp.median(_cut(x, template_beats, lo, hi, xp), 0)
        template_beats = peaks[chosen] + _best_shift(x, peaks[chosen], template, lo, shift, xp)
    template = xp.median(_cut(x, template_beats, lo, hi, xp), 0)
    aligned = peaks + _best_shift(x, peaks, template, lo, shift, xp)  # every beat aligned to the sharp template
    templates = {k: xp.median(_cut(x, aligned[chosen], a, b, xp), 0) for k, (a, b) in spans.items()}
    templates["whole"] = xp.median(_cut(x, aligned[chosen], spans["p"][0], spans["t"][1], xp), 0)
    return templates, aligned


def shape(x, peaks, fs: float, regular: np.ndarray, xp=np) -> dict[str, np.ndarray]:
    """Each beat's shape features (steps 3–5 of the module docstring) from band-passed leads ``x``
    ``[leads, n]`` (numpy, or cupy with ``xp=cupy``) and ``peaks`` (samples of ``x``); numpy arrays."""
    n = len(peaks)
    spans = {name: window_samples(fs, w) for name, w in WINDOWS_S.items()}
    chosen = np.flatnonzero(regular) if regular.sum() >= MIN_REGULAR else np.arange(n)
    intervals = np.diff(np.asarray(peaks))[chosen[chosen > 0] - 1]
    sinus_rr = int(np.median(intervals)) if len(intervals) else x.shape[1]  # the template beats' own interval
    chosen = xp.asarray(chosen[:: max(1, len(chosen) // TEMPLATE_BEATS)])
    templates, aligned = _templates(x, xp.asarray(peaks), fs, chosen, xp)
    whole = (spans["p"][0], spans["t"][1])
    template_noise = xp.sqrt((xp.diff(templates["whole"], axis=-1) ** 2).mean(-1))
    template_width = float(_spread(templates["qrs"][None], xp)[0])
    out = {name: xp.empty(n) for name in SHAPE[: SHAPE.index("prev_qrs_corr")]}
    chunk = _chunk(xp)
    for start in range(0, n, chunk):
        rows = slice(start, min(n, start + chunk))
        centres = aligned[rows]
        shown = _shown(_cut(x, centres, *spans["qrs"], xp), templates["qrs"], xp)
        for k, (a, b) in spans.items():
            w = _cut(x, centres, a, b, xp)
            corr, amp = _corr_amp(w, templates[k], xp)
            for m, v in (("corr", corr), ("amp", amp)):
                for agg, value in _over_leads(v, shown, xp).items():
                    out[f"{k}_{m}_{agg}"][rows] = value
            if k == "p":
                previous = aligned[max(start - 1, 0) : rows.stop - 1]
                if start == 0:
                    previous = xp.concatenate([xp.asarray([-(10**9)], previous.dtype), previous])
                alone = _without_previous(w, centres, previous, templates["whole"], a, whole[0], sinus_rr, xp)
                corr, amp = _corr_amp(alone, templates["p"], xp)
                out["p_alone_corr"][rows] = _over_leads(corr, shown, xp)["mean"]
                out["p_alone_amp"][rows] = _over_leads(amp, shown, xp)["mean"]
            if k == "qrs":
                width = _spread(w, xp)
                out["qrs_width_ratio"][rows] = xp.log(xp.maximum(width, 1e-6) / max(template_width, 1e-6))
            past = _past_the_ends(centres, a, b, x.shape[1])
            for name in out:
                if name.startswith(f"{k}_"):
                    out[name][rows][past] = xp.nan
        noise = xp.sqrt((xp.diff(_cut(x, centres, *whole, xp), axis=-1) ** 2).mean(-1))
        out["noise_max"][rows] = xp.log(xp.maximum(noise, 1e-12) / xp.maximum(template_noise, 1e-12)[None]).max(-1)
        out["noise_max"][rows][_past_the_ends(centres, *whole, x.shape[1])] = xp.nan
    out = {k: xp.asnumpy(v) if xp is not np else v for k, v in out.items()}
    corr = out["qrs_corr_mean"]
    out["prev_qrs_corr"] = np.r_[np.nan, corr[:-1]]
    out["next_qrs_corr"] = np.r_[corr[1:], np.nan]
    out["local_p_corr"] = _rolling(out["p_corr_mean"], 2 * LOCAL_BEATS + 1, 50)
    out["local_qrs_corr"] = _rolling(corr, 2 * LOCAL_BEATS + 1, 50)
    out["p_corr_contrast"] = out["p_corr_mean"] - out["local_p_corr"]
    out["qrs_corr_contrast"] = corr - out["local_qrs_corr"]
    return out


def _resample(x, up: int, down: int, xp):
    """Leads ``x`` ``[leads, n]`` resampled by ``up / down`` (scipy's polyphase filter, or CuPy's on the GPU)."""
    if xp is np:
        from scipy.signal import resample_poly
    else:
        from cupyx.scipy.signal import resample_poly
    return resample_poly(x, up, down, axis=1)


def beat_features(signals: list, fs: float, peaks: np.ndarray, xp=np) -> np.ndarray:
    """``[beats, len(NAMES)]`` float32 features of the beats at ``peaks`` (samples, increasing) of the leads
    ``signals`` (raw, any units; the first two are used; numpy, or cupy with ``xp=cupy``: the signal stays on
    the device and only per-beat figures come back)."""
    from fractions import Fraction

    from beatflow.dsp.filters import band_pass

    peaks = np.asarray(peaks, dtype=np.int64)
    rate = Fraction(FEATURE_FS / fs).limit_denominator(1000)
    x = xp.stack([xp.asarray(lead, xp.float32) for lead in signals[:2]])
    x = band_pass(_resample(x, rate.numerator, rate.denominator, xp), FEATURE_FS, *BAND_HZ, xp)
    t, regular = timing(peaks, fs)
    s = shape(x, np.round(peaks * float(rate)).astype(np.int64), FEATURE_FS, regular, xp)
    s.update(family(t, s, xp))
    return np.column_stack([t[name] for name in TIMING] + [s[name] for name in SHAPE]).astype(np.float32)


def same_shape(f: np.ndarray, label: np.ndarray) -> np.ndarray:
    """The groups ``label`` of rows ``f`` merged where they are one shape (each group's median within
    :data:`FAMILY_SAME` of its leader's in every column; :func:`beatflow.classify.kmeans.merge_largest_first`):
    each row's leader group."""
    from beatflow.classify.kmeans import merge_largest_first

    groups, row_group = np.unique(label, return_inverse=True)
    medians = np.stack([np.median(f[row_group == g], 0) for g in range(len(groups))])
    leader = merge_largest_first(np.bincount(row_group), lambda i: np.abs(medians - medians[i]).max(1) < FAMILY_SAME)
    return groups[leader][row_group]


def family_of(features: np.ndarray) -> np.ndarray:
    """Each row's family (an integer) from a matrix of :data:`NAMES` columns: :func:`family` gives every member
    of a family the same family figures, so the rows that share all of them are one family."""
    names = ("family_share", "family_rr_pre_local", "family_p_corr", "family_qrs_corr")
    figures = np.ascontiguousarray(np.column_stack([column(features, name) for name in names]), dtype=np.float32)
    return np.unique(figures.view(np.dtype((np.void, figures.shape[1] * 4))).ravel(), return_inverse=True)[1]


def family(t: dict[str, np.ndarray], s: dict[str, np.ndarray], xp=np) -> dict[str, np.ndarray]:
    """The family features (step 6 of the module docstring) from the timing and shape features (numpy; the
    k-means runs on ``xp``)."""
    from beatflow.classify.kmeans import kmeans

    f = np.nan_to_num(np.column_stack([s[name] for name in FAMILY_BY]))
    spread = 1.4826 * np.median(np.abs(f - np.median(f, 0)), 0)
    label = same_shape(f, kmeans(f / np.maximum(spread, 1e-3), FAMILIES, xp=xp))
    out = {name: np.empty(len(f)) for name in ("family_rr_pre_local", "family_p_corr", "family_qrs_corr")}
    out["family_share"] = np.bincount(label)[label] / len(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a family of beats without intervals: NaN
        for k in np.unique(label):
            rows = label == k
            out["family_rr_pre_local"][rows] = np.nanmedian(t["rr_pre_local"][rows])
            out["family_p_corr"][rows] = np.nanmedian(s["p_corr_mean"][rows])
            out["family_qrs_corr"][rows] = np.nanmedian(s["qrs_corr_mean"][rows])
    return out
