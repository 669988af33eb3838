rule embed:
    """Kept beats → fixed-length zero-padded rows, all leads as channels → embedding.npy (kvikio on GPU). Its work:
    `beatflow.embed.rows.embed` (scripts/embed.py)."""
    input:
        signal="results/{record}/signal.parquet",
        beats="results/{record}/beats.parquet",
    output:
        embedding="results/{record}/embedding.npy",
    params:
        embed=config["embed"],
    log:
        "logs/{record}/embed.log",
    benchmark:
        "logs/{record}/embed.benchmark.tsv"
    priority: gpu_stage_priority("embed")
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/embed.py"
