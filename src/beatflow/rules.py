"""What each rule does with its job: choose the backend, then call its stage. One function per rule, named
after it; a rule's script or a warm worker runs them through :func:`beatflow.stage.execute`."""

from __future__ import annotations

from pathlib import Path

from beatflow.job import Files, Job


def files(named: Files) -> dict:
    """A job's named input or output files, by name (a rule with one output: ``job.output[0]``, which a job
    built by hand without names has too)."""
    return dict(named.items())


def ingest(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.io.ingest import IngestParams
    from beatflow.io.ingest import ingest as run

    backend = select_backend(job.device, needs=("cudf",))
    p = IngestParams.from_config(job.par.ingest)
    par, start = job.par, job.params.get("start")  # start: optional, as in the records sheet
    run(job.record, {"path": par.path}, {"signal": job.output[0]}, p, backend, fs=par.fs, leads=par.leads, start=start)


def segment(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment as run

    backend = select_backend(job.device, needs=("numba.cuda",))
    run(job.record, files(job.input), {"beats": job.output[0]}, SegmentParams.from_config(job.par.segment), backend)


def embed(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.embed.rows import EmbedParams
    from beatflow.embed.rows import embed as run

    backend = select_backend(job.device, needs=("kvikio", "numba.cuda"))
    run(job.record, files(job.input), {"embedding": job.output[0]}, EmbedParams.from_config(job.par.embed), backend)


def train(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.learn.train import TrainParams
    from beatflow.learn.train import train as run

    backend = select_backend(job.device, needs=("kvikio", "torch"))
    run(job.record, files(job.input), {"model": job.output[0]}, TrainParams.from_config(job.par.train), backend)


def score(job: Job) -> None:
    from beatflow.backend import select_backend
    from beatflow.score.scores import ScoreParams
    from beatflow.score.scores import score as run

    backend = select_backend(job.device, needs=("kvikio", "torch"))
    run(job.record, files(job.input), files(job.output), ScoreParams.from_config(job.par.score), backend)


def plot(job: Job) -> None:
    from beatflow.report.plots import plot as run

    run(job.record, files(job.input), Path(job.output.latent_html).parent)


def holter(job: Job) -> None:
    from beatflow.holter import write_holter
    from beatflow.holter.figure import write_heart_rate_figure
    from beatflow.holter.summary import read_beats

    summary = write_holter(
        job.record, job.input.scores, job.input.signal, job.output.summary, annotations_path=job.output.annotations
    )
    beats = read_beats(job.record, job.input.scores)
    write_heart_rate_figure(summary, Path(job.output.heart_rate_png).with_suffix(""), beats)


def holter_report(job: Job) -> None:
    from beatflow.report.pages import write_record_report

    evaluation = job.input.evaluation  # a list: one file with truth, none without
    write_record_report(
        job.record,
        job.input.holter,
        job.input.scores,
        job.input.signal,
        job.output.page,
        job.output.strips_png,
        job.output.strips_json,
        evaluation[0] if evaluation else None,
    )


def evaluate(job: Job) -> None:
    from beatflow.evaluate import write_evaluation

    write_evaluation(job.record, job.input.truth, job.input.scores, job.input.signal, job.output[0])


def cohort(job: Job) -> None:
    from beatflow.report.cohort import write_cohort

    records, stages = job.par.records, job.par.stages
    benchmarks = iter(job.input.benchmarks)  # expand(): record-major, then stage
    inputs = {
        record: {"scores": scores, "signal": signal, "benchmarks": {s: next(benchmarks) for s in stages}}
        for record, scores, signal in zip(records, job.input.scores, job.input.signals, strict=True)
    }
    evaluations = dict(zip(job.par.truth_records, job.input.evaluations, strict=True))
    write_cohort(
        records, inputs, job.output.summary, Path(job.output.png).with_suffix(""), evaluations, job.output.evaluation
    )


def cohort_report(job: Job) -> None:
    from beatflow.report.pages import write_cohort_page

    evaluations = dict(zip(job.par.truth_records, job.input.evaluations, strict=True))
    write_cohort_page(job.output.page, job.par.records, job.input.holter, evaluations)


def demo_record(job: Job) -> None:
    from beatflow.synth import SynthSpec, write_record

    spec = SynthSpec(duration_s=job.par.hours * 3600, fs=job.par.fs, seed=job.par.seed)
    write_record(spec, job.output.csv, job.output.truth)


RULES = {
    f.__name__: f
    for f in (
        ingest,
        segment,
        embed,
        train,
        score,
        plot,
        holter,
        holter_report,
        evaluate,
        cohort,
        cohort_report,
        demo_record,
    )
}
