"""Peaks of an envelope: non-maximum suppression (:mod:`beatflow.detect.nms`), the windows around peaks, and
another lead's support at them: the floor the other detection modules build on."""

from __future__ import annotations

import numpy as np

SUPPORT_S = 0.04  # the second lead's QRS is looked for within this of the first lead's peak


def nms_mask(r, half: int, backend, floor: float = -np.inf):
    """Samples above ``floor`` that are the maximum of ±``half`` samples (Numba CUDA kernel on GPU, njit on
    CPU)."""
    if backend.gpu:
        from beatflow.detect.nms_cuda import nms_cuda

        out = backend.xp.empty(r.shape[0], dtype=backend.xp.bool_)
        nms_cuda(r, half, out, floor)
        return out
    from beatflow.detect.nms import nms_cpu

    return nms_cpu(np.ascontiguousarray(r), half, floor)


def window_index(peaks, half: int, n: int, xp):
    """``[peaks, 2·half + 1]`` sample indices of the window ±``half`` around each peak, clipped to ``[0, n)``."""
    return xp.clip(peaks[:, None] + xp.arange(-half, half + 1)[None, :], 0, n - 1)


def lead_support(lead, fs: float, peaks, xp):
    """At each of ``peaks``, the largest value of another lead's magnitude envelope ``lead``
    (:func:`detection_envelope` with ``absolute``) within ±``SUPPORT_S``: about 1 or more where that lead shows
    a QRS complex too, near 0 where it is quiet."""
    return lead[window_index(peaks, max(1, round(SUPPORT_S * fs)), lead.shape[0], xp)].max(axis=1)


def candidates(envelope, half: int, backend, floor: float):
    """The NMS peaks of ``envelope`` above ``floor``, each the maximum of ±``half`` samples (``xp`` int64)."""
    return backend.xp.flatnonzero(nms_mask(envelope, half, backend, floor))
