"""What the warm workers and their clients share: which run they belong to, where a worker listens, who is at
the other end of a socket, and the messages (JSON lines).

A run is one Snakemake process (``owner``, its pid) and an unguessable token, both set by the Snakefile in
``BEATFLOW_WORKER_RUN`` (:func:`beatflow.worker.session.open_run`) and inherited by every local job. A worker
listens on a Unix socket file named after its group of rules and its index in the group, in the run's own
directory (``.snakemake/beatflow/run-<owner>-<token>``, relative to the working directory: short enough for
a socket's name), which only this user can enter (mode 0700, checked by both ends before they bind or
connect): no other user can take a worker's name, connect to one or see one. Both ends also check the
other's uid (``SO_PEERCRED``). A worker's keeping process removes its socket file when the worker ends, and
the directory once it is empty."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
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

    @property
    def directory(self) -> Path:
        """The run's directory of worker sockets (relative to the working directory, as every process of the
        run sees it)."""
        return Path(".snakemake", "beatflow", f"run-{self.owner}-{self.token[:16]}")

    def private_directory(self) -> Path:
        """:attr:`directory`, created mode 0700 where absent. Raises PermissionError unless it is a directory of
        this user that no other user can enter."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self.directory.mkdir(mode=0o700)
        found = os.lstat(self.directory)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
            raise PermissionError(
                f"the warm workers' directory {self.directory} is not a directory of this user with mode 0700: "
                "no job goes to a worker there; running the job here"
            )
        return self.directory

    def address(self, slot: str, index: int) -> str:
        """The socket file of worker ``index`` of ``slot`` (a group, or ``group@device``)."""
        return str(self.directory / f"{slot}-{index}")

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
