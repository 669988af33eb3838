"""What the warm worker and its clients share: where a worker listens, and the messages (JSON lines).

A worker belongs to one Snakemake run: the Snakefile sets ``BEATFLOW_WORKER_OWNER`` to the pid of the
Snakemake process (local execution only), and the worker exits when that process is gone. It listens on a
Linux abstract Unix socket named after the user, the host, the working directory, the owner, its group of
rules and its index in the group, so runs never share a worker and no socket file is left behind."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from pathlib import Path

OWNER_ENV = "BEATFLOW_WORKER_OWNER"  # set by the Snakefile: the Snakemake process the workers serve
SWITCH_ENV = "BEATFLOW_WORKER"  # "off": every job runs in its own process, as without a worker
MAX_WORKERS = 64  # in a group: at most this many (one per job of the group running at once)


def owner() -> int | None:
    """The Snakemake process whose jobs may use warm workers, or None (no worker: run the job in-process)."""
    if sys.platform != "linux" or os.environ.get(SWITCH_ENV, "on").lower() in ("off", "0", "false", "no"):
        return None
    value = os.environ.get(OWNER_ENV, "")
    return int(value) if value.isdigit() else None


def address(owner_pid: int, group: str, index: int) -> str:
    """The abstract socket name of ``group``'s worker ``index`` for ``owner_pid`` in this working directory."""
    run = hashlib.sha1(f"{socket.gethostname()}\0{Path.cwd().resolve()}\0{owner_pid}".encode()).hexdigest()[:16]
    return f"\0beatflow-worker/{os.getuid()}/{run}/{group}/{index}"


def log_path(owner_pid: int, group: str, index: int) -> Path:
    """The worker's own log (start-up, crashes); each job still logs to its rule's log file."""
    return Path(".snakemake", "beatflow", f"worker-{owner_pid}-{group}-{index}.log")


def send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def receive(stream) -> dict | None:
    """The next message from a ``conn.makefile("rb")`` stream; None at end of stream."""
    line = stream.readline()
    return json.loads(line) if line else None
