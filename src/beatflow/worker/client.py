"""The rule script's side of the warm workers (:func:`run_rule`): hand the job to an idle worker of its rule's
group in this Snakemake run (starting one where the group has none idle) and print its log lines; where there
is no worker to use (not a local Snakemake run, ``BEATFLOW_WORKER=off``, not Linux, or the worker could not
start or died), run the job in the script's own process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

from beatflow.job import Job
from beatflow.rules import GROUP_OF, GROUPS
from beatflow.stage import execute, process_age_s
from beatflow.worker.protocol import (
    MAX_WORKERS,
    address,
    log_path,
    owner,
    receive,
    send,
)

START_TIMEOUT_S = 120.0
THREAD_CAPS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")  # Snakemake's per-job caps; the worker sets its own


def run_rule(smk) -> None:
    """The body of every rule script: run the job in a warm worker if there is one, else here."""
    job = Job.from_snakemake(smk)
    ok = submit(job, process_age_s())
    if ok is None:
        ok = execute(job)
    if not ok:
        sys.exit(1)


def start_workers(config: dict, but: str = "") -> None:
    """Start every group's first worker (Snakemake's ``onstart``: before the first job is scheduled), ``but``
    that group's."""
    owner_pid = owner()
    if owner_pid is not None:
        for group in GROUPS:
            if group != but:
                _spawn(owner_pid, group, 0, config)


def submit(job: Job, age_s: float) -> bool | None:
    """Run ``job`` in a warm worker; ``age_s``: this process's age, for the job's start line."""
    owner_pid = owner()
    if owner_pid is None:
        return None
    group = GROUP_OF[job.rule]
    request = {"job": job.to_dict(), "pid": os.getpid(), "age": age_s,
               "env": {k: v for k, v in os.environ.items() if k.startswith("BEATFLOW_")}}
    for index in range(MAX_WORKERS):
        conn = _connect(owner_pid, group, index)
        if conn is None:
            if index == 0:  # Snakemake did not start the workers (hooks off): start the other groups' too
                start_workers(job.config, but=group)
            conn = _start(owner_pid, group, index, job.config)
        if conn is None:
            print(f"no warm worker started (see {log_path(owner_pid, group, index)}); running the job here",
                  file=sys.stderr)
            return None
        with conn:
            send(conn, request)
            stream = conn.makefile("rb")
            reply = receive(stream)
            if reply is None or reply.get("busy"):
                continue
            return _follow(stream, log_path(owner_pid, group, index))
    return None


def _follow(stream, worker_log) -> bool | None:
    """Print the job's log lines until its outcome; None when the worker died first."""
    while (message := receive(stream)) is not None:
        if "ok" in message:
            return bool(message["ok"])
        print(message["log"], file=sys.stderr, flush=True)
    print(f"the warm worker stopped during the job (see {worker_log}); running it here instead", file=sys.stderr,
          flush=True)
    return None


def _connect(owner_pid: int, group: str, index: int) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address(owner_pid, group, index))
    except OSError:
        conn.close()
        return None
    return conn


def _spawn(owner_pid: int, group: str, index: int, config: dict) -> subprocess.Popen:
    """Start a worker process (it exits at once if that worker already runs)."""
    path = log_path(owner_pid, group, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_CAPS}
    with path.open("a") as out:
        return subprocess.Popen([sys.executable, "-m", "beatflow.worker.server", str(owner_pid), group, str(index),
                                 json.dumps(config)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _start(owner_pid: int, group: str, index: int, config: dict) -> socket.socket | None:
    """Start ``group``'s worker ``index`` and connect to it (None if it does not come up)."""
    proc = _spawn(owner_pid, group, index, config)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        conn = _connect(owner_pid, group, index)
        if conn is not None:
            return conn
        if proc.poll() is not None:  # it exited: another client's worker took the place, or it failed
            return _connect(owner_pid, group, index)
        time.sleep(0.02)
    return None
