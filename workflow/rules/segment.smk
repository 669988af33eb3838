rule segment:
    """First lead → Ricker response (FFT) → NMS (Numba) → R peaks → beats.parquet. Its work:
    `beatflow.detect.segment.segment` (scripts/segment.py)."""
    input:
        signal="results/{record}/signal.parquet",
    output:
        beats="results/{record}/beats.parquet",
    params:
        segment=config["segment"],
    log:
        "logs/{record}/segment.log",
    benchmark:
        "logs/{record}/segment.benchmark.tsv"
    priority: gpu_stage_priority("segment")
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/segment.py"
