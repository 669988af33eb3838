""":func:`start_run`, in Snakemake's ``onstart``, and the run's :class:`Server`: threads of Snakemake's own
process that keep a pool of warm workers per slot (a group, or ``group@device`` with several GPUs), give each
client's job to one, and relay its outcome. The workers are its children in their own session (Ctrl-C reaches
Snakemake's jobs, not them); they exit when their pipe to Snakemake closes."""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import AuthenticationError, Connection, Listener, Pipe, wait
from pathlib import Path

from beatflow.stage import WORKER_RUN_ENV, workers_wanted
from beatflow.worker import Run
from beatflow.worker.groups import GROUPS

REPORT_JOBS = 3  # a record's report jobs that can run at once: plot beside heart_rate and holter_report


def why_not(workflow) -> str | None:
    """Why this run's jobs must each run in their own process, or None when warm workers may serve them."""
    if not workflow.local_exec or workflow.remote_exec:
        return "the jobs run under an executor other than the local one"
    if methods := sorted(str(m) for m in workflow.deployment_settings.deployment_method or ()):
        return f"Snakemake deploys each job's software ({', '.join(methods)})"  # --sdm conda, apptainer, ...
    return "no job runs (--touch or --dry-run)" if workflow.touch or workflow.dryrun else None


def start_run(workflow, config: dict, records: int) -> None:
    """Snakemake's ``onstart``, only when there are jobs to run: drop a local run's job-rate limiter (its 1-s
    timer only keeps Snakemake alive after the last job); where workers may serve the run, give it its identity
    (``BEATFLOW_WORKER_RUN``, inherited by its jobs) and start its server and first workers.

    Parameters
    ----------
    workflow, config : Snakemake's ``workflow`` and ``config`` of the run.
    records : how many records the run has (they size the pools).
    """
    from snakemake.logging import logger

    from beatflow.gpus import SHARED, run_devices, run_jobs_per_device

    os.environ.pop(WORKER_RUN_ENV, None)  # a run's own, never one inherited
    for said in SHARED:
        logger.info(f"beatflow: {said}")
    if workflow.local_exec and not workflow.remote_exec:
        workflow.scheduler.job_rate_limiter = None
    if workers_wanted() and not why_not(workflow):
        os.environ[WORKER_RUN_ENV] = (run := Run(os.getpid(), secrets.token_hex(16))).environment
        Server(run, config, workflow.cores, records, run_devices(), run_jobs_per_device()).start()


@dataclass(eq=False)
class Worker:  # ready: its libraries are loaded; end: how it ended, once it has
    proc: subprocess.Popen
    conn: Connection
    slot: str
    busy: bool = False
    ready: bool = False
    end: str = ""


