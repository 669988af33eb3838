"""Numba kernels, one algorithm for two targets: ``numba.njit`` on the CPU, ``numba.cuda.jit`` on the GPU.

Each algorithm is a plain per-element function (``_local_max_at``, ``_row_mean_at``, ``_embed_at``) compiled once as an
inlined CPU function and once as a CUDA device function, so the two backends cannot drift apart.
The CUDA kernels live in :mod:`beatflow.cuda_kernels`, imported on first GPU use only, so importing this
module never touches ``numba.cuda``.
Under ``NUMBA_ENABLE_CUDASIM=1`` the CUDA kernels run in Numba's simulator (CI checks them there).
"""

import numba
import numpy as np

THREADS = 256


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


def _row_mean_at(x, starts, lengths, width, b, c):
    """Mean of channel ``c`` of beat ``b``'s samples in its row (float64; 0 for an empty row)."""
    s = starts[b]
    m = min(lengths[b], width, x.shape[1] - s)
    acc = np.float64(0.0)  # explicit float64: the same arithmetic under njit, CUDA and the simulator
    for t in range(m):
        acc += np.float64(x[c, s + t])
    return acc / m if m > 0 else np.float64(0.0)


def _embed_at(x, starts, lengths, means, out, b, c, t):
    """Element ``out[b, c, t]``: sample ``t`` of beat ``b``'s row minus the row's mean, zero past the beat."""
    s = starts[b]
    if t < min(lengths[b], out.shape[2], x.shape[1] - s):
        out[b, c, t] = np.float64(x[c, s + t]) - means[b, c]
    else:
        out[b, c, t] = 0.0


_local_max_cpu = numba.njit(inline="always")(_local_max_at)
_row_mean_cpu = numba.njit(inline="always")(_row_mean_at)
_embed_cpu = numba.njit(inline="always")(_embed_at)


@numba.njit(parallel=True, cache=True)
def _nms_cpu(r, half, floor, out):
    for i in numba.prange(r.shape[0]):
        out[i] = _local_max_cpu(r, i, half, floor)


@numba.njit(parallel=True, cache=True)
def _embed_cpu_kernel(x, starts, lengths, means, out):
    channels, width = out.shape[1], out.shape[2]
    for k in numba.prange(out.shape[0] * channels):
        b, c = k // channels, k % channels
        means[b, c] = _row_mean_cpu(x, starts, lengths, width, b, c)
        for t in range(width):
            _embed_cpu(x, starts, lengths, means, out, b, c, t)


def _blocks(n: int) -> int:
    return max(1, (n + THREADS - 1) // THREADS)


def nms_cpu(r: np.ndarray, half: int, floor: float = -np.inf) -> np.ndarray:
    """Boolean mask of samples above ``floor`` that are the maximum within ±``half`` samples (numpy in, numpy
    out)."""
    out = np.zeros(r.shape[0], dtype=np.bool_)
    _nms_cpu(r, int(half), float(floor), out)
    return out


def nms_cuda(r, half: int, out, floor: float = -np.inf) -> None:
    """Fill ``out`` (device bool array, len(r)) with the NMS mask of device array ``r`` above ``floor``."""
    from .cuda_kernels import nms

    nms[_blocks(r.shape[0]), THREADS](r, int(half), float(floor), out)


def embed_cpu(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """``[beats, channels, width]`` float32 rows: each beat from its start, mean removed, zero-padded."""
    out = np.empty((starts.shape[0], x.shape[0], width), dtype=np.float32)
    _embed_cpu_kernel(x, starts, lengths, np.empty(out.shape[:2]), out)
    return out


def embed_cuda(x, starts, lengths, means, out) -> None:
    """Fill device array ``out`` ``[beats, channels, width]`` from device signal ``x`` ``[channels, n]``, using
    device scratch ``means`` (float64 ``[beats, channels]``): row means first, then one thread per element,
    so that neighbouring threads write neighbouring samples."""
    from .cuda_kernels import embed, row_means

    row_means[_blocks(means.size), THREADS](x, starts, lengths, out.shape[2], means)
    embed[_blocks(out.size), THREADS](x, starts, lengths, means, out)
