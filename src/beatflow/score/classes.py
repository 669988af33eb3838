"""Beat classes without labels (AAMI EC57: ``N``, ``S``, ``V``, ``F``, ``Q``): morphology families within the
record, each named by its members' timing, then each beat by its family and its own timing (after
Teijeiro et al. 2018: per-record clustering of shapes and rules on timing; QRS features after de Chazal et
al. 2004). Every constant is in seconds or a ratio to the record's own dominant beat.

1. *QRS features* (:func:`compare`). Each kept beat's QRS, both leads (``QRS_BEFORE_S`` to
   ``QRS_AFTER_S`` about its R peak, each lead divided by the VAE's lead scale, so leads weigh by their
   signal-to-noise), against a template, at the shift within ``SHIFT_S`` where they correlate best: the
   correlation, the amplitude ratio and the width ratio (RMS time spread of the slope energy).
2. *Families* (:func:`families`). K-means over the VAE latent means (in units of the record's normal spread)
   and the QRS features against the record's typical beat proposes ``CLUSTERS`` groups; the groups merge,
   largest first, while their median QRS complexes match (``SAME_CORR``, ``SAME_AMPLITUDE``, ``SAME_WIDTH``).
   Family 0 is the largest (the dominant beat); families are numbered by size. A beat whose QRS does not
   match its family's median (correlation below ``MEMBER_CORR``) has family −1 (unlike any family) and is
   classed on its own.
3. *Family class* (:func:`family_classes`). A family whose median QRS matches the dominant one's is
   supraventricular. One whose QRS differs is the same rhythm conducted otherwise (``N``: bundle branch block,
   aberrancy, escape beats) when its members come in runs of ``CONDUCTION_RUN`` beats or late (``ESCAPE``);
   else it is ventricular when its QRS is unlike the dominant one (median correlation below ``V_CORR``,
   early or on time: late-coupled ventricular beats; not when on time and its median row before the QRS
   window holds the dominant beat's P wave, ``P_CORR``, ``P_AMPLITUDE``: aberrant conduction) or when it is
   early (median coupling below ``V_COUPLING`` × the dominant family's, and ``V_EARLY_SHARE`` of its members
   premature).
4. *Beat class* (:func:`classify`). Members of a ventricular family are ``V``; so is a beat of family −1
   whose QRS differs from the dominant one and that is premature, or unlike it (``V_CORR``) and not late.
   Any other beat is ``S`` or ``N`` by its timing (:func:`supraventricular`: premature against the sinus
   interval, a short-long pair, or a run; never in an irregular rhythm, where irregularity is not
   prematurity), and ``N`` right after a beat without a shape. Beats without a shape (pruned: interval out of
   range, the last beat) are ``Q``. Fusion (``F``) is not assigned.

An anomaly (``scores.parquet``) is a beat whose score passes 1 (shape or timing, :mod:`beatflow.score.scores`),
whose class is ``S``, ``V`` or ``F``, or whose shape is unlike any family (family −1).
"""

from __future__ import annotations

import numpy as np

