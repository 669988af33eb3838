"""Run one job's stage in this process, as a rule's script or a warm worker does: log to the rule's log file
and end a :class:`BeatflowError` with its one-line message."""

from __future__ import annotations

import logging
import os
import sys
import time

from beatflow.errors import BeatflowError
from beatflow.job import Job

log = logging.getLogger("beatflow")


def setup_logging(log_path: str | None = None, echo: logging.Handler | None = None) -> None:
    """Log to ``echo`` (stderr by default) and, when given, to the rule's ``log:`` file."""
    handlers: list[logging.Handler] = [echo or logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers,
                        force=True)
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


def execute(job: Job, echo: logging.Handler | None = None, client: tuple[int, float] | None = None,
            where: str = "") -> bool:
    """Run ``job``'s stage here; False (after logging the message) when it raised a :class:`BeatflowError`.
    ``client`` is the rule process's pid and age when the warm worker runs the job, ``where`` names the worker
    (``benchmarks/run_workflow.py`` parses the start line)."""
    from beatflow.rules import RULES

    setup_logging(job.log[0] if len(job.log) else None, echo)
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
