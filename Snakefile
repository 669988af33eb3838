# beatflow: anomalous heartbeats in long ECG recordings, on GPU or CPU. See README.md and docs/design.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/demo.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/segment.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/plot.smk"
include: "workflow/rules/holter.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/cohort.smk"


rule all:
    input:
        all_outputs(),
    default_target: True
