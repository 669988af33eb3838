"""Bad input refused in one line naming the record (issue 38's table, and issue 37's mistakes caught when the
workflow is parsed): the records sheet, headers that do not fit their data, truth that does not fit its
record, unreadable files, and what a run leaves behind."""


import pytest
from conftest import copy_project, snakemake

from beatflow.io.sheet import MAX_NAME, sheet_problems

RULES = {"all", "cohort", "ingest", "segment"}


def problems(tmp_path, monkeypatch, **row):
    """sheet_problems of a one-row sheet in ``tmp_path`` (x.csv exists there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("ecg\n1\n2\n")
    row = {"record": "r", "path": "x.csv", **row}
    return sheet_problems(list(row), [row], RULES)


@pytest.mark.parametrize(
    "row, expected",
    [
        ({"record": ".."}, "record '..' (row 1): the name cannot be . or .."),
        ({"record": "."}, "record '.' (row 1): the name cannot be . or .."),
        ({"record": "a" * 300}, f"(row 1): the name is 300 characters long, more than {MAX_NAME}"),
        ({"record": "cohort"}, "record 'cohort' (row 1): the name is a target of the workflow"),
        ({"record": "all"}, "record 'all' (row 1): the name is a target of the workflow"),
        ({"path": "mitdb/2080"}, "record 'r' (row 1): path mitdb/2080: WFDB header mitdb/2080.hea not found"),
        ({"path": "nope.csv"}, "record 'r' (row 1): path nope.csv: file not found"),
        ({"truht": "t.csv"}, "unknown column(s) ['truht']; the known ones: record, path, fs, leads, start, truth"),
        ({"fs": "0"}, "record 'r' (row 1): fs must be a positive number of Hz, not '0'"),
        ({"fs": "nan"}, "fs must be a positive number of Hz, not 'nan'"),
        ({"leads": "MLII,,V1"}, "leads 'MLII,,V1': an empty lead name"),
        ({"leads": "MLII,MLII"}, "leads 'MLII,MLII': ['MLII'] named more than once"),
        ({"start": "29/11/2026 08:15"}, "start '29/11/2026 08:15' is not an ISO 8601 date and time"),
        ({"truth": "t.csv"}, "record 'r' (row 1): truth t.csv: file not found"),
    ],
)
def test_sheet_problem_is_one_line_naming_the_record(tmp_path, monkeypatch, row, expected):
    found = problems(tmp_path, monkeypatch, **row)
    assert len(found) == 1 and expected in found[0] and "\n" not in found[0], found


def test_a_good_row_and_a_start_pass(tmp_path, monkeypatch):
    assert problems(tmp_path, monkeypatch, fs="250", leads="ecg", start="2026-11-29T08:15:00") == []


def test_wfdb_record_needs_its_header_and_signal_files(tmp_path, monkeypatch):
    (tmp_path / "r1.hea").write_text("r1 2 360 2000\nr1.dat 212 200 11 0 0 0 0 MLII\nr1.dat 212 200 11 0 0 0 0 V1\n")
    found = problems(tmp_path, monkeypatch, path="r1.hea")
    assert found == ["record 'r' (row 1): path r1.hea: WFDB record incomplete, r1.dat not found"]
    (tmp_path / "r1.dat").write_bytes(b"\0" * 6000)
    assert problems(tmp_path, monkeypatch, path="r1") == []


def test_every_problem_of_a_sheet_in_one_refusal_before_any_job(tmp_path):
    run = copy_project(tmp_path)
    long_name = "a" * 300
    (run / "config" / "records.tsv").write_text(
        f"record\tpath\tfs\n..\tx.csv\t250\n{long_name}\tx.csv\t250\ncohort\tx.csv\t250\n"
    )
    (run / "x.csv").write_text("ecg\n1\n2\n")
    out = snakemake(run, "--keep-going", check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    for record in ("'..'", f"'{long_name[:40]}…'", "'cohort'"):
        assert text.count(f"records sheet config/records.tsv: record {record} (row") == 1, record
    assert not (run / "results").exists() and not (run / "signal.parquet").exists()
    assert "Traceback" not in text and "OSError" not in text


def test_device_gpu_without_a_gpu_is_refused_before_any_job_in_one_line(tmp_path):
    run = copy_project(tmp_path)
    out = snakemake(run, "--config", "device=gpu", check=False, env={"CUDA_VISIBLE_DEVICES": ""})
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "device: gpu was requested but no CUDA device is visible" in text
    assert not (run / "results").exists() and not (run / "resources").exists()


def test_device_auto_without_a_gpu_warns_once_per_run(tmp_path):
    run = copy_project(tmp_path)
    out = snakemake(run, "--until", "segment", env={"CUDA_VISIBLE_DEVICES": ""})
    text = out.stdout + out.stderr
    assert text.count("found no usable GPU") == 1, text
    assert "backend: cpu" in (run / "logs" / "demo" / "ingest.log").read_text()
