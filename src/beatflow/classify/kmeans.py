"""A deterministic k-means (no random start, no atomic sums: the same rows give the same groups on every run),
and the merging of its groups where they are one shape."""

from __future__ import annotations

import numpy as np

KMEANS_STEPS = 20


def kmeans(f: np.ndarray, k: int, steps: int = KMEANS_STEPS, xp=np) -> np.ndarray:
    """Labels (numpy) of a deterministic k-means of rows ``f``: farthest-point start from the row nearest the
    median, then ``steps`` Lloyd steps. ``xp``: numpy, or cupy (the rows go to the device, the labels come
    back; the backends part only where a row is equidistant from two centres to rounding)."""
    f = xp.asarray(f)
    n = len(f)
    k = min(k, n)
    columns = xp.ascontiguousarray(f.T)  # per-column work on contiguous memory (a strided column is 5-10× slower)
    centres = [f[int(xp.argmin(((f - xp.median(columns, 1)) ** 2).sum(1)))]]
    d = ((f - centres[0]) ** 2).sum(1)
    for _ in range(k - 1):
        centres.append(f[int(xp.argmax(d))])
        d = xp.minimum(d, ((f - centres[-1]) ** 2).sum(1))
    c = xp.stack(centres)
    labels = xp.zeros(n, xp.int64)
    norms = (f**2).sum(1)
    for step in range(steps):
        distance = c @ columns  # [k, n]: a tall, narrow f @ c.T takes BLAS's slow path
        distance *= -2
        distance += norms
        distance += (c**2).sum(1)[:, None]
        new = distance.argmin(0)
        if step > 0 and bool((new == labels).all()):
            break
        labels = new
        if xp is np:
            count = np.bincount(labels, minlength=k)
            sums = np.stack([np.bincount(labels, weights=column, minlength=k) for column in columns], axis=1)
        else:  # cupy's bincount adds with atomics, in no fixed order: a one-hot product [k, n] @ [n, d]
            member = (labels[None, :] == xp.arange(k)[:, None]).astype(f.dtype)
            count, sums = member.sum(1), member @ f
        filled = count > 0
        c[filled] = sums[filled] / count[filled, None]  # each group's mean; an empty group keeps its centre
    return labels if xp is np else xp.asnumpy(labels)


def merge_largest_first(sizes: np.ndarray, matching) -> np.ndarray:
    """Each group's leader (a group index): the groups of ``sizes`` taken largest first, a group that no leader
    has claimed leads, and claims every unclaimed group that ``matching(leader)`` (a boolean mask over the
    groups) marks. A group is compared with a leader, never with another member: no chain of small steps joins
    two shapes."""
    leader = np.full(len(sizes), -1)
    for i in np.argsort(-np.asarray(sizes), kind="stable"):
        if leader[i] < 0:
            leader[i] = i
            leader[(leader < 0) & np.asarray(matching(i), bool)] = i
    return leader
