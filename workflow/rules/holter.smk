rule holter:
    """The record's Holter summary (signal quality and artefact, heart rate, ectopy and runs, tachycardia, pauses,
    atrial fibrillation, HRV) from each beat's time and class and the signal → holter.json, the beats as a WFDB
    annotation file → beats.atr, and the heart-rate trend figure. CPU only: it holds no GPU slot. Its work:
    `beatflow.holter.summary.write_holter`, `beatflow.holter.summary.read_beats`,
    `beatflow.holter.figure.write_heart_rate_figure` (scripts/holter.py)."""
    input:
        signal="results/{record}/signal.parquet",
        scores="results/{record}/scores.parquet",
    output:
        summary="results/{record}/holter.json",
        annotations="results/{record}/beats.atr",  # WFDB annotations: wfdb.rdann("results/{record}/beats", "atr")
        heart_rate_html="results/{record}/plots/heart_rate.html",  # beside the report: too large for its frames
        heart_rate_png=report(
            "results/{record}/plots/heart_rate.png",
            caption="../report/heart_rate.rst",
            category="{record}",
            subcategory="3 · Heart rate",
            labels={"record": "{record}", "figure": "heart rate", "format": "image"},
        ),
    log:
        "logs/{record}/holter.log",
    benchmark:
        "logs/{record}/holter.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/holter.py"
