"""Where a rule's script hands its work over: :func:`run` sends the job to a warm worker of this Snakemake run
where it has them (:mod:`beatflow.worker`, imported only then), else runs it here (:func:`execute`)."""

from __future__ import annotations

import logging
import os
import sys
import time

from beatflow.errors import BeatflowError
from beatflow.gpus import claim_for_job

log = logging.getLogger("beatflow")
WORKER_SWITCH_ENV = "BEATFLOW_WORKER"  # "off": every job runs in its own process
WORKER_RUN_ENV = "BEATFLOW_WORKER_RUN"  # this run's identity, set in onstart where its jobs go to warm workers
LOADED = "beatflow.script"  # the module name under which a warm worker loads a rule's script


def workers_wanted() -> bool:
    """Whether the user lets jobs go to warm workers (Linux only: they read /proc)."""
    switch = os.environ.get(WORKER_SWITCH_ENV, "on").lower()
    return sys.platform == "linux" and switch not in ("off", "0", "false", "no")


def run(smk, main) -> None:
    """The last line of every rule script: run the job in a warm worker of this run or here; exit 1 when it
    failed (a warm worker loading the script calls ``main`` itself).

    Parameters
    ----------
    smk : Snakemake's ``snakemake`` object of the job.
    main : the script's function of ``smk`` that calls the rule's stage.
    """
    if main.__module__ == LOADED:
        return
    age_s, device = process_age_s(), claim_for_job(smk.resources.get("gpu", 0), smk.config.get("device", "auto"))
    if smk.log:
        open(smk.log[0], "w").close()  # the job's log starts empty; whoever runs the job appends
    ok, note = None, None
    if os.environ.get(WORKER_RUN_ENV) and workers_wanted():
        from beatflow.worker.client import submit

        ok, note = submit(smk, main, age_s, device)
    if ok is None:
        ok = execute(smk, main, where=f"; GPU device {device}" if device else "", note=note)
    if not ok:
        sys.exit(1)


def process_age_s() -> float:
    """Seconds since this process started: interpreter, Snakemake's script preamble and imports (Linux)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return float(uptime.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return float("nan")


def execute(smk, main, client: tuple[int, float] | None = None, where: str = "", note: str | None = None) -> bool:
    """Run ``main(smk)`` here, logging to the rule's log; False when it raised a :class:`BeatflowError`.

    Parameters
    ----------
    smk, main : as for :func:`run`.
    client : the rule process's pid and age where a warm worker runs the job (the log file only: the client echoes it).
    where : names the warm worker or the GPU device in the start line (``benchmarks/`` parses it).
    note : why the job runs here after a warm worker did not run it; logged first.
    """
    handlers = ([] if client else [logging.StreamHandler(sys.stderr)]) + [logging.FileHandler(f) for f in smk.log]
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers, force=True
    )
    logging.captureWarnings(True)
    log.setLevel(logging.INFO)  # beatflow's own progress; libraries stay at WARNING
    if note:
        log.warning("%s", note)
    (pid, age), record = client or (os.getpid(), process_age_s()), smk.wildcards.get("record", "")
    log.info("%s %s: start (pid %d, %.2f s after the process started%s)", smk.rule, record, pid, age, where)
    t0 = time.perf_counter()
    try:
        main(smk)
    except BeatflowError as exc:
        log.error("%s failed: %s", smk.rule, exc)
        return False
    log.info("%s %s: done in %.2f s", smk.rule, record, time.perf_counter() - t0)
    return True
