"""Rule train: thin wrapper around beatflow.learn.train."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.io.tables import signal_info
    from beatflow.learn.train import TrainParams, train

    backend = select_backend(smk.config["device"], needs=("kvikio", "torch"))
    train(smk.wildcards.record, smk.input.embedding, smk.input.beats, smk.output[0],
          TrainParams.from_config(smk.params.train), backend, fs=signal_info(smk.input.signal)[0])


run_stage("train", snakemake, main)  # noqa: F821 (injected by Snakemake)
