from beatflow.stage import run


def main(smk):
    from pathlib import Path

    from beatflow.report.cohort import write_cohort

    inp, out, par = smk.input, smk.output, smk.params
    benchmarks = iter(inp.benchmarks)  # expand(): record-major, then stage
    inputs = {
        record: {"scores": scores, "signal": signal, "benchmarks": {s: next(benchmarks) for s in par.stages}}
        for record, scores, signal in zip(par.records, inp.scores, inp.signals, strict=True)
    }
    evaluations = dict(zip(par.truth_records, inp.evaluations, strict=True))
    write_cohort(par.records, inputs, out.summary, Path(out.png).with_suffix(""), evaluations, out.evaluation)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
