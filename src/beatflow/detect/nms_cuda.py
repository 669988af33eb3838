"""The CUDA side of :mod:`beatflow.detect.nms`: the same per-sample function as a CUDA device function.

Imported only on the GPU path (and by tests, under ``NUMBA_ENABLE_CUDASIM=1`` without a GPU). ``cuda`` must
be a module global here: Numba's simulator swaps it for its per-thread stand-in.
"""

import numpy as np
from numba import cuda

from beatflow.backend import CUDA_THREADS, cuda_blocks
from beatflow.detect.nms import _local_max_at

_local_max = cuda.jit(device=True)(_local_max_at)


@cuda.jit(cache=True)
def _nms(r, half, floor, out):
    """``out[i]`` = ``r[i]`` is above ``floor`` and the maximum of ``r[i-half : i+half+1]`` (leftmost sample
    of a plateau)."""
    i = cuda.grid(1)
    if i < r.shape[0]:
        out[i] = _local_max(r, i, half, floor)


def nms_cuda(r, half: int, out, floor: float = -np.inf) -> None:
    """Fill ``out`` (device bool array, len(r)) with the NMS mask of device array ``r`` above ``floor``."""
    _nms[cuda_blocks(r.shape[0]), CUDA_THREADS](r, int(half), float(floor), out)
