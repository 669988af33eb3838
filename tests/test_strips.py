"""Event strips: which events a synthetic record with known runs, pause, minutes, AF and anomalous beats gives,
where each strip sits, the traces drawn from signal.parquet, and the files."""

import json

import numpy as np
import pandas as pd
import pytest

from beatflow.errors import BeatflowError
from beatflow.holter.summary import summary_from_beats
from beatflow.io.tables import read_signal_stretches, write_signal
from beatflow.report.strips import (
    STRIP_S,
    draw_strips,
    select_events,
    strip_traces,
    strip_window,
    window_rate,
    write_strips,
)

FS = 250.0
DURATION = 180.0


def beat_times():
    """60 bpm, with: a 5-beat V run at 150 bpm from 30 s, a 3-beat V run at 200 bpm from 70.5 s, a 3 s pause
    from 50.5 s, a fast stretch (0.5 s RR) in minute 2 (120–180 s) from 140 s."""
    t, classes = [], []
    x = 0.5
    while x < DURATION - 0.5:
        t.append(x)
        classes.append("N")
        if abs(x - 29.5) < 1e-6:  # the V run: 30.0, 30.4, … 31.6
            for k in range(5):
                t.append(30.0 + 0.4 * k)
                classes.append("V")
            x = 32.5
            continue
        if abs(x - 50.5) < 1e-6:
            x += 3.0
            continue
        if abs(x - 69.5) < 1e-6:  # 70.5, 70.8, 71.1
            for k in range(3):
                t.append(70.5 + 0.3 * k)
                classes.append("V")
            x = 72.5
            continue
        x += 0.5 if 140.0 <= x < 160.0 else 1.0
    return np.array(t), np.array(classes)


def make_scores(t, classes):
    n = len(t)
    scores = pd.DataFrame(
        {
            "beat": np.arange(n),
            "peak": np.round(t * FS).astype(np.int64),
            "time_s": t,
            "split": "test",
            "score": 0.1,
            "anomaly": False,
            "reason": "",
            "class": classes,
            "family": np.where(classes == "V", 1, 0),
        }
    )
    # known anomalous beats: the top morphology one at 100.5 s (family 2), a weaker morphology one (family 1)
    # inside the V run, the top rhythm one at 170 s (family 0)
    for time, score, reason, family in (
        (100.5, 9.0, "morphology", 2),
        (30.8, 4.0, "morphology", 1),
        (170.0, 3.0, "rhythm", 0),
        (110.5, 1.5, "rhythm", 0),
    ):
        i = int(np.argmin(np.abs(t - time)))
        scores.loc[i, ["score", "anomaly", "reason", "family"]] = [score, True, reason, family]
    return scores


def make_signal(t, path):
    n = int(DURATION * FS)
    x = np.zeros(n)
    s = np.arange(n) / FS
    for b in t:
        k = int(round(b * FS))
        lo, hi = max(0, k - 25), min(n, k + 25)
        x[lo:hi] += 1.5 * np.exp(-0.5 * ((s[lo:hi] - b) / 0.012) ** 2)
    write_signal({"MLII": x.astype(np.float32), "V1": (-0.5 * x + 0.2).astype(np.float32)}, FS, path, gpu=False)


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    d = tmp_path_factory.mktemp("strips")
    t, classes = beat_times()
    summary = summary_from_beats("syn", t, classes, DURATION, af_episodes=[(120.0, 135.0)])
    scores = make_scores(t, classes)
    make_signal(t, d / "signal.parquet")
    return d, summary, scores


def test_strip_window_centres_and_stays_inside():
    assert strip_window(50.0, 52.0, 100.0) == (46.0, 56.0)  # centred
    assert strip_window(10.0, 40.0, 100.0) == (9.0, 19.0)  # longer than a strip: 1 s before it
    assert strip_window(1.0, 1.0, 100.0) == (0.0, 10.0)  # not before the start
    assert strip_window(99.0, 99.0, 100.0) == (90.0, 100.0)  # nor past the end
    assert strip_window(3.0, 3.0, 6.0) == (0.0, 6.0)  # a record shorter than a strip
    assert strip_window(50.0, 50.0, 100.0, lead_in_s=3.0) == (47.0, 57.0)


def test_window_rate_finds_the_fast_and_slow_stretches():
    t = np.concatenate([np.arange(0.0, 30.0, 1.0), 30.0 + np.arange(1, 21) * 0.5, 40.0 + np.arange(1, 21) * 1.5])
    valid = np.ones(len(t) - 1, bool)
    start, bpm = window_rate(t, valid, 0.0, 60.0, fastest=True)
    assert start == 31.0 and bpm == pytest.approx(120.0)  # from 30 s, the interval ending at 30 s is 1 s
    start, bpm = window_rate(t, valid, 0.0, 60.0, fastest=False)
    assert start == 41.0 and bpm == pytest.approx(40.0)


