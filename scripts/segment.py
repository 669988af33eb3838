"""Rule segment: thin wrapper around beatflow.detect.segment."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment

    backend = select_backend(smk.config["device"], needs=("numba.cuda",))
    segment(smk.wildcards.record, smk.input.signal, smk.output[0], SegmentParams.from_config(smk.params.segment),
            backend)


run_stage("segment", snakemake, main)  # noqa: F821 (injected by Snakemake)
