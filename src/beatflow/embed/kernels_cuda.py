"""The CUDA side of :mod:`beatflow.embed.kernels`: the same per-element functions as CUDA device functions.

Imported only on the GPU path (and by tests, under ``NUMBA_ENABLE_CUDASIM=1`` without a GPU). ``cuda`` must
be a module global here: Numba's simulator swaps it for its per-thread stand-in.
"""

from numba import cuda

from beatflow.backend import CUDA_THREADS, cuda_blocks
from beatflow.embed.kernels import _embed_at, _row_mean_at

_row_mean = cuda.jit(device=True)(_row_mean_at)
_embed_element = cuda.jit(device=True)(_embed_at)


@cuda.jit(cache=True)
def _row_means(x, starts, lengths, width, means):
    """One thread per (beat, channel): ``means[b, c]``, the mean of that row's samples."""
    k = cuda.grid(1)
    channels = means.shape[1]
    if k < means.shape[0] * channels:
        means[k // channels, k % channels] = _row_mean(x, starts, lengths, width, k // channels, k % channels)


@cuda.jit(cache=True)
def _embed(x, starts, lengths, means, out):
    """One thread per element of ``out`` ``[beats, channels, width]``."""
    k = cuda.grid(1)
    width, channels = out.shape[2], out.shape[1]
    if k < out.shape[0] * channels * width:
        row = k // width
        _embed_element(x, starts, lengths, means, out, row // channels, row % channels, k % width)


def embed_cuda(x, starts, lengths, means, out) -> None:
    """Fill device array ``out`` ``[beats, channels, width]`` from device signal ``x`` ``[channels, n]``, using
    device scratch ``means`` (float64 ``[beats, channels]``): row means first, then one thread per element,
    so that neighbouring threads write neighbouring samples."""
    _row_means[cuda_blocks(means.size), CUDA_THREADS](x, starts, lengths, out.shape[2], means)
    _embed[cuda_blocks(out.size), CUDA_THREADS](x, starts, lengths, means, out)
