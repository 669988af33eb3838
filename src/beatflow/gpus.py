"""Which GPU a job of a local run uses. Snakemake counts a ``gpu`` resource but never says which device a job
gets, so with ``--resources gpu=N`` every GPU job would run on device 0. Here each GPU job claims a device no
other running job of the working directory holds: an exclusive ``flock`` on one lock file per device, held by
the job's own process (the rule's script) for the job's whole life and released by the kernel when that
process ends, fails or is killed. The job then runs with ``CUDA_VISIBLE_DEVICES`` set to its device, in its
own process or in a warm worker of that device.

Several small GPU jobs share a device: on a local run, Snakemake's ``gpu`` resource (``--resources gpu=N``:
N GPUs) is turned into N × :func:`jobs_per_device` GPU jobs at once (:func:`share_devices`, when the Snakefile
is parsed), and each device has that many claims. A run on the CPU (``device: cpu``, or ``auto`` on a host
without a GPU) holds no GPU, so its GPU-stage jobs are limited by cores only. SLURM jobs never see the list
and use the GPU SLURM gives them."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

GPU_STAGES = ("ingest", "segment", "embed", "train", "score")  # the rules that hold a gpu resource, in record order
DEVICES_ENV = "BEATFLOW_GPUS"  # the run's devices, comma-separated, set by share_devices
JOBS_ENV = "BEATFLOW_GPU_JOBS"  # GPU jobs at once on one device, set by share_devices
MAX_JOBS_PER_DEVICE = 8
MEMORY_PER_JOB_GIB = 16  # device memory set aside for each GPU job sharing a device (a 20 h record's: < 5 GiB)
CORES_PER_GPU_JOB = 2  # and host cores: the GPU stages' own CPU work, their warm workers' start
LOCK_DIR = Path(".snakemake", "beatflow", "gpus")  # Snakemake locks the working directory to one run
POLL_S = 0.05


def visible_devices() -> tuple[list[str], float | None]:
    """The devices a process of this host may use (``CUDA_VISIBLE_DEVICES`` where set, else every device
    nvidia-smi lists) and the smallest total memory among them in GiB (None where nvidia-smi cannot tell),
    from one nvidia-smi call (each costs a driver query: tenths of a second at parse time)."""
    smi = shutil.which("nvidia-smi")
    listed = []
    if smi is not None:
        cmd = [smi, "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
            listed = [[field.strip() for field in line.split(",")] for line in out.splitlines() if line.count(",") == 2]
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        devices = [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    else:
        devices = [index for index, _, _ in listed]
    try:
        memory = [float(mib) / 1024 for index, uuid, mib in listed if index in devices or uuid in devices]
    except ValueError:  # [N/A]
        memory = []
    return devices, min(memory) if memory and len(memory) == len(devices) else None


def jobs_per_device(memory_gib: float | None, cores: int) -> int:
    """How many GPU jobs share one device of ``memory_gib`` on a run of ``cores``: one per
    :data:`MEMORY_PER_JOB_GIB` and per :data:`CORES_PER_GPU_JOB` cores, at most :data:`MAX_JOBS_PER_DEVICE`, at
    least one (one where the memory is unknown)."""
    if memory_gib is None:
        return 1
    return max(1, min(MAX_JOBS_PER_DEVICE, int(memory_gib // MEMORY_PER_JOB_GIB), cores // CORES_PER_GPU_JOB))


def run_cores(workflow) -> int:
    """The cores of a run as its Snakefile sees them when parsed (``--cores``; this host's where none is given:
    a cluster job's)."""
    return workflow.global_resources["_cores"].value or os.cpu_count() or 1


def share_devices(workflow, device: str) -> str | None:
    """When a local run's Snakefile is parsed: publish the devices its jobs share and let Snakemake's ``gpu``
    resource count GPU jobs rather than GPUs (see the module). ``device`` is the config's. Returns what it did,
    for the log, or None where the run gives no ``gpu`` limit."""
    devices, memory_gib = visible_devices() if device != "cpu" else ([], None)
    per_device = jobs_per_device(memory_gib, run_cores(workflow))
    os.environ[DEVICES_ENV] = ",".join(devices)
    os.environ[JOBS_ENV] = str(per_device)
    given = workflow.global_resources.get("gpu")
    if given is None or given.value is None:
        return None
    if not devices:
        workflow.register_resource("gpu", sys.maxsize)
        return "no GPU in use: the GPU stages' jobs are limited by --cores only"
    workflow.register_resource("gpu", given.value * per_device)
    return (
        f"up to {per_device} GPU jobs share each device ({len(devices)} visible): at most "
        f"{given.value * per_device} at once for --resources gpu={given.value}"
    )


def run_devices() -> list[str]:
    return [d for d in os.environ.get(DEVICES_ENV, "").split(",") if d]


def run_jobs_per_device() -> int:
    return int(os.environ.get(JOBS_ENV) or 1)


@dataclass
class Claim:
    """A device held by this process until :meth:`release` or the process's end."""

    device: str
    fd: int

    def release(self) -> None:
        os.close(self.fd)  # closing the descriptor drops the flock


def claim(devices: list[str], lock_dir: Path = LOCK_DIR, per_device: int = 1) -> Claim:
    """Hold one of the ``per_device`` places of a device of ``devices``, the least shared first, waiting while
    all are held (more GPU jobs than places)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    places = [(device, index) for index in range(per_device) for device in devices]
    while True:
        for device, index in places:
            name = f"gpu-{device.replace('/', '_')}" + (f"-{index}" if index else "")
            fd = os.open(lock_dir / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())  # who holds it, for a person looking
            return Claim(device, fd)
        time.sleep(POLL_S)


def claim_for_job(gpus: int, device: str) -> str | None:
    """On a run with several devices, for a GPU job on the GPU: the device this process now holds for the job's
    life, also set as ``CUDA_VISIBLE_DEVICES``; else None.

    Parameters
    ----------
    gpus : the rule's ``resources: gpu``.
    device : the config's ``device`` (``cpu`` holds no GPU).
    """
    devices = run_devices() if gpus and device != "cpu" else []
    if len(devices) < 2:  # none, or one: nothing to choose
        return None
    os.environ["CUDA_VISIBLE_DEVICES"] = held = claim(devices, per_device=run_jobs_per_device()).device
    return held


SHARED: list[str] = []  # what configure_run did with the gpu resource, for the log when jobs run


def configure_run(workflow, device: str) -> None:
    """When a run's Snakefile is parsed, on a local run (no ``--jobs``, not a job's own Snakemake): share the
    devices out (:func:`share_devices`), refuse ``device: gpu`` without a GPU before any job, and tell the jobs
    of ``auto`` without one (warm workers too) through ``BEATFLOW_DEVICE`` that they run on the CPU.

    Parameters
    ----------
    workflow : Snakemake's ``workflow`` object, as the Snakefile sees it.
    device : the config's ``device``.
    """
    from snakemake.exceptions import WorkflowError
    from snakemake.logging import logger

    from beatflow.backend import DEVICE_ENV, run_device
    from beatflow.errors import BackendError

    if workflow.global_resources["_nodes"].value is not None or workflow.remote_exec or workflow.subprocess_exec:
        return
    SHARED[:] = [said] if (said := share_devices(workflow, device)) else []
    try:
        chosen = run_device(device, run_devices())
    except BackendError as exc:
        raise WorkflowError(str(exc)) from None
    if chosen != os.environ.get(DEVICE_ENV, device):
        logger.warning("beatflow: device: auto found no usable GPU (no CUDA device visible); running on the CPU")
        os.environ[DEVICE_ENV] = chosen
