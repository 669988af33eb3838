"""A deterministic k-means (no random start: the same rows give the same groups on every run and backend)."""

from __future__ import annotations

import numpy as np

KMEANS_STEPS = 20


def kmeans(f: np.ndarray, k: int, steps: int = KMEANS_STEPS) -> np.ndarray:
    """Labels of a deterministic k-means of rows ``f``: farthest-point start from the row nearest the median,
    then ``steps`` Lloyd steps."""
    n = len(f)
    k = min(k, n)
    columns = np.ascontiguousarray(f.T)  # per-column work on contiguous memory (a strided column is 5-10× slower)
    centres = [f[np.argmin(((f - np.median(columns, 1)) ** 2).sum(1))]]
    d = ((f - centres[0]) ** 2).sum(1)
    for _ in range(k - 1):
        centres.append(f[np.argmax(d)])
        d = np.minimum(d, ((f - centres[-1]) ** 2).sum(1))
    c = np.array(centres)
    labels = np.zeros(n, np.int64)
    norms = (f**2).sum(1)
    for step in range(steps):
        distance = c @ columns  # [k, n]: a tall, narrow f @ c.T takes BLAS's slow path
        distance *= -2
        distance += norms
        distance += (c**2).sum(1)[:, None]
        new = distance.argmin(0)
        if step > 0 and (new == labels).all():
            break
        labels = new
        count = np.bincount(labels, minlength=k)
        sums = np.stack([np.bincount(labels, weights=column, minlength=k) for column in columns], axis=1)
        c[count > 0] = sums[count > 0] / count[count > 0, None]  # each group's mean; an empty group keeps its centre
    return labels
