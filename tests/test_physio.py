"""WFDB and EDF records in, AAMI truth from WFDB annotations: known answers and clear errors."""

import datetime as dt

import numpy as np
import pyarrow.parquet as pq
import pytest
import wfdb

from beatflow.errors import BeatflowError
from beatflow.io.ingest import IngestParams, ingest
from beatflow.io.tables import signal_info, signal_start
from beatflow.io.truth import read_truth

FS = 360


def wave(n):
    t = np.arange(n) / FS
    wobble = 0.05 * np.random.default_rng(n).standard_normal((n, 2))  # no flat runs at the extremes (clipping)
    return np.stack([np.sin(2 * np.pi * 1.2 * t), 0.5 * np.cos(2 * np.pi * 0.7 * t)], axis=1) + wobble


def write_wfdb(directory, name="r1", n=2000, units=("mV", "mV"), names=("MLII", "V1"), **header):
    signal = wave(n)
    wfdb.wrsamp(
        name,
        fs=FS,
        units=list(units),
        sig_name=list(names),
        p_signal=signal,
        fmt=["212", "212"],
        adc_gain=[200.0, 200.0],
        baseline=[0, 0],
        write_dir=str(directory),
        **header,
    )
    return directory / name, signal


def leads_of(path):
    table = pq.read_table(path)
    return {c: table.column(c).to_numpy() for c in table.column_names}


@pytest.mark.parametrize("suffix", ["", ".hea"])
def test_wfdb_record_every_signal_in_mv(tmp_path, cpu, suffix):
    record, signal = write_wfdb(tmp_path)
    out = tmp_path / "s.parquet"
    ingest("r1", {"path": f"{record}{suffix}"}, {"signal": out}, IngestParams.defaults(), cpu, fs=None, leads=None)
    assert signal_info(out) == (360.0, ["MLII", "V1"])
    got = leads_of(out)
    assert got["MLII"].dtype == np.float32
    np.testing.assert_allclose(got["MLII"], signal[:, 0], atol=1 / 200)  # the ADC's step: 1/200 mV
    np.testing.assert_allclose(got["V1"], signal[:, 1], atol=1 / 200)


def test_wfdb_microvolts_become_millivolts_and_leads_follow_the_sheet(tmp_path, cpu):
    record, signal = write_wfdb(tmp_path, units=("uV", "uV"))
    out = tmp_path / "s.parquet"
    ingest("r1", {"path": record}, {"signal": out}, IngestParams.defaults(), cpu, fs=360.0, leads=["V1"])
    assert signal_info(out) == (360.0, ["V1"])
    np.testing.assert_allclose(leads_of(out)["V1"], signal[:, 1] / 1000, atol=1e-5)


@pytest.mark.parametrize(
    "header, sheet, expected",
    [
        ({"base_date": dt.date(2026, 11, 29), "base_time": dt.time(8, 15)}, None, dt.datetime(2026, 11, 29, 8, 15)),
        (
            {"base_date": dt.date(2026, 11, 29), "base_time": dt.time(8, 15)},
            "2026-12-01T22:00:00",
            dt.datetime(2026, 12, 1, 22),
        ),
        ({"base_time": dt.time(8, 15)}, None, None),  # a time without a date: unknown
        ({}, None, None),
    ],
)
def test_wfdb_start_in_signal_metadata_and_the_sheet_wins(tmp_path, cpu, header, sheet, expected):
    record, _ = write_wfdb(tmp_path, **header)
    out = tmp_path / "s.parquet"
    ingest("r1", {"path": record}, {"signal": out}, IngestParams.defaults(), cpu, fs=None, leads=None, start=sheet)
    assert signal_start(out) == expected
    assert (b"start" in pq.read_schema(out).metadata) == (expected is not None)


def test_multi_segment_wfdb_record(tmp_path, cpu):
    write_wfdb(tmp_path, "s1", n=1000)
    write_wfdb(tmp_path, "s2", n=1500)
    (tmp_path / "multi.hea").write_text("multi/2 2 360 2500\ns1 1000\ns2 1500\n")
    out = tmp_path / "s.parquet"
    ingest("m", {"path": tmp_path / "multi"}, {"signal": out}, IngestParams.defaults(), cpu, fs=None, leads=None)
    assert signal_info(out) == (360.0, ["MLII", "V1"])
    got = leads_of(out)["MLII"]
    assert got.shape == (2500,)
    np.testing.assert_allclose(got[1000:], wave(1500)[:, 0], atol=1 / 200)


@pytest.mark.parametrize(
    "breakage, message",
    [
        ("header", "cannot parse the WFDB header"),
        ("dat", "signal file of WFDB record .* is missing"),
        ("format", "cannot read the signals of WFDB record"),
        ("lead", r"lead\(s\) \['aVF'\] not in the WFDB record"),
        ("fs", "disagrees with the file's 360 Hz"),
    ],
)
def test_broken_wfdb_record_is_a_one_line_error_naming_record_and_file(tmp_path, cpu, breakage, message):
    record, _ = write_wfdb(tmp_path)
    header = tmp_path / "r1.hea"
    leads, fs = None, None
    if breakage == "header":
        header.write_text("r1 two 360 2000\n")
    elif breakage == "dat":
        (tmp_path / "r1.dat").unlink()
    elif breakage == "format":
        header.write_text(header.read_text().replace(" 212 ", " 999 "))
    elif breakage == "lead":
        leads = ["aVF"]
    else:
        fs = 250.0
    out = tmp_path / "s.parquet"
    with pytest.raises(BeatflowError, match=message) as err:
        ingest("r1", {"path": record}, {"signal": out}, IngestParams.defaults(), cpu, fs=fs, leads=leads)
    assert "record 'r1'" in str(err.value) and "\n" not in str(err.value)
    assert not out.exists() and list(tmp_path.glob("*.parquet*")) == []


