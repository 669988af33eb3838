from beatflow.stage import run


def main(smk):
    from beatflow.evaluate import write_evaluation

    inp = smk.input
    write_evaluation(smk.wildcards.record, inp.truth, inp.scores, inp.signal, smk.output[0])


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
