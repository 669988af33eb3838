"""Rule embed: thin wrapper around beatflow.embed.rows."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.embed.rows import embed

    backend = select_backend(smk.config["device"], needs=("kvikio", "numba.cuda"))
    embed(smk.wildcards.record, smk.input.signal, smk.input.beats, smk.output[0], smk.params.embed["length_s"],
          backend, tuple(smk.params.embed["band_hz"]))


run_stage("embed", snakemake, main)  # noqa: F821 (injected by Snakemake)
