from beatflow.stage import run


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.io.ingest import IngestParams, ingest

    par, backend = smk.params, select_backend(smk.config["device"], needs=("cudf",))
    p, outputs = IngestParams.from_config(par.ingest), dict(smk.output.items())
    ingest(smk.wildcards.record, {"path": par.path}, outputs, p, backend, fs=par.fs, leads=par.leads, start=par.start)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
