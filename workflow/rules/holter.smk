rule holter:
    """The record's Holter summary (signal quality and artefact, heart rate, ectopy and runs, tachycardia, pauses,
    atrial fibrillation, HRV) from each beat's time and class and the signal → holter.json, and the beats as a WFDB
    annotation file → beats.atr. CPU only: it holds no GPU slot. Its work: `beatflow.holter.summary.write_holter`
    (scripts/holter.py)."""
    input:
        signal="results/{record}/signal.parquet",
        scores="results/{record}/scores.parquet",
    output:
        summary="results/{record}/holter.json",
        annotations="results/{record}/beats.atr",  # WFDB annotations: wfdb.rdann("results/{record}/beats", "atr")
    log:
        "logs/{record}/holter.log",
    benchmark:
        "logs/{record}/holter.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/holter.py"


rule heart_rate:
    """The record's heart-rate trend from holter.json (the minutes' rates, runs, tachycardia, AF and artefact) and
    each beat's time and class (the sinus band) → plots/heart_rate.{html,png}: a rule of its own, so that it draws
    while holter_report makes the page. CPU only: it holds no GPU slot. Its work:
    `beatflow.holter.figure.write_heart_rate_figure`, `beatflow.holter.summary.read_beats` (scripts/heart_rate.py)."""
    input:
        summary="results/{record}/holter.json",
        scores="results/{record}/scores.parquet",
    output:
        heart_rate_html="results/{record}/plots/heart_rate.html",  # beside the report: too large for its frames
        heart_rate_png=report(
            "results/{record}/plots/heart_rate.png",
            caption="../report/heart_rate.rst",
            category="{record}",
            subcategory="3 · Heart rate",
            labels={"record": "{record}", "figure": "heart rate", "format": "image"},
        ),
    log:
        "logs/{record}/heart_rate.log",
    benchmark:
        "logs/{record}/heart_rate.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/heart_rate.py"
