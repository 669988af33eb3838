"""Rule train: beatflow.rules.train, run by beatflow.stage.run_rule (in the warm worker when there is one)."""
from beatflow.stage import run_rule

run_rule(snakemake)  # noqa: F821 (injected by Snakemake)
