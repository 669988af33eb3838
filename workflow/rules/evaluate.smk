rule evaluate:
    """Detected beats against the record's truth (150 ms): sensitivity, PPV, F1, AUROC → evaluation.json. Its work:
    `beatflow.evaluate.write_evaluation` (scripts/evaluate.py)."""
    input:
        signal="results/{record}/signal.parquet",
        scores="results/{record}/scores.parquet",
        truth=record_truth,
    output:
        "results/{record}/evaluation.json",
    log:
        "logs/{record}/evaluate.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/evaluate.py"
