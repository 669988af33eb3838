"""The embedding kernel, one algorithm for two targets: ``numba.njit`` on the CPU, ``numba.cuda.jit`` on the
GPU (:mod:`beatflow.embed.kernels_cuda`, imported on first GPU use only).

Each algorithm is a plain per-element function (``_row_mean_at``, ``_embed_at``) compiled once as an inlined
CPU function and once as a CUDA device function, so the two backends cannot drift apart.
"""

import numba
import numpy as np


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


_row_mean_cpu = numba.njit(inline="always")(_row_mean_at)
_embed_cpu = numba.njit(inline="always")(_embed_at)


@numba.njit(parallel=True, cache=True)
def _embed_cpu_kernel(x, starts, lengths, means, out):
    channels, width = out.shape[1], out.shape[2]
    for k in numba.prange(out.shape[0] * channels):
        b, c = k // channels, k % channels
        means[b, c] = _row_mean_cpu(x, starts, lengths, width, b, c)
        for t in range(width):
            _embed_cpu(x, starts, lengths, means, out, b, c, t)


def embed_cpu(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """``[beats, channels, width]`` float32 rows: each beat from its start, mean removed, zero-padded."""
    out = np.empty((starts.shape[0], x.shape[0], width), dtype=np.float32)
    _embed_cpu_kernel(x, starts, lengths, np.empty(out.shape[:2]), out)
    return out
