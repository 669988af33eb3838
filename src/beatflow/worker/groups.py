"""The warm workers' groups: rules whose stages share libraries run in the same group's workers. A rule's group
is the one holding the package of the stage its script imports (:func:`group_of`), so no rule is listed here.
Each worker imports its group's modules before its first job; those started with the run choose the memory
manager and, on the GPU, warm up (the group's stages on a small synthetic record or random rows)."""

from __future__ import annotations

import importlib
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

TABLES = ("beatflow.io.tables", "pandas", "pyarrow.dataset", "pyarrow.pandas_compat")  # reading the artifacts


@dataclass(frozen=True)
class Group:
    packages: tuple[str, ...]  # where its rules' stages live
    modules: tuple[str, ...]  # imported by every worker before its first job: what the stages import lazily
    gpu_libraries: tuple[str, ...] = ()  # what its stages ask select_backend for
    warm_up: str = ""  # a function of this module, called with the run's config on the GPU by a worker started warm
    max_jobs: int = 200  # a worker retires after this many jobs
    max_rss_mb: int = 8192  # or when its resident memory exceeds this after a job
    at_start: int = 1  # workers started with the run, at least (workers_at_start)
    niceness: int = 0  # added to the worker's nice value: the CPU goes first to the groups that hold a GPU


GROUPS = {
    "ingest": Group(
        ("beatflow.io", "beatflow.synth"),
        ("beatflow.io.ingest", "beatflow.io.physio", "pyarrow.csv", *TABLES),
        ("cudf",),
    ),
    "detect": Group(
        ("beatflow.detect", "beatflow.embed"),
        (
            *(f"beatflow.detect.{m}" for m in ("segment", "adaptive", "fusion", "nms", "searchback", "veto")),
            *("beatflow.dsp.filters", "beatflow.embed.rows", "beatflow.embed.kernels", "beatflow.io.arrays"),
            *(*TABLES, "scipy.fft", "scipy.signal"),
        ),
        ("kvikio", "numba.cuda"),
        warm_up="warm_up_detect",
    ),
    "learn": Group(  # evaluate: right after score, and never in plot's way
        ("beatflow.learn", "beatflow.score", "beatflow.evaluate"),
        (
            *("torch", "lightgbm", "fractions", "scipy.ndimage", "scipy.signal", "scipy.optimize", "scipy.stats"),
            *(f"beatflow.learn.{m}" for m in ("train", "adam", "augment", "model")),
            *(f"beatflow.score.{m}" for m in ("scores", "families", "morphology")),
            *(f"beatflow.classify.{m}" for m in ("features", "model", "kmeans", "trees")),
            *("beatflow.holter.af", "beatflow.evaluate", "beatflow.io.arrays", "beatflow.io.truth", *TABLES),
        ),
        ("kvikio", "torch"),
        warm_up="warm_up_learn",
    ),
    # bokeh Documents and matplotlib state grow with every figure: report workers retire early
    "report": Group(
        ("beatflow.report", "beatflow.holter"),
        (
            *(f"beatflow.report.{m}" for m in ("plots", "cohort", "pages", "strips")),
            *(f"beatflow.holter.{m}" for m in ("summary", "annotations", "figure")),
            *(*TABLES, "matplotlib.backends.backend_agg", "scipy.signal", "wfdb"),
        ),
        max_jobs=12,
        max_rss_mb=1024,
        at_start=2,
        niceness=5,
    ),
}


def group_of(main) -> str:
    """The group of a rule script's ``main``: the one holding a package that ``main`` imports from."""
    imported = [name for name in main.__code__.co_names if name.startswith("beatflow.")]
    for name, group in GROUPS.items():
        if any(m == p or m.startswith(p + ".") for m in imported for p in group.packages):
            return name
    raise LookupError(f"{main.__code__.co_filename}: main imports from no group's package ({imported})")


