"""Rule ingest: thin wrapper around beatflow.io.ingest."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.io.ingest import IngestParams, ingest

    backend = select_backend(smk.config["device"], needs=("cudf",))
    ingest(smk.wildcards.record, smk.params.path, smk.params.fs, smk.params.leads, smk.output[0], backend,
           IngestParams.from_config(smk.params.ingest))


run_stage("ingest", snakemake, main)  # noqa: F821 (injected by Snakemake)
