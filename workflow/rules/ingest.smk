rule ingest:
    """A record's CSV / CSV.gz / parquet, WFDB record or EDF/BDF file → signal.parquet (float32 leads; fs and the
    recording's start in the metadata); cuDF parses CSV on the GPU. Its work: `beatflow.io.ingest.ingest`
    (scripts/ingest.py)."""
    input:
        record_files,
    output:
        signal="results/{record}/signal.parquet",
    params:
        path=record_path,
        fs=record_fs,
        leads=record_leads,
        start=record_start,
        ingest=config["ingest"],
    log:
        "logs/{record}/ingest.log",
    benchmark:
        "logs/{record}/ingest.benchmark.tsv"
    priority: gpu_stage_priority("ingest")
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/ingest.py"