def gpu_pool(records: int, jobs_per_device: int) -> int:
    """A GPU group's workers per device on a GPU run: the GPU jobs that share a device spread over the GPU
    groups, at most one per record, at least one. The pool is fixed: a job finding its group's workers busy
    waits for one, since another worker costs a CUDA context and seconds of imports and warm-up, while a GPU
    stage's job takes a fraction of a second to a few seconds."""
    gpu_groups = sum(1 for group in GROUPS.values() if group.gpu_libraries)
    return max(1, min(records, -(-jobs_per_device // gpu_groups)))


def workers_at_start(name: str, cores: int, records: int, pool: int | None) -> int:
    """How many of group ``name``'s workers a run starts with: a GPU group its whole ``pool`` on a GPU run; the
    report group one per core, at most two per record (they end every record and take every core once the GPU
    stages are done, and a report worker started later makes its job wait seconds for holoviews)."""
    wanted = pool or (min(cores, 2 * records) if name == "report" else 1)
    return max(GROUPS[name].at_start, wanted)


def preload(name: str, config: dict, warm: bool) -> tuple[str, dict[str, float]]:
    """Import what group ``name``'s stages use; with ``warm``, choose the process's memory manager as those
    stages would and, on the GPU, warm the group's stages up. Returns the backend's name and the seconds of
    each step done."""
    from beatflow.backend import select_backend
    from beatflow.errors import BackendError

    group, seconds, t0 = GROUPS[name], {}, time.perf_counter()
    for module in ("numpy", "snakemake.iocontainers", *group.modules):  # numpy first: BLAS before thread limits
        importlib.import_module(module)
    if name == "report":
        importlib.import_module("beatflow.report.plots").load_holoviews()
    seconds["imports"] = round(time.perf_counter() - t0, 2)
    if not warm or not group.gpu_libraries:
        return "cpu" if name == "report" else "not chosen yet", seconds
    try:
        backend = select_backend(config.get("device", "auto"), needs=group.gpu_libraries)
    except BackendError:
        return "none", seconds  # the job's own select_backend says why
    if backend.gpu and group.warm_up:
        t0 = time.perf_counter()
        globals()[group.warm_up](config)
        seconds["warm_up"] = round(time.perf_counter() - t0, 2)
    return backend.name, seconds


def warm_up_detect(config: dict) -> None:
    """Segment and embed on a 2-minute synthetic two-lead record with the run's config (CuPy's and Numba's
    caches are on disk, but a cold segment job pays seconds more); the record and its signal are made on the
    CPU."""
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import EmbedParams, embed
    from beatflow.io.ingest import IngestParams, ingest
    from beatflow.synth import LEADS, SynthSpec, write_record

    backend = select_backend(config["device"], needs=GROUPS["detect"].gpu_libraries)
    with tempfile.TemporaryDirectory() as tmp:
        f = {name: Path(tmp, name) for name in ("a.csv", "truth.csv", "signal.parquet", "beats.parquet", "e.npy")}
        write_record(SynthSpec(duration_s=120, fs=250.0, seed=0), f["a.csv"], f["truth.csv"])
        p = IngestParams.from_config(config["ingest"])
        ingest(
            "warm-up",
            {"path": f["a.csv"]},
            {"signal": f["signal.parquet"]},
            p,
            select_backend("cpu"),
            leads=list(LEADS),
        )
        inputs = {"signal": f["signal.parquet"], "beats": f["beats.parquet"]}
        segment("warm-up", inputs, {"beats": f["beats.parquet"]}, SegmentParams.from_config(config["segment"]), backend)
        embed("warm-up", inputs, {"embedding": f["e.npy"]}, EmbedParams.from_config(config["embed"]), backend)


def warm_up_learn(config: dict, rows: tuple[int, int, int] = (2048, 2, 250)) -> None:
    """One epoch on random ``rows`` (beats, leads, samples) with the run's ``train.*`` keys, read as a record's
    are (through kvikio and DLPack on the GPU, the lengths from parquet) and padded from their row template:
    the first job finds torch's kernels, cuDNN, cuBLAS and the readers loaded."""
    import numpy as np
    import pandas as pd
    import torch

    from beatflow.backend import select_backend, torch_device
    from beatflow.io import arrays
    from beatflow.io.tables import read_frame, write_frame
    from beatflow.learn.model import row_template
    from beatflow.learn.train import TrainParams, as_tensor, fit_rows

    backend = select_backend(config["device"], needs=GROUPS["learn"].gpu_libraries)
    device, rng, (beats_n, _, width) = torch_device(backend), np.random.default_rng(0), rows
    with tempfile.TemporaryDirectory() as tmp:
        embedding, beats = Path(tmp, "embedding.npy"), Path(tmp, "beats.parquet")
        arrays.save(embedding, rng.standard_normal(rows, dtype=np.float32), gpu=False)
        write_frame(pd.DataFrame({"length": rng.integers(width // 2, width, beats_n)}), beats)
        x = as_tensor(arrays.load(embedding, backend.gpu), backend, device)
        lengths = torch.as_tensor(read_frame(beats, columns=["length"])["length"].to_numpy(copy=True), device=device)
    p = replace(TrainParams.from_config(config["train"]), epochs=1)
    fit_rows(x, lengths, row_template(x, lengths), p, device, width // 2)
