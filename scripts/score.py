from beatflow.stage import run


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.score.scores import ScoreParams, score

    backend = select_backend(smk.config["device"], needs=("cudf", "kvikio", "torch"))
    p = ScoreParams.from_config(smk.params.score)
    score(smk.wildcards.record, dict(smk.input.items()), dict(smk.output.items()), p, backend)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
