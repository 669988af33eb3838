from beatflow.stage import run


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.learn.train import TrainParams, train

    backend = select_backend(smk.config["device"], needs=("kvikio", "torch"))
    p = TrainParams.from_config(smk.params.train)
    train(smk.wildcards.record, dict(smk.input.items()), dict(smk.output.items()), p, backend)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
