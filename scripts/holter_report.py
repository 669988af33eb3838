"""Rule holter_report: the record's page and event strips, by :func:`beatflow.report.pages.write_record_report`."""

from beatflow.stage import run


def main(smk):
    from beatflow.report.pages import write_record_report

    inp, out = smk.input, smk.output
    evaluation = inp.evaluation[0] if inp.evaluation else None  # with truth only
    record = smk.wildcards.record
    write_record_report(
        record, inp.holter, inp.scores, inp.signal, out.page, out.strips_png, out.strips_json, evaluation
    )


run(snakemake, main)  # noqa: F821 (injected by Snakemake)
