"""A deterministic k-means (no random start: the same rows give the same groups on every run and backend)."""

from __future__ import annotations

import numpy as np

KMEANS_STEPS = 20


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
    norms = (f**2).sum(1)[:, None]
    rows = np.ascontiguousarray(f.T)  # c @ rows: a tall, narrow f @ c.T takes BLAS's slow path (10× here)
    for step in range(steps):
        new = (norms - 2 * (c @ rows).T + (c**2).sum(1)[None, :]).argmin(1)
        if step > 0 and (new == labels).all():
            break
        labels = new
        count = np.bincount(labels, minlength=k)
        sums = np.stack([np.bincount(labels, weights=column, minlength=k) for column in f.T], axis=1)
        c[count > 0] = sums[count > 0] / count[count > 0, None]  # each group's mean; an empty group keeps its centre
    return labels
