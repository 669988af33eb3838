from beatflow.stage import run


def main(smk):
    import json
    from pathlib import Path

    from beatflow.holter.figure import write_heart_rate_figure
    from beatflow.holter.summary import read_beats

    record, inp, out = smk.wildcards.record, smk.input, smk.output
    summary = json.loads(Path(inp.summary).read_text())
    write_heart_rate_figure(summary, Path(out.heart_rate_png).with_suffix(""), read_beats(record, inp.scores))


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
