"""The CUDA side of :mod:`beatflow.kernels`: the same per-element functions as CUDA device functions.

Imported only on the GPU path (and by tests, under ``NUMBA_ENABLE_CUDASIM=1`` without a GPU). ``cuda`` must
be a module global here: Numba's simulator swaps it for its per-thread stand-in.
"""

from numba import cuda

from .kernels import _embed_at, _local_max_at, _row_mean_at

_local_max = cuda.jit(device=True)(_local_max_at)
_row_mean = cuda.jit(device=True)(_row_mean_at)
_embed_element = cuda.jit(device=True)(_embed_at)


@cuda.jit
def nms(r, half, floor, out):
    """``out[i]`` = ``r[i]`` is above ``floor`` and the maximum of ``r[i-half : i+half+1]`` (leftmost sample
    of a plateau)."""
    i = cuda.grid(1)
    if i < r.shape[0]:
        out[i] = _local_max(r, i, half, floor)


@cuda.jit
def row_means(x, starts, lengths, width, means):
    """One thread per (beat, channel): ``means[b, c]``, the mean of that row's samples."""
    k = cuda.grid(1)
    channels = means.shape[1]
    if k < means.shape[0] * channels:
        means[k // channels, k % channels] = _row_mean(x, starts, lengths, width, k // channels, k % channels)


@cuda.jit
def embed(x, starts, lengths, means, out):
    """One thread per element of ``out`` ``[beats, channels, width]``."""
    k = cuda.grid(1)
    width, channels = out.shape[2], out.shape[1]
    if k < out.shape[0] * channels * width:
        row = k // width
        _embed_element(x, starts, lengths, means, out, row // channels, row % channels, k % width)
