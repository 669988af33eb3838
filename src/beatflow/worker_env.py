"""Whether a rule's job may go to a warm worker, as the environment says: read by the rule's script
(:func:`beatflow.stage.run_job`) and the Snakefile without importing :mod:`beatflow.worker`."""

import os
import sys

WORKER_SWITCH_ENV = "BEATFLOW_WORKER"  # "off": every job runs in its own process
WORKER_RUN_ENV = "BEATFLOW_WORKER_RUN"  # set in Snakemake's onstart when this run's jobs go to warm workers


def workers_wanted() -> bool:
    """Whether the user lets jobs go to warm workers (Linux only: they use pidfds and SO_PEERCRED)."""
    switch = os.environ.get(WORKER_SWITCH_ENV, "on").lower()
    return sys.platform == "linux" and switch not in ("off", "0", "false", "no")
