"""Rule ingest: beatflow.rules.ingest (through beatflow.stage.run_rule, in a warm worker where the run has one)."""

from beatflow.stage import run_rule

run_rule(snakemake)  # noqa: F821 (injected by Snakemake)
