"""Rule plot: thin wrapper around beatflow.report.plots."""
from pathlib import Path

from beatflow.stage import run_stage


def main(smk):
    from beatflow.detect.params import SegmentParams
    from beatflow.report.plots import plot

    plot(smk.wildcards.record, dict(smk.input.items()), Path(smk.output.latent_html).parent,
         SegmentParams.from_config(smk.params.segment))


run_stage("plot", snakemake, main)  # noqa: F821 (injected by Snakemake)
