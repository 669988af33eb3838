"""The Snakefile's side of the warm workers: whether this run may use them, and the run's identity.

Workers run jobs in the environment Snakemake itself runs in, on this host, for as long as the Snakemake
process lives, so they are used only where a job would run that way too: a local run (no cluster or other
executor, not a job's own Snakemake process), no deployment method (``--sdm conda``, ``apptainer``,
``env-modules``: a job must run in the environment Snakemake deploys for it) and not ``--touch`` or
``--dry-run`` (no job runs)."""

from __future__ import annotations

import os
import secrets

from beatflow.worker.protocol import Run
from beatflow.worker_env import WORKER_RUN_ENV


def why_not(workflow) -> str | None:
    """Why this Snakemake run's jobs must each run in their own process, or None when workers may serve them."""
    if not workflow.local_exec or workflow.remote_exec:
        return "the jobs run under an executor other than the local one"
    if workflow.deployment_settings.deployment_method:
        methods = sorted(str(m) for m in workflow.deployment_settings.deployment_method)
        return f"Snakemake deploys each job's software ({', '.join(methods)})"
    if workflow.touch or workflow.dryrun:
        return "no job runs (--touch or --dry-run)"
    return None


def open_run(workflow) -> str | None:
    """In Snakemake's ``onstart``: give this run its identity (``BEATFLOW_WORKER_RUN``, inherited by the jobs it
    starts) where workers may serve it; returns why not, or None."""
    reason = why_not(workflow)
    if reason is None:
        os.environ[WORKER_RUN_ENV] = Run(os.getpid(), secrets.token_hex(16)).environment()
    return reason
