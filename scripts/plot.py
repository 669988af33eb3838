from beatflow.stage import run


def main(smk):
    from pathlib import Path

    from beatflow.report.plots import plot

    plot(smk.wildcards.record, dict(smk.input.items()), Path(smk.output.latent_html).parent)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
