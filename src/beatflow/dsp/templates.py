"""A record's median beat shape and each beat's alignment to it, by cross-correlation over every lead, on
windows ``[beats, leads, samples]`` cut about the beats (numpy)."""

from __future__ import annotations

import numpy as np

ALIGN_PASSES = 2


def spread(beats: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of ``beats`` (indices), evenly spread over them."""
    return beats[np.linspace(0, len(beats) - 1, most).astype(np.int64)] if len(beats) > most else beats


def shifted(windows: np.ndarray, pad: int) -> np.ndarray:
    """``[2 pad + 1, ..., W]``: windows ``[..., W + 2 pad]`` at every shift, each centred."""
    width = windows.shape[-1] - 2 * pad
    out = np.stack([windows[..., s : s + width] for s in range(2 * pad + 1)])
    return out - out.mean(-1, keepdims=True)


def template(windows: np.ndarray, pad: int) -> np.ndarray:
    """``[leads, W + 2 pad]``: the median of ``windows`` ``[beats, leads, W + 4 pad]``, each aligned to the
    median (best correlation over every lead, within ``±pad``) :data:`ALIGN_PASSES` times."""
    cuts = shifted(windows, pad)  # [shifts, beats, leads, W + 2 pad]
    beats = np.arange(windows.shape[0])
    best = np.full(len(beats), pad)
    for _ in range(ALIGN_PASSES):
        middle = np.median(cuts[best, beats], 0)
        best = np.einsum("sblw,lw->sb", cuts, middle).argmax(0)
    return np.median(cuts[best, beats], 0)


def correlation_terms(windows: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window of ``windows`` ``[beats, leads, W + 2 pad]`` and shift (``0`` to ``2 pad``): the correlation of
    the centred ``W``-sample cut with the centred ``reference`` ``[leads, W]`` and the centred cut's energy, each
    summed over the leads (``[beats, 2 pad + 1]`` both; the energies from running sums, no copy of the cuts)."""
    width = reference.shape[-1]
    x = windows - windows.mean(-1, keepdims=True)
    ref = (reference - reference.mean(-1, keepdims=True)).astype(x.dtype)
    numerator = np.einsum("blsw,lw->bs", np.lib.stride_tricks.sliding_window_view(x, width, axis=-1), ref)
    zero = np.zeros(x.shape[:-1] + (1,), x.dtype)
    s1 = np.concatenate([zero, np.cumsum(x, -1)], -1)
    s2 = np.concatenate([zero, np.cumsum(x * x, -1)], -1)
    total, square = s1[..., width:] - s1[..., :-width], s2[..., width:] - s2[..., :-width]
    return numerator, np.maximum(square - total**2 / width, 0.0).sum(1)


def shift_of(numerator: np.ndarray, energy: np.ndarray, pad: int) -> np.ndarray:
    """The shift (samples, ``-pad`` to ``pad``) at the peak of each row's normalised correlation
    (:func:`correlation_terms`); 0 where no shift correlates positively (a flat window)."""
    score = numerator / np.sqrt(np.maximum(energy, 1e-12))
    best = score.argmax(1)
    return np.where(score[np.arange(len(best)), best] > 0, best - pad, 0)
