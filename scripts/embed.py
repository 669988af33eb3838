"""Rule embed: beatflow.rules.embed, run by beatflow.worker.client.run_rule (in the warm worker when there is one)."""
from beatflow.worker.client import run_rule

run_rule(snakemake)  # noqa: F821 (injected by Snakemake)
