"""The warm workers' groups: rules whose stages share libraries run in the same group's workers. Each worker
imports its group's libraries before its first job; the workers started when Snakemake starts
(:func:`workers_at_start`) also choose the memory manager and, on the GPU, warm up (:func:`warm_up`: detect
runs segment and embed on a small synthetic record, learn one epoch on random rows), each in its own process
while the others work. On a GPU run a GPU group's workers are a fixed pool (:func:`gpu_pool`)."""

from __future__ import annotations

import importlib
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from beatflow.job import Files, Job

# what reading and writing the artifacts' tables imports (pyarrow's dataset layer: read_table; pandas conversion)
TABLES = ("beatflow.io.tables", "pandas", "pyarrow.dataset", "pyarrow.pandas_compat")


@dataclass(frozen=True)
class Group:
    rules: tuple[str, ...]
    modules: tuple[str, ...]  # imported by every worker before its first job: all that the group's stages import
    gpu_libraries: tuple[str, ...] = ()  # what the group's stages ask select_backend for
    warm_up: str = ""  # "module:function": called with the run's config, on the GPU, by each worker started warm
    max_jobs: int = 200  # a worker retires after this many jobs
    max_rss_mb: int = 8192  # or when its resident memory exceeds this after a job
    at_start: int = 1  # workers started with the run, at least (see workers_at_start)
    niceness: int = 0  # added to the worker's nice value: the CPU goes first to the groups that hold a GPU


GROUPS = {
    "ingest": Group(
        ("demo_record", "ingest"),
        ("beatflow.io.ingest", "beatflow.io.physio", "beatflow.synth", "pyarrow.csv", *TABLES),
        ("cudf",),
    ),
    "detect": Group(
        ("segment", "embed"),
        (
            "beatflow.detect.segment",
            *(f"beatflow.detect.{m}" for m in ("adaptive", "fusion", "nms", "searchback", "veto")),
            "beatflow.dsp.filters",
            "beatflow.embed.rows",
            "beatflow.embed.kernels",
            "beatflow.io.arrays",
            *TABLES,
            "scipy.fft",
            "scipy.signal",
        ),
        ("kvikio", "numba.cuda"),
        warm_up="beatflow.worker.groups:warm_up_detect",
    ),
    "learn": Group(
        ("train", "score", "evaluate"),  # evaluate: right after score, and never in plot's way
        (
            "torch",
            "beatflow.learn.train",
            *(f"beatflow.learn.{m}" for m in ("adam", "augment", "model")),
            "beatflow.score.scores",
            *(f"beatflow.score.{m}" for m in ("families", "morphology")),
            *(f"beatflow.classify.{m}" for m in ("features", "model", "kmeans")),
            "lightgbm",
            "beatflow.holter.af",
            "fractions",
            "scipy.ndimage",
            "scipy.signal",
            "beatflow.evaluate",
            "beatflow.io.arrays",
            "beatflow.io.truth",
            *TABLES,
            "scipy.optimize",
            "scipy.stats",
        ),
        ("kvikio", "torch"),
        warm_up="beatflow.learn.train:warm_up",
    ),
    # bokeh Documents and matplotlib state grow with every figure: report workers retire early
    "report": Group(
        ("plot", "holter", "holter_report", "cohort", "cohort_report"),
        (
            "beatflow.report.plots",
            "beatflow.report.cohort",
            "beatflow.report.pages",
            "beatflow.report.strips",
            "beatflow.holter",
            "beatflow.holter.annotations",
            "beatflow.holter.figure",
            *TABLES,
            "matplotlib.backends.backend_agg",
            "scipy.signal",
            "wfdb",  # beats.atr (beatflow.holter.annotations)
        ),
        max_jobs=12,
        max_rss_mb=1024,
        at_start=2,
        niceness=5,
    ),
}
GROUP_OF = {rule: name for name, group in GROUPS.items() for rule in group.rules}
GPU_GROUPS = tuple(name for name, group in GROUPS.items() if group.gpu_libraries)
POOL_ENV = "BEATFLOW_GPU_POOL"  # a GPU run's pool of each GPU group (gpu_pool), set with the first workers


