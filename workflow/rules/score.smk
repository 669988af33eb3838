rule score:
    """Per-beat anomaly score (shape and timing) → scores.parquet, latent.parquet. Its work:
    `beatflow.score.scores.score` (scripts/score.py)."""
    input:
        signal="results/{record}/signal.parquet",
        beats="results/{record}/beats.parquet",
        embedding="results/{record}/embedding.npy",
        model="results/{record}/model.pt",
    output:
        scores="results/{record}/scores.parquet",
        latent="results/{record}/latent.parquet",
    params:
        score=config["score"],  # the split comes from model.pt, the pruning bounds from beats.parquet
    log:
        "logs/{record}/score.log",
    benchmark:
        "logs/{record}/score.benchmark.tsv"
    threads: TORCH_THREADS
    priority: gpu_stage_priority("score")
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/score.py"
