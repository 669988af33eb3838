"""Numba kernels, one algorithm for two targets: ``numba.njit`` on the CPU, ``numba.cuda.jit`` on the GPU.

Each algorithm is a plain per-element function (``_local_max_at``, ``_embed_at``) compiled once as an
inlined CPU function and once as a CUDA device function, so the two backends cannot drift apart.
The CUDA kernels live in :mod:`beatflow.cuda_kernels`, imported on first GPU use only, so importing this
module never touches ``numba.cuda``.
Under ``NUMBA_ENABLE_CUDASIM=1`` the CUDA kernels run in Numba's simulator (CI checks them there).
"""

import numba
import numpy as np

THREADS = 256


def _local_max_at(r, i, half):
    """True if ``r[i]`` is the maximum of ``r[i-half : i+half+1]``; on a plateau the leftmost sample wins."""
    v = r[i]
    for j in range(max(i - half, 0), i):
        if r[j] >= v:
            return False
    for j in range(i + 1, min(i + half + 1, r.shape[0])):
        if r[j] > v:
            return False
    return True


def _embed_at(x, starts, lengths, out, b, c):
    """Row ``out[b, c]``: channel ``c`` of beat ``b`` from ``starts[b]``, minus its mean, zero-padded."""
    width = out.shape[2]
    s = starts[b]
    m = min(lengths[b], width, x.shape[1] - s)
    acc = np.float64(0.0)  # explicit float64: the same arithmetic under njit, CUDA and the simulator
    for t in range(m):
        acc += np.float64(x[c, s + t])
    mean = acc / m if m > 0 else np.float64(0.0)
    for t in range(m):
        out[b, c, t] = np.float64(x[c, s + t]) - mean
    for t in range(max(m, 0), width):
        out[b, c, t] = 0.0


_local_max_cpu = numba.njit(inline="always")(_local_max_at)
_embed_cpu = numba.njit(inline="always")(_embed_at)


@numba.njit(parallel=True, cache=True)
def _nms_cpu(r, half, out):
    for i in numba.prange(r.shape[0]):
        out[i] = _local_max_cpu(r, i, half)


@numba.njit(parallel=True, cache=True)
def _embed_cpu_kernel(x, starts, lengths, out):
    channels = out.shape[1]
    for k in numba.prange(out.shape[0] * channels):
        _embed_cpu(x, starts, lengths, out, k // channels, k % channels)


def _blocks(n: int) -> int:
    return max(1, (n + THREADS - 1) // THREADS)


def nms_cpu(r: np.ndarray, half: int) -> np.ndarray:
    """Boolean mask of samples that are the maximum within ±``half`` samples (numpy in, numpy out)."""
    out = np.zeros(r.shape[0], dtype=np.bool_)
    _nms_cpu(r, int(half), out)
    return out


def nms_cuda(r, half: int, out) -> None:
    """Fill ``out`` (device bool array, len(r)) with the NMS mask of device array ``r``."""
    from .cuda_kernels import nms

    nms[_blocks(r.shape[0]), THREADS](r, int(half), out)


def embed_cpu(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """``[beats, channels, width]`` float32 rows: each beat from its start, mean removed, zero-padded."""
    out = np.empty((starts.shape[0], x.shape[0], width), dtype=np.float32)
    _embed_cpu_kernel(x, starts, lengths, out)
    return out


def embed_cuda(x, starts, lengths, out) -> None:
    """Fill device array ``out`` ``[beats, channels, width]`` from device signal ``x`` ``[channels, n]``."""
    from .cuda_kernels import embed

    embed[_blocks(out.shape[0] * out.shape[1]), THREADS](x, starts, lengths, out)
