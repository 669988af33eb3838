"""Time the data group's jobs (ingest, segment, embed) run one after another in one process, as a warm worker
runs them, under a chosen memory setup: ``python benchmarks/probe_worker.py CSV MODE`` with MODE one of
``rmm-1g`` (RMM pool starting at 1 GiB), ``rmm-default`` (RMM's default pool), ``cupy`` (no RMM pool;
CuPy's own pool, cuDF unpooled)."""

import json
import os
import sys
import time
from pathlib import Path

import yaml

from beatflow import backend
from beatflow.job import Files, Job
from beatflow.stage import execute


def main():
    csv, mode = sys.argv[1], sys.argv[2]
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    config["device"] = "gpu"
    if mode == "rmm-default":
        backend.RMM_POOL_START = None
    t0 = time.perf_counter()
    if mode == "cupy":
        backend.select_backend("gpu", needs=("kvikio", "numba.cuda"))
        import cudf  # noqa: F401
    else:
        backend.select_backend("gpu", needs=("cudf", "kvikio", "numba.cuda"))
    out = Path("/tmp/probe") / mode
    out.mkdir(parents=True, exist_ok=True)
    times = {"preload": time.perf_counter() - t0}
    w = {"record": "holter20h"}
    jobs = [
        Job("ingest", w, Files([csv]), Files([str(out / "signal.parquet")]), Files([str(out / "ingest.log")]),
            {"path": csv, "fs": 250.0, "leads": ["MLII", "V1"], "ingest": config["ingest"]}, config),
        Job("segment", w, Files([str(out / "signal.parquet")], {"signal": str(out / "signal.parquet")}),
            Files([str(out / "beats.parquet")]), Files([str(out / "segment.log")]), {"segment": config["segment"]},
            config),
        Job("embed", w, Files([], {"signal": str(out / "signal.parquet"), "beats": str(out / "beats.parquet")}),
            Files([str(out / "embedding.npy")]), Files([str(out / "embed.log")]), {"embed": config["embed"]}, config),
    ]
    for i, job in enumerate(jobs + jobs[1:]):
        t0 = time.perf_counter()
        if i >= 1 and os.environ.get("PROBE_PROFILE"):
            import cProfile
            import pstats

            with cProfile.Profile() as prof:
                assert execute(job)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(18)
        else:
            assert execute(job)
        times.setdefault(job.rule, []).append(round(time.perf_counter() - t0, 3))
        backend.release_memory()
    print(json.dumps({"mode": mode, **times}))


if __name__ == "__main__":
    main()