def test_events_of_a_known_record(record):
    _, summary, scores = record
    assert [r["start_s"] for r in summary["ventricular"]["runs"]] == [30.0, 70.5]  # the summary saw both runs
    events = select_events(summary, scores)
    kinds = [e.kind for e in events]
    assert kinds == [
        "v_run_longest",
        "v_run_fastest",
        "pause_longest",
        "minute_fastest",
        "minute_slowest",
        "af_onset",
        "beat",
        "beat",
        "beat",
    ]
    assert [e.number for e in events] == list(range(1, 10))
    by = {k: e for k, e in zip(kinds, events) if k != "beat"}
    assert by["v_run_longest"].at_s == 30.0 and by["v_run_longest"].details["beats"] == 5
    assert by["v_run_longest"].rate_bpm == pytest.approx(150.0)
    assert by["v_run_fastest"].at_s == 70.5 and by["v_run_fastest"].rate_bpm == pytest.approx(200.0)
    p = by["pause_longest"]
    assert p.at_s == 50.5 and p.details["duration_s"] == pytest.approx(3.0) and (p.start_s, p.end_s) == (47.0, 57.0)
    fast, slow = by["minute_fastest"], by["minute_slowest"]
    assert fast.details["minute_start_s"] == 120.0 and 140.0 <= fast.start_s <= 150.0
    assert fast.details["strip_bpm"] == pytest.approx(120.0)
    # the slowest minute (60–120 s) holds the 200 bpm run; its slowest 10 s start just after the run, with the
    # 1.4 s interval that follows it and nine of 1 s
    assert slow.details["minute_start_s"] == summary["heart_rate"]["min_at_s"] == 60.0
    assert slow.start_s == 72.0 and slow.details["strip_bpm"] == pytest.approx(60 / 1.04)
    af = by["af_onset"]
    assert (af.at_s, af.start_s, af.end_s) == (120.0, 117.0, 127.0)
    beats = [e for e in events if e.kind == "beat"]
    # per reason first (the top morphology, the top rhythm beat), then per family: family 2's top beat is the
    # morphology one already shown, family 1's is the beat in the V run
    assert [round(e.at_s, 1) for e in beats] == [100.5, 170.0, 30.8]
    assert [e.details["reason"] for e in beats] == ["morphology", "rhythm", "morphology"]
    assert beats[0].details["family"] == 2 and beats[0].details["score"] == 9.0
    assert beats[0].details["rr_before_s"] == pytest.approx(1.0)
    assert beats[0].details["rr_after_s"] == pytest.approx(1.0)
    for e in events:
        assert 0.0 <= e.start_s and e.end_s <= DURATION and e.end_s - e.start_s == pytest.approx(STRIP_S)
        assert e.start_s <= e.at_s <= e.end_s


def test_same_run_longest_and_fastest_is_one_strip(record):
    _, summary, scores = record
    s = json.loads(json.dumps(summary))
    s["ventricular"]["runs"] = s["ventricular"]["runs"][:1]
    events = select_events(s, scores, max_af=0, max_beats=0)
    assert [e.kind for e in events][:2] == ["v_run_longest_fastest", "pause_longest"]
    assert "Longest and fastest ventricular run (VT): 5 V beats at 150 bpm" in events[0].title  # ≥ 100 bpm


def test_no_events_without_findings(record):
    _, _, scores = record
    t = np.arange(0.5, 50.0, 1.0)
    s = summary_from_beats("short", t, ["N"] * len(t), 50.5)
    assert select_events(s, scores.iloc[:0]) == []  # under a minute: no minute strips; no runs, pauses, AF or flags
    t = np.arange(0.5, 100.0, 1.0)
    s = summary_from_beats("steady", t, ["N"] * len(t), 100.5)
    quiet = make_scores(t, np.array(["N"] * len(t))).assign(anomaly=False)
    assert [e.kind for e in select_events(s, quiet)] == ["minute_fastest"]  # one rate: one minute strip


def test_traces_are_the_signal_band_passed(record):
    d, summary, scores = record
    from beatflow.backend import select_backend
    from beatflow.io.tables import read_signal

    leads, fs = read_signal(d / "signal.parquet", select_backend("cpu"))
    ev = select_events(summary, scores)[0]
    t, traces = strip_traces(leads, fs, ev)
    assert t[0] == pytest.approx(ev.start_s) and len(t) == int(STRIP_S * FS)
    assert list(traces) == ["MLII", "V1"]
    k = int(np.argmin(np.abs(t - 35.5)))  # an N beat: a 1.5 mV R wave, the offset of V1 filtered out
    assert 1.0 < traces["MLII"][k - 3 : k + 4].max() < 1.6
    assert -0.8 < traces["V1"][k - 3 : k + 4].min() < -0.5
    assert abs(np.median(traces["V1"])) < 0.05