def write_edf(path, rates=(360, 360), labels=("ECG1", "ECG2"), seconds=4):
    import pyedflib

    signals = [np.sin(np.linspace(0, 8 * np.pi, int(r) * seconds)) for r in rates]
    headers = [
        pyedflib.highlevel.make_signal_header(
            label, dimension="uV", sample_frequency=r, physical_min=-2000, physical_max=2000
        )
        for label, r in zip(labels, rates)
    ]
    pyedflib.highlevel.write_edf(str(path), [s * 1000 for s in signals], headers)
    return signals


def test_edf_file_in_mv(tmp_path, cpu):
    signals = write_edf(tmp_path / "a.edf")
    out = tmp_path / "s.parquet"
    ingest("e", {"path": tmp_path / "a.edf"}, {"signal": out}, IngestParams.defaults(), cpu, fs=None, leads=None)
    assert signal_info(out) == (360.0, ["ECG1", "ECG2"])
    np.testing.assert_allclose(leads_of(out)["ECG2"], signals[1], atol=0.01)  # 16-bit over ±2 mV, µV → mV


def test_edf_start_in_signal_metadata(tmp_path, cpu):
    import pyedflib

    write_edf(tmp_path / "a.edf")
    with pyedflib.EdfReader(str(tmp_path / "a.edf")) as reader:
        began = reader.getStartdatetime()
    out = tmp_path / "s.parquet"
    ingest("e", {"path": tmp_path / "a.edf"}, {"signal": out}, IngestParams.defaults(), cpu, fs=None, leads=None)
    assert signal_start(out) == began


def test_edf_leads_of_different_rates_are_an_error_naming_them(tmp_path, cpu):
    write_edf(tmp_path / "a.edf", rates=(360, 128), labels=("ECG", "RESP"))
    with pytest.raises(BeatflowError, match="different sampling rates.*ECG 360 Hz, RESP 128 Hz"):
        ingest(
            "e",
            {"path": tmp_path / "a.edf"},
            {"signal": tmp_path / "s.parquet"},
            IngestParams.defaults(),
            cpu,
            fs=None,
            leads=None,
        )
    ingest(
        "e",
        {"path": tmp_path / "a.edf"},
        {"signal": tmp_path / "s.parquet"},
        IngestParams.defaults(),
        cpu,
        fs=None,
        leads=["ECG"],
    )  # one rate: fine
    assert signal_info(tmp_path / "s.parquet") == (360.0, ["ECG"])


def test_malformed_edf_is_an_error(tmp_path, cpu):
    (tmp_path / "a.edf").write_bytes(b"0       not an edf header" * 20)
    with pytest.raises(BeatflowError, match="cannot parse the EDF/BDF header"):
        ingest(
            "e",
            {"path": tmp_path / "a.edf"},
            {"signal": tmp_path / "s.parquet"},
            IngestParams.defaults(),
            cpu,
            fs=None,
            leads=None,
        )
    assert not (tmp_path / "s.parquet").exists()


def test_wfdb_annotations_map_to_aami_classes_and_exclude_vf(tmp_path):
    symbols = ["N", "L", "A", "V", "+", "[", "!", "!", "]", "E", "~", "F", "/", "x", "+", "N"]
    samples = np.arange(len(symbols)) * 100 + 50
    aux = [""] * len(symbols)
    aux[4], aux[14] = "(VFL", "(N"
    wfdb.wrann("r1", "atr", samples, np.array(symbols), aux_note=aux, write_dir=str(tmp_path), fs=FS)
    table, excluded = read_truth(tmp_path / "r1.atr")
    assert table.symbol.tolist() == ["N", "L", "A", "V", "E", "F", "/", "N"]
    assert table.label.tolist() == ["N", "N", "S", "V", "V", "F", "Q", "N"]
    assert excluded.tolist() == [[450, 1450]]  # the (VFL rhythm from 450 to the (N at 1450; [ … ] inside it


def test_evaluation_leaves_vf_out_and_gives_per_class_figures(tmp_path):
    import pandas as pd

    from beatflow.evaluate import evaluate

    truth = pd.DataFrame(
        {
            "sample": [100, 200, 300, 400, 500, 600],
            "label": ["N", "V", "N", "S", "N", "N"],
            "symbol": ["N", "V", "L", "A", "N", "N"],
        }
    )
    detected = np.array([100, 200, 300, 400, 450, 470, 600])  # 450 and 470: inside the excluded interval
    scores = pd.DataFrame(
        {
            "time_s": detected / 100.0,
            "score": [0.1, 5, 0.2, 1.5, 9, 9, 2],
            "anomaly": [False, True, False, True, True, True, True],
        }
    )
    e = evaluate(truth, scores, 100.0, np.array([[440, 520]]))
    assert (e["n_true"], e["n_detected"], e["true_positives"], e["false_positives"]) == (5, 5, 5, 0)
    assert e["excluded"]["reference_beats"] == 1 and e["excluded"]["detected_beats"] == 2
    assert e["per_label"]["V"]["auroc"] == 1.0 and e["per_label"]["V"]["flag_ppv"] == pytest.approx(0.5)
    assert e["normal_flagged"] == pytest.approx(1 / 3)
    assert e["per_symbol"]["L"] == {"class": "N", "n": 1, "detected": 1, "auroc": None, "flagged": 0.0}
    assert e["per_symbol"]["A"]["auroc"] == pytest.approx(2 / 3)  # 1.5 against the normal beats 0.1, 0.2 and 2
