rule ingest:
    """A record's CSV / CSV.gz / parquet → signal.parquet (float32 leads, fs metadata); cuDF on the GPU."""
    input:
        record=record_path,
    output:
        "results/{record}/signal.parquet",
    params:
        fs=record_fs,
        leads=record_leads,
        ingest=config["ingest"],
    log:
        "logs/{record}/ingest.log",
    benchmark:
        "logs/{record}/ingest.benchmark.tsv"
    resources:
        gpu=1,
    conda:
        "../../environment.yml"
    script:
        "../../scripts/ingest.py"
