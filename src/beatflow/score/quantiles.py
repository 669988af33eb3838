"""Rolling quantiles of a per-beat series over the usable values nearest each beat (the local reference RR and
its spread, in :mod:`beatflow.score.scores`)."""

from __future__ import annotations

import numpy as np

UPPER_QUARTILE = 0.75


def nearest_quantiles(x: np.ndarray, usable: np.ndarray, k: int, quantiles: tuple[float, ...]) -> list[np.ndarray]:
    """For each position of ``x``, each of ``quantiles`` of the ``k`` usable values nearest it (a centred window
    over the usable values alone, taken from the usable value nearest the position); NaN where none is usable."""
    import pandas as pd

    idx = np.flatnonzero(usable)
    if idx.size == 0:
        return [np.full(len(x), np.nan) for _ in quantiles]
    window = pd.Series(x[idx]).rolling(k, center=True, min_periods=1)
    values = [window.quantile(q).to_numpy() for q in quantiles]
    here = np.arange(len(x))
    after = np.clip(np.searchsorted(idx, here), 0, idx.size - 1)
    before = np.clip(after - 1, 0, idx.size - 1)
    nearest = np.where(np.abs(idx[before] - here) < np.abs(idx[after] - here), before, after)
    return [v[nearest] for v in values]