def gpu_pool(records: int) -> int:
    """A GPU group's workers on a GPU run (per device): the GPU jobs that share a device
    (:func:`beatflow.gpus.run_jobs_per_device`) spread over the :data:`GPU_GROUPS`, at most one per record, at
    least one. The pool is fixed: a job finding its group's workers busy waits for one, since another worker
    costs a CUDA context and seconds of imports and warm-up on a host that is starting all the others, while a
    GPU stage's job takes a fraction of a second to a few seconds."""
    from beatflow.gpus import run_jobs_per_device

    return max(1, min(records, -(-run_jobs_per_device() // len(GPU_GROUPS))))


def workers_at_start(name: str, cores: int, records: int) -> int:
    """How many of group ``name``'s workers a run of ``records`` records starts with (warmed up while the first
    jobs run): a GPU group its whole pool on a GPU run (:func:`gpu_pool`); the report group one per core, at
    most two per record (its rules run two at once per record): the report stages end every record and take
    every core once the GPU stages are done, and a report worker started later makes its job wait seconds
    for holoviews; never fewer than the group's ``at_start``."""
    from beatflow.gpus import run_devices

    group = GROUPS[name]
    if group.gpu_libraries and run_devices():
        wanted = gpu_pool(records)
    elif name == "report":
        wanted = min(cores, 2 * records)
    else:
        wanted = 1
    return max(group.at_start, wanted)


def pool_size(group: str) -> int | None:
    """Group ``group``'s fixed pool in this run (:data:`POOL_ENV`, a GPU group's on a GPU run), None where it has
    none (it starts a worker whenever all of its workers are busy)."""
    pool = os.environ.get(POOL_ENV, "")
    return int(pool) if pool and group in GPU_GROUPS else None


def preload(name: str, config: dict, warm: bool) -> tuple[str, dict[str, float]]:
    """Import what group ``name``'s stages use; with ``warm``, choose the process's memory manager as those
    stages would and, on the GPU, warm the group's rules up. Returns the backend's name and the seconds of
    each step done (``imports``, ``backend``, ``warm_up``)."""
    from beatflow.backend import select_backend
    from beatflow.errors import BackendError

    group, seconds, t0 = GROUPS[name], {}, time.perf_counter()

    def done(step: str) -> None:
        nonlocal t0
        seconds[step], t0 = round(time.perf_counter() - t0, 2), time.perf_counter()

    for module in ("numpy", *group.modules):  # numpy first: its BLAS is loaded before any thread limit is set
        importlib.import_module(module)
    if name == "report":
        from beatflow.report.plots import load_holoviews

        load_holoviews()
        done("imports")
        return "cpu", seconds
    done("imports")
    if not warm:
        return "not chosen yet", seconds
    try:
        backend = select_backend(config.get("device", "auto"), needs=group.gpu_libraries)
    except BackendError:
        return "none", seconds  # the job's own select_backend says why
    done("backend")
    if backend.gpu:
        warm_up(name, config)
        done("warm_up")
    return backend.name, seconds


def warm_up(name: str, config: dict) -> None:
    """Group ``name``'s warm-up (its ``warm_up``), so that its workers' first real jobs find the kernels
    compiled and loaded and their libraries' handles made."""
    module, _, function = GROUPS[name].warm_up.partition(":")
    if module:
        getattr(importlib.import_module(module), function)(config)


WARM_UP_CHAIN = ("demo_record", "ingest", "segment", "embed")  # each rule's inputs: the ones before


def warm_up_detect(config: dict) -> None:
    """Run segment and embed once on a 2-minute synthetic two-lead record with the run's config (CuPy's and Numba's
    caches are on disk, but a cold segment job pays seconds more: docs/experiments.md §5.10); the record and
    its signal are made on the CPU."""
    from beatflow.rules import RULES

    with tempfile.TemporaryDirectory() as tmp:
        for job in warm_up_jobs(Path(tmp), config):
            if job.rule not in GROUPS["detect"].rules:
                job = replace(job, config={**job.config, "device": "cpu"})
            RULES[job.rule](job)


def warm_up_jobs(d: Path, config: dict) -> list[Job]:
    """The jobs of :data:`WARM_UP_CHAIN` on a synthetic record in ``d``, as workflow/rules/*.smk define them
    (ingest reads both of its leads, as the records sheet names them for the demo)."""
    from beatflow.synth import LEADS

    f = {
        name.split(".")[0]: str(d / name)
        for name in ("csv.csv", "truth.csv", "signal.parquet", "beats.parquet", "embedding.npy")
    }

    def job(rule, inputs, outputs, params):
        return Job(
            rule,
            {"record": "warm-up"},
            Files(list(inputs.values()), inputs),
            Files(list(outputs.values()), outputs),
            Files(),
            params,
            config,
        )

    return [
        job("demo_record", {}, {"csv": f["csv"], "truth": f["truth"]}, {"hours": 2 / 60, "fs": 250.0, "seed": 0}),
        job(
            "ingest",
            {},
            {"signal": f["signal"]},
            {"path": f["csv"], "fs": None, "leads": list(LEADS), "ingest": config["ingest"]},
        ),
        job("segment", {"signal": f["signal"]}, {"beats": f["beats"]}, {"segment": config["segment"]}),
        job(
            "embed",
            {"signal": f["signal"], "beats": f["beats"]},
            {"embedding": f["embedding"]},
            {"embed": config["embed"]},
        ),
    ]
