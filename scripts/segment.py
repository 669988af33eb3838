from beatflow.stage import run


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment

    backend = select_backend(smk.config["device"], needs=("cudf", "numba.cuda"))
    p = SegmentParams.from_config(smk.params.segment)
    segment(smk.wildcards.record, dict(smk.input.items()), dict(smk.output.items()), p, backend)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
