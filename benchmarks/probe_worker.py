"""Time segment and embed run twice in one process set up as the detect group's warm worker, with or without
its warm-up (``warm``/``cold``); the signal comes from the CPU ingest.

    python -m benchmarks.probe_worker data/holter20h.csv warm [--device gpu] [--profile] [--out JSON]
    python -m benchmarks.probe_worker /root/mitdb/100 warm --profile      # a WFDB record: its rate and leads

Prints the seconds as JSON (and writes them to ``--out``); ``--profile`` prints cProfile's top functions of the
first segment job to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import config, write_json


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "csv", help="a two-lead record: a CSV (MLII, V1) at 250 Hz, as beatflow-synth writes, or a WFDB record's path"
    )
    p.add_argument("mode", choices=["warm", "cold"], help="with or without the detect group's warm-up")
    p.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    p.add_argument("--profile", action="store_true")
    p.add_argument("--work", type=Path, help="folder for the artifacts (default: a temporary one)")
    p.add_argument("--out", type=Path, help="also write the JSON here")
    return p.parse_args(argv)


def job(rule: str, record: str, inputs: dict, outputs: dict, log: Path, params: dict, cfg: dict):
    """The rule's job as Snakemake hands it to the rule's script, and the script's ``main`` (as a warm worker
    loads it)."""
    import runpy

    from snakemake.iocontainers import InputFiles, Log, OutputFiles, Params, ResourceList, Snakemake, Wildcards

    from beatflow.stage import LOADED
    from benchmarks.common import ROOT

    smk = Snakemake(
        *(InputFiles(fromdict=inputs), OutputFiles(fromdict=outputs), Params(fromdict=params)),
        *(Wildcards(fromdict={"record": record}), 1, ResourceList(), Log([str(log)]), cfg, rule, None),
    )
    script = str(ROOT / "scripts" / f"{rule}.py")
    return smk, runpy.run_path(script, init_globals={"snakemake": None}, run_name=LOADED)["main"]


def ingested(csv: str, out: Path, cfg: dict) -> tuple[str, str]:
    """The record's signal.parquet (CPU ingest) in ``out``, and where segment writes beats.parquet."""
    from beatflow.stage import execute

    signal, beats = str(out / "signal.parquet"), str(out / "beats.parquet")
    params = {**csv_columns(csv), "path": csv, "start": None, "ingest": cfg["ingest"]}
    cpu = {**cfg, "device": "cpu"}
    assert execute(*job("ingest", Path(csv).stem, {}, {"signal": signal}, out / "ingest.log", params, cpu))
    return signal, beats


def csv_columns(path: str) -> dict:
    """The ingest rule's ``fs`` and ``leads``: beatflow-synth's for a CSV, the header's (None) for WFDB."""
    from beatflow.synth import LEADS

    if path.endswith(".csv"):
        return {"fs": 250.0, "leads": list(LEADS)}
    return {"fs": None, "leads": None}


def detect_jobs(signal: str, beats: str, out: Path, cfg: dict, record: str) -> list:
    inputs = {"signal": signal, "beats": beats}
    return [
        job(
            "segment",
            record,
            {"signal": signal},
            {"beats": beats},
            out / "segment.log",
            {"segment": cfg["segment"]},
            cfg,
        ),
        job(
            "embed",
            record,
            inputs,
            {"embedding": str(out / "embedding.npy")},
            out / "embed.log",
            {"embed": cfg["embed"]},
            cfg,
        ),
    ]


def probe(a: argparse.Namespace, out: Path) -> dict:
    from beatflow.backend import select_backend
    from beatflow.stage import execute
    from beatflow.worker.groups import GROUPS, warm_up_detect
    from beatflow.worker.process import release_memory

    cfg = dict(config())
    signal, beats = ingested(a.csv, out, cfg)
    cfg["device"] = a.device
    t0 = time.perf_counter()
    backend = select_backend(a.device, needs=GROUPS["detect"].gpu_libraries)
    if a.mode == "warm":
        warm_up_detect(cfg, backend)
    times = {"mode": a.mode, "device": a.device, "preload_s": round(time.perf_counter() - t0, 3)}
    for i, (smk, main) in enumerate(detect_jobs(signal, beats, out, cfg, Path(a.csv).stem) * 2):
        t0 = time.perf_counter()
        if i == 0 and a.profile:
            with cProfile.Profile() as prof:
                assert execute(smk, main)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        else:
            assert execute(smk, main)
        times.setdefault(smk.rule + "_s", []).append(round(time.perf_counter() - t0, 3))
        release_memory()
    return times


def main(argv=None) -> None:
    a = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = a.work / a.mode if a.work else Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        times = probe(a, out)
    if a.out:
        write_json(a.out, times)
    print(json.dumps(times))


if __name__ == "__main__":
    main()
