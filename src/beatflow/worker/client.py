"""The rule script's side of the warm workers (:func:`submit`): hand the job to an idle worker of its rule's
group in this run (a ready one before one still loading; where none is idle, starting another, or waiting
for one where the group's pool is fixed), after checking that the worker belongs to this user, and print its
log lines; where no worker runs the job (none could start, one of another user listens on the address, or the
worker died or fell silent), say why, so that the script runs the job itself and its log says so."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

from beatflow.job import Job
from beatflow.worker.groups import GROUP_OF, GROUPS, POOL_ENV, gpu_pool, pool_size, workers_at_start
from beatflow.worker.protocol import (
    EXIT_ABANDONED,
    MAX_WORKERS,
    PASSED_ENV,
    REQUEST_TIMEOUT_S,
    STALL_S,
    Channel,
    Run,
    group_of,
    peer,
    slot_of,
)

START_TIMEOUT_S = 120.0
THREAD_CAPS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)  # Snakemake's per-job caps; the worker sets its own
END_WAIT_S = 5.0  # for the worker's end to reach its log after its connection closed
BUSY_POLL_S = 0.02  # a job whose group's fixed pool is busy asks again after this long


def start_workers(config: dict, cores: int, records: int, but: str = "") -> None:
    """Start every group's first workers (Snakemake's ``onstart``: before the first job is scheduled; how many:
    :func:`~beatflow.worker.groups.workers_at_start`), ``but`` that group's; with several GPUs, a GPU group's
    on the first (the others start when a job claims them). They warm up (the first job of a worker started
    later waits for its libraries only)."""
    from beatflow.gpus import run_devices

    run = Run.current()
    devices = run_devices()
    if run is not None:
        if devices:
            os.environ[POOL_ENV] = str(gpu_pool(records))  # the run's jobs inherit it
        for name, group in GROUPS.items():
            if name != but:
                gpu_group = group.gpu_libraries and len(devices) > 1
                for index in range(workers_at_start(name, cores, records)):
                    spawn(run, slot_of(name, devices[0] if gpu_group else None), index, config, warm=True)


def submit(job: Job, age_s: float, device: str | None = None) -> tuple[bool | None, str | None]:
    """Run ``job`` in a warm worker of this run: its outcome, or None and why the script must run it itself.
    ``age_s``: this process's age, for the job's start line; ``device``: the GPU the job holds, whose workers
    it goes to (:mod:`beatflow.gpus`)."""
    run = Run.current()
    if run is None:
        return None, None
    group = slot_of(GROUP_OF[job.rule], device)
    request = {
        "job": job.to_dict(),
        "pid": os.getpid(),
        "age": age_s,
        "env": {k: v for k, v in os.environ.items() if k.startswith("BEATFLOW_") or k in PASSED_ENV},
    }
    pool = pool_size(GROUP_OF[job.rule])
    while True:
        for ready_only in (True, False):  # a ready worker first; else one loading its libraries, or a new one
            for index in range(pool or MAX_WORKERS):
                try:
                    channel = _connect(run, group, index)
                    if channel is None and ready_only:
                        continue
                    if channel is None:
                        if index == 0 and not run.log_path(group, 0).exists():  # no worker yet (hooks off)
                            start_workers(job.config, len(os.sched_getaffinity(0)), 1, but=GROUP_OF[job.rule])
                        channel = _start(run, group, index, job.config)
                except PermissionError as exc:
                    return None, str(exc)
                if channel is None:
                    return None, f"no warm worker started (see {run.log_path(group, index)}); running the job here"
                with contextlib.closing(channel):
                    try:
                        channel.send({**request, "ready_only": ready_only})
                        reply = channel.receive(REQUEST_TIMEOUT_S)
                    except (OSError, ValueError):
                        reply = None
                    if reply is None or reply.get("busy"):
                        continue
                    return _follow(channel, int(reply["accepted"]), run.log_path(group, index))
        if pool is None:
            return None, f"all {MAX_WORKERS} warm workers of group {group} are busy; running the job here"
        time.sleep(BUSY_POLL_S)  # the group's whole pool is busy: the first to finish takes the job


def _follow(channel: Channel, worker_pid: int, worker_log) -> tuple[bool | None, str | None]:
    """Print the job's log lines until its outcome; None and why when the worker died or fell silent first."""
    try:
        while (message := channel.receive(STALL_S)) is not None:
            if "ok" in message:
                return bool(message["ok"]), None
            if "log" in message:
                print(message["log"], file=sys.stderr, flush=True)
    except (TimeoutError, ValueError) as exc:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker_pid, signal.SIGKILL)  # its uid is ours (checked); it must not finish the job too
        what = f"sent nothing for {STALL_S:.0f} s" if isinstance(exc, TimeoutError) else f"sent garbage ({exc})"
        return None, f"the warm worker {worker_pid} {what}: killed it (see {worker_log}); running the job here"
    except OSError as exc:
        return None, f"the connection to warm worker {worker_pid} failed ({exc}); running the job here"
    end = _end_of(worker_pid, worker_log)
    if end == f"exit status {EXIT_ABANDONED}":  # it saw this run's Snakemake go: the job must not run again
        print(f"the warm worker {worker_pid} stopped the job: its Snakemake process is gone", file=sys.stderr)
        return False, None
    return None, f"the warm worker {worker_pid} stopped during the job: {end} (see {worker_log}); running the job here"


