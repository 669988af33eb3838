from beatflow.stage import run


def main(smk):
    from beatflow.holter.summary import write_holter

    record, inp, out = smk.wildcards.record, smk.input, smk.output
    write_holter(record, inp.scores, inp.signal, out.summary, annotations_path=out.annotations)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
