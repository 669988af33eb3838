rule train:
    """Convolutional VAE on train.train_fraction of the embedded beats → model.pt. Its work:
    `beatflow.learn.train.train` (scripts/train.py)."""
    input:
        signal="results/{record}/signal.parquet",  # its fs only
        embedding="results/{record}/embedding.npy",
        beats="results/{record}/beats.parquet",
    output:
        model="results/{record}/model.pt",
    params:
        train=config["train"],
    log:
        "logs/{record}/train.log",
    benchmark:
        "logs/{record}/train.benchmark.tsv"
    threads: TORCH_THREADS
    priority: gpu_stage_priority("train")
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/train.py"
