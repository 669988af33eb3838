"""The warm worker: ``python -m beatflow.worker.server OWNER GROUP INDEX CONFIG_JSON``, started with the run's
config by Snakemake's ``onstart`` (every group's first worker) or by a rule's script
(:mod:`beatflow.worker.client`) that finds its group's workers busy.

It serves one group of rules (:data:`beatflow.rules.GROUPS`). A group's first worker loads the group's
libraries and warms its GPU kernels up before any job (:func:`beatflow.rules.preload`), so each group gets
ready in its own process while the others work. It runs one job at a time (a client that finds it busy tries
the group's next worker) with the same code a rule's own process would run (:func:`beatflow.stage.execute`),
streaming the job's log lines back to the client. Between jobs it gives the device memory pools back. It
exits when its Snakemake process is gone, after ``IDLE_EXIT_S`` without a job, or after an unexpected error
(a CUDA fault can poison the process); a job whose client is gone when it ends has its outputs removed, so a
cancelled job leaves no artifact."""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from beatflow.job import Job
from beatflow.rules import preload
from beatflow.worker.protocol import address, receive, send

IDLE_EXIT_S = 600.0
POLL_S = 0.5
REQUEST_TIMEOUT_S = 10.0

log = logging.getLogger("beatflow")


class ClientLog(logging.Handler):
    """Sends each log line of the job to its client, which prints it where Snakemake shows the job's stderr."""

    def __init__(self, conn: socket.socket):
        super().__init__()
        self.conn, self.gone = conn, False
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not self.gone:
            try:
                send(self.conn, {"log": self.format(record)})
            except OSError:
                self.gone = True


class Worker:
    """Queues one client's job at a time for the main thread, which runs it."""

    def __init__(self, owner: int):
        self.owner = owner
        self.requests: queue.Queue = queue.Queue()
        self.busy = threading.Lock()
        self.jobs_done = 0

    def listen(self, listener: socket.socket) -> None:
        """Accept clients (a thread): queue a request when idle, else answer busy."""
        while True:
            conn, _ = listener.accept()
            if _peer_uid(conn) != os.getuid():
                conn.close()
                continue
            conn.settimeout(REQUEST_TIMEOUT_S)  # a client that connects and says nothing must not block the rest
            try:
                request = receive(conn.makefile("rb"))
            except (OSError, ValueError):
                request = None
            conn.settimeout(None)
            if request is None or not self.busy.acquire(blocking=False):
                if request is not None:
                    send(conn, {"busy": True})
                conn.close()
                continue
            send(conn, {"accepted": os.getpid()})
            self.requests.put((conn, request))

    def serve(self) -> None:
        """Run queued jobs in this (the main) thread until the owner is gone, idle too long, or a fault."""
        idle_since = time.monotonic()
        while True:
            try:
                conn, request = self.requests.get(timeout=POLL_S)
            except queue.Empty:
                if not _alive(self.owner):
                    print(f"Snakemake process {self.owner} is gone: exiting", file=sys.stderr)
                    return
                if time.monotonic() - idle_since > IDLE_EXIT_S:
                    print(f"no job for {IDLE_EXIT_S:.0f} s: exiting", file=sys.stderr)
                    return
                continue
            with conn:
                healthy = self.run(conn, request)
            idle_since = time.monotonic()
            if not healthy:
                return

    def run(self, conn: socket.socket, request: dict) -> bool:
        """Run one job and reply; False when it failed unexpectedly (the worker then retires)."""
        try:
            job, ok, healthy = self.execute(conn, request)
        finally:
            self.busy.release()  # before the reply: the client's next job may come at once
        try:
            send(conn, {"ok": ok})
        except OSError:  # the client is gone: Snakemake cancelled the job
            for path in job.output:
                Path(path).unlink(missing_ok=True)
            print(f"{job.rule} {job.record}: client gone; outputs removed", file=sys.stderr)
        return healthy

    def execute(self, conn: socket.socket, request: dict) -> tuple[Job, bool, bool]:
        """The job, whether it succeeded, and whether the worker is still sound."""
        from beatflow.backend import release_memory
        from beatflow.stage import execute

        job = Job.from_dict(request["job"])
        _use_environment(request["env"])
        _use_threads(job.threads)
        self.jobs_done += 1
        healthy = True
        try:
            ok = execute(job, ClientLog(conn), client=(request["pid"], request["age"]),
                         where=f"; warm worker {os.getpid()}, its job {self.jobs_done}")
        except Exception:
            log.exception("%s %s failed in the warm worker", job.rule, job.record)
            ok = healthy = False
        finally:
            logging.basicConfig(handlers=[logging.StreamHandler(sys.stderr)], force=True)
            release_memory()
        return job, ok, healthy


def _peer_uid(conn: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _use_environment(env: dict[str, str]) -> None:
    """The client's ``BEATFLOW_*`` variables (``BEATFLOW_DEVICE`` overrides the config's device)."""
    for name in [n for n in os.environ if n.startswith("BEATFLOW_") and n not in env]:
        del os.environ[name]
    os.environ.update(env)


def _use_threads(threads: int) -> None:
    """torch's CPU threads as the rule's ``threads:`` (a fresh process reads them from OMP_NUM_THREADS)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(max(1, threads))


def main(argv: list[str] | None = None) -> None:
    owner, group, index, config = argv or sys.argv[1:]
    config = json.loads(config)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(int(owner), group, int(index)))
    except OSError:  # another client started this worker first
        return
    listener.listen(16)
    worker = Worker(int(owner))
    threading.Thread(target=worker.listen, args=(listener,), daemon=True).start()  # jobs queue while it loads
    t0 = time.perf_counter()
    backend = "not preloaded"
    if index == "0":  # started ahead of its jobs; a later one has a job waiting, which imports what it needs
        backend = preload(group, config)
    print(f"warm worker pid {os.getpid()} for Snakemake {owner}: group {group} #{index}, backend {backend}, "
          f"ready in {time.perf_counter() - t0:.2f} s", file=sys.stderr, flush=True)
    worker.serve()


if __name__ == "__main__":
    main()
