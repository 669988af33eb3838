from beatflow.stage import run


def main(smk):
    from pathlib import Path

    from beatflow.holter.figure import write_heart_rate_figure
    from beatflow.holter.summary import read_beats, write_holter

    record, inp, out = smk.wildcards.record, smk.input, smk.output
    summary = write_holter(record, inp.scores, inp.signal, out.summary, annotations_path=out.annotations)
    write_heart_rate_figure(summary, Path(out.heart_rate_png).with_suffix(""), read_beats(record, inp.scores))


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