QRS_BEFORE_S = 0.10  # the QRS window starts this long before the R peak ...
QRS_AFTER_S = 0.15  # ... and ends this long after it
SHIFT_S = 0.04  # a complex is compared at its best shift within this (an odd complex's R peak sits elsewhere)
CLUSTERS = 16  # k-means groups proposed before merging
KMEANS_STEPS = 20
SAME_CORR = 0.9  # two median QRS complexes are one family at this correlation or above ...
SAME_AMPLITUDE = 1.5  # ... amplitudes within this ratio ...
SAME_WIDTH = 1.25  # ... and widths within this ratio
MEMBER_CORR = 0.8  # a beat below this correlation with its family's median QRS is unlike any family (−1)
CONDUCTION_RUN = 30  # a differing family in runs of this many beats is the rhythm conducted otherwise (BBB)
ESCAPE = 1.1  # a differing family this late (x the dominant's coupling) is of escape beats
V_COUPLING = 0.9  # a differing family this early (x the dominant's coupling) is ventricular ...
V_EARLY_SHARE = 0.5  # ... when this share of its members is premature (the rhythm ratio's early test) ...
V_CORR = 0.6  # ... and, early or not, one whose QRS correlates with the dominant one below this
RUN_SLACK = 1.1  # a beat continues a supraventricular run with an interval up to this x the previous one ...
RUN_EARLY = 0.5  # ... while at least this far (of the threshold) early against the sinus interval
S_EARLY = 0.5  # a beat this far (of the threshold) early is S when the next interval is longer by the threshold
IRREGULAR = 1.2  # no S where the early threshold is widened past this x its regular value (atrial fibrillation)
P_CORR = 0.8  # an on-time differing family whose median P-wave stretch matches the dominant one's at this ...
P_AMPLITUDE = 2.0  # ... correlation and within this amplitude ratio is conducted (a sinus P wave before it): N
CHUNK = 8192  # rows compared at a time


def _windows(x, scale, peak_row: int, fs: float):
    """``[rows, channels, W + 2S]`` QRS windows of tensor ``x`` with ``S`` samples of shift room each side,
    each lead divided by ``scale``; and ``(W, S)``."""
    import torch

    shift = max(1, round(SHIFT_S * fs))
    start = max(0, peak_row - round(QRS_BEFORE_S * fs) - shift)
    stop = min(x.shape[-1], peak_row + round(QRS_AFTER_S * fs) + shift + 1)
    w = x[:, :, start:stop] / torch.as_tensor(scale, dtype=x.dtype, device=x.device)[None, :, None]
    return w, stop - start - 2 * shift, shift


def _spread(seg):
    """RMS time spread (samples) of the slope energy of ``seg`` ``[..., channels, W]`` summed over leads, above
    its median (the noise floor: the QRS holds well under half of the window)."""
    import torch

    e = (seg[..., 1:] - seg[..., :-1]).pow(2).sum(-2)
    e = (e - e.median(-1, keepdim=True).values).clamp_min(0)
    t = torch.as_tensor(np.arange(e.shape[-1], dtype=np.float64), dtype=e.dtype, device=e.device)
    total = e.sum(-1).clamp_min(1e-30)
    centre = (e * t).sum(-1) / total
    return ((e * (t - centre[..., None]) ** 2).sum(-1) / total).sqrt()


def compare(windows, template, width: int, shift: int):
    """Each window ``[rows, channels, W + 2S]`` against ``template`` ``[channels, W]`` at its best shift:
    ``(corr, amplitude, width, best)`` numpy arrays (width as a ratio to the template's; best: the offset into
    the window)."""
    import torch

    tc = template - template.mean(-1, keepdim=True)
    t_norm = tc.pow(2).sum().sqrt().clamp_min(1e-12)
    t_width = _spread(template[None])[0].clamp_min(1e-6)
    kernel = tc[None].to(windows.dtype)  # [1, channels, W]: the sum over leads of the window times the template
    out = []
    for chunk in windows.split(CHUNK):
        # each shift's dot product with the (zero-mean) template, and its centred energy, as convolutions
        dot = torch.nn.functional.conv1d(chunk, kernel)[:, 0]
        c1 = torch.nn.functional.pad(chunk.double().cumsum(-1), (1, 0))  # running sums: each shift's window sum
        c2 = torch.nn.functional.pad((chunk.double() ** 2).cumsum(-1), (1, 0))
        s1, s2 = c1[..., width:] - c1[..., :-width], c2[..., width:] - c2[..., :-width]
        energy = (s2 - s1 * s1 / width).sum(1).clamp_min(0).to(dot.dtype)
        corr, best = (dot / (energy.sqrt() * t_norm).clamp_min(1e-12)).max(1)
        idx = best[:, None, None] + torch.arange(width, device=chunk.device)[None, None, :]
        seg = torch.gather(chunk, 2, idx.expand(-1, chunk.shape[1], -1))
        seg = seg - seg.mean(-1, keepdim=True)
        amp = seg.pow(2).sum((1, 2)).sqrt() / t_norm
        out.append(torch.stack([corr, amp, _spread(seg) / t_width, best.to(corr.dtype)], 1))
    res = torch.cat(out).double().cpu().numpy() if out else np.zeros((0, 4))
    return res[:, 0], res[:, 1], res[:, 2], res[:, 3].astype(np.int64)


