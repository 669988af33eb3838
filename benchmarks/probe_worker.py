"""Time segment and embed run twice in one process set up as the detect group's warm worker, with or without
its warm-up: ``python benchmarks/probe_worker.py CSV warm|cold [--profile]`` (prints JSON; ``--profile``
prints cProfile's top functions of the first segment job to stderr). The signal comes from the CPU ingest."""

import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

import yaml

from beatflow.backend import release_memory, select_backend
from beatflow.job import Files, Job
from beatflow.worker.groups import GROUPS, warm_up
from beatflow.stage import execute


def main():
    csv, mode = sys.argv[1], sys.argv[2]
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    out = Path("/tmp/probe") / mode
    out.mkdir(parents=True, exist_ok=True)
    signal, beats = str(out / "signal.parquet"), str(out / "beats.parquet")
    w = {"record": "holter20h"}
    assert execute(Job("ingest", w, Files([csv]), Files([signal]), Files([str(out / "ingest.log")]),
                       {"path": csv, "fs": 250.0, "leads": ["MLII", "V1"], "ingest": config["ingest"]},
                       {**config, "device": "cpu"}))
    config["device"] = "gpu"
    t0 = time.perf_counter()
    backend = select_backend("gpu", needs=("kvikio", "numba.cuda"))
    if mode == "warm":
        warm_up(GROUPS["detect"].warm_up, config)
    times = {"mode": mode, "preload_s": round(time.perf_counter() - t0, 3)}
    jobs = [Job("segment", w, Files([signal], {"signal": signal}), Files([beats]), Files([str(out / "segment.log")]),
                {"segment": config["segment"]}, config),
            Job("embed", w, Files([], {"signal": signal, "beats": beats}), Files([str(out / "embedding.npy")]),
                Files([str(out / "embed.log")]), {"embed": config["embed"]}, config)]
    for i, job in enumerate(jobs * 2):
        t0 = time.perf_counter()
        if i == 0 and "--profile" in sys.argv:
            with cProfile.Profile() as prof:
                assert execute(job)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        else:
            assert execute(job)
        times.setdefault(job.rule + "_s", []).append(round(time.perf_counter() - t0, 3))
        release_memory()
    print(json.dumps(times))


if __name__ == "__main__":
    main()
