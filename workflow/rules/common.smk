# Config and records-sheet validation, wildcard constraints, input functions. Imports nothing GPU:
# Snakemake parses this on login nodes and in every job.
import os
from pathlib import Path

import pandas as pd
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

validate(config, "../schemas/config.schema.yaml", set_default=True)  # the schema holds every default

if config["segment"]["min_rr_s"] >= config["segment"]["max_rr_s"]:
    raise WorkflowError(
        f"config: segment.min_rr_s ({config['segment']['min_rr_s']}) must be below segment.max_rr_s "
        f"({config['segment']['max_rr_s']})"
    )

from beatflow.io.sheet import RECORD_NAME, rule_names, sheet_problems
from beatflow.io.sheet import columns as sheet_columns


# How a local run executes: its GPU jobs share each device and its device is decided once, when this is parsed
# (beatflow.gpus); in onstart, only when there are jobs to run, its warm workers start loading their libraries
# while the first job is scheduled (beatflow.worker). Imports nothing GPU.
from beatflow.gpus import GPU_STAGES, configure_run, run_cores, run_devices
from beatflow.worker.server import start_run

configure_run(workflow, config["device"])


# Snakemake's job priorities: the GPU stages' jobs go before the report stages' when both are ready (they
# feed the device and every later stage of their record, while report jobs only end a record), and a later
# GPU stage before an earlier one, so that records go through the device one after another and their report
# jobs start while it works on the others.
def gpu_stage_priority(rule):
    return 1 + GPU_STAGES.index(rule)


onstart:
    start_run(workflow, config, len(RECORDS))


wildcard_constraints:
    record=RECORD_NAME,


# The built-in demo (an empty records sheet): a synthetic record with truth, made by rule demo_record.
DEMO = {
    "record": "demo",
    "path": "resources/demo/demo.csv",
    "fs": 250.0,
    "leads": "MLII,V1",
    "truth": "resources/demo/truth.csv",
}


def load_records(sheet_path):
    """The records sheet as a DataFrame indexed by record; the demo record if the sheet has no rows. Every
    problem of a sheet with rows (beatflow.io.sheet) is refused at once, one line each, before any job."""
    if not Path(sheet_path).exists():
        raise WorkflowError(f"records sheet {sheet_path} not found (config key 'records')")
    try:
        sheet = pd.read_csv(sheet_path, sep="\t", comment="#", dtype=str, keep_default_na=False).map(str.strip)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise WorkflowError(f"records sheet {sheet_path}: not a tab-separated table with a header ({exc})") from None
    rules = [Path(workflow.main_snakefile), *Path(workflow.basedir, "workflow", "rules").glob("*.smk")]
    reserved = rule_names(rules)
    problems = sheet_problems(list(sheet.columns), sheet.to_dict("records"), reserved)
    if problems:
        raise WorkflowError("\n".join(f"records sheet {sheet_path}: {problem}" for problem in problems))
    if sheet.empty:
        sheet = pd.DataFrame([DEMO]).astype(str)
    for column in sheet_columns():
        if column not in sheet.columns:
            sheet[column] = ""
    sheet["fs"] = pd.to_numeric(sheet.fs.replace("", None))
    validate(sheet, "../schemas/records.schema.yaml")
    return sheet.set_index("record", drop=False)


RECORDS = load_records(config["records"])
TRUTH_RECORDS = [record for record in RECORDS.index if RECORDS.loc[record, "truth"]]

# CPU threads of the torch rules (train, score). Snakemake caps them at --cores on local runs and exports
# OMP_NUM_THREADS=threads to the job; without a threads directive torch would run on one core. On a local GPU
# run the device does the training, and score's CPU side (tables, quantiles) gains little beyond 4 threads
# (20 h record, H200: score 1.1-1.5 s with 4, 2.3-3.0 s with 1); with many records each gets its share of the
# cores, down to one, since a job asking for more than the free cores waits while the report jobs of other
# records take each core as it frees (22 records, 16 cores, 4 threads: train waited a median 27.8 s).
MAX_GPU_RUN_TORCH_THREADS = 4
TORCH_THREADS = (
    max(1, min(MAX_GPU_RUN_TORCH_THREADS, run_cores(workflow) // len(RECORDS))) if run_devices() else 16
)


def record_path(wildcards):
    return RECORDS.loc[wildcards.record, "path"]


def record_files(wildcards):
    """The files a record is read from, so that Snakemake reruns ingest when one changes: the file itself, or
    for a WFDB record (`dir/208` or `dir/208.hea`) its header and the signal files beside it whose names start
    with the record's (`208.dat`; a multi-segment record's `208_0001.dat`, …)."""
    path = Path(record_path(wildcards))
    if path.suffix.lower() == ".hea" or (not path.suffix and path.with_name(f"{path.name}.hea").exists()):
        header = path if path.suffix else path.with_name(f"{path.name}.hea")
        stem = header.with_suffix("")
        return [str(header), *sorted(str(f) for f in header.parent.glob(f"{stem.name}*.dat"))]
    return [str(path)]


def record_fs(wildcards):
    fs = RECORDS.loc[wildcards.record, "fs"]
    return None if pd.isna(fs) else float(fs)


def record_leads(wildcards):
    leads = RECORDS.loc[wildcards.record, "leads"]
    return [lead.strip() for lead in leads.split(",") if lead.strip()] or None


def record_start(wildcards):
    return RECORDS.loc[wildcards.record, "start"] or None


def record_truth(wildcards):
    return RECORDS.loc[wildcards.record, "truth"]


PLOTS = ("latent", "trace", "lengths", "gallery")
STAGES = (*GPU_STAGES, "plot")  # rules with a benchmark: file that the cohort table reads


def record_outputs(record):
    """Every final file of one record."""
    base = f"results/{record}"
    outputs = [f"{base}/scores.parquet", f"{base}/latent.parquet", f"{base}/holter.json"]
    outputs += [f"{base}/plots/{name}.{ext}" for name in (*PLOTS, "heart_rate") for ext in ("html", "png")]
    outputs += [f"{base}/report/summary.html", f"{base}/plots/strips.png", f"{base}/plots/strips.json"]
    if RECORDS.loc[record, "truth"]:
        outputs.append(f"{base}/evaluation.json")
    return outputs


def all_outputs():
    return [path for record in RECORDS.index for path in record_outputs(record)]