def _aligned_median(windows, rows, best, width: int):
    """Median over ``rows`` of the windows, each cut at its ``best`` offset: ``[channels, W]``."""
    import torch

    rows_t = torch.as_tensor(rows, device=windows.device)
    b = torch.as_tensor(best[rows], device=windows.device)
    idx = b[:, None, None] + torch.arange(width, device=windows.device)[None, None, :]
    sub = windows[rows_t]
    return torch.gather(sub, 2, idx.expand(-1, sub.shape[1], -1)).median(0).values


def kmeans(f: np.ndarray, k: int, steps: int = KMEANS_STEPS) -> np.ndarray:
    """Labels of a deterministic k-means of rows ``f``: farthest-point start from the row nearest the median,
    then ``steps`` Lloyd steps."""
    n = len(f)
    k = min(k, n)
    centres = [f[np.argmin(((f - np.median(f, 0)) ** 2).sum(1))]]
    d = ((f - centres[0]) ** 2).sum(1)
    for _ in range(k - 1):
        centres.append(f[np.argmax(d)])
        d = np.minimum(d, ((f - centres[-1]) ** 2).sum(1))
    c = np.array(centres)
    labels = np.zeros(n, np.int64)
    for _ in range(steps):
        dist = (f**2).sum(1)[:, None] - 2 * f @ c.T + (c**2).sum(1)[None, :]
        new = dist.argmin(1)
        if (new == labels).all() and _ > 0:
            break
        labels = new
        for j in range(k):
            members = labels == j
            if members.any():
                c[j] = f[members].mean(0)
    return labels


def _matches(corr, amp, width) -> np.ndarray:
    return (
        (corr >= SAME_CORR)
        & (np.abs(np.log(amp)) <= np.log(SAME_AMPLITUDE))
        & (np.abs(np.log(width)) <= np.log(SAME_WIDTH))
    )


def families(x, scale, peak_row: int, fs: float, latent_z: np.ndarray, typical: np.ndarray) -> dict:
    """Morphology families of the kept beats (step 2 of the module docstring).

    Parameters
    ----------
    x : torch.Tensor
        ``[rows, channels, samples]``: the kept beats' rows, the R peak at ``peak_row``.
    scale : array_like of float
        Each lead's scale (the VAE's), that the QRS windows are divided by.
    peak_row : int
        The R peak's sample in a row.
    fs : float
        Sampling frequency (Hz).
    latent_z : numpy.ndarray
        ``[rows, latent]``: latent means in units of the record's normal spread.
    typical : numpy.ndarray of bool
        Rows of typical shape (the first template); none: all rows.

    Returns
    -------
    dict
        ``family`` per row (0 = dominant, −1 = none); each row's QRS ``corr``, ``amplitude`` and ``width``
        against the dominant family's median QRS; per family ``same`` (its median QRS matches the dominant
        one's) and ``p_like`` (its median row before the QRS window matches the dominant family's there, at
        the best shift within ``SHIFT_S``: the same P wave).
    """
    windows, width, shift = _windows(x, scale, peak_row, fs)
    labels, best = _propose_groups(windows, width, shift, latent_z, typical)
    family, n_families = _merge_groups(windows, labels, best, width, shift)
    fit = _fit_families(windows, family, n_families, best, width, shift)
    p_like = _p_like(x, scale, fit["family"], n_families, peak_row, fs, shift)
    return {**fit, "p_like": p_like}


