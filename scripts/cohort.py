"""Rule cohort: thin wrapper around beatflow.report.cohort."""
from pathlib import Path

from beatflow.stage import run_stage


def main(smk):
    from beatflow.report.cohort import write_cohort

    records, stages = smk.params.records, smk.params.stages
    benchmarks = iter(smk.input.benchmarks)  # expand(): record-major, then stage
    inputs = {record: {"scores": scores, "signal": signal, "benchmarks": {s: next(benchmarks) for s in stages}}
              for record, scores, signal in zip(records, smk.input.scores, smk.input.signals, strict=True)}
    evaluations = dict(zip(smk.params.truth_records, smk.input.evaluations, strict=True))
    write_cohort(records, inputs, smk.output.summary, Path(smk.output.png).with_suffix(""), evaluations,
                 smk.output.evaluation)


run_stage("cohort", snakemake, main)  # noqa: F821 (injected by Snakemake)
