"""Rule demo_record: the built-in synthetic demo record and its truth."""
from beatflow.stage import run_stage


def main(smk):
    from beatflow.synth import SynthSpec, write_record

    spec = SynthSpec(duration_s=smk.params.hours * 3600, fs=smk.params.fs, seed=smk.params.seed)
    write_record(spec, smk.output.csv, smk.output.truth)


run_stage("demo_record", snakemake, main)  # noqa: F821 (injected by Snakemake)
