"""What each rule does with its job: choose the backend, then call its stage. One function per rule, named
after it; a rule's script or a warm worker runs them through :func:`beatflow.stage.execute`."""

from __future__ import annotations

from pathlib import Path

from beatflow.job import Job


def ingest(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.io.ingest import IngestParams
    from beatflow.io.ingest import ingest as run

    backend = select_backend(job.device, needs=("cudf",))
    run(job.record, job.par.path, job.par.fs, job.par.leads, job.output[0], backend,
        IngestParams.from_config(job.par.ingest))


def segment(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment as run

    backend = select_backend(job.device, needs=("numba.cuda",))
    run(job.record, job.input.signal, job.output[0], SegmentParams.from_config(job.par.segment), backend)


def embed(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.embed.rows import embed as run

    backend = select_backend(job.device, needs=("kvikio", "numba.cuda"))
    run(job.record, job.input.signal, job.input.beats, job.output[0], job.par.embed["length_s"], backend,
        tuple(job.par.embed["band_hz"]))


def train(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.io.tables import signal_info
    from beatflow.learn.train import TrainParams
    from beatflow.learn.train import train as run

    backend = select_backend(job.device, needs=("kvikio", "torch"))
    run(job.record, job.input.embedding, job.input.beats, job.output[0], TrainParams.from_config(job.par.train),
        backend, fs=signal_info(job.input.signal)[0])


def score(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.learn.train import TrainParams
    from beatflow.score.scores import ScoreParams
    from beatflow.score.scores import score as run

    backend = select_backend(job.device, needs=("kvikio", "torch"))
    run(job.record, {**dict(job.input.items()), **dict(job.output.items())}, SegmentParams.from_config(job.par.segment),
        TrainParams.from_config(job.par.train), ScoreParams.from_config(job.par.score), backend)


def plot(job: Job) -> None:
    from beatflow.detect.params import SegmentParams
    from beatflow.report.plots import plot as run

    run(job.record, dict(job.input.items()), Path(job.output.latent_html).parent,
        SegmentParams.from_config(job.par.segment))


def evaluate(job: Job) -> None:
    from beatflow.evaluate import write_evaluation

    write_evaluation(job.record, job.input.truth, job.input.scores, job.input.signal, job.output[0])


def cohort(job: Job) -> None:
    from beatflow.report.cohort import write_cohort

    records, stages = job.par.records, job.par.stages
    benchmarks = iter(job.input.benchmarks)  # expand(): record-major, then stage
    inputs = {record: {"scores": scores, "signal": signal, "benchmarks": {s: next(benchmarks) for s in stages}}
              for record, scores, signal in zip(records, job.input.scores, job.input.signals, strict=True)}
    evaluations = dict(zip(job.par.truth_records, job.input.evaluations, strict=True))
    write_cohort(records, inputs, job.output.summary, Path(job.output.png).with_suffix(""), evaluations,
                 job.output.evaluation)


def demo_record(job: Job) -> None:
    from beatflow.synth import SynthSpec, write_record

    spec = SynthSpec(duration_s=job.par.hours * 3600, fs=job.par.fs, seed=job.par.seed)
    write_record(spec, job.output.csv, job.output.truth)


RULES = {f.__name__: f for f in (ingest, segment, embed, train, score, plot, evaluate, cohort, demo_record)}

# The warm workers' groups (beatflow.worker): rules whose stages share libraries run in the same group's
# workers; every group's first worker starts when Snakemake does (onstart) and loads its group's libraries
# (and on the GPU warms its kernels up) while the other groups work, each in its own process.
GROUPS = {"ingest": ("demo_record", "ingest"), "detect": ("segment", "embed"),
          "learn": ("train", "score", "evaluate"),  # evaluate: right after score, and never in plot's way
          "report": ("plot", "cohort")}
GROUP_OF = {rule: group for group, rules in GROUPS.items() for rule in rules}
_LIBRARIES = {  # group: (modules, the GPU libraries its stages ask select_backend for)
    "ingest": (("beatflow.io.ingest",), ("cudf",)),
    "detect": (("beatflow.detect.segment", "beatflow.embed.rows"), ("kvikio", "numba.cuda")),
    "learn": (("torch", "beatflow.learn.train", "beatflow.score.scores", "beatflow.evaluate"), ("kvikio", "torch")),
    "report": (("beatflow.report.plots", "beatflow.report.cohort"), ()),
}


def preload(group: str, config: dict) -> str:
    """Import what ``group``'s stages use, choose the process's memory manager as those stages would
    (:func:`beatflow.backend.select_backend`) and, on the GPU, warm the group's kernels up
    (:func:`warm_up`); return the backend's name."""
    import importlib

    from beatflow.backend import select_backend
    from beatflow.errors import BackendError

    modules, gpu_libraries = _LIBRARIES[group]
    for name in modules:
        importlib.import_module(name)
    if group == "report":
        from beatflow.report.plots import load_holoviews

        load_holoviews()
        return "cpu"
    try:
        backend = select_backend(config.get("device", "auto"), needs=gpu_libraries)
    except BackendError:
        return "none"  # the job's own select_backend says why
    if backend.gpu:
        warm_up(group, config, backend)
    return backend.name


def warm_up(group: str, config: dict, backend) -> None:
    """Run the group's GPU code once on a small input, so that its first job finds the kernels compiled,
    loaded and their libraries' handles made (CuPy's and Numba's caches are on disk, but on the H200 a cold
    segment job of the 20 h record took 4.2 s against 0.42 s after this, and train's first epoch 0.73 s
    against 0.11 s: experiments §5.10). detect: segment and embed a 2-minute synthetic record; learn: one epoch of the VAE on random rows
    of the configured shape."""
    import tempfile
    from dataclasses import replace

    if group == "detect":
        from beatflow.backend import select_backend
        from beatflow.detect.params import SegmentParams
        from beatflow.detect.segment import segment as run_segment
        from beatflow.embed.rows import embed as run_embed
        from beatflow.io.ingest import ingest as run_ingest
        from beatflow.synth import SynthSpec, write_record

        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            write_record(SynthSpec(duration_s=120.0, seed=0), d / "warm.csv", d / "truth.csv")
            run_ingest("warm-up", d / "warm.csv", None, None, d / "signal.parquet", select_backend("cpu"))
            run_segment("warm-up", d / "signal.parquet", d / "beats.parquet",
                        SegmentParams.from_config(config["segment"]), backend)
            run_embed("warm-up", d / "signal.parquet", d / "beats.parquet", d / "embedding.npy",
                      config["embed"]["length_s"], backend, tuple(config["embed"]["band_hz"]))
    elif group == "learn":
        import torch

        from beatflow.backend import torch_device
        from beatflow.learn.train import TrainParams, fit

        p = replace(TrainParams.from_config(config["train"]), epochs=1)
        length = round(250.0 * config["embed"]["length_s"])  # the usual 250 Hz: the kernels, not the exact shape
        x = torch.randn(2 * p.batch_size, 2, length, device=torch_device(backend))
        fit(x, p, torch_device(backend), pivot=length // 3)
