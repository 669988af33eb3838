"""The warm workers' groups: rules whose stages share libraries share workers. A rule's group holds the package
of the stage its script imports (:func:`group_of`): no rule is listed here."""

from __future__ import annotations

import importlib
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

TABLES = "beatflow.io.tables pandas pyarrow.dataset pyarrow.pandas_compat "  # reading the artifacts


@dataclass(frozen=True)
class Group:
    packages: tuple[str, ...]  # where its rules' stages live
    modules: str  # imported by every worker before its first job: what the stages import lazily
    gpu_libraries: tuple[str, ...] = ()  # what its stages ask select_backend for
    warm_up: str = ""  # a function of this module: a warm worker's warm-up on the GPU
    max_jobs: int = 200  # a worker retires after this many jobs
    max_rss_mb: int = 8192  # or when its resident memory exceeds this after a job
    niceness: int = 0  # added to the worker's nice value: the CPU goes first to the groups that hold a GPU


GROUPS = {
    "ingest": Group(
        ("beatflow.io", "beatflow.synth"), TABLES + "beatflow.io.ingest beatflow.io.physio pyarrow.csv", ("cudf",)
    ),
    "detect": Group(
        ("beatflow.detect", "beatflow.embed"),
        TABLES + "beatflow.detect.segment beatflow.detect.adaptive beatflow.detect.fusion beatflow.detect.nms "
        "beatflow.detect.searchback beatflow.detect.veto beatflow.dsp.filters beatflow.embed.rows "
        "beatflow.embed.kernels beatflow.io.arrays scipy.fft scipy.signal",
        ("cudf", "kvikio", "numba.cuda"),  # cudf: the signal's reader
        warm_up="warm_up_detect",
    ),
    "learn": Group(  # evaluate: right after score, and never in plot's way
        ("beatflow.learn", "beatflow.score", "beatflow.evaluate"),
        TABLES + "torch lightgbm fractions scipy.ndimage scipy.signal scipy.optimize scipy.stats beatflow.learn.train "
        "beatflow.learn.adam beatflow.learn.augment beatflow.learn.model beatflow.score.scores beatflow.score.families "
        "beatflow.score.morphology beatflow.classify.features beatflow.classify.model beatflow.classify.kmeans "
        "beatflow.classify.trees beatflow.classify.noise beatflow.detect.veto beatflow.holter.af beatflow.evaluate "
        "beatflow.io.arrays beatflow.io.truth",  # detect.veto: the noise rule's recurring shapes
        ("cudf", "kvikio", "torch", "cupyx.scipy.signal"),  # score: the signal's reader, the classes' resampler
        warm_up="warm_up_learn",
    ),
    "report": Group(  # bokeh Documents and matplotlib state grow with every figure: report workers retire early
        ("beatflow.report", "beatflow.holter"),
        TABLES + "beatflow.report.plots beatflow.report.cohort beatflow.report.pages beatflow.report.strips "
        "beatflow.holter.summary beatflow.holter.annotations beatflow.holter.figure matplotlib.backends.backend_agg "
        "scipy.signal wfdb beatflow.detect.segment",  # holter's signal quality: the detector's envelope
        max_jobs=12,
        max_rss_mb=1024,
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


def preload(name: str, config: dict, warm: bool) -> tuple[str, dict[str, float]]:
    """Import what group ``name``'s stages use; with ``warm``, choose the memory manager as they would and, on
    the GPU, warm them up. The backend's name and the seconds of each step."""
    from beatflow.backend import select_backend
    from beatflow.errors import BackendError

    group, seconds, t0 = GROUPS[name], {}, time.perf_counter()
    for module in ["numpy", "snakemake.iocontainers", *group.modules.split()]:  # numpy's BLAS before thread limits
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
        globals()[group.warm_up](config, backend)
        seconds["warm_up"] = round(time.perf_counter() - t0, 2)
    return backend.name, seconds


def warm_up_detect(config: dict, backend) -> None:
    """Segment and embed on ``backend``, a 2-minute two-lead record made and ingested on the CPU (the caches
    are on disk, but a cold segment job pays seconds more)."""
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import EmbedParams, embed
    from beatflow.io.ingest import IngestParams, ingest
    from beatflow.synth import LEADS, SynthSpec, write_record

    with tempfile.TemporaryDirectory() as tmp:
        f = {"signal": Path(tmp, "signal.parquet"), "beats": Path(tmp, "beats.parquet"), "path": Path(tmp, "a.csv")}
        write_record(SynthSpec(duration_s=120, fs=250.0, seed=0), f["path"], Path(tmp, "truth.csv"))
        p = IngestParams.from_config(config["ingest"])
        ingest("warm-up", f, f, p, select_backend("cpu"), leads=list(LEADS))
        segment("warm-up", f, f, SegmentParams.from_config(config["segment"]), backend)
        embed("warm-up", f, {"embedding": Path(tmp, "e.npy")}, EmbedParams.from_config(config["embed"]), backend)


def warm_up_learn(config: dict, backend, rows: tuple[int, int, int] = (2048, 2, 250)) -> None:
    """One epoch on random ``rows`` (beats, leads, samples) with the run's ``train.*`` keys, read as a record's
    (kvikio and DLPack on the GPU, the lengths from parquet): torch's kernels, cuDNN, cuBLAS, readers loaded."""
    import numpy as np
    import pandas as pd
    import torch

    from beatflow.backend import torch_device
    from beatflow.io import arrays
    from beatflow.io.tables import read_frame, write_frame
    from beatflow.learn.model import row_template
    from beatflow.learn.train import TrainParams, as_tensor, fit_rows

    device, rng, (beats_n, _, width) = torch_device(backend), np.random.default_rng(0), rows
    with tempfile.TemporaryDirectory() as tmp:
        embedding, beats = Path(tmp, "embedding.npy"), Path(tmp, "beats.parquet")
        arrays.save(embedding, rng.standard_normal(rows, dtype=np.float32), gpu=False)
        write_frame(pd.DataFrame({"length": rng.integers(width // 2, width, beats_n)}), beats)
        x = as_tensor(arrays.load(embedding, backend.gpu), backend, device)
        lengths = torch.as_tensor(read_frame(beats, columns=["length"])["length"].to_numpy(copy=True), device=device)
    p = replace(TrainParams.from_config(config["train"]), epochs=1)
    fit_rows(x, lengths, row_template(x, lengths), p, device, width // 2)
