rule holter_report:
    """The record's report page (holter.json as a Holter report's tables, the event strips' list and figure, with
    truth the figures against the reference) and the event strips: 10 s of every lead for each event a cardiologist
    checks (longest and fastest V run, longest pause, fastest and slowest minute, AF onsets, the most anomalous beats by
    reason and family). CPU only: it holds no GPU slot. The subcategories' numbers order the record's part of the report
    (Snakemake sorts them by name). Its work: `beatflow.report.pages.write_record_report`
    (scripts/holter_report.py)."""
    input:
        signal="results/{record}/signal.parquet",
        scores="results/{record}/scores.parquet",
        holter="results/{record}/holter.json",
        # with truth, the figures against the reference go on the page
        evaluation=lambda w: [f"results/{w.record}/evaluation.json"] if RECORDS.loc[w.record, "truth"] else [],
    output:
        page=report(
            "results/{record}/report/summary.html",
            caption="../report/summary.rst",
            category="{record}",
            subcategory="1 · Holter summary",
            labels={"record": "{record}", "figure": "summary", "format": "page"},
        ),
        strips_png=report(
            "results/{record}/plots/strips.png",
            caption="../report/strips.rst",
            category="{record}",
            subcategory="2 · Event strips",
            labels={"record": "{record}", "figure": "event strips", "format": "image"},
        ),
        strips_json="results/{record}/plots/strips.json",
    log:
        "logs/{record}/holter_report.log",
    benchmark:
        "logs/{record}/holter_report.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/holter_report.py"


rule cohort_report:
    """The cohort page: one row per record from its holter.json (and with truth its evaluation.json), and the totals.
    Target: `snakemake cohort_report` (beside `snakemake cohort`). Its work: `beatflow.report.pages.write_cohort_page`
    (scripts/cohort_report.py)."""
    input:
        holter=expand("results/{record}/holter.json", record=RECORDS.index),
        evaluations=expand("results/{record}/evaluation.json", record=TRUTH_RECORDS),
    output:
        page=report(
            "results/cohort/report.html",
            caption="../report/cohort_page.rst",
            category="cohort",
            labels={"figure": "records", "format": "page"},
        ),
    params:
        records=list(RECORDS.index),
        truth_records=TRUTH_RECORDS,
    log:
        "logs/cohort_report.log",
    benchmark:
        "logs/cohort_report.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/cohort_report.py"
