from beatflow.stage import run


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.embed.rows import EmbedParams, embed

    backend = select_backend(smk.config["device"], needs=("cudf", "kvikio", "numba.cuda"))
    p = EmbedParams.from_config(smk.params.embed)
    embed(smk.wildcards.record, dict(smk.input.items()), dict(smk.output.items()), p, backend)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
