"""Shared fixtures. Without a GPU, Numba's CUDA simulator stands in, so the CUDA kernels are still tested."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beatflow.io import artifact_paths  # noqa: F401 (the tests take it from here)

HAS_GPU = (
    shutil.which("nvidia-smi") is not None
    and subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True).returncode == 0
)
if not HAS_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

ROOT = Path(__file__).resolve().parents[1]
PROJECT_FILES = ("Snakefile", "workflow", "scripts", "config", "environment.yml")


@pytest.fixture(scope="session")
def cpu():
    from beatflow.backend import select_backend

    return select_backend("cpu")


GPU_REQUIRED = os.environ.get("BEATFLOW_GPU", "") not in ("", "0")


def no_gpu(reason: str):
    """Skip a GPU test, or fail it where ``BEATFLOW_GPU=1`` says the GPU stack must be there (the H200 session,
    benchmarks/gpu_session.sh): a broken install must not pass as "skipped"."""
    if GPU_REQUIRED:
        pytest.fail(f"BEATFLOW_GPU is set but {reason}", pytrace=False)
    pytest.skip(f"{reason} (set BEATFLOW_GPU=1 to make this a failure)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where ``BEATFLOW_GPU=1``, a skipped GPU-marked test (a ``skipif`` as well as the fixture's skip) is a
    failure: the run claims to test the GPU, so nothing GPU may be left out silently."""
    outcome = yield
    report = outcome.get_result()
    if GPU_REQUIRED and report.skipped and item.get_closest_marker("gpu") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"BEATFLOW_GPU is set but this GPU test was skipped: {reason}"


@pytest.fixture(scope="session")
def gpu():
    """The GPU backend; skips without one, fails without one where ``BEATFLOW_GPU=1``."""
    from beatflow.backend import select_backend
    from beatflow.errors import BackendError

    try:
        return select_backend("gpu", needs=("cudf", "kvikio", "numba.cuda"))
    except BackendError as exc:
        reason = f"no GPU backend: {exc}"
    except Exception as exc:  # noqa: BLE001 (a broken install: rmm or the driver can raise anything)
        reason = f"the GPU stack is broken: {type(exc).__name__}: {exc}"
    no_gpu(reason)


@pytest.fixture(scope="session")
def short_record(tmp_path_factory):
    """A 10-minute synthetic 2-lead record with truth: ``(csv, truth, spec)``."""
    from beatflow.synth import SynthSpec, write_record

    d = tmp_path_factory.mktemp("record")
    spec = SynthSpec(duration_s=600, seed=3)
    write_record(spec, d / "ecg.csv", d / "truth.csv")
    return d / "ecg.csv", d / "truth.csv", spec


def copy_project(dest: Path) -> Path:
    """A copy of the workflow (not of results) in ``dest``, as a user's checkout would be."""
    for name in PROJECT_FILES:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    return dest


def snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the snakemake of this interpreter's environment in ``workdir`` (``env``: variables to add)."""
    cmd = [sys.executable, "-m", "snakemake", *args, "--cores", "2", "--resources", "gpu=1"]  # targets first
    result = subprocess.run(
        cmd, check=False, cwd=workdir, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}")
    return result


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The demo workflow run once, end to end, in a temporary copy of the project."""
    workdir = copy_project(tmp_path_factory.mktemp("demo"))
    snakemake(workdir)
    return workdir
