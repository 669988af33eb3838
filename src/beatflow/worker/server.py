"""The run's server: threads of Snakemake's own process (started in ``onstart``) that keep a pool of warm
workers (:mod:`beatflow.worker.process`) per slot (a group, or ``group@device`` with several GPUs) and hand each
client's job to one of them: an idle ready worker before one still loading, else a new worker, or on a GPU run,
where a GPU group's pool is fixed, the first to finish. It relays the outcome, or when the worker died during
the job how it ended, so that the client runs the job itself. A client gone during its job (Snakemake cancelled
it) makes it stop the worker and remove the job's temporary files. The workers are this process's children in
their own session (Ctrl-C reaches Snakemake's jobs, not them); their pipes close when Snakemake ends, and they
exit."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import AuthenticationError, Connection, Listener, Pipe, wait
from pathlib import Path

from beatflow.worker import Run
from beatflow.worker.groups import GROUPS, gpu_pool, workers_at_start

MAX_WORKERS = 64  # in a slot: at most this many (one per job of its group running at once)
THREAD_CAPS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
END_WAIT_S = 10.0  # for a stopped worker to exit before it is killed


@dataclass(eq=False)
class Worker:
    proc: subprocess.Popen
    conn: Connection
    group: str
    device: str | None
    busy: bool = False
    ready: bool = False
    end: str = field(default="", init=False)  # how it ended, once it has

    @property
    def slot(self) -> str:
        return f"{self.group}@{self.device}" if self.device else self.group


class Server:
    """The warm workers of ``run``, with the run's ``config``; ``cores``, ``records`` and ``devices`` (the run's
    GPUs, :func:`beatflow.gpus.run_devices`) size the pools."""

    def __init__(self, run: Run, config: dict, cores: int, records: int, devices: list[str], jobs_per_device: int):
        self.run, self.config, self.devices = run, config, devices
        self.pool = gpu_pool(records, jobs_per_device) if devices else None  # a GPU group's, per device
        self.at_start = {name: workers_at_start(name, cores, records, self.fixed(name)) for name in GROUPS}
        self.slots: dict[str, list[Worker]] = {}
        self.changed = threading.Condition()

    def fixed(self, group: str) -> int | None:
        return self.pool if GROUPS[group].gpu_libraries else None

    def start(self, first_workers: bool = True) -> None:
        """Listen, and start every group's first workers (a GPU group's on the first of several devices)."""
        self.run.private_directory()
        self.log = os.open(self.run.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.listener = Listener(self.run.address, "AF_UNIX", authkey=self.run.token.encode())
        atexit.register(self.close)
        with self.changed:
            for name, group in GROUPS.items() if first_workers else ():
                device = self.devices[0] if group.gpu_libraries and len(self.devices) > 1 else None
                for _ in range(self.at_start[name]):
                    self.spawn(name, device, warm=True)
        threading.Thread(target=self.accept, daemon=True).start()

    def close(self) -> None:
        """At Snakemake's exit: the socket and the run's directory go (the workers see their pipes close)."""
        self.listener.close()
        self.run.remove()

    def spawn(self, group: str, device: str | None, warm: bool) -> Worker:
        """Start a worker of ``group`` (on ``device``) in slot ``group@device``; the caller holds the lock."""
        slot = f"{group}@{device}" if device else group
        env = {k: v for k, v in os.environ.items() if k not in THREAD_CAPS}  # Snakemake's per-job caps
        env.update({"CUDA_VISIBLE_DEVICES": device} if device else {})
        ours, theirs = Pipe()
        proc = subprocess.Popen(
            [sys.executable, "-m", "beatflow.worker.process", str(theirs.fileno())],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=[theirs.fileno()],
            start_new_session=True,
        )
        theirs.close()
        workers = self.slots.setdefault(slot, [])
        setup = {"group": group, "slot": slot, "index": len(workers), "device": device, "run": self.run}
        ours.send({**setup, "config": self.config, "warm": warm})
        workers.append(worker := Worker(proc, ours, group, device))
        return worker

    def accept(self) -> None:
        while True:
            try:
                conn = self.listener.accept()
            except (AuthenticationError, EOFError, ConnectionError):
                continue  # a process without the run's token, or one that gave up
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def take(self, group: str, device: str | None) -> Worker | None:
        """An idle worker of the job's slot, marked busy: a ready one first, else one loading, else a new one;
        on a fixed pool, waiting for the first to finish. None where all :data:`MAX_WORKERS` are busy."""
        device = device if GROUPS[group].gpu_libraries else None
        with self.changed:
            while True:
                workers = self.slots.setdefault(f"{group}@{device}" if device else group, [])
                for worker in [w for w in workers if not w.busy and not w.ready and w.conn.poll()]:
                    self.heard(worker, workers)
                idle = sorted((w for w in workers if not w.busy), key=lambda w: not w.ready)
                if idle or len(workers) < (self.fixed(group) or MAX_WORKERS):
                    worker = idle[0] if idle else self.spawn(group, device, warm=False)
                    worker.busy = True
                    return worker
                if self.fixed(group) is None:
                    return None
                self.changed.wait()

    def heard(self, worker: Worker, workers: list[Worker]) -> None:
        """An idle worker's message: that it is ready, or its end."""
        try:
            worker.ready = worker.conn.recv() == "ready"
        except (EOFError, OSError):
            workers.remove(worker)
            self.ended(worker)

    def serve(self, conn: Connection) -> None:
        """One client's job, start to end."""
        with conn:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return
            worker = self.take(request["group"], request["device"])
            if worker is None:
                conn.send({"ok": None, "note": f"all {MAX_WORKERS} warm workers are busy; running the job here"})
                return
            reply = self.relay(conn, worker, request)
            with self.changed:
                worker.busy = False
                if worker.end or reply.get("retire"):
                    self.slots[worker.slot].remove(worker)
                if reply.get("retire") not in (None, "", "an unexpected error"):  # its successor loads now
                    self.spawn(worker.group, worker.device, warm=True)
                self.changed.notify_all()
            if worker.end or reply.get("retire"):
                self.ended(worker)
            try:
                conn.send(reply)
            except OSError:
                pass  # the client left: its outputs, complete or not, are Snakemake's to judge

    def relay(self, conn: Connection, worker: Worker, request: dict) -> dict:
        """The job's outcome from ``worker``, or why the client must run it; stop the worker if the client goes."""
        worker.conn.send(request)
        cancelled = False
        while True:
            if not cancelled and conn in wait([conn, worker.conn]):
                cancelled = True  # the client sends nothing more: it is gone
                worker.conn.send("cancel")
                continue
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                worker.end = self.ended(worker)
                self.remove_temporaries(request["smk"].output, worker.proc.pid)
                return {"ok": None, "note": self.stopped(worker)}
            if message == "ready":
                worker.ready = True
            else:
                return message

    def stopped(self, worker: Worker) -> str:
        return (
            f"the warm worker {worker.proc.pid} stopped during the job: {worker.end} (see {self.run.log_path}); "
            "running the job here"
        )

    def ended(self, worker: Worker) -> str:
        """Wait for ``worker`` to exit (killing it after :data:`END_WAIT_S`) and write how it ended into the log."""
        if not worker.end:
            try:
                status = worker.proc.wait(END_WAIT_S)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                status = worker.proc.wait()
            how = f"exit status {status}" if status >= 0 else f"killed by signal {-status} ({_signal_name(-status)})"
            os.write(self.log, f"worker {worker.proc.pid} ended: {how}\n".encode())
            worker.end = how
            worker.conn.close()
        return worker.end

    @staticmethod
    def remove_temporaries(outputs, pid: int) -> None:
        """The temporary files a stopped worker left for the job's outputs (:mod:`beatflow.io.atomic`)."""
        from beatflow.io.atomic import temporary_path

        for path in outputs:
            temporary_path(Path(path), pid).unlink(missing_ok=True)


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return "?"
