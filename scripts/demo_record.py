from beatflow.stage import run


def main(smk):
    from beatflow.synth import SynthSpec, write_record

    par = smk.params
    write_record(SynthSpec(duration_s=par.hours * 3600, fs=par.fs, seed=par.seed), smk.output.csv, smk.output.truth)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
