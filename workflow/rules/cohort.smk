rule cohort:
    """One row per record (duration, beats, heart rate, anomalies by reason, backend, seconds per stage)
    → results/cohort/summary.parquet, and the cohort figure. Target: `snakemake cohort`."""
    input:
        scores=expand("results/{record}/scores.parquet", record=RECORDS.index),
        signals=expand("results/{record}/signal.parquet", record=RECORDS.index),
        benchmarks=expand("logs/{record}/{stage}.benchmark.tsv", record=RECORDS.index, stage=STAGES),
    output:
        summary="results/cohort/summary.parquet",
        html=report(
            "results/cohort/cohort.html",
            caption="../report/cohort.rst",
            category="cohort",
            labels={"figure": "cohort", "format": "interactive"},
        ),
        png=report(
            "results/cohort/cohort.png",
            caption="../report/cohort.rst",
            category="cohort",
            labels={"figure": "cohort", "format": "image"},
        ),
    params:
        records=list(RECORDS.index),
        stages=STAGES,
    log:
        "logs/cohort.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/cohort.py"
