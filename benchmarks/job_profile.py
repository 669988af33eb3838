"""Where each job's time goes, from Snakemake's decision to run it until Snakemake marks it done, and write the
figures as JSON.

    python -m benchmarks.job_profile --out benchmarks/results/job-profile-<host>.json [--records SHEET]
        [--device gpu|cpu] [--cores N] [-- extra snakemake arguments]

Runs the workflow once in a scratch copy of the project, with a filter on Snakemake's logger that stamps every
job event (``job_info``: Snakemake has chosen the job and hands it to its executor; ``job_finished``: it has
checked the outputs and written its metadata). The rule logs add when the job's process started (the start
line gives the process's age), when its stage started and when it was done. Each job splits into

- ``launch``: from Snakemake's decision to the job's process running (the executor's thread, the script's
  file, the interpreter's start);
- ``startup``: from the process's start to its stage's start (Snakemake's script preamble, beatflow's imports,
  the GPU claim, the hand-off to a warm worker);
- ``work``: the stage itself (reads, compute, writes);
- ``exit``: from the stage's end to the end of the job's process (the worker's reply, the interpreter's
  shutdown), the process's end taken as the decision plus the ``benchmark:`` file's seconds;
- ``bookkeeping``: from there to Snakemake's ``job_finished`` (its output checks, metadata and benchmark file);
- ``wait``: before the decision, from the moment the job's last input job finished (Snakemake's scheduling and
  the ``gpu`` slot or cores being taken).

The summary sums each phase per rule, and for the jobs that hold the ``gpu`` resource how long they held it
against how long they worked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import benchmark_seconds, job_run, scratch_project, snakemake_args, write_json

PHASES = ("wait", "launch", "startup", "work", "exit", "bookkeeping")

# Runs Snakemake's command line in this process with a filter on its logger (handlers are replaced when
# Snakemake sets its logging up; a logger's filters stay) that writes each job event as a JSON line.
HOOK = """
import json, logging, sys, time
events = open(sys.argv[1], "w", buffering=1)
events.write(json.dumps({"t": time.time(), "event": "process_start"}) + "\\n")
KEYS = ("jobid", "job_id", "rule_name", "input", "output")
MILESTONES = {"Building DAG of jobs": "dag_start", "beatflow: ": "onstart"}
class Stamp(logging.Filter):
    def filter(self, record):
        event = str(getattr(record, "event", ""))
        message = str(record.msg)
        for prefix, milestone in MILESTONES.items():
            if message.startswith(prefix):
                events.write(json.dumps({"t": record.created, "event": milestone}) + "\\n")
        if event in ("job_info", "job_finished", "job_error"):
            fields = {k: list(getattr(record, k)) if k in ("input", "output") else getattr(record, k)
                      for k in KEYS if hasattr(record, k)}
            if hasattr(record, "wildcards"):
                fields["wildcards"] = dict(record.wildcards.items())
            if hasattr(record, "resources"):
                fields["resources"] = dict(record.resources.items())
            events.write(json.dumps({"t": record.created, "event": event, **fields}, default=str) + "\\n")
        return True
logging.getLogger("snakemake.logging").addFilter(Stamp())
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[2:]]
main()
"""


def rule_log_times(log: Path) -> dict | None:
    """The process start, stage start and stage end of one rule log (epoch seconds, :func:`job_run`), None when
    unfinished."""
    run = job_run(log.read_text(errors="replace"))
    return None if run is None else {"process": run.process_start, "start": run.start, "done": run.done}


def benchmark_s(path: Path) -> float:
    """The wall seconds of a job's process from its ``benchmark:`` file (nan where there is none)."""
    try:
        return benchmark_seconds(path)
    except (OSError, IndexError, ValueError):
        return float("nan")


