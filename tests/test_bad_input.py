"""Bad input refused in one line naming the record (issue 38's table, and issue 37's mistakes caught when the
workflow is parsed): the records sheet, headers that do not fit their data, truth that does not fit its
record, unreadable files, and what a run leaves behind."""

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import wfdb
from conftest import copy_project, snakemake

from beatflow.errors import BeatflowError
from beatflow.io.ingest import IngestParams, ingest
from beatflow.io.sheet import MAX_NAME, sheet_problems
from beatflow.io.tables import write_signal

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


# --- ingest: what a header promises against its data, and files that cannot be read ---------------------


def write_wfdb(directory, name="r1", n=3000, fs=250):
    """A 2-lead WFDB record (format 212): its header path."""
    t = np.arange(n) / fs
    signal = np.stack([np.sin(2 * np.pi * 1.1 * t), np.cos(2 * np.pi * 0.7 * t)], axis=1)
    signal += 0.05 * np.random.default_rng(0).standard_normal((n, 2))
    wfdb.wrsamp(
        name,
        fs=fs,
        units=["mV", "mV"],
        sig_name=["MLII", "V1"],
        p_signal=signal,
        fmt=["212", "212"],
        adc_gain=[200.0, 200.0],
        baseline=[0, 0],
        write_dir=str(directory),
    )
    return directory / f"{name}.hea"


def refused(tmp_path, cpu, path, *, fs=None, leads=None):
    """The one-line error of ingesting ``path`` as record 'bad'; asserts that nothing was written."""
    out = tmp_path / "out" / "signal.parquet"
    with pytest.raises(BeatflowError) as err:
        ingest("bad", {"path": path}, {"signal": out}, IngestParams.defaults(), cpu, fs=fs, leads=leads)
    message = str(err.value)
    assert message.startswith("record 'bad', file ") and "\n" not in message, message
    assert not out.parent.exists() or list(out.parent.iterdir()) == []
    return message


def edit_header(header, old, new):
    header.write_text(header.read_text().replace(old, new, 1))


def test_header_with_fewer_signals_than_its_dat_holds(tmp_path, cpu):
    header = write_wfdb(tmp_path)
    lines = header.read_text().splitlines()
    header.write_text("\n".join([lines[0].replace("r1 2 ", "r1 1 "), lines[1]]) + "\n")
    message = refused(tmp_path, cpu, header)
    assert "does not fit its signal file" in message and "1 signal(s) of 3000 samples in format 212" in message
    assert "make 4500 bytes, the file holds 9000" in message


def test_header_with_more_signals_than_its_dat_holds(tmp_path, cpu):
    header = write_wfdb(tmp_path)
    lines = header.read_text().splitlines()
    header.write_text("\n".join([lines[0].replace("r1 2 ", "r1 3 "), *lines[1:], lines[2].replace("V1", "V2")]))
    message = refused(tmp_path, cpu, header)
    assert "3 signal(s) of 3000 samples" in message and "broadcast" not in message


@pytest.mark.parametrize("fs", ["0", "-250"])
def test_header_with_a_rate_that_is_not_positive(tmp_path, cpu, fs):
    header = write_wfdb(tmp_path)
    edit_header(header, "r1 2 250 ", f"r1 2 {fs} ")
    assert f"states a sampling rate of {fs} Hz; it must be positive" in refused(tmp_path, cpu, header)


def test_a_flat_lead_is_flat_not_clipped(tmp_path, cpu):
    (tmp_path / "flat.csv").write_text("ecg\n" + "0.5\n" * 1000)
    message = refused(tmp_path, cpu, tmp_path / "flat.csv", fs=250.0)
    assert "lead 'ecg' is flat: every sample is 0.5" in message and "clipped" not in message


def gzip_bytes(text: str) -> bytes:
    return gzip.compress(text.encode())


@pytest.mark.parametrize(
    "name, content, cause",
    [
        ("header.csv", b"ecg\xff\n1\n2\n3\n", "not UTF-8 text (it holds the byte 0xff)"),
        ("body.csv", b"ecg\n1\n2\xff\n3\n", "not UTF-8 text (it holds the byte 0xff)"),
        (
            "short.csv.gz",
            gzip_bytes("ecg\n" + "".join(f"{v:.4f}\n" for v in np.sin(np.arange(5000))))[:3000],
            "truncated",
        ),
        ("plain.csv.gz", b"ecg\n1\n2\n3\n", "not a gzip file"),
        ("short.parquet", None, "cannot read the file: ArrowInvalid"),
    ],
)
def test_an_unreadable_file_is_one_line_naming_record_file_and_cause(tmp_path, cpu, name, content, cause):
    path = tmp_path / name
    if content is None:  # a parquet file cut short
        pq.write_table(pa.table({"ecg": np.arange(5000, dtype=np.float32)}), path)
        path.write_bytes(path.read_bytes()[:300])
    else:
        path.write_bytes(content)
    message = refused(tmp_path, cpu, path, fs=250.0)
    assert name in message and cause.lower() in message.lower(), message


