import gzip

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beatflow.errors import BeatflowError
from beatflow.io.ingest import IngestParams, ingest
from beatflow.io.tables import signal_info, signal_start


def write_csv(path, text):
    path.write_text(text)
    return path


def run(cpu, src, out, fs=250.0, leads=None):
    ingest("rec1", {"path": src}, {"signal": out}, IngestParams.defaults(), cpu, fs=fs, leads=leads)
    return pq.read_table(out)


def test_csv_to_float32_parquet_with_fs(tmp_path, cpu):
    src = write_csv(tmp_path / "a.csv", "time_s,ii,v1\n0,0.5,1\n0.004,0.25,2\n0.008,-1.5,3\n")
    table = run(cpu, src, tmp_path / "s.parquet", leads=["ii", "v1"])
    assert table.column_names == ["ii", "v1"] and table.schema.field("ii").type == pa.float32()
    assert table.column("ii").to_pylist() == [0.5, 0.25, -1.5]
    assert signal_info(tmp_path / "s.parquet") == (250.0, ["ii", "v1"])
    assert signal_start(tmp_path / "s.parquet") is None  # a CSV carries no start


def test_sheet_start_is_kept_in_signal_metadata(tmp_path, cpu):
    src = write_csv(tmp_path / "a.csv", "ecg\n1\n2\n3\n")
    out = tmp_path / "s.parquet"
    ingest(
        "r", {"path": src}, {"signal": out}, IngestParams.defaults(), cpu, fs=250.0, start="2026-11-29T08:15:00+01:00"
    )
    assert signal_start(out).isoformat() == "2026-11-29T08:15:00+01:00"


def test_default_lead_is_first_column_that_is_not_time(tmp_path, cpu):
    src = write_csv(tmp_path / "a.csv", "time_s,x,y\n0,1,9\n0.5,2,9\n1.0,3,9\n")
    table = run(cpu, src, tmp_path / "s.parquet", fs=None)
    assert table.column_names == ["x"]
    assert signal_info(tmp_path / "s.parquet")[0] == pytest.approx(2.0)  # from time_s


def test_gzip_and_parquet_inputs(tmp_path, cpu):
    with gzip.open(tmp_path / "a.csv.gz", "wt") as f:
        f.write("ecg\n1\n2\n3\n")
    assert run(cpu, tmp_path / "a.csv.gz", tmp_path / "g.parquet").column("ecg").to_pylist() == [1, 2, 3]
    pd.DataFrame({"time_s": [0.0, 0.01, 0.02], "lead": [4, 5, 6]}).to_parquet(tmp_path / "p.parquet")
    table = run(cpu, tmp_path / "p.parquet", tmp_path / "o.parquet", fs=None)
    assert table.column("lead").to_pylist() == [4, 5, 6] and signal_info(tmp_path / "o.parquet")[0] == pytest.approx(
        100
    )


@pytest.mark.parametrize(
    "text,fs,leads,problem",
    [
        ("", 250.0, None, "empty"),
        ("ecg\n", 250.0, None, "only 0 data row"),
        ("ecg\n1\nabc\n3\n", 250.0, None, "cannot parse"),
        ("ecg,v\n1,2\n,3\n4,5\n", 500.0, None, "gap of 1 missing, NaN or infinite samples"),
        ("ecg\n1\nnan\nnan\n3\n", 1000.0, None, "gap of 2 missing, NaN or infinite samples (0.00 s) at 00:00:00"),
        ("ecg\ninf\n", 250.0, None, "only 1 data row"),
        ("ecg\nnan\nnan\n", 250.0, None, "no finite value"),
        ("ecg\n" + "5\n" * 50 + "1\n2\n", 250.0, None, "is clipped: 96.2 %"),
        ("time_s,ecg\n0,1\n,2\n0.02,3\n", None, None, "time_s does not increase (or has missing values)"),
        ("ecg\n1\n2\n3\n", 250.0, ["v5"], "lead column(s) ['v5'] not in the file"),
        ("time_s\n0\n1\n", 250.0, None, "no lead column"),
        ("ecg\n1\n2\n3\n", None, None, "fs is missing"),
        ("ecg\n1\n2\n3\n", -5.0, None, "fs must be positive"),
        ("time_s,ecg\n0,1\n0.01,2\n0.02,3\n", 250.0, None, "disagrees with time_s"),
        ("time_s,ecg\n0,1\n0,2\n0,3\n", None, None, "time_s does not increase"),
    ],
)
def test_bad_input_names_record_file_and_problem(tmp_path, cpu, text, fs, leads, problem):
    src = write_csv(tmp_path / "bad.csv", text)
    out = tmp_path / "s.parquet"
    with pytest.raises(BeatflowError) as err:
        ingest("rec1", {"path": src}, {"signal": out}, IngestParams.defaults(max_gap_s=0.001), cpu, fs=fs, leads=leads)
    message = str(err.value)
    assert "record 'rec1'" in message and "bad.csv" in message and problem in message
    assert not out.exists() and list(tmp_path.iterdir()) == [src]  # no partial artifact


def test_missing_file_and_unknown_type(tmp_path, cpu):
    with pytest.raises(BeatflowError, match="file not found"):
        ingest(
            "r",
            {"path": tmp_path / "nope.csv"},
            {"signal": tmp_path / "s.parquet"},
            IngestParams.defaults(),
            cpu,
            fs=250.0,
            leads=None,
        )
    (tmp_path / "x.txt").write_text("1\n2\n")
    with pytest.raises(BeatflowError, match="unsupported file type"):
        ingest(
            "r",
            {"path": tmp_path / "x.txt"},
            {"signal": tmp_path / "s.parquet"},
            IngestParams.defaults(),
            cpu,
            fs=250.0,
            leads=None,
        )


def test_synthetic_record_round_trips(short_record, tmp_path, cpu):
    csv, _, spec = short_record
    table = run(cpu, csv, tmp_path / "s.parquet", fs=None, leads=["MLII", "V1"])
    assert table.num_rows == spec.duration_s * spec.fs
    assert signal_info(tmp_path / "s.parquet")[0] == pytest.approx(250.0, rel=1e-6)
    raw = pd.read_csv(csv)
    np.testing.assert_array_equal(table.column("V1").to_numpy(), raw.V1.to_numpy(np.float32))


def test_short_gaps_are_interpolated_and_reported(tmp_path, cpu, caplog):
    values = ["1", "nan", "3", "4", "", "", "7", "8", "inf", "10"]
    src = write_csv(tmp_path / "g.csv", "ecg,other\n" + "".join(f"{v},0\n" for v in values))
    table = run(cpu, src, tmp_path / "s.parquet", fs=100.0)
    assert table.column("ecg").to_pylist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert "interpolated 4 missing/NaN/Inf sample(s) in 3 gap(s), the longest 0.020 s" in caplog.text


def test_artifacts_are_the_rules_outputs():
    """beatflow.io.ARTIFACTS (the names tests and benchmarks use) are the rules' named outputs in results/."""
    from pathlib import Path

    from beatflow.io import ARTIFACTS

    rules = "".join(p.read_text() for p in (Path(__file__).parents[1] / "workflow" / "rules").glob("*.smk"))
    for name, file in ARTIFACTS.items():
        assert f'{name}="results/{{record}}/{file}"' in rules, name