def _end_of(worker_pid: int, worker_log) -> str:
    """How the worker ended, as its keeping process wrote it into its log."""
    deadline = time.monotonic() + END_WAIT_S
    while True:
        with contextlib.suppress(OSError):
            for line in reversed(worker_log.read_text(errors="replace").splitlines()):
                if line.startswith(f"worker {worker_pid} ended: "):
                    return line.split(": ", 1)[1]
        if time.monotonic() > deadline:
            return "its end was not recorded"
        time.sleep(0.05)


def _connect(run: Run, group: str, index: int) -> Channel | None:
    """A channel to ``group``'s worker ``index``; None when none listens. Raises PermissionError when the run's
    directory is not private to this user, or the listener is not a process of this user."""
    run.private_directory()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(REQUEST_TIMEOUT_S)
    try:
        conn.connect(run.address(group, index))
    except OSError:
        conn.close()
        return None
    pid, uid = peer(conn)
    if uid != os.getuid():
        conn.close()
        raise PermissionError(
            f"the address of warm worker {group} #{index} is held by pid {pid} of uid {uid}, "
            f"not this user ({os.getuid()}): no job goes to it; running the job here"
        )
    return Channel(conn)


def spawn(run: Run, group: str, index: int, config: dict, warm: bool = False) -> subprocess.Popen:
    """Start worker ``index`` of slot ``group`` (it exits at once if that worker already runs); ``warm``: it
    warms its group's rules up before its first job (:func:`~beatflow.worker.groups.preload`). The config goes
    through the worker's stdin, never its command line (``/proc/PID/cmdline`` is world-readable); its log is
    private to this user (mode 0600)."""
    path = run.log_path(group, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_CAPS}
    device = group_of(group)[1]
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = device
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "beatflow.worker.server", group, str(index), "warm" if warm else "cold"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(out)
    with contextlib.suppress(BrokenPipeError):  # a worker that exits at once (its name is taken) reads nothing
        proc.stdin.write(json.dumps(config).encode())
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    return proc


def _start(run: Run, group: str, index: int, config: dict) -> Channel | None:
    """Start ``group``'s worker ``index`` and connect to it (None if it does not come up)."""
    proc = spawn(run, group, index, config)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        channel = _connect(run, group, index)
        if channel is not None:
            return channel
        if proc.poll() is not None:  # it exited: another client's worker took the place, or it failed
            return _connect(run, group, index)
        time.sleep(0.02)
    return None