class Server:
    """The warm workers of ``run`` with its ``config``; its ``cores``, ``records``, ``devices`` and GPU jobs per
    device size the pools."""

    def __init__(self, run: Run, config: dict, cores: int, records: int, devices: list[str], jobs_per_device: int):
        self.run, self.config, self.devices, self.slots, self.changed = run, config, devices, {}, threading.Condition()
        # On a GPU run a GPU group's pool per device is fixed: the GPU jobs sharing a device over the GPU groups, at
        # most one per record (a worker costs a CUDA context and seconds of warm-up, a GPU job less). First
        # workers: a GPU group's pool (one on the CPU); report: one per core, at most REPORT_JOBS per record (one
        # started later makes its job wait seconds for holoviews).
        gpu_groups = [name for name, group in GROUPS.items() if group.gpu_libraries]
        pool = max(1, min(records, -(-jobs_per_device // len(gpu_groups)))) if devices else None
        self.fixed = {name: pool for name in gpu_groups}
        report = max(2, min(cores, REPORT_JOBS * records))
        self.first = {name: self.fixed.get(name) or (report if name == "report" else 1) for name in GROUPS}

    def start(self, first_workers: bool = True) -> None:
        """Listen, and start every group's first workers (a GPU group's on the first of several devices)."""
        self.run.private_directory()
        self.log = os.open(self.run.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.listener = Listener(self.run.address, "AF_UNIX", authkey=self.run.token.encode())
        atexit.register(lambda: (self.listener.close(), self.run.remove()))
        with self.changed:
            for name, group in GROUPS.items() if first_workers else ():
                device = self.devices[0] if group.gpu_libraries and len(self.devices) > 1 else None
                for _ in range(self.first[name]):
                    self.spawn(f"{name}@{device}" if device else name, warm=True)
        threading.Thread(target=self.accept, daemon=True).start()

    def spawn(self, slot: str, warm: bool) -> Worker:
        """Start a worker in ``slot`` (the caller holds the lock); ``warm``: it warms up."""
        group, _, device = slot.partition("@")
        ours, theirs = Pipe()
        env = os.environ | ({"CUDA_VISIBLE_DEVICES": device} if device else {})
        cmd = [sys.executable, "-m", "beatflow.worker.process", str(theirs.fileno())]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=env,
            pass_fds=[theirs.fileno()], start_new_session=True,
        )  # fmt: skip
        theirs.close()
        workers = self.slots.setdefault(slot, [])
        setup = {"group": group, "slot": slot, "index": len(workers), "device": device, "run": self.run}
        ours.send({**setup, "config": self.config, "warm": warm})
        workers.append(worker := Worker(proc, ours, slot))
        return worker

    def accept(self) -> None:
        while True:
            with contextlib.suppress(AuthenticationError, EOFError, ConnectionError):  # without the token, or gone
                threading.Thread(target=self.serve, args=(self.listener.accept(),), daemon=True).start()

    def take(self, group: str, device: str | None) -> Worker:
        """An idle worker of the job's slot, marked busy: a ready one first, else one loading, else a new one;
        on a fixed pool, the first to finish (another worker would take seconds to load)."""
        slot = f"{group}@{device}" if device and GROUPS[group].gpu_libraries else group
        with self.changed:
            while True:
                workers = self.slots.setdefault(slot, [])
                for worker in [w for w in workers if not (w.busy or w.ready) and w.conn.poll()]:
                    try:  # an idle worker's message: that it is ready, or its end
                        worker.ready = worker.conn.recv() == "ready"
                    except (EOFError, OSError):
                        workers.remove(worker)
                        self.ended(worker)
                idle = sorted((w for w in workers if not w.busy), key=lambda w: not w.ready)
                if idle or len(workers) < (self.fixed.get(group) or sys.maxsize):
                    worker = idle[0] if idle else self.spawn(slot, warm=False)
                    worker.busy = True
                    return worker
                self.changed.wait()

    def serve(self, conn: Connection) -> None:
        """One client's job, start to end."""
        with conn:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return
            worker = self.take(request["group"], request["device"])
            reply = self.relay(conn, worker, request)
            retire = reply.pop("retire", "")
            with self.changed:
                worker.busy = False
                if worker.end or retire:
                    self.slots[worker.slot].remove(worker)
                if retire and retire != "an unexpected error":  # its successor loads now, not when a job comes
                    self.spawn(worker.slot, warm=True)
                self.changed.notify_all()
            if retire:
                self.ended(worker)
            with contextlib.suppress(OSError):  # a client gone: its outputs, complete or not, are Snakemake's to judge
                conn.send(reply)

    def relay(self, conn: Connection, worker: Worker, request: dict) -> dict:
        """The job's outcome, or how the worker ended (it died during the job): the client runs the job itself.
        When the client goes (Snakemake cancelled the job), the worker stops and its temporary files go."""
        worker.conn.send(request)
        cancelled = False
        while True:
            if not cancelled and conn in wait([conn, worker.conn]):
                worker.conn.send("cancel")
                cancelled = True
                continue
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                from beatflow.io.atomic import temporary_path

                end, pid = self.ended(worker), worker.proc.pid
                for path in request["smk"].output:  # what it was writing
                    temporary_path(Path(path), pid).unlink(missing_ok=True)
                note = f"the warm worker {worker.proc.pid} stopped during the job: {end} (see {self.run.log_path})"
                return {"ok": None, "note": f"{note}; running the job here"}
            if message != "ready":
                return message
            worker.ready = True

    def ended(self, worker: Worker) -> str:
        """Wait for ``worker`` to exit (killing it after 10 s) and write how it ended into the log."""
        if not worker.end:
            try:
                status = worker.proc.wait(10.0)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                status = worker.proc.wait()
            worker.end = f"exit status {status}" if status >= 0 else f"killed by signal {-status}"
            worker.end += f" ({signal.Signals(-status).name})" if status < 0 else ""
            os.write(self.log, f"worker {worker.proc.pid} ended: {worker.end}\n".encode())
            worker.conn.close()
        return worker.end
