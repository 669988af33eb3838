"""``.npy`` artifacts: numpy on the CPU; on the GPU the data part goes through kvikio (GPUDirect Storage
where the host has it, kvikio's POSIX compat mode with pinned bounce buffers otherwise).

The header is numpy's own (``numpy.lib.format``), so ``numpy.load`` reads what the GPU path writes.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from beatflow.errors import BeatflowError
from beatflow.io.atomic import atomic_path

log = logging.getLogger("beatflow")


def _header(shape, dtype) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": tuple(shape)}
    )
    return buf.getvalue()


def read_header(path) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and byte offset of the data of a C-ordered ``.npy`` file; a clear error if it is not one."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
            offset = f.tell()
    except (ValueError, OSError, EOFError) as exc:
        raise BeatflowError(f"not a readable .npy file ({exc})", path=str(path)) from exc
    expected = offset + int(np.prod(shape)) * dtype.itemsize
    if fortran or path.stat().st_size != expected:
        raise BeatflowError(
            f"truncated or corrupt .npy file ({path.stat().st_size} bytes, expected {expected})", path=str(path)
        )
    return shape, dtype, offset


def io_mode() -> str:
    """How kvikio moves bytes on this host: GPUDirect Storage, or its POSIX compat mode (pinned bounce buffers)."""
    import kvikio.cufile_driver
    import kvikio.defaults

    if kvikio.defaults.is_compat_mode_preferred():
        gds = "available" if kvikio.cufile_driver.get("is_gds_available") else "not available"
        return f"compat (POSIX; GDS {gds}, compat_mode={kvikio.defaults.get('compat_mode').name})"
    return "GDS (cuFile)"


def save(path, array, gpu: bool) -> None:
    """Write ``array`` (numpy, or a device array when ``gpu``) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        if not gpu:
            np.save(tmp, np.ascontiguousarray(array), allow_pickle=False)
            return
        import kvikio

        header = _header(array.shape, array.dtype)
        with open(tmp, "wb") as f:
            f.write(header)
        t0 = time.perf_counter()
        with kvikio.CuFile(tmp, "r+") as f:
            written = f.write(array, file_offset=len(header))
        _log_io("wrote", path, written, time.perf_counter() - t0)


def load(path, gpu: bool):
    """Read a ``.npy`` file into numpy, or straight into device memory through kvikio when ``gpu``."""
    shape, dtype, offset = read_header(path)
    if not gpu:
        return np.load(path, allow_pickle=False)
    import cupy
    import kvikio

    out = cupy.empty(shape, dtype=dtype)
    t0 = time.perf_counter()
    with kvikio.CuFile(path, "r") as f:
        got = f.read(out, file_offset=offset)
    if got != out.nbytes:
        raise BeatflowError(f"short read: {got} of {out.nbytes} bytes", path=str(path))
    _log_io("read", path, got, time.perf_counter() - t0)
    return out


def _log_io(verb: str, path, nbytes: int, seconds: float) -> None:
    rate = nbytes / seconds / 1e9 if seconds > 0 else float("inf")
    log.info(
        "kvikio %s %s: %.1f MB in %.3f s (%.2f GB/s), mode %s",
        verb,
        Path(path).name,
        nbytes / 1e6,
        seconds,
        rate,
        io_mode(),
    )
