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