def _propose_groups(windows, width: int, shift: int, latent_z: np.ndarray, typical: np.ndarray):
    """K-means labels (``CLUSTERS`` groups) over the latent means and the QRS features against the typical
    rows' median QRS (in units of their robust spread); and each window's best offset against that QRS."""
    import torch

    n = windows.shape[0]
    centre = slice(shift, shift + width)
    typical_rows = np.flatnonzero(typical) if typical.any() else np.arange(n)
    first = windows[torch.as_tensor(typical_rows, device=windows.device), :, centre].median(0).values
    corr, amp, wid, best = compare(windows, first, width, shift)
    qrs = np.column_stack([1 - corr, np.log(amp), np.log(wid)])
    ref = qrs[typical_rows]
    sd = 1.4826 * np.median(np.abs(ref - np.median(ref, 0)), 0)
    f = np.column_stack([latent_z, qrs / np.maximum(sd, 1e-3)])
    return kmeans(f, CLUSTERS), best


def _merge_groups(windows, labels: np.ndarray, best: np.ndarray, width: int, shift: int) -> tuple[np.ndarray, int]:
    """Merge the groups, largest first, while their median QRS complexes match (:func:`_matches`): each row's
    family, numbered by size (0 the largest), and the number of families."""
    import torch

    groups = np.unique(labels)
    medians = torch.stack([_aligned_median(windows, np.flatnonzero(labels == g), best, width) for g in groups])
    sizes = np.array([(labels == g).sum() for g in groups])
    order = np.argsort(-sizes, kind="stable")
    padded = torch.nn.functional.pad(medians, (shift, shift), mode="replicate")
    family_of_group = np.full(len(groups), -1)
    leaders = []
    for i in order:
        if family_of_group[i] >= 0:
            continue
        family_of_group[i] = len(leaders)
        leaders.append(i)
        c, a, w, _ = compare(padded, medians[i], width, shift)
        join = _matches(c, a, w) & (family_of_group < 0)
        family_of_group[join] = family_of_group[i]
    family = family_of_group[np.searchsorted(groups, labels)]
    counts = np.bincount(family, minlength=len(leaders))
    rank = np.empty(len(counts), np.int64)
    rank[np.argsort(-counts, kind="stable")] = np.arange(len(counts))
    return rank[family], len(counts)


def _fit_families(windows, family: np.ndarray, n_families: int, best: np.ndarray, width: int, shift: int) -> dict:
    """Each row's QRS against the dominant family's median (``corr``, ``amplitude``, ``width``), per family
    ``same`` (its members' medians match the dominant QRS), and ``family`` with −1 for the rows whose QRS
    does not match their family's median (``MEMBER_CORR``)."""
    import torch

    n = windows.shape[0]
    dominant = _aligned_median(windows, np.flatnonzero(family == 0), best, width)
    corr, amp, wid, best_d = compare(windows, dominant, width, shift)
    same = np.zeros(n_families, bool)
    member_corr = np.empty(n)
    for fam in range(n_families):
        rows = np.flatnonzero(family == fam)
        template = _aligned_median(windows, rows, best_d, width)
        c, _, _, _ = compare(windows[torch.as_tensor(rows, device=windows.device)], template, width, shift)
        member_corr[rows] = c
        same[fam] = bool(
            _matches(*(np.array([v]) for v in (np.median(corr[rows]), np.median(amp[rows]), np.median(wid[rows]))))[0]
        )
    family = np.where(member_corr < MEMBER_CORR, -1, family)
    return {"family": family, "corr": corr, "amplitude": amp, "width": wid, "same": same}


