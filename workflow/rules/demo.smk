rule demo_record:
    """The built-in demo: 30 min of synthetic 2-lead ECG at 250 Hz with ectopic beats and truth. Its work:
    `beatflow.synth.write_record` (scripts/demo_record.py)."""
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

