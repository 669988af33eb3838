"""Choose the compute backend (``device: auto | gpu | cpu``) and give stage code its array module.

GPU libraries are imported only inside :func:`select_backend`, never when ``beatflow`` is imported, so a
CPU-only machine (or a Snakemake login node parsing the workflow) never touches cudf/cupy/kvikio.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from types import ModuleType

from beatflow.errors import BackendError

log = logging.getLogger("beatflow")

DEVICE_ENV = "BEATFLOW_DEVICE"  # overrides the config's device
RMM_POOL_KEPT = 2**30  # bytes of freed device memory an RMM process keeps for its next allocations
CUDA_THREADS = 256  # threads per block of beatflow's Numba CUDA kernels


def cuda_blocks(n: int) -> int:
    """Blocks of ``CUDA_THREADS`` that cover ``n`` elements (at least one)."""
    return max(1, (n + CUDA_THREADS - 1) // CUDA_THREADS)


@dataclass(frozen=True)
class Backend:
    """The backend a stage runs on: ``name`` is ``"gpu"`` or ``"cpu"``; ``xp`` is cupy or numpy."""

    name: str
    xp: ModuleType
    detail: str

    @property
    def gpu(self) -> bool:
        return self.name == "gpu"

    def to_host(self, array):
        """A small array (a table column, plot data) as numpy; bulk arrays stay where they are."""
        return self.xp.asnumpy(array) if self.gpu else array


def backend_of(array) -> Backend:
    """The backend ``array`` lies on: the GPU's for a cupy array (cupy is imported where one exists), else the
    CPU's; it imports no GPU library."""
    import sys

    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(array, cupy.ndarray):
        return Backend("gpu", cupy, "cupy array")
    import numpy

    return Backend("cpu", numpy, "numpy array")


def _probe_gpu(modules: tuple[str, ...]) -> str:
    """Import the GPU libraries a stage uses and check for a device; return a one-line description or raise."""
    import importlib

    for name in ("cupy",) + modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # ImportError, or a CUDA driver error raised at import
            raise BackendError(f"cannot import {name} ({type(exc).__name__}: {exc})") from exc
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise BackendError(f"no CUDA device is usable ({exc})") from exc
    if count < 1:
        raise BackendError("no CUDA device is visible")
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    device = f"device {visible}" if visible else f"device {cupy.cuda.Device().id} of {count}"
    return f"{props['name'].decode()}, {device}, cupy {cupy.__version__}"


def select_backend(device: str = "auto", needs: tuple[str, ...] = ()) -> Backend:
    """Resolve ``device`` to a :class:`Backend` and log the choice.

    ``needs`` names the GPU libraries the stage uses besides cupy (``"cudf"``, ``"kvikio"``, ``"numba.cuda"``,
    ``"torch"``): only those are imported, since each costs seconds of start-up in a fresh process. They also
    choose the process's one memory manager (:func:`_share_memory`).

    ``auto`` takes the GPU when a CUDA device is visible and the GPU libraries import, else the CPU with
    one warning; ``gpu`` raises :class:`BackendError` when it cannot; ``cpu`` never touches the GPU stack.
    ``BEATFLOW_DEVICE`` in the environment overrides ``device`` (handy for one-off runs and tests).
    """
    device = os.environ.get(DEVICE_ENV, device)
    if device not in ("auto", "gpu", "cpu"):
        raise BackendError(f"device must be auto, gpu or cpu, not {device!r}")
    if device != "cpu":
        try:
            manager = "torch" if "torch" in needs else "rmm" if "cudf" in needs else "cupy"
            t0 = time.perf_counter()
            detail = _probe_gpu(tuple(needs) + (("rmm",) if manager == "rmm" else ()))
        except BackendError as exc:
            if device == "gpu":
                raise BackendError(f"device: gpu was requested but {exc.problem}; set device: cpu or auto") from exc
            log.warning("device: auto found no usable GPU (%s); running on the CPU", exc.problem)
        else:
            import cupy

            _share_memory(manager)
            log.info("backend: gpu (%s; GPU libraries imported in %.2f s)", detail, time.perf_counter() - t0)
            return Backend("gpu", cupy, detail)
    import numpy

    log.info("backend: cpu (numpy %s)", numpy.__version__)
    return Backend("cpu", numpy, f"numpy {numpy.__version__}")


def run_device(device: str, visible: list[str]) -> str:
    """The device of a local run, decided once when its workflow is parsed, from the devices the host shows
    (:func:`beatflow.gpus.visible_devices`): ``gpu`` without one raises :class:`BackendError` before any job
    runs; ``auto`` without one is ``cpu``, which the caller says once and passes to every job through
    ``BEATFLOW_DEVICE`` (which also overrides ``device`` here)."""
    device = os.environ.get(DEVICE_ENV, device)
    if device == "cpu" or visible:
        return device
    if device == "gpu":
        raise BackendError(
            "device: gpu was requested but no CUDA device is visible (nvidia-smi lists none, or "
            "CUDA_VISIBLE_DEVICES is empty); set device: cpu or auto"
        )
    return "cpu"


def _share_memory(manager: str) -> None:
    """One memory manager per process. Where cuDF runs without torch (ingest, segment, embed), RMM's
    stream-ordered pool (``cudaMallocAsync``), which CuPy allocates from too; it keeps at most
    :data:`RMM_POOL_KEPT` of freed memory past a synchronization, so a warm worker does not hold a long record's
    peak through the other stages' jobs. Where torch runs (train, score), torch's caching allocator, which CuPy
    then allocates from (kvikio reads land in it): CUDA-graph capture needs its graph-private pools, which an
    RMM-backed torch allocator does not provide. Elsewhere CuPy's own pool."""
    import cupy

    if getattr(_share_memory, "manager", None):
        return
    if manager == "rmm":
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        pool = rmm.mr.CudaAsyncMemoryResource(initial_pool_size=RMM_POOL_KEPT, release_threshold=RMM_POOL_KEPT)
        rmm.mr.set_current_device_resource(pool)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
    elif manager == "torch":
        cupy.cuda.set_allocator(_torch_allocation)
    _share_memory.manager = manager  # "cupy": CuPy's own pool as it is


def release_device_memory() -> None:
    """Give the device memory that this process's manager keeps but no array holds back to the driver (a warm
    worker between jobs; nothing where the process never chose the GPU)."""
    manager = getattr(_share_memory, "manager", None)
    if manager is None:
        return
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    if manager == "torch":
        import torch

        torch.cuda.empty_cache()
    cupy.cuda.runtime.deviceSynchronize()  # RMM's pool releases what it holds above its threshold here


def _torch_allocation(size: int):
    """A CuPy allocation served by torch's caching allocator (kept alive by the memory object)."""
    import cupy
    import torch

    block = torch.empty(size, dtype=torch.uint8, device="cuda")
    return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(block.data_ptr(), size, block, block.device.index), 0)


def torch_device(backend: Backend):
    """The torch device for ``backend``."""
    import torch

    return torch.device("cuda" if backend.gpu else "cpu")