def _p_like(x, scale, family: np.ndarray, n_families: int, peak_row: int, fs: float, shift: int) -> np.ndarray:
    """Per family, whether its median row before the QRS window (the P wave) matches the dominant family's
    there (``P_CORR``, ``P_AMPLITUDE``), at the best shift within ``shift`` samples."""
    import torch

    head = max(2, peak_row - round(QRS_BEFORE_S * fs))  # the row before the QRS window: the P wave
    p_scale = torch.as_tensor(scale, dtype=x.dtype, device=x.device)[None, :, None]
    p_waves = [
        x[torch.as_tensor(np.flatnonzero(family == f), device=x.device), :, :head].div(p_scale).median(0).values
        if (family == f).any()
        else None
        for f in range(n_families)
    ]
    p_like = np.zeros(n_families, bool)
    if p_waves and p_waves[0] is not None and head > 2 * shift + 2:
        ref = p_waves[0][:, shift : head - shift]
        for f, w in enumerate(p_waves):
            if w is not None:
                c, a, _, _ = compare(w[None], ref, head - 2 * shift, shift)
                p_like[f] = c[0] >= P_CORR and 1 / P_AMPLITUDE <= a[0] <= P_AMPLITUDE
    return p_like


def run_lengths(family: np.ndarray) -> np.ndarray:
    """Per row, the length of the run of consecutive rows of its family that holds it."""
    change = np.r_[True, family[1:] != family[:-1]]
    run = np.cumsum(change) - 1
    return np.bincount(run)[run]


def family_classes(fam: dict, coupling: np.ndarray, early: np.ndarray) -> np.ndarray:
    """Per family, ``V`` (ventricular) or ``N`` (supraventricular, or the same rhythm conducted differently),
    from ``same`` (its median QRS matches the dominant one's), its members' QRS correlation with the dominant
    beat, their ``coupling`` (interval before the beat over the local sinus RR, per row) and their runs. A
    differing family is conducted (``N``) when its members come in runs of at least ``CONDUCTION_RUN`` beats
    (a bundle branch block for a stretch of the record) or late (median coupling at least ``ESCAPE`` × the
    dominant family's: escape beats); otherwise it is ventricular when early (median coupling below
    ``V_COUPLING`` × the dominant family's) or, on time, when its QRS is unlike the dominant one (median
    correlation below ``V_CORR``: a late-coupled ventricular beat, where a shape that merely varies with
    respiration or position keeps its QRS), unless on time and preceded by the dominant beat's P wave
    (``p_like``: a conducted beat)."""
    family = fam["family"]
    runs = run_lengths(family)
    out = np.full(len(fam["same"]), "N", dtype=object)
    dominant_coupling = np.nanmedian(coupling[family == 0]) if (family == 0).any() else 1.0
    for f in range(len(out)):
        rows = family == f
        if f == 0 or fam["same"][f] or not rows.any():
            continue
        timing = np.nanmedian(coupling[rows]) / dominant_coupling
        conducted = np.median(runs[rows]) >= CONDUCTION_RUN or timing >= ESCAPE
        unlike = np.median(fam["corr"][rows]) < V_CORR and not (timing >= V_COUPLING and fam["p_like"][f])
        premature = timing < V_COUPLING and np.mean(early[rows] > 1) >= V_EARLY_SHARE
        if not conducted and (unlike or premature):
            out[f] = "V"
    return out


