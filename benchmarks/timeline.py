"""Print when each job of a finished run started and ended, from the rule logs, and how many GPU jobs
overlapped (with ``--resources gpu=1`` never more than one).

    python -m benchmarks.timeline [WORKDIR]
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from beatflow.gpus import GPU_STAGES
from benchmarks.common import job_run


def intervals(workdir: Path) -> list[tuple[datetime, datetime, str, str]]:
    """``(start, end, rule, record)`` of every job under ``workdir/logs`` (its stage's start and done lines,
    :func:`benchmarks.common.job_run`), by start."""
    jobs = []
    for log in sorted(workdir.glob("logs/**/*.log")):
        run = job_run(log.read_text())
        if run:
            record = log.parent.name if log.parent != workdir / "logs" else "-"
            jobs.append((run.started, run.finished, log.stem, record))
    return sorted(jobs)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    workdir = Path(argv[0] if argv else ".")
    jobs = intervals(workdir)
    if not jobs:
        raise SystemExit(f"no rule logs with start and done lines under {workdir / 'logs'}")
    t0 = jobs[0][0]
    print(f"{'start s':>8} {'end s':>8}  {'rule':<12} record   gpu")
    for start, end, rule, record in jobs:
        gpu = "gpu=1" if rule in GPU_STAGES else ""
        print(f"{(start - t0).total_seconds():8.1f} {(end - t0).total_seconds():8.1f}  {rule:<12} {record:<8} {gpu}")
    gpu_jobs = [(s, e) for s, e, r, _ in jobs if r in GPU_STAGES]
    overlap = max(sum(1 for s, e in gpu_jobs if s <= t < e) for t, _ in gpu_jobs)
    print(
        f"most GPU jobs at once: {overlap}; most jobs at once: "
        f"{max(sum(1 for s, e, *_ in jobs if s <= t < e) for t, *_ in jobs)}"
    )


if __name__ == "__main__":
    main()
