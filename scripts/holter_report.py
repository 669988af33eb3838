from beatflow.stage import run


def main(smk):
    from beatflow.report.pages import write_record_report

    inp, out, evaluation = smk.input, smk.output, smk.input.evaluation  # evaluation: with truth only
    pages = out.page, out.strips_png, out.strips_json
    write_record_report(
        smk.wildcards.record, inp.holter, inp.scores, inp.signal, *pages, evaluation[0] if evaluation else None
    )


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
