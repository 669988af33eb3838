"""The CUDA side of :mod:`beatflow.kernels`: the same per-element functions as CUDA device functions.

Imported only on the GPU path (and by tests, under ``NUMBA_ENABLE_CUDASIM=1`` without a GPU). ``cuda`` must
be a module global here: Numba's simulator swaps it for its per-thread stand-in.
"""

from numba import cuda

from .kernels import _embed_at, _local_max_at

_local_max = cuda.jit(device=True)(_local_max_at)
_embed_row = cuda.jit(device=True)(_embed_at)


@cuda.jit
def nms(r, half, out):
    """``out[i]`` = ``r[i]`` is the maximum of ``r[i-half : i+half+1]`` (leftmost sample of a plateau)."""
    i = cuda.grid(1)
    if i < r.shape[0]:
        out[i] = _local_max(r, i, half)


@cuda.jit
def embed(x, starts, lengths, out):
    """One thread per (beat, channel) row of ``out``."""
    k = cuda.grid(1)
    channels = out.shape[1]
    if k < out.shape[0] * channels:
        _embed_row(x, starts, lengths, out, k // channels, k % channels)
