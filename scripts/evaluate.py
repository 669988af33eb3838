"""Rule evaluate: thin wrapper around beatflow.evaluate."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.evaluate import write_evaluation

    write_evaluation(smk.wildcards.record, smk.input.truth, smk.input.scores, smk.input.signal, smk.output[0])


run_stage("evaluate", snakemake, main)  # noqa: F821 (injected by Snakemake)
