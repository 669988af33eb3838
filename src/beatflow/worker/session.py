"""The Snakefile's side of a local run: :func:`configure` when the workflow is parsed (the GPU jobs share the
devices, the run's device is decided once), :func:`start` in ``onstart`` (the warm workers' server).

Workers run jobs in the environment Snakemake itself runs in, on this host, for as long as the Snakemake
process lives, so they serve only where a job would run that way too: a local run (no cluster or other
executor, not a job's own Snakemake process), no deployment method (``--sdm conda``, ``apptainer``,
``env-modules``: a job runs in what Snakemake deploys for it) and not ``--touch`` or ``--dry-run``."""

from __future__ import annotations

import os
import secrets

from beatflow.stage import WORKER_RUN_ENV, workers_wanted

_SHARING: list[str] = []  # what configure did with the gpu resource, said in onstart


def configure(workflow, device: str) -> None:
    """When a run's Snakefile is parsed: on a local run, let the ``gpu`` resource count GPU jobs that share a
    device (:func:`beatflow.gpus.share_devices`), refuse ``device: gpu`` without a GPU before any job, and tell
    the jobs of ``auto`` without one that they run on the CPU."""
    from snakemake.exceptions import WorkflowError
    from snakemake.logging import logger

    from beatflow.backend import DEVICE_ENV, run_device
    from beatflow.errors import BackendError
    from beatflow.gpus import run_devices, share_devices

    if workflow.subprocess_exec:
        return  # a job's own Snakemake: its run's settings hold
    os.environ.pop(WORKER_RUN_ENV, None)
    if workflow.global_resources["_nodes"].value is not None or workflow.remote_exec:
        return  # a cluster or cloud submission (Snakemake's own test: --jobs)
    _SHARING[:] = [said] if (said := share_devices(workflow, device)) else []
    try:
        chosen = run_device(device, run_devices())
    except BackendError as exc:
        raise WorkflowError(str(exc)) from None
    if chosen != os.environ.get(DEVICE_ENV, device):
        logger.warning("beatflow: device: auto found no usable GPU (no CUDA device visible); running on the CPU")
        os.environ[DEVICE_ENV] = chosen


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


def start(workflow, config: dict, records: int) -> None:
    """In Snakemake's ``onstart`` (only when there are jobs to run): on a local run, drop Snakemake's job-rate
    limiter (it throttles submissions to a cluster; here its one-second timer only keeps Snakemake alive a second
    after the last job); where workers may serve the run, give it its identity (``BEATFLOW_WORKER_RUN``,
    inherited by its jobs) and start its server and first workers, which load their libraries while the first
    jobs are scheduled."""
    from snakemake.logging import logger

    from beatflow.gpus import run_devices, run_jobs_per_device
    from beatflow.worker import Run
    from beatflow.worker.server import Server

    for said in _SHARING:
        logger.info(f"beatflow: {said}")
    if workflow.local_exec and not workflow.remote_exec:
        workflow.scheduler.job_rate_limiter = None
    if not workers_wanted() or why_not(workflow):
        return
    run = Run(os.getpid(), secrets.token_hex(16))
    os.environ[WORKER_RUN_ENV] = run.environment()
    Server(run, config, workflow.cores, records, run_devices(), run_jobs_per_device()).start()
