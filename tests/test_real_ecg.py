"""The real-ECG example end to end: MIT-BIH Arrhythmia Database record 208 read as WFDB (signal and reference
annotations), as config/examples/mitdb.tsv lays a sheet out, through `snakemake all cohort` in a temporary
copy of the project. Skips where the records are absent (../shared/mitdb beside the checkout).

Record 208 is chosen for its ventricular beats: 2,955 reference beats, of them 992 V and 373 F (the
database's own counts). The floors sit below what the CPU workflow reaches on it (docs/experiments/benchmarks.md §10).
"""

import json

import pytest
from conftest import ROOT, copy_project, snakemake
from contracts import check_record

MITDB = ROOT.parent / "shared" / "mitdb"
RECORDS = ("208",)

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.skipif(
        not all((MITDB / f"{r}.hea").exists() and (MITDB / f"{r}.atr").exists() for r in RECORDS),
        reason=f"MIT-BIH records {', '.join(RECORDS)} not found in {MITDB} (the team's ../shared/mitdb beside "
        "this clone; or put PhysioNet's mitdb there: python -c \"import wfdb; wfdb.dl_database('mitdb', "
        "'../shared/mitdb', records=['208'])\")",
    ),
]


@pytest.fixture(scope="module")
def mitdb_run(tmp_path_factory):
    run = copy_project(tmp_path_factory.mktemp("mitdb"))
    rows = ["record\tpath\tfs\tleads\ttruth"]  # fs and leads from the WFDB header, as in config/examples/mitdb.tsv
    rows += [f"{r}\t{MITDB / r}\t\t\t{MITDB / r}.atr" for r in RECORDS]
    (run / "config" / "records.tsv").write_text("\n".join(rows) + "\n")
    snakemake(run, "all", "cohort")
    return run


def test_record_208_outputs_and_evaluation(mitdb_run):
    """Every output contract of a WFDB record (leads and fs from its header), and its evaluation against the
    reference annotations. Floors below both measurements (module docstring), with a margin for training on
    another machine and for the detection and scoring work under way (the floors guard against a loss)."""
    results = mitdb_run / "results" / "208"
    check_record(
        results,
        leads=["MLII", "V1"],
        fs=360.0,
        duration_s=650_000 / 360,
        epochs=20,
        min_detection=0.98,
        min_auroc=0.88,
        labels={"V": 0.92, "F": 0.75},
    )
    e = json.loads((results / "evaluation.json").read_text())
    assert e["n_true"] == 2955  # every reference beat annotation of 208 is read
    assert e["per_label"]["V"]["n"] == 992 and e["per_label"]["F"]["n"] == 373
    assert e["true_positives"] + e["false_negatives"] == e["n_true"]
    assert e["normal_flagged"] <= 0.06
    assert e["per_label"]["V"]["flagged"] >= 0.4 and e["per_label"]["V"]["flag_ppv"] >= 0.85
    assert e["excluded"] == {"reference_beats": 0, "detected_beats": 0, "intervals_s": []}  # 208: no noise marks


def test_cohort_evaluation_has_the_gross_figures(mitdb_run):
    cohort = json.loads((mitdb_run / "results" / "cohort" / "evaluation.json").read_text())
    record = json.loads((mitdb_run / "results" / "208" / "evaluation.json").read_text())
    assert cohort["records"] == len(RECORDS)
    d = cohort["detection"]
    assert d["true_positives"] + d["false_negatives"] == 2955
    assert d["gross_sensitivity"] == pytest.approx(record["sensitivity"]) and d["gross_sensitivity"] >= 0.98
    assert d["gross_ppv"] == pytest.approx(record["ppv"]) and d["gross_ppv"] >= 0.98
    assert cohort["V"]["beats"] == 992 and cohort["V"]["auroc_median"] == pytest.approx(
        record["per_label"]["V"]["auroc"]
    )
    assert cohort["V"]["gross_flag_sensitivity"] == pytest.approx(record["per_label"]["V"]["flagged"])
