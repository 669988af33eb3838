"""What every rule script shares: logging to the rule's log file and a clear one-line error on bad input."""

from __future__ import annotations

import logging
import os
import sys
import time

from beatflow.errors import BeatflowError

log = logging.getLogger("beatflow")


def setup_logging(log_path: str | None = None) -> None:
    """Log to stderr and, when given, to the rule's ``log:`` file."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers,
                        force=True)
    log.setLevel(logging.INFO)  # beatflow's own progress; libraries stay at WARNING


def process_age_s() -> float:
    """Seconds since this process started: interpreter, Snakemake's script preamble and imports (Linux)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return float(uptime.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return float("nan")


def run_stage(name: str, smk, body) -> None:
    """Run ``body(smk)`` for a Snakemake ``script:``; a :class:`BeatflowError` ends it with its message alone."""
    setup_logging(smk.log[0] if smk.log else None)
    record = smk.wildcards.get("record", "")
    log.info("%s %s: start (pid %d, %.2f s after the process started)", name, record, os.getpid(), process_age_s())
    t0 = time.perf_counter()
    try:
        body(smk)
    except BeatflowError as exc:
        log.error("%s failed: %s", name, exc)
        sys.exit(1)
    log.info("%s %s: done in %.2f s", name, record, time.perf_counter() - t0)
