from beatflow.stage import run


def main(smk):
    from beatflow.report.pages import write_cohort_page

    par = smk.params
    evaluations = dict(zip(par.truth_records, smk.input.evaluations, strict=True))
    write_cohort_page(smk.output.page, par.records, smk.input.holter, evaluations)


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
