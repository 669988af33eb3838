"""What the warm workers and their clients share: which run they belong to, where a worker listens, who is at
the other end of a socket, and the messages (JSON lines).

A run is one Snakemake process (``owner``, its pid) and an unguessable token, both set by the Snakefile in
``BEATFLOW_WORKER_RUN`` (:func:`beatflow.worker.session.open_run`) and inherited by every local job. A worker
listens on a Linux abstract Unix socket whose name holds the user, the token, its group of rules and its
index in the group: another run, user or container never finds it, no socket file is left behind, and a name
cannot be taken before the run exists. Both ends check the other's uid (``SO_PEERCRED``): abstract names are
world-readable in ``/proc/net/unix``, so a name a worker gave up may be bound by anyone."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from beatflow.worker_env import WORKER_RUN_ENV

MAX_WORKERS = 64  # in a group: at most this many (one per job of the group running at once)
REQUEST_TIMEOUT_S = 10.0  # for a request, and for the worker's answer to it
HEARTBEAT_S = 2.0  # a busy worker says it is alive this often
PASSED_ENV = ("TMPDIR", "TMP", "TEMP")  # with BEATFLOW_*: the client's values hold in the worker during its job
EXIT_ABANDONED = 75  # a worker's exit status when its job's client or Snakemake went away during the job
STALL_S = 300.0  # a client gives a worker up after this long without a message (a stage holding the GIL)


@dataclass(frozen=True)
class Run:
    """The Snakemake run whose jobs a worker serves."""

    owner: int
    token: str

    @classmethod
    def current(cls) -> Run | None:
        """This process's run, from ``BEATFLOW_WORKER_RUN`` (``owner:token``); None when jobs run in-process."""
        owner, _, token = os.environ.get(WORKER_RUN_ENV, "").partition(":")
        return cls(int(owner), token) if owner.isdigit() and len(token) >= 32 else None

    def environment(self) -> str:
        return f"{self.owner}:{self.token}"

    def address(self, slot: str, index: int) -> str:
        """The abstract socket name of worker ``index`` of ``slot`` (a group, or ``group@device``)."""
        return f"\0beatflow-worker/{os.getuid()}/{self.token}/{slot}/{index}"

    def log_path(self, slot: str, index: int) -> Path:
        """The worker's own log (start-up, its end, crashes); each job logs to its rule's log file."""
        return Path(".snakemake", "beatflow", f"worker-{self.owner}-{self.token[:8]}-{slot}-{index}.log")


def slot_of(group: str, device: str | None) -> str:
    """Where a group's jobs go: its workers on one GPU (``group@device``, with several devices) or the group's."""
    return group if device is None else f"{group}@{device}"


def group_of(slot: str) -> tuple[str, str | None]:
    group, _, device = slot.partition("@")
    return group, device or None


def peer(conn: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a Unix socket."""
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


class Channel:
    """JSON-line messages over a connected socket; sends may come from several threads."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.stream = conn.makefile("rb")
        self._sending = threading.Lock()

    def send(self, message: dict) -> None:
        with self._sending:
            self.conn.sendall(json.dumps(message).encode() + b"\n")

    def receive(self, timeout_s: float) -> dict | None:
        """The next message; None at end of stream. Raises ``TimeoutError`` after ``timeout_s`` without one."""
        self.conn.settimeout(timeout_s)
        line = self.stream.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        self.stream.close()
        self.conn.close()
