"""Non-maximum suppression, one algorithm for two targets: ``numba.njit`` on the CPU, ``numba.cuda.jit`` on the
GPU (:mod:`beatflow.detect.nms_cuda`, imported on first GPU use only, so importing this module never touches
``numba.cuda``).

The per-sample function :func:`_local_max_at` is compiled once as an inlined CPU function and once as a CUDA
device function, so the two backends cannot drift apart. Under ``NUMBA_ENABLE_CUDASIM=1`` the CUDA kernel
runs in Numba's simulator (CI checks it there).
"""

import numba
import numpy as np


def _local_max_at(r, i, half, floor):
    """True if ``r[i]`` is above ``floor`` and the maximum of ``r[i-half : i+half+1]``; on a plateau the
    leftmost sample wins.

    Samples at or below the floor (most of a recording) are rejected without a read of their neighbours, the
    others after visiting the neighbours nearest first (on a slope, one or two reads)."""
    v = r[i]
    if v <= floor:
        return False
    n = r.shape[0]
    for d in range(1, half + 1):
        if i - d >= 0 and r[i - d] >= v:
            return False
        if i + d < n and r[i + d] > v:
            return False
    return True


_local_max_cpu = numba.njit(inline="always")(_local_max_at)


@numba.njit(parallel=True, cache=True)
def _nms_cpu(r, half, floor, out):
    for i in numba.prange(r.shape[0]):
        out[i] = _local_max_cpu(r, i, half, floor)


def nms_cpu(r: np.ndarray, half: int, floor: float = -np.inf) -> np.ndarray:
    """Boolean mask of samples above ``floor`` that are the maximum within ±``half`` samples (numpy in, numpy
    out)."""
    out = np.zeros(r.shape[0], dtype=np.bool_)
    _nms_cpu(r, int(half), float(floor), out)
    return out