def jobs_of(events: list[dict], work: Path) -> list[dict]:
    """One row per finished job: rule, record, whether it held the gpu resource, and its phases (s)."""
    info = {str(e["jobid"]): e for e in events if e["event"] == "job_info"}
    finished = {str(e["job_id"]): e["t"] for e in events if e["event"] == "job_finished"}
    made_by = {}  # output path → the time its job finished
    rows = []
    for jobid, event in sorted(info.items(), key=lambda kv: kv[1]["t"]):
        if jobid not in finished:
            continue
        record = event.get("wildcards", {}).get("record", "-")
        log = work / "logs" / record / f"{event['rule_name']}.log"
        times = rule_log_times(log) if log.exists() else None
        inputs = event.get("input", [])
        ready = max((made_by[p] for p in inputs if p in made_by), default=None)
        row = {
            "rule": event["rule_name"],
            "record": record,
            "jobid": int(jobid),
            "gpu": bool(event.get("resources", {}).get("gpu")),
            "decided": event["t"],
            "finished": finished[jobid],
        }
        row["wait"] = max(0.0, event["t"] - ready) if ready is not None else 0.0
        if times:
            row["launch"] = times["process"] - event["t"]
            row["startup"] = times["start"] - times["process"]
            row["work"] = times["done"] - times["start"]
            ended = event["t"] + benchmark_s(work / "logs" / record / f"{event['rule_name']}.benchmark.tsv")
            row["exit"] = ended - times["done"]
            row["bookkeeping"] = finished[jobid] - ended
        rows.append(row)
        made_by.update(dict.fromkeys(event.get("output", []), finished[jobid]))
    return rows


def complete(row: dict) -> bool:
    """Whether every phase of a job was measured (a job without a rule log or benchmark file has some not)."""
    return all(isinstance(row.get(p), float) and row[p] == row[p] for p in PHASES)


def summary(rows: list[dict], wall: float) -> dict:
    """Per rule: jobs and the median and total of each phase; the gpu slot's held against worked seconds."""
    per_rule: dict[str, dict] = {}
    for rule in sorted({r["rule"] for r in rows}):
        mine = [r for r in rows if r["rule"] == rule and complete(r)]
        if not mine:
            continue
        per_rule[rule] = {
            "jobs": len(mine),
            **{
                f"{phase}_s": {
                    "median": round(statistics.median(r[phase] for r in mine), 4),
                    "total": round(sum(r[phase] for r in mine), 3),
                }
                for phase in PHASES
            },
        }
    gpu = [r for r in rows if r["gpu"] and complete(r)]
    held = sum(r["finished"] - r["decided"] for r in gpu)
    return {
        "wall_s": round(wall, 2),
        "jobs": len(rows),
        "per_rule": per_rule,
        "gpu_slot": {
            "jobs": len(gpu),
            "held_s": round(held, 2),
            "worked_s": round(sum(r["work"] for r in gpu), 2),
            "worked_fraction": round(sum(r["work"] for r in gpu) / held, 3) if held else None,
        },
        "phase_totals_s": {p: round(sum(r[p] for r in rows if complete(r)), 2) for p in PHASES},
    }


def outside_jobs(events: list[dict], rows: list[dict], wall: float) -> dict:
    """The run's seconds outside its jobs: from the process's start to Snakemake's DAG (its import, the
    Snakefile's parsing), to its ``onstart`` (where the Snakefile logs there), to its first job; and from its
    last job's end to the process's end."""
    at = {e["event"]: e["t"] for e in reversed(events) if e["event"] in ("process_start", "dag_start", "onstart")}
    begin = at.get("process_start")
    if begin is None or not rows:
        return {}
    marks = {"to_dag_s": at.get("dag_start"), "to_onstart_s": at.get("onstart")}
    marks["to_first_job_s"] = min(r["decided"] for r in rows)
    figures = {name: round(t - begin, 3) for name, t in marks.items() if t}
    figures["after_last_job_s"] = round(wall - (max(r["finished"] for r in rows) - begin), 3)
    return figures


def profile(device: str, cores: int, records: str | None, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = scratch_project(Path(tmp))
        events_path = work / "events.jsonl"
        cmd = [sys.executable, "-c", HOOK, str(events_path), *snakemake_args(cores, device, records, extra)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False, env=dict(os.environ))
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"snakemake failed\n{proc.stderr[-4000:]}")
        events = [json.loads(line) for line in events_path.read_text().splitlines()]
        rows = jobs_of(events, work)
        return {
            "device": device,
            "cores": cores,
            "records": records or "demo",
            "outside_jobs": outside_jobs(events, rows, wall),
            **summary(rows, wall),
            "job_rows": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cpu", choices=["gpu", "cpu", "auto"])
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--records", help="records sheet (config key records; default: the demo)")
    p.add_argument("snakemake_args", nargs="*")
    a = p.parse_args()
    report = profile(a.device, a.cores, a.records, a.snakemake_args)
    write_json(a.out, report, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "job_rows"}, indent=1))


if __name__ == "__main__":
    main()
