"""Run one job: a rule's script (:func:`run_rule`) claims its GPU where a run has several and hands the job to
a warm worker where the run has them; the job's stage runs here or in the worker (:func:`execute`), logging to
the rule's log file and ending a :class:`BeatflowError` with its one-line message."""

from __future__ import annotations

import logging
import os
import sys
import time

from beatflow.errors import BeatflowError
from beatflow.job import Job
from beatflow.worker_env import WORKER_RUN_ENV, workers_wanted

log = logging.getLogger("beatflow")


def run_rule(smk) -> None:
    """The body of every rule script: run the job (:func:`run_job`), exit 1 when it failed."""
    if not run_job(Job.from_snakemake(smk)):
        sys.exit(1)


def run_job(job: Job) -> bool:
    """Hand ``job`` to a warm worker of this run where there is one (:mod:`beatflow.worker.client`, imported
    only then), else run it here; whether it succeeded."""
    age_s = process_age_s()
    device = _claim_device(job)
    ok, note = None, None
    if os.environ.get(WORKER_RUN_ENV) and workers_wanted():
        from beatflow.worker.client import submit

        ok, note = submit(job, age_s, device)
    if ok is None:
        ok = execute(job, where=f"; GPU device {device}" if device else "", note=note)
    return ok


def _claim_device(job: Job) -> str | None:
    """For a GPU job of a run with several devices: the device this process now holds for the job's life
    (:mod:`beatflow.gpus`), also set as ``CUDA_VISIBLE_DEVICES`` for a run here; else None."""
    from beatflow.gpus import claim, run_devices, run_jobs_per_device

    devices = run_devices() if job.gpus and job.device != "cpu" else []
    if len(devices) < 2:  # none, or one: nothing to choose
        return None
    held = claim(devices, per_device=run_jobs_per_device())
    os.environ["CUDA_VISIBLE_DEVICES"] = held.device
    return held.device


def setup_logging(log_path: str | None = None, echo: logging.Handler | None = None, append: bool = False) -> None:
    """Log to ``echo`` (stderr by default) and, when given, to the rule's ``log:`` file."""
    handlers: list[logging.Handler] = [echo or logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="a" if append else "w"))
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers, force=True
    )
    logging.captureWarnings(True)
    log.setLevel(logging.INFO)  # beatflow's own progress; libraries stay at WARNING


def process_age_s() -> float:
    """Seconds since this process started: interpreter, Snakemake's script preamble and imports (Linux)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return float(uptime.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return float("nan")


def execute(
    job: Job,
    echo: logging.Handler | None = None,
    client: tuple[int, float] | None = None,
    where: str = "",
    note: str | None = None,
) -> bool:
    """Run ``job``'s stage here; False (after logging the message) when it raised a :class:`BeatflowError`.

    Parameters
    ----------
    echo : where the log lines go besides the rule's log file (stderr by default).
    client : the rule process's pid and age when a warm worker runs the job.
    where : names the warm worker in the start line (``benchmarks/run_workflow.py`` parses it).
    note : why the job runs here after a warm worker did not run it; logged first, after what the rule's
        log already holds.
    """
    from beatflow.rules import RULES

    setup_logging(job.log[0] if len(job.log) else None, echo, append=note is not None)
    if note:
        log.warning("%s", note)
    pid, age = client or (os.getpid(), process_age_s())
    log.info("%s %s: start (pid %d, %.2f s after the process started%s)", job.rule, job.record, pid, age, where)
    t0 = time.perf_counter()
    try:
        RULES[job.rule](job)
    except BeatflowError as exc:
        log.error("%s failed: %s", job.rule, exc)
        return False
    log.info("%s %s: done in %.2f s", job.rule, job.record, time.perf_counter() - t0)
    return True