def test_write_strips_png_and_json(record, tmp_path):
    d, summary, scores = record
    events = write_strips(
        "syn", summary, scores, d / "signal.parquet", tmp_path / "strips.png", tmp_path / "strips.json"
    )
    png = (tmp_path / "strips.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    img = Image.open(tmp_path / "strips.png")
    assert img.size[0] == 1188 and img.size[1] > 9 * 200  # nine strips stacked
    pixels = np.asarray(img.convert("RGB")).reshape(-1, 3)
    assert (pixels.sum(axis=1) < 150).mean() > 0.002  # black traces drawn
    red = (pixels[:, 0] > 200) & (pixels[:, 1] < 190) & (pixels[:, 2] < 190)
    assert red.mean() > 0.01  # the paper grid
    out = json.loads((tmp_path / "strips.json").read_text())
    assert out["record"] == "syn" and out["strip_s"] == STRIP_S
    assert [e["kind"] for e in out["events"]] == [e.kind for e in events]
    assert out["events"][0]["clock"] == "00:00:30" and out["events"][0]["span"] == [30.0, 31.6]


def test_lead_stretches_read_only_their_row_groups(tmp_path):
    """A stretch read from a file of many row groups equals the same slice of the whole lead, across row-group
    edges, and reads no row group outside it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    x = np.arange(10_000, dtype=np.float32)
    pq.write_table(pa.table({"MLII": x, "V1": -x}), tmp_path / "signal.parquet", row_group_size=1000)
    lead = read_signal_stretches(tmp_path / "signal.parquet", ["MLII", "V1"])["V1"]
    assert len(lead) == 10_000
    for a, b in ((0, 10), (990, 1010), (2500, 7300), (9_990, 12_000), (-5, None), (3000, 3000)):
        np.testing.assert_array_equal(lead[a:b], (-x)[a:b])
    read = []
    lead._file.read_row_groups = lambda groups, columns: read.append(list(groups)) or pa.table({"V1": -x[:1000]})
    lead[1500:2500]
    lead[1800:2100]  # the row groups it last read are kept
    assert read == [[1], [2]]
    with pytest.raises(TypeError):
        lead[::2]
    with pytest.raises(BeatflowError, match="not a readable parquet"):
        read_signal_stretches(tmp_path / "missing.parquet", ["V1"])


def test_lead_stretches_take_sample_indices_and_go_through_the_lead_in_blocks(tmp_path):
    """``lead[index]`` (any shape) reads only the row groups holding those samples, once while they are kept;
    ``lead_blocks`` gives the lead in consecutive blocks of a size that is not the row groups', as the array's
    slices; the signal quality of a lead read that way is the in-memory lead's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beatflow.holter.quality import signal_quality
    from beatflow.io.tables import lead_blocks

    x = np.arange(10_000, dtype=np.float32)
    pq.write_table(pa.table({"MLII": x}), tmp_path / "signal.parquet", row_group_size=1000)
    lead = read_signal_stretches(tmp_path / "signal.parquet", ["MLII"])["MLII"]
    index = np.array([[9_999, 10, 11], [5_500, 10, 1_000]])
    read, read_row_groups = [], lead._file.read_row_groups
    lead._file.read_row_groups = lambda groups, columns: read.append(list(groups)) or read_row_groups(groups, columns)
    np.testing.assert_array_equal(lead[index], x[index])
    assert read == [[0], [1], [5], [9]] and lead.shape == (10_000,)
    np.testing.assert_array_equal(lead[np.array([5_001, 9_000])], x[[5_001, 9_000]])
    assert len(read) == 4  # kept: not read again
    with pytest.raises(IndexError):
        lead[np.array([10_000])]
    for blocks in (list(lead_blocks(lead, 2_300)), list(lead_blocks(x, 2_300))):
        assert [len(b) for b in blocks] == [2_300] * 4 + [800]
        np.testing.assert_array_equal(np.concatenate(blocks), x)
    rng = np.random.default_rng(3)
    beats = np.sin(np.arange(60_000) / FS * 2 * np.pi * 1.2) ** 15
    ecg = (beats + 0.05 * rng.standard_normal(60_000)).astype(np.float32)
    ecg[20_000:22_000] = 0.0  # a flat stretch
    pq.write_table(pa.table({"MLII": ecg}), tmp_path / "ecg.parquet", row_group_size=7_000)
    streamed = signal_quality(read_signal_stretches(tmp_path / "ecg.parquet", ["MLII"]), FS)
    whole = signal_quality({"MLII": ecg}, FS)
    np.testing.assert_array_equal(streamed["codes"]["MLII"], whole["codes"]["MLII"])
    assert streamed["unreadable"] == whole["unreadable"] and whole["unreadable"]["MLII"]


def test_lead_stretches_keep_the_row_groups_used_last_and_go_when_dropped(tmp_path):
    """A lead keeps the KEPT_ROW_GROUPS row groups it used last (the one used again stays, the oldest goes), and
    a dropped lead is freed at once, with its kept samples, without waiting for the cyclic garbage collector."""
    import gc
    import weakref

    import pyarrow as pa
    import pyarrow.parquet as pq

    from beatflow.io.tables import KEPT_ROW_GROUPS

    x = np.arange(10_000, dtype=np.float32)
    pq.write_table(pa.table({"MLII": x}), tmp_path / "signal.parquet", row_group_size=1000)
    lead = read_signal_stretches(tmp_path / "signal.parquet", ["MLII"])["MLII"]
    read, read_row_groups = [], lead._file.read_row_groups
    lead._file.read_row_groups = lambda groups, columns: read.append(groups[0]) or read_row_groups(groups, columns)
    for g in [0, *range(1, KEPT_ROW_GROUPS), 0, KEPT_ROW_GROUPS, 0, 1]:
        np.testing.assert_array_equal(lead[g * 1000 : g * 1000 + 10], x[g * 1000 : g * 1000 + 10])
    assert read == [*range(KEPT_ROW_GROUPS), KEPT_ROW_GROUPS, 1]  # 0 used again, kept; 1 the oldest, dropped
    gone = weakref.ref(lead)
    gc.disable()
    try:
        del lead
        assert gone() is None
    finally:
        gc.enable()


def test_two_leads_read_at_once_from_two_threads(tmp_path):
    """The Holter checks read each lead in its own thread: a pyarrow reader shared between them can hang or mix
    their reads, so every lead reads through its own, and each thread gets its lead's samples."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    x = np.arange(200_000, dtype=np.float32)
    pq.write_table(pa.table({"MLII": x, "V1": -x}), tmp_path / "signal.parquet", row_group_size=1000)
    leads = read_signal_stretches(tmp_path / "signal.parquet", ["MLII", "V1"])
    starts = np.random.default_rng(0).integers(0, 199_000, 400)  # far more row groups than a lead keeps

    def read_all(name):
        sign = 1 if name == "MLII" else -1
        return all(np.array_equal(leads[name][a : a + 1000], sign * x[a : a + 1000]) for a in starts)

    pool = ThreadPoolExecutor(max_workers=2)
    futures = [pool.submit(read_all, name) for name in leads]
    try:
        assert all(f.result(timeout=60) for f in futures)
    finally:
        pool.shutdown(wait=False)


def test_a_record_without_events_draws_a_note(record):
    _, _, scores = record
    fig = draw_strips([], {"MLII": np.zeros(100)}, FS, scores.iloc[:0], "empty")
    assert "No events" in " ".join(t.get_text() for t in fig.texts)


def test_strips_give_clock_times_when_the_start_is_known(record):
    _, summary, scores = record
    s = summary | {"start": "2026-11-29T23:59:00"}
    events = select_events(s, scores)
    by = {e.kind: e for e in events}
    assert by["pause_longest"].clock == "23:59:50" and "at 23:59:50" in by["pause_longest"].title  # 50.5 s
    assert "23:59:30–23:59:31" in by["v_run_longest"].title
    assert "onset at 00:01:00" in by["af_onset"].title  # past midnight
    assert by["af_onset"].as_json()["clock"] == "00:01:00"
    t = np.arange(int(DURATION * FS)) / FS
    fig = draw_strips(events[:1], {"MLII": np.sin(t)}, FS, scores, "syn", start=s["start"])
    strip = fig.axes[0]
    labels = [x.get_text() for x in strip.get_xticklabels()]
    assert labels[0] == "23:59:26" and len(labels) == 10  # the strip from 25.8 s: whole clock seconds
    assert "Clock times; the recording started 2026-11-29 23:59:00." in " ".join(x.get_text() for x in fig.texts)
    plain = draw_strips(events[:1], {"MLII": np.sin(t)}, FS, scores, "syn")
    assert [x.get_text() for x in plain.axes[0].get_xticklabels()][0] == "00:00:26"
    assert "Times are elapsed" in " ".join(x.get_text() for x in plain.texts)
