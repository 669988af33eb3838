"""Rule cohort_report: beatflow.rules.cohort_report, run by beatflow.stage.run_rule (in a warm worker of the run where there is one)."""
from beatflow.stage import run_rule

run_rule(snakemake)  # noqa: F821 (injected by Snakemake)
