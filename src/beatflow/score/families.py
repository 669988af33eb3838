"""Morphology families of a record's beats, without labels: k-means over the VAE latent means and the QRS
features against the record's typical beat proposes ``CLUSTERS`` groups; the groups merge, largest first,
while their median QRS complexes match (``SAME_CORR``, ``SAME_AMPLITUDE``, ``SAME_WIDTH``). Family 0 is the
largest (the dominant beat); families are numbered by size. A beat whose QRS does not match its family's
median (correlation below ``MEMBER_CORR``) has family −1 (unlike any family). QRS features after de Chazal
et al. 2004: each kept beat's QRS, both leads (``QRS_BEFORE_S`` to ``QRS_AFTER_S`` about its R peak, each lead
divided by the VAE's lead scale), against a template at the best shift within ``SHIFT_S``: the correlation,
the amplitude ratio and the width ratio (RMS time spread of the slope energy). Every constant is in seconds
or a ratio to the record's own dominant beat."""

from __future__ import annotations

import numpy as np

from beatflow.classify.kmeans import kmeans, merge_largest_first

QRS_BEFORE_S = 0.10  # the QRS window starts this long before the R peak ...
QRS_AFTER_S = 0.15  # ... and ends this long after it
SHIFT_S = 0.04  # a complex is compared at its best shift within this (an odd complex's R peak sits elsewhere)
CLUSTERS = 16  # k-means groups proposed before merging
SAME_CORR = 0.9  # two median QRS complexes are one family at this correlation or above ...
SAME_AMPLITUDE = 1.5  # ... amplitudes within this ratio ...
SAME_WIDTH = 1.25  # ... and widths within this ratio
MEMBER_CORR = 0.8  # a beat below this correlation with its family's median QRS is unlike any family (−1)
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


def _matches(corr, amp, width) -> np.ndarray:
    return (
        (corr >= SAME_CORR)
        & (np.abs(np.log(amp)) <= np.log(SAME_AMPLITUDE))
        & (np.abs(np.log(width)) <= np.log(SAME_WIDTH))
    )


def families(x, scale, peak_row: int, fs: float, latent_z: np.ndarray, typical: np.ndarray, xp=np) -> np.ndarray:
    """Morphology families of the kept beats (the module docstring).

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
    xp : module
        Where the k-means runs: numpy, or cupy (the rows' device).

    Returns
    -------
    numpy.ndarray of int64
        Per row, its family (0 = dominant), −1 when its QRS does not match its family's median.
    """
    windows, width, shift = _windows(x, scale, peak_row, fs)
    labels, best = _propose_groups(windows, width, shift, latent_z, typical, xp)
    family, n_families = _merge_groups(windows, labels, best, width, shift)
    return _members(windows, family, n_families, best, width, shift)


def _propose_groups(windows, width: int, shift: int, latent_z: np.ndarray, typical: np.ndarray, xp):
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
    return kmeans(f, CLUSTERS, xp=xp), best


def _merge_groups(windows, labels: np.ndarray, best: np.ndarray, width: int, shift: int) -> tuple[np.ndarray, int]:
    """Merge the groups, largest first, while their median QRS complexes match a leader's (:func:`_matches`,
    :func:`~beatflow.classify.kmeans.merge_largest_first`): each row's family, numbered by size (0 the
    largest), and the number of families."""
    import torch

    groups, row_group = np.unique(labels, return_inverse=True)
    medians = torch.stack(
        [_aligned_median(windows, np.flatnonzero(row_group == g), best, width) for g in range(len(groups))]
    )
    sizes = np.bincount(row_group)
    padded = torch.nn.functional.pad(medians, (shift, shift), mode="replicate")
    leader = merge_largest_first(sizes, lambda i: _matches(*compare(padded, medians[i], width, shift)[:3]))
    leaders = [i for i in np.argsort(-sizes, kind="stable") if leader[i] == i]  # in the order they began
    number = np.empty(len(groups), np.int64)
    number[leaders] = np.arange(len(leaders))
    family = number[leader][row_group]
    counts = np.bincount(family, minlength=len(leaders))
    rank = np.empty(len(counts), np.int64)
    rank[np.argsort(-counts, kind="stable")] = np.arange(len(counts))
    return rank[family], len(counts)


def _members(windows, family: np.ndarray, n_families: int, best: np.ndarray, width: int, shift: int) -> np.ndarray:
    """``family`` with −1 for the rows whose QRS does not match their family's median (``MEMBER_CORR``)."""
    import torch

    member_corr = np.empty(windows.shape[0])
    for fam in range(n_families):
        rows = np.flatnonzero(family == fam)
        template = _aligned_median(windows, rows, best, width)
        c, _, _, _ = compare(windows[torch.as_tensor(rows, device=windows.device)], template, width, shift)
        member_corr[rows] = c
    return np.where(member_corr < MEMBER_CORR, -1, family)
