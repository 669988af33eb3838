"""Which GPU a job of a local run uses. Snakemake counts a ``gpu`` resource but never says which device a job
gets, so with ``--resources gpu=N`` every GPU job would run on device 0. Here each GPU job claims a device no
other running job of the working directory holds: an exclusive ``flock`` on one lock file per device, held by
the job's own process (the rule's script) for the job's whole life and released by the kernel when that
process ends, fails or is killed. The job then runs with ``CUDA_VISIBLE_DEVICES`` set to its device, in its
own process or in a warm worker of that device.

Snakemake's ``onstart`` lists the devices once per run (:func:`publish_devices`); SLURM jobs never see the
list and use the GPU SLURM gives them."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DEVICES_ENV = "BEATFLOW_GPUS"  # the run's devices, comma-separated, set by publish_devices
LOCK_DIR = Path(".snakemake", "beatflow", "gpus")  # Snakemake locks the working directory to one run
POLL_S = 0.05


def visible_devices() -> list[str]:
    """The devices a process of this host may use: ``CUDA_VISIBLE_DEVICES`` where set, else nvidia-smi's list."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(listed.splitlines()) if line.startswith("GPU ")]


def publish_devices() -> None:
    """In Snakemake's ``onstart``: tell the run's jobs which devices they share (none: no claims)."""
    os.environ[DEVICES_ENV] = ",".join(visible_devices())


def run_devices() -> list[str]:
    return [d for d in os.environ.get(DEVICES_ENV, "").split(",") if d]


@dataclass
class Claim:
    """A device held by this process until :meth:`release` or the process's end."""

    device: str
    fd: int

    def release(self) -> None:
        os.close(self.fd)  # closing the descriptor drops the flock


def claim(devices: list[str], lock_dir: Path = LOCK_DIR) -> Claim:
    """Hold the first free device of ``devices``, waiting while all are held (more GPU jobs than devices)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    while True:
        for device in devices:
            fd = os.open(lock_dir / f"gpu-{device.replace('/', '_')}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())  # who holds it, for a person looking
            return Claim(device, fd)
        time.sleep(POLL_S)
