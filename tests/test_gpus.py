"""The GPU allocator (beatflow.gpus) with a fake list of devices: N jobs at once get N different devices, a
device is freed when its job ends, fails or is killed, and a job runs (in its own process or in a warm worker
of its device) with CUDA_VISIBLE_DEVICES set to the device it holds."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from test_worker import gone_within, hung_job, rule_script, start_owner

from beatflow import gpus
from beatflow.gpus import claim

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="flock and the warm workers are Linux's")

HOLD = (
    "import sys, time; from pathlib import Path; from beatflow.gpus import claim; "
    "held = claim(sys.argv[1].split(','), Path(sys.argv[2])); print(held.device, flush=True); time.sleep(600)"
)


def holder(devices, lock_dir) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, ",".join(devices), str(lock_dir)], stdout=subprocess.PIPE, text=True
    )


def test_n_jobs_get_n_devices_and_a_killed_jobs_device_is_freed(tmp_path):
    devices = ["0", "1", "2"]
    jobs = [holder(devices, tmp_path) for _ in devices]
    try:
        held = [job.stdout.readline().strip() for job in jobs]
        assert sorted(held) == devices  # no two on one device
        waiting = holder(devices, tmp_path)  # a fourth job waits for a device
        time.sleep(0.5)
        assert waiting.poll() is None and not os.read(waiting.stdout.fileno(), 0)
        jobs[1].send_signal(signal.SIGKILL)  # killed mid-job: the kernel drops its lock
        jobs.append(waiting)
        assert waiting.stdout.readline().strip() == held[1]
    finally:
        for job in jobs:
            job.kill()
            job.wait()


def test_a_released_device_is_taken_again(tmp_path):
    first = claim(["a", "b"], tmp_path)
    second = claim(["a", "b"], tmp_path)
    assert (first.device, second.device) == ("a", "b")
    first.release()  # the job ended
    assert claim(["a", "b"], tmp_path).device == "a"


def test_a_device_holds_as_many_jobs_as_it_has_places_the_least_shared_device_first(tmp_path):
    held = [claim(["a", "b"], tmp_path, per_device=2) for _ in range(4)]
    assert [h.device for h in held] == ["a", "b", "a", "b"]
    assert sorted(p.name for p in tmp_path.glob("*.lock")) == [
        "gpu-a-1.lock",
        "gpu-a.lock",
        "gpu-b-1.lock",
        "gpu-b.lock",
    ]


@pytest.mark.parametrize(
    ("memory_gib", "cores", "jobs"),
    [
        (None, 16, 1),
        (8.0, 16, 1),
        (24.0, 16, 1),
        (40.0, 16, 2),
        (80.0, 16, 5),
        (140.4, 16, 8),
        (140.4, 64, 8),
        (140.4, 6, 3),
        (80.0, 2, 1),
    ],
)
def test_jobs_per_device_follow_its_memory_and_the_cores(memory_gib, cores, jobs):
    assert gpus.jobs_per_device(memory_gib, cores) == jobs


class Resource:
    def __init__(self, value):
        self.value = value


class Workflow:
    """What share_devices uses of Snakemake's workflow: the global resources and register_resource."""

    def __init__(self, gpu, cores=16):
        self.global_resources = {"gpu": Resource(gpu), "_cores": Resource(cores)}

    def register_resource(self, name, value):
        self.global_resources[name] = Resource(value)


@pytest.mark.parametrize(
    ("device", "visible", "given", "limit", "places"),
    [
        ("auto", ["0"], 1, 8, 8),  # one 141 GiB device, 16 cores: eight GPU jobs at once
        ("gpu", ["0", "1"], 2, 16, 8),  # two devices, each shared by eight
        ("cpu", ["0"], 1, sys.maxsize, 1),  # the CPU backend holds no GPU
        ("auto", [], 1, sys.maxsize, 1),  # no GPU on the host
        ("auto", ["0"], None, None, 8),  # no --resources gpu: nothing to share out
    ],
)
def test_the_gpu_resource_counts_gpu_jobs_on_a_local_run(monkeypatch, device, visible, given, limit, places):
    monkeypatch.setattr(gpus, "visible_devices", lambda: (visible, 140.4 if visible else None))
    for name in (gpus.DEVICES_ENV, gpus.JOBS_ENV):  # share_devices sets them: restored after the test
        monkeypatch.setenv(name, "")
    workflow = Workflow(given)
    said = gpus.share_devices(workflow, device)
    assert workflow.global_resources["gpu"].value == limit and (said is None) == (given is None)
    assert gpus.run_devices() == (visible if device != "cpu" else [])
    assert gpus.run_jobs_per_device() == places


def gpu_job(tmp_path, name):
    return hung_job(tmp_path, name, gpu=1, config={"device": "auto"})[0]  # auto: no GPU here, so the CPU


def started_on(log, timeout_s=60.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and (found := re.search(r"start \(pid \d+, [^)]*GPU device (\w+)", log.read_text())):
            return found.group(1)
        time.sleep(0.05)
    raise AssertionError(f"no GPU device in {log}")


def test_jobs_in_their_own_processes_run_on_different_devices(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEATFLOW_GPUS", "0,1")
    monkeypatch.setenv("BEATFLOW_WORKER", "off")
    scripts = {name: rule_script(gpu_job(tmp_path, name)) for name in ("a", "b")}
    try:
        assert {started_on(tmp_path / "a.log"), started_on(tmp_path / "b.log")} == {"0", "1"}
    finally:
        for script in scripts.values():
            script.kill()
            script.wait()


def test_jobs_in_warm_workers_run_on_their_devices_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("BEATFLOW_GPUS", "0,1")
    owner = start_owner(tmp_path, monkeypatch)
    scripts = [rule_script(gpu_job(tmp_path, name)) for name in ("a", "b")]
    workers = []
    try:
        devices = {started_on(tmp_path / "a.log"), started_on(tmp_path / "b.log")}
        assert devices == {"0", "1"}
        for name in ("a", "b"):
            pid = int(re.search(r"warm worker (\d+) on GPU device", (tmp_path / f"{name}.log").read_text()).group(1))
            environ = dict(e.split("=", 1) for e in open(f"/proc/{pid}/environ").read().split("\0") if "=" in e)
            assert environ["CUDA_VISIBLE_DEVICES"] == started_on(tmp_path / f"{name}.log")
            workers.append(pid)
    finally:
        owner.kill()
        owner.wait()
        for script in scripts:
            script.wait(timeout=30)  # their workers saw Snakemake go
    assert len(workers) == 2 and all(gone_within(pid, 3.0) for pid in workers)


@pytest.mark.parametrize(
    ("visible", "devices", "memory_gib"),
    [
        (None, ["0", "1"], 79.65),  # every device listed; the smaller memory
        ("1", ["1"], 79.65),
        ("GPU-aa11", ["GPU-aa11"], 140.4),  # by UUID
        ("MIG-cc33", ["MIG-cc33"], None),  # a MIG slice: its memory is not the listed device's
    ],
)
def test_one_nvidia_smi_call_gives_the_devices_and_their_memory(tmp_path, monkeypatch, visible, devices, memory_gib):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0, GPU-aa11, 143769\\n1, GPU-bb22, 81559\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    found, memory = gpus.visible_devices()
    assert found == devices
    assert memory == (None if memory_gib is None else pytest.approx(memory_gib, abs=0.01))
