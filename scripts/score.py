"""Rule score: thin wrapper around beatflow.score.scores."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.learn.train import TrainParams
    from beatflow.score.scores import ScoreParams, score

    backend = select_backend(smk.config["device"], needs=("kvikio", "torch"))
    paths = {**dict(smk.input.items()), **dict(smk.output.items())}
    score(smk.wildcards.record, paths, SegmentParams.from_config(smk.params.segment),
          TrainParams.from_config(smk.params.train), ScoreParams.from_config(smk.params.score), backend)


run_stage("score", snakemake, main)  # noqa: F821 (injected by Snakemake)
