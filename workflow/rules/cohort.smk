rule cohort:
    """One row per record (duration, beats, heart rate, anomalies by reason, backend, seconds per stage, and with
    truth its evaluation) → results/cohort/summary.parquet; the gross and record-average evaluation (EC57, as
    sumstats) → results/cohort/evaluation.json; and the cohort figure. Target: `snakemake cohort`. Its work:
    `beatflow.report.cohort.write_cohort` (scripts/cohort.py)."""
    input:
        scores=expand("results/{record}/scores.parquet", record=RECORDS.index),
        signals=expand("results/{record}/signal.parquet", record=RECORDS.index),
        benchmarks=expand("logs/{record}/{stage}.benchmark.tsv", record=RECORDS.index, stage=STAGES),
        evaluations=expand("results/{record}/evaluation.json", record=TRUTH_RECORDS),
    output:
        summary="results/cohort/summary.parquet",
        evaluation="results/cohort/evaluation.json",
        html="results/cohort/cohort.html",  # beside the report: too large for its frames
        png=report(
            "results/cohort/cohort.png",
            caption="../report/cohort.rst",
            category="cohort",
            labels={"figure": "cohort", "format": "image"},
        ),
    params:
        records=list(RECORDS.index),
        truth_records=TRUTH_RECORDS,
        stages=STAGES,
    log:
        "logs/cohort.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/cohort.py"
