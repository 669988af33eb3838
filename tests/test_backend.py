import json
import logging
import os
import sys

import pytest
from conftest import HAS_GPU

from beatflow.backend import select_backend
from beatflow.errors import BackendError

GPU_STACK = ("cupy", "cudf", "kvikio", "rmm", "numba.cuda")


def test_cpu_backend_uses_numpy():
    import numpy

    backend = select_backend("cpu")
    assert backend.name == "cpu" and backend.xp is numpy and not backend.gpu


def imported_after(code: str) -> list[str]:
    """The GPU-stack modules in ``sys.modules`` of a fresh interpreter after it runs ``code``."""
    import subprocess

    probe = f"{code}\nimport json, sys; print(json.dumps(sorted(m for m in {GPU_STACK!r} if m in sys.modules)))"
    env = {k: v for k, v in os.environ.items() if k != "BEATFLOW_DEVICE"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cpu_backend_never_imports_the_gpu_stack():
    """``select_backend("cpu")`` in a fresh interpreter (nothing imported before it) leaves no GPU library in
    ``sys.modules``, even with the stack installed (on the GPU host, where the control below imports it)."""
    assert imported_after("from beatflow.backend import select_backend; select_backend('cpu')") == []


def test_the_import_probe_sees_an_import():
    """The probe of the test above can fail: importing numba.cuda directly is seen."""
    assert imported_after("import numba.cuda") == ["numba.cuda"]


def test_importing_beatflow_imports_no_gpu_or_heavy_library():
    import subprocess

    code = (
        "import sys, beatflow, beatflow.backend, beatflow.detect.nms, beatflow.detect.segment, beatflow.io.ingest; "
        "print(sorted(m for m in ('cupy','cudf','kvikio','rmm','torch','holoviews','numba.cuda') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_rule_script_hands_its_job_over_without_importing_numerics():
    """The rule script's side of the warm workers stays light: the worker has the libraries."""
    import subprocess

    code = (
        "import sys, beatflow.stage, beatflow.worker.client; "
        "print(sorted(m for m in ('numpy','pandas','pyarrow','numba','torch','cupy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_device_is_an_error():
    with pytest.raises(BackendError, match="auto, gpu or cpu"):
        select_backend("tpu")


def test_environment_overrides_config(monkeypatch):
    monkeypatch.setenv("BEATFLOW_DEVICE", "cpu")
    assert select_backend("gpu").name == "cpu"


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without a GPU")
def test_gpu_without_gpu_stops_with_a_clear_error():
    with pytest.raises(BackendError, match="device: gpu was requested but .*set device: cpu or auto"):
        select_backend("gpu")


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without a GPU")
def test_auto_without_gpu_falls_back_to_cpu_with_one_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="beatflow"):
        backend = select_backend("auto")
    assert backend.name == "cpu"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "running on the CPU" in warnings[0].getMessage()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
def test_auto_with_gpu_takes_the_gpu():
    import cupy

    backend = select_backend("auto")
    assert backend.gpu and backend.xp is cupy


def test_releasing_device_memory_without_a_gpu_backend_touches_nothing():
    """A CPU-backend process (a warm worker on a laptop) has no device memory to give back, and imports no GPU
    library to find that out."""
    code = "from beatflow.backend import select_backend, release_device_memory; select_backend('cpu'); "
    assert imported_after(code + "release_device_memory()") == []


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
@pytest.mark.parametrize("needs", [("cudf",), ("torch",)], ids=["rmm", "torch"])
def test_a_gpu_process_gives_a_freed_peak_back_to_the_driver(needs):
    """A warm worker's memory manager keeps an 8 GiB array's memory after the array is freed (that is its job:
    the next allocation is fast) and gives it back when the worker releases memory between jobs, down to what
    RMM keeps (1 GiB). Run in a fresh process: the manager is chosen once per process. (H200, s45: torch and
    RMM held 8 and 7 GiB before the release.)"""
    import subprocess

    code = f"""
import cupy
from beatflow.backend import RMM_POOL_KEPT, release_device_memory, select_backend
select_backend("gpu", needs={needs!r})
free = lambda: cupy.cuda.runtime.memGetInfo()[0]
before = free()
peak = cupy.ones(2 * 2**30, dtype=cupy.float32)
float(peak.sum())
del peak  # freed on the stream: no synchronization since, so RMM's pool still holds it
held = before - free()
release_device_memory()
print(held / 2**30, (before - free()) / 2**30, RMM_POOL_KEPT / 2**30)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    held, kept, limit = map(float, out.split()[-3:])
    # RMM's pool holds its first GiB before the array (in ``before``): the array adds 8 GiB less that
    assert held > 8 - limit - 0.5, f"the manager gave the memory back at once ({held:.2f} GiB held): nothing to test"
    assert kept <= limit + 0.25, f"{kept:.2f} GiB still held after the release"