# --- truth against its record ---------------------------------------------------------------------------


def signal_of(tmp_path, samples: int) -> Path:
    path = tmp_path / "signal.parquet"
    write_signal({"ecg": np.zeros(samples, np.float32)}, 250.0, path, gpu=False)
    return path


def test_truth_csv_outside_the_record_names_the_bad_lines(tmp_path):
    from beatflow.evaluate import write_evaluation

    truth = tmp_path / "truth.csv"
    truth.write_text("sample,label\n-5,N\n100,N\n80000,V\n200000,N\n")
    with pytest.raises(BeatflowError) as err:
        write_evaluation("r", truth, tmp_path / "scores.parquet", signal_of(tmp_path, 75000), tmp_path / "e.json")
    message = str(err.value)
    assert message.startswith(f"record 'r', file {truth}: the truth does not fit the record: 3 line(s)")
    assert "outside the record's samples 0 to 74999: line(s) (sample) 2 (-5), 4 (80000), 5 (200000)" in message
    assert not (tmp_path / "e.json").exists()


def test_annotations_of_another_record_are_refused(tmp_path):
    from beatflow.io.truth import read_truth

    wfdb.wrann("other", "atr", np.array([100, 50000, 90000]), np.array(["N", "N", "V"]), write_dir=str(tmp_path))
    with pytest.raises(BeatflowError, match=r"2 annotation\(s\) outside the record's samples 0 to 29999: "):
        read_truth(tmp_path / "other.atr", 30000)
    assert len(read_truth(tmp_path / "other.atr", 90001)[0]) == 3


# --- a wrong fs, temporary files, a full disk, the synthetic record ---------------------------------------


def test_a_rate_stated_4x_too_high_is_warned_in_the_segment_log(tmp_path, cpu, caplog):
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.synth import SynthSpec, generate

    leads, _, _ = generate(SynthSpec(duration_s=120, seed=1))
    for fs, warned in ((250.0, False), (1000.0, True)):
        caplog.clear()
        write_signal(leads, fs, tmp_path / "signal.parquet", gpu=False)
        segment(
            "r",
            {"signal": tmp_path / "signal.parquet"},
            {"beats": tmp_path / "b.parquet"},
            SegmentParams.defaults(),
            cpu,
        )
        assert ("implausible at the stated 1000 Hz: is the record's sampling rate right?" in caplog.text) == warned


def test_a_killed_writers_temporary_file_is_swept_by_the_next_write(tmp_path):
    from beatflow.io.arrays import save

    stale = tmp_path / ".embedding.4242.tmp.npy"  # a worker SIGKILLed while it wrote
    stale.write_bytes(b"")
    other = tmp_path / ".embedding_extra.4242.tmp.npy"  # another artifact's: not this write's to remove
    other.write_bytes(b"")
    save(tmp_path / "embedding.npy", np.zeros((2, 3), np.float32), gpu=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".embedding_extra.4242.tmp.npy", "embedding.npy"]


def test_a_full_disk_is_named(tmp_path, monkeypatch):
    from beatflow.io.arrays import save

    def short_write(file, array, allow_pickle):
        Path(file).write_bytes(b"\0" * 10)
        raise OSError("1055000 requested and 530400 written")  # numpy's words for a full disk

    monkeypatch.setattr(np, "save", short_write)
    with pytest.raises(BeatflowError, match="no space left on device") as err:
        save(tmp_path / "embedding.npy", np.zeros((2, 3), np.float32), gpu=False)
    assert str(tmp_path / "embedding.npy") in str(err.value) and list(tmp_path.iterdir()) == []


def test_synth_with_too_short_a_record_is_a_clear_error(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "beatflow.synth", str(tmp_path / "x.csv"), str(tmp_path / "t.csv"), "--hours", "0.0001"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "error: a synthetic record lasts at least 10 s" in out.stderr and "asked for 0.36 s" in out.stderr
    assert list(tmp_path.iterdir()) == []
