"""Time the whole workflow and each rule on one or more backends, and write the figures as JSON.

    python -m benchmarks.run_workflow --devices gpu cpu --out benchmarks/results/demo-h200.json [--records SHEET]

Each backend runs in a fresh copy of the project (clean results/) with
``snakemake --cores N --resources gpu=1 --config device=...``; ``gpu-per-job`` and ``cpu-per-job`` run each
job in its own process (``BEATFLOW_WORKER=off``) instead of the warm workers, and the report says whether
any of their artifacts differs from the warm run's. Per-rule seconds come from Snakemake's ``benchmark:``
files. Also records the device, library versions, the record's size and the host's 1-min
load average before and after each run (other work on a shared host slows every rule).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from beatflow.gpus import GPU_STAGES
from benchmarks.common import (
    ARTIFACTS,
    benchmark_seconds,
    device_name,
    scratch_project,
    snakemake_args,
    versions,
    write_json,
)
from benchmarks.timeline import intervals

PER_BACKEND = (
    "workflow_wall_s",
    "stages_s",
    "breakdown_s",
    "outside_rules_s",
    "gpu_busy",
    "gpu_memory_by_process_mib",
    "evaluation",
    "load_average",
)
PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "numba",
    "numba-cuda",
    "torch",
    "cupy-cuda13x",
    "cudf-cu13",
    "kvikio-cu13",
    "rmm-cu13",
    "snakemake",
    "holoviews",
    "bokeh",
)


def outside_rules(logs: Path, wall: float) -> float:
    """Seconds of the run in which no rule was inside its stage (from each rule log's start and done lines):
    Snakemake's own scheduling and the rule processes' start-up."""

    spans = sorted((s.timestamp(), e.timestamp()) for s, e, *_ in intervals(logs.parent))
    covered, reach = 0.0, float("-inf")
    for start, end in spans:
        covered += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return round(wall - covered, 2)


GPU_QUERIES = {  # nvidia-smi's samples every 250 ms: the device, and each process on it
    "gpu.csv": "--query-gpu=utilization.gpu,memory.used",
    "gpu-apps.csv": "--query-compute-apps=pid,used_memory",
}


def gpu_samplers(work: Path) -> list:
    """Start nvidia-smi sampling GPU utilisation and memory in use, and each process's device memory, every
    250 ms into ``work``'s :data:`GPU_QUERIES` files (none where there is no nvidia-smi)."""
    if shutil.which("nvidia-smi") is None:
        return []
    return [
        subprocess.Popen(
            ["nvidia-smi", query, "--format=csv,noheader,nounits", "-lms", "250"],
            stdout=(work / name).open("w"),
            stderr=subprocess.DEVNULL,
        )
        for name, query in GPU_QUERIES.items()
    ]


def memory_by_process(samples: Path, workers: Path) -> dict[str, float]:
    """The most device memory (MiB) each process held, from ``gpu-apps.csv``, named by its warm worker's group
    where the workers' logs below ``workers`` name its pid (``learn #0 (pid 3379)``), else ``pid N``."""
    names = {}
    for log in workers.rglob("*.log") if workers.exists() else ():
        for pid, slot, index in re.findall(
            r"warm worker pid (\d+) for Snakemake \d+: group (\S+) #(\d+)", log.read_text()
        ):
            names[pid] = f"{slot} #{index} (pid {pid})"
    most: dict[str, float] = {}
    for line in samples.read_text().splitlines() if samples.exists() else ():
        pid, _, used = (part.strip() for part in line.partition(","))
        if pid.isdigit() and used.replace(".", "", 1).isdigit():
            name = names.get(pid, f"pid {pid}")
            most[name] = max(most.get(name, 0.0), float(used))
    return dict(sorted(most.items(), key=lambda item: -item[1]))


def gpu_busy(samples: Path) -> dict:
    """Share of the samples with the GPU busy (utilisation above 0), the mean utilisation (%) and the most
    device memory in use (MiB, every process's)."""
    rows = [line.split(",") for line in samples.read_text().splitlines()]
    rows = [
        (float(u), float(m))
        for u, m, *_ in (r for r in rows if len(r) >= 2)
        if u.strip().replace(".", "", 1).isdigit() and m.strip().replace(".", "", 1).isdigit()
    ]
    use = [u for u, _ in rows]
    return {
        "samples": len(use),
        "busy_fraction": sum(u > 0 for u in use) / max(1, len(use)),
        "mean_utilisation_pct": sum(use) / max(1, len(use)),
        "max_memory_used_mib": max((m for _, m in rows), default=None),
    }


DIGESTED = (*ARTIFACTS.values(), "holter.json", "evaluation.json")  # each record's files compared between runs


def digests(results: Path) -> dict:
    """SHA-256 of each record's artifacts: a parquet file's column names, key-value metadata and row values
    (cuDF's writer does not write equal tables to equal bytes, and an all-valid column may be read with or
    without a validity buffer), other files' bytes."""
    import pandas as pd
    import pyarrow.parquet as pq

    def digest(path: Path) -> str:
        if path.suffix != ".parquet":
            return hashlib.sha256(path.read_bytes()).hexdigest()
        table = pq.read_table(path)
        h = hashlib.sha256(repr((table.column_names, table.schema.metadata)).encode())
        h.update(pd.util.hash_pandas_object(table.to_pandas(), index=False).to_numpy().tobytes())
        return h.hexdigest()

    return {f"{p.parent.name}/{p.name}": digest(p) for name in DIGESTED for p in sorted(results.glob(f"*/{name}"))}


def run_backend(
    run: str, cores: int, records: str | None, extra: list[str], keep: Path | None, keep_results: Path | None = None
) -> dict:
    """Snakemake on one backend (``run``: ``gpu``, ``cpu``, ``auto`` or ``<device>-per-job``) in a scratch copy
    of the project: the run's figures (``keep``: copy its logs there; ``keep_results``: its results/)."""
    device, _, mode = run.partition("-")  # "gpu", or "gpu-per-job": no warm workers
    env = {**os.environ, **({"BEATFLOW_WORKER": "off"} if mode == "per-job" else {})}
    with tempfile.TemporaryDirectory() as tmp:
        work = scratch_project(Path(tmp))
        cmd = [sys.executable, "-m", "snakemake", *snakemake_args(cores, device, records, extra)]
        load_before = os.getloadavg()[0]
        samplers = gpu_samplers(work) if device == "gpu" else []
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, check=False, cwd=work, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        for sampler in samplers:
            sampler.terminate()
            sampler.wait()
        load = {"before": load_before, "after": os.getloadavg()[0]}  # other work on the host slows every rule
        if keep is not None:
            keep_logs(work, keep / run, proc.stderr)
        if keep_results is not None:
            shutil.copytree(work / "results", keep_results / run, dirs_exist_ok=True)
        if proc.returncode != 0:
            raise SystemExit(f"{run}: snakemake failed\n{proc.stderr[-5000:]}")
        check_backend(work / "logs", device)
        evaluations = {p.parent.name: json.loads(p.read_text()) for p in (work / "results").glob("*/evaluation.json")}
        return {
            "wall_s": wall,
            "stages_s": stages_s(work / "logs"),
            "breakdown_s": breakdown(work / "logs"),
            "outside_rules_s": outside_rules(work / "logs", wall),
            "gpu_busy": gpu_busy(work / "gpu.csv") if samplers else None,
            "gpu_memory_by_process_mib": (
                memory_by_process(work / "gpu-apps.csv", work / ".snakemake" / "beatflow") if samplers else None
            ),
            "evaluation": evaluations,
            "records": record_sizes(work),
            "load_average": load,
            "digests": digests(work / "results"),
        }


def keep_logs(work: Path, dest: Path, stderr: str) -> None:
    """A run's rule logs, its warm workers' logs and Snakemake's stderr, copied to ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(work / "logs", dest / "logs", dirs_exist_ok=True)
    workers = work / ".snakemake" / "beatflow"
    if workers.exists():  # the warm workers' own logs (not their sockets and pipes)
        for log in workers.rglob("*.log"):
            target = dest / "workers" / log.relative_to(workers)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, target)
    (dest / "snakemake.stderr").write_text(stderr)


def check_backend(logs: Path, device: str) -> None:
    """Stop unless every GPU-capable rule ran on ``device`` (``auto``: whichever)."""
    used = {
        m
        for log in logs.glob("*/*.log")
        if log.stem in GPU_STAGES
        for m in re.findall(r"backend: (gpu|cpu)", log.read_text())
    }  # plot draws on the CPU on both
    if device != "auto" and used != {device}:
        raise SystemExit(f"asked for device={device} but the rules ran on {sorted(used)}")


def stages_s(logs: Path) -> dict[str, dict[str, float]]:
    """Seconds per record and rule, from Snakemake's ``benchmark:`` files."""
    stages: dict[str, dict[str, float]] = {}
    for bench in sorted(logs.glob("*/*.benchmark.tsv")):
        stages.setdefault(bench.parent.name, {})[bench.name.split(".")[0]] = benchmark_seconds(bench)
    return stages


def breakdown(logs: Path) -> dict:
    """Where each rule's time went, from its log: ``startup`` (interpreter, Snakemake's script preamble,
    beatflow), ``gpu_imports`` (the GPU libraries the rule needs) and ``work`` (the rest of the stage)."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for path in sorted(logs.glob("*/*.log")):
        text = path.read_text()
        startup = re.search(r": start \(pid \d+, ([\d.]+) s after the process started", text)
        done = re.search(r": done in ([\d.]+) s", text)
        if not (startup and done):
            continue
        imports = re.search(r"GPU libraries imported in ([\d.]+) s", text)
        gpu_imports = float(imports.group(1)) if imports else 0.0
        found.setdefault(path.parent.name, {})[path.stem] = {
            "startup": float(startup.group(1)),
            "gpu_imports": gpu_imports,
            "work": round(float(done.group(1)) - gpu_imports, 2),
        }
    return found


def record_sizes(work: Path) -> dict:
    """Size of each record the run ingested: hours, fs, leads, rows (from signal.parquet)."""
    import pyarrow.parquet as pq

    sizes = {}
    for path in sorted((work / "results").glob("*/signal.parquet")):
        meta = pq.read_metadata(path)
        fs = float(pq.read_schema(path).metadata[b"fs"])
        sizes[path.parent.name] = {
            "hours": meta.num_rows / fs / 3600,
            "fs": fs,
            "leads": meta.num_columns,
            "rows": meta.num_rows,
        }
    return sizes


def single(per_record: dict) -> dict:
    """``{record: value}`` → the value itself (with its ``name``) when the run had one record."""
    if len(per_record) != 1:
        return per_record
    name, value = next(iter(per_record.items()))
    return {"name": name, **value}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--devices", nargs="+", default=["cpu"], choices=["gpu", "cpu", "auto", "gpu-per-job", "cpu-per-job"]
    )
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--add", action="store_true", help="add these backends to the report already in --out")
    p.add_argument("--keep-logs", type=Path, help="copy each run's logs/ here")
    p.add_argument("--keep-results", type=Path, help="copy each run's results/ here (a folder per backend)")
    p.add_argument("--records", help="records sheet (config key records; default: the demo)")
    p.add_argument(
        "snakemake_args",
        nargs="*",
        help="extra snakemake arguments (after --; not --config, which would replace device=)",
    )
    return p.parse_args(argv)


def report(results: dict, cores: int) -> dict:
    """The JSON report of the runs on each backend."""
    out = {
        "device": device_name(),
        "versions": versions(PACKAGES),
        "cores": cores,
        "record": single(next(iter(results.values()))["records"]),
        "workflow_wall_s": {d: r["wall_s"] for d, r in results.items()},
        "stages_s": {d: single(r["stages_s"]) for d, r in results.items()},
        "breakdown_s": {d: single(r["breakdown_s"]) for d, r in results.items()},
        "outside_rules_s": {d: r["outside_rules_s"] for d, r in results.items()},  # Snakemake, process start-up
        "gpu_busy": {d: r["gpu_busy"] for d, r in results.items() if r["gpu_busy"]},  # nvidia-smi every 250 ms
        "gpu_memory_by_process_mib": {  # each process's most, by warm-worker group where known
            d: r["gpu_memory_by_process_mib"] for d, r in results.items() if r["gpu_memory_by_process_mib"]
        },
        "evaluation": {d: r["evaluation"] for d, r in results.items()},
        "load_average": {d: r["load_average"] for d, r in results.items()},  # 1-min, before and after the run
    }
    return out


def main(argv=None) -> None:
    a = parse_args(argv)
    results = {d: run_backend(d, a.cores, a.records, a.snakemake_args, a.keep_logs, a.keep_results) for d in a.devices}
    out = report(results, a.cores)
    if a.add and a.out.exists():  # another backend's run of the same record, measured earlier
        earlier = json.loads(a.out.read_text())
        for key in PER_BACKEND:
            out[key] = {**earlier.get(key, {}), **out[key]}
    out["artifacts_unlike_warm"] = {  # a process per job against the warm workers, byte for byte
        d: sorted(k for k, v in r["digests"].items() if results[d.split("-")[0]]["digests"].get(k) != v)
        for d, r in results.items()
        if d.endswith("-per-job") and d.split("-")[0] in results
    }
    walls = out["workflow_wall_s"]
    if {"gpu", "cpu"} <= walls.keys():
        out["cpu_over_gpu"] = walls["cpu"] / walls["gpu"]
    write_json(a.out, out)
    print(
        json.dumps(
            {k: out[k] for k in ("device", *(k for k in PER_BACKEND if k not in ("evaluation", "load_average")))},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