def supraventricular(parts, ventricular: np.ndarray, rr_window: int) -> np.ndarray:
    """Per beat, whether it is a supraventricular ectopic beat (not ``ventricular``). The sinus interval is the
    geometric mean of the typical-interval estimate (``parts.typical``) and the upper quartile of the
    ``rr_window`` nearest intervals that neither end nor start at a ventricular beat (the pause after a
    ventricular beat is no sinus interval). A beat is S when its interval is shorter than that by more than
    ``parts.early_at``; or by ``S_EARLY`` of it when the next interval is longer than its own by the
    threshold (a premature beat and the pause after it); or when it continues a run that an S beat began (its
    interval at most ``RUN_SLACK`` × the previous one's and still ``RUN_EARLY`` of the threshold early). Where
    the rhythm is irregular (``parts.early_at`` widened past ``IRREGULAR`` × ``parts.regular_early_at``: atrial
    fibrillation, without P waves and so without atrial premature beats), no beat is S."""
    from beatflow.score.quantiles import UPPER_QUARTILE, nearest_quantiles

    log_rr = parts.log_rr
    sinus = np.isfinite(log_rr) & ~ventricular & np.r_[False, ~ventricular[:-1]]
    if sinus.any():
        (surrounding,) = nearest_quantiles(log_rr, sinus, rr_window, (UPPER_QUARTILE,))
        reference = (surrounding + parts.typical) / 2
    else:
        reference = parts.reference
    early = np.nan_to_num((reference - log_rr) / parts.early_at, nan=0.0)
    with np.errstate(invalid="ignore"):
        contrast = np.nan_to_num((np.r_[log_rr[1:], np.nan] - log_rr) / parts.early_at, nan=0.0)
    regular = parts.early_at <= IRREGULAR * parts.regular_early_at
    ectopic = ((early > 1) | ((early > S_EARLY) & (contrast > 1))) & ~ventricular & regular
    prev_rr = np.r_[np.nan, log_rr[:-1]]
    with np.errstate(invalid="ignore"):
        may_continue = ~ventricular & (early > RUN_EARLY) & (log_rr <= prev_rr + np.log(RUN_SLACK))
    for i in np.flatnonzero(may_continue & ~ectopic):  # in time order, so a run grows beat by beat
        if i > 0 and ectopic[i - 1]:
            ectopic[i] = True
    return ectopic


def classify(
    peaks: np.ndarray,
    kept: np.ndarray,
    x,
    scale,
    peak_row: int,
    fs: float,
    latent_z: np.ndarray,
    typical: np.ndarray,
    parts,
    rr_window: int = 9,
) -> tuple[np.ndarray, np.ndarray]:
    """Each beat's AAMI class and morphology family (steps 1–4 of the module docstring).

    Parameters
    ----------
    peaks : numpy.ndarray
        Every beat's R peak (samples); its length is the number of beats.
    kept : numpy.ndarray of bool
        Which beats have a shape (a row of ``x``); the others are ``Q``.
    x, scale, peak_row, fs, latent_z, typical
        The kept beats' rows and what :func:`families` takes with them.
    parts : beatflow.score.scores.Timing
        The beats' timing (``log_rr``, ``reference``, ``early``, ``early_at``, …).
    rr_window : int, optional
        Intervals around a beat that give its sinus interval (:func:`supraventricular`).

    Returns
    -------
    class : numpy.ndarray of str
        Per beat: ``N``, ``S``, ``V`` or ``Q``.
    family : numpy.ndarray of int64
        Per beat: its family (0 = dominant), −1 when unlike any family or without a shape.
    """
    n = len(peaks)
    cls = np.full(n, "Q", dtype=object)
    family = np.full(n, -1, dtype=np.int64)
    if not kept.any():
        return cls.astype(str), family
    early = np.nan_to_num(parts.early, nan=0.0)
    coupling = np.exp(parts.log_rr - parts.reference)
    fam = families(x, scale, peak_row, fs, latent_z, typical)
    named = family_classes(fam, coupling[kept], early[kept])
    f = fam["family"]
    differs = ~_matches(fam["corr"], fam["amplitude"], fam["width"])
    ventricular = np.zeros(n, bool)
    dominant_coupling = np.nanmedian(coupling[kept][f == 0]) if (f == 0).any() else 1.0
    not_late = coupling[kept] < ESCAPE * dominant_coupling
    lone = (f < 0) & differs & ((early[kept] > 1) | ((fam["corr"] < V_CORR) & not_late))
    ventricular[kept] = lone | ((f >= 0) & (named[np.maximum(f, 0)] == "V"))
    ectopic = supraventricular(parts, ventricular, rr_window) & np.r_[True, kept[:-1]]
    cls[kept] = np.where(ventricular, "V", np.where(ectopic, "S", "N"))[kept]
    family[kept] = f
    return cls.astype(str), family
