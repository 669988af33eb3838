"""The record's report page: the numbers of a hand-made holter.json in their tables, the strips' list, the
evaluation section, a self-contained small file; and the rule's stage end to end on a synthetic record."""

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np

from beatflow.report.pages import render_page, write_record_report


def summary():
    return {
        "record": "hand",
        "start": None,
        "duration_s": 7200.0,
        "analysed_s": 7000.0,
        "artefact": {"episodes": [{"start_s": 100.0, "end_s": 140.0, "leads": {"MLII": "flat line"}}], "total_s": 40.0},
        "beats": {"total": 8000, "N": 7700, "S": 120, "V": 170, "F": 6, "Q": 4},
        "heart_rate": {
            "mean_bpm": 68.6,
            "min_bpm": 51.2,
            "min_at_s": 3720.0,
            "max_bpm": 131.4,
            "max_at_s": 600.0,
            "fastest": {"bpm": 140.2, "at_s": 610.0},
            "slowest": {"bpm": 44.0, "at_s": 3725.0},
            "minutes": [],
        },
        "hourly": [
            {
                "start_s": 0.0,
                "beats": 4300,
                "mean_bpm": 72.1,
                "min_bpm": 58.0,
                "max_bpm": 131.4,
                "V": 150,
                "S": 100,
                "pauses": 0,
            },
            {
                "start_s": 3600.0,
                "beats": 3700,
                "mean_bpm": 61.7,
                "min_bpm": 51.2,
                "max_bpm": 77.0,
                "V": 20,
                "S": 20,
                "pauses": 2,
            },
        ],
        "ventricular": {
            "isolated": 140,
            "couplets": 6,
            "bigeminy_s": 95.5,
            "trigeminy_s": 0.0,
            "runs": [
                {"start_s": 1234.5, "end_s": 1236.9, "beats": 9, "rate_bpm": 200.0},
                {"start_s": 605.0, "end_s": 605.8, "beats": 3, "rate_bpm": 225.0},
            ],
        },
        "supraventricular": {"isolated": 110, "couplets": 5, "runs": []},
        "pauses": [{"start_s": 4000.0, "duration_s": 2.2}, {"start_s": 5000.25, "duration_s": 3.45}],
        "af": {"episodes": [{"start_s": 6000.0, "end_s": 6900.0}], "burden": 0.1286},
        "tachycardia": [
            {"kind": "VT", "start_s": 605.0, "end_s": 605.8, "beats": 3, "rate_bpm": 225.0},
            {"kind": "VT", "start_s": 1234.5, "end_s": 1236.9, "beats": 9, "rate_bpm": 200.0},
        ],
        "hrv": {
            "sdnn_ms": 112.4,
            "sdann_ms": 88.0,
            "sdnn_index_ms": 47.9,
            "rmssd_ms": 29.5,
            "pnn50": 0.0734,
            "coverage": 0.81,
        },
        "notes": ["a note <with> markup"],
    }


def text_of(page: str) -> str:
    class Text(HTMLParser):
        parts: list = []

        def handle_data(self, data):
            self.parts.append(data)

    p = Text()
    p.parts = []
    p.feed(page)
    return re.sub(r"\s+", " ", " ".join(p.parts))


def cells(page: str) -> list[list[str]]:
    """Every table row's cells' text."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", page):
        rows.append([re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)])
    return rows


def test_page_has_the_summary_numbers():
    page = render_page(summary())
    text = text_of(page)
    rows = cells(page)
    assert "Holter report — record hand" in text
    assert "Recorded 02:00:00, analysed 01:56:40 (97.2 %)" in text
    assert ["V", "170", "2.1 %"] in rows and ["total", "8000", ""] in rows
    assert ["mean", "69", ""] in rows
    assert ["minimum (minute)", "51", "01:02:00"] in rows and ["maximum (minute)", "131", "00:10:00"] in rows
    assert ["SDNN", "112 ms"] in rows and ["rMSSD", "30 ms"] in rows and ["pNN50", "7.3 %"] in rows
    assert ["runs (≥ 3 beats)", "2", "0"] in rows and ["couplets", "6", "5"] in rows
    assert ["longest run", "9 beats at 00:20:34", "—"] in rows
    assert ["fastest run", "225 bpm at 00:10:05", "—"] in rows
    assert ["bigeminy (time)", "00:01:35", ""] in rows
    assert ["per hour analysed", "87.4", "61.7"] in rows  # 170 and 120 beats in 7000 s
    assert ["V", "00:10:05", "00:10:05", "3", "225", "VT"] in rows  # runs at ≥ 100 bpm: tachycardia episodes
    assert ["V", "00:20:34", "00:20:36", "9", "200", "VT"] in rows
    assert "Pauses (RR ≥ 2.0 s): 2" in text and "longest 3.45 s at 01:23:20" in text
    assert ["01:23:20", "3.45"] in rows
    assert "Atrial fibrillation / flutter: 1 episode" in text and "burden 12.9 % (00:15:00)" in text
    assert ["01:40:00", "01:55:00", "00:15:00"] in rows
    assert ["00:00:00", "4300", "72", "58", "131", "150", "100", "0"] in rows
    assert ["01:00:00", "3700", "62", "51", "77", "20", "20", "2"] in rows
    assert "a note <with> markup" in text and "<with>" not in page  # escaped
    assert "Event strips" not in text and "reference annotations" not in text
    assert ["fastest (8 sinus beats)", "140", "00:10:10"] in rows and [
        "slowest (8 sinus beats)",
        "44",
        "01:02:05",
    ] in rows
    assert "artefact (no lead readable) 00:00:40 in 1 episodes: 00:01:40–00:02:20 (MLII flat line)" in text
    assert "2 VT, 0 SVT" in text and "sinus NN intervals (81 % of the time)" in text
    assert "Times are elapsed" in text


def test_page_gives_clock_times_when_the_start_is_known():
    rows = cells(render_page(summary() | {"start": "2026-11-29T22:30:00"}))
    assert ["minimum (minute)", "51", "23:32:00"] in rows  # 3720 s after 22:30
    assert ["01:23:20", "3.45"] not in rows and ["23:53:20", "3.45"] in rows


def test_page_is_small_and_self_contained():
    page = render_page(summary(), events=[])
    assert len(page.encode()) < 20_000
    assert not re.search(r"(src|href)\s*=", page) and "<script" not in page and "http" not in page
    assert "No events to show" in page


def inline_images(page: str) -> list[bytes]:
    """The PNG images a page holds as data URIs; asserts that it refers to no other file or address."""
    refs = re.findall(r"(?:src|href)\s*=\s*['\"]([^'\"]*)['\"]", page)
    assert all(r.startswith("data:image/png;base64,") for r in refs), [r[:40] for r in refs]
    return [base64.b64decode(r.split(",", 1)[1]) for r in refs]


def test_page_shows_the_strips_figure_inline():
    events = [{"number": 1, "clock": "00:20:34", "title": "Longest ventricular run", "rate_bpm": 200.0}]
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    page = render_page(summary(), events, strips_png=png)
    assert inline_images(page) == [png]
    assert "<script" not in page and "http" not in page
    assert inline_images(render_page(summary(), events)) == []  # without the figure: the list only


def test_page_lists_the_strips_and_the_evaluation():
    events = [
        {"number": 1, "clock": "00:20:34", "title": "Longest ventricular run: 9 V beats", "rate_bpm": 200.0},
        {"number": 2, "clock": "01:23:20", "title": "Longest pause: 3.45 s", "rate_bpm": None},
    ]
    ref = summary() | {"beats": {"total": 8010, "N": 7690, "S": 125, "V": 180, "F": 10, "Q": 5}}
    match = {"reference": 4, "output": 2, "found": 2, "true": 2, "se": 0.5, "ppv": 1.0}
    agreement = {
        "heart_rate": {"mean_bpm_error": -1.25, "minutes_within_share": 0.9},
        "ventricular": {"runs": match, "couplets": match},
        "supraventricular": {"runs": match, "couplets": match},
        "pauses": match,
        "af": {**match, "reference_s": 1000.0, "output_s": 900.0, "duration_se": 0.85, "duration_ppv": 0.944},
    }
    evaluation = {
        "sensitivity": 0.9971,
        "ppv": 0.9953,
        "classes": {"V": {"n": 180, "se": 0.9222, "ppv": 0.8811}, "S": {"n": 125, "se": 0.4, "ppv": 0.55}},
        "holter": {"reference": ref, "agreement": agreement},
    }
    page = render_page(summary(), events, evaluation)
    rows = cells(page)
    assert ["1", "00:20:34", "Longest ventricular run: 9 V beats", "200"] in rows
    assert ["2", "01:23:20", "Longest pause: 3.45 s", "—"] in rows
    assert ["beat detection", "99.7 %", "99.5 %"] in rows
    assert ["class V (EC57 VEB, n = 180)", "92.2 %", "88.1 %"] in rows
    assert ["V runs", "4", "2", "50 %", "100 %"] in rows
    assert ["AF time", "00:16:40", "00:15:00", "85 %", "94 %"] in rows
    text = text_of(page)
    assert "Reference beats 8010" in text and "mean rate error -1.2 bpm" in text


def test_the_rule_stage_writes_strips_and_page(tmp_path):
    from beatflow.holter.summary import summary_from_beats
    from beatflow.io.tables import write_frame, write_signal

    fs, t = 250.0, np.arange(0.5, 119.0, 0.8)
    classes = np.where(np.arange(len(t)) % 20 == 10, "V", "N")
    x = np.zeros(int(120 * fs), np.float32)
    x[np.round(t * fs).astype(int)] = 1.0
    write_signal({"ECG": x}, fs, tmp_path / "signal.parquet", gpu=False)
    scores = {
        "beat": np.arange(len(t)),
        "peak": np.round(t * fs).astype(np.int64),
        "time_s": t,
        "split": "test",
        "score": np.where(classes == "V", 2.0, 0.1),
        "anomaly": classes == "V",
        "reason": np.where(classes == "V", "morphology", ""),
        "class": classes,
        "family": np.where(classes == "V", 1, 0),
    }
    import pandas as pd

    write_frame(pd.DataFrame(scores), tmp_path / "scores.parquet")
    s = summary_from_beats("mini", t, classes, 120.0)
    (tmp_path / "holter.json").write_text(json.dumps(s))
    out = tmp_path / "out"
    write_record_report(
        "mini",
        tmp_path / "holter.json",
        tmp_path / "scores.parquet",
        tmp_path / "signal.parquet",
        out / "report" / "summary.html",
        out / "strips.png",
        out / "strips.json",
    )
    events = json.loads((out / "strips.json").read_text())["events"]
    assert [e["kind"] for e in events] == ["minute_fastest", "beat"]  # one rate: one minute strip
    assert events[1]["details"]["beat"] == 10 and events[1]["clock"] == "00:00:08"
    page = (out / "report" / "summary.html").read_text()
    assert "Holter report — record mini" in page and "Most anomalous morphology beat: V (family 1)" in page
    assert (out / "strips.png").stat().st_size > 10_000
    assert inline_images(page) == [(out / "strips.png").read_bytes()]  # the page shows the strips itself


def test_cohort_page_has_a_row_per_record_and_the_totals(tmp_path):
    from beatflow.report.pages import write_cohort_page

    a = summary()
    b = json.loads(json.dumps(summary())) | {"record": "other", "duration_s": 1800.0, "analysed_s": 1800.0}
    b["beats"] = {"total": 2000, "N": 1990, "S": 0, "V": 10, "F": 0, "Q": 0}
    b["ventricular"]["runs"], b["pauses"], b["af"] = [], [], {"episodes": [], "burden": 0.0}
    paths = []
    for s in (a, b):
        paths.append(tmp_path / f"{s['record']}.json")
        paths[-1].write_text(json.dumps(s))
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps({"sensitivity": 0.998, "ppv": 0.9961, "classes": {"V": {"se": 0.9, "ppv": 0.8}}}))
    write_cohort_page(tmp_path / "cohort.html", ["hand", "other"], paths, {"other": ev})
    page = (tmp_path / "cohort.html").read_text()
    rows = cells(page)
    assert "Cohort — 2 records" in text_of(page)
    assert rows[1][:12] == ["hand", "02:00:00", "97.2 %", "8000", "7700", "120", "170", "6", "4", "69", "51", "131"]
    assert rows[1][12:19] == ["2", "9", "0", "2", "3.45", "12.9 %", "112"]
    assert rows[1][19:] == ["—"] * 6  # no evaluation for this record
    assert rows[2][0] == "other" and rows[2][19:] == ["99.8 %", "99.6 %", "90.0 %", "80.0 %", "—", "—"]
    # totals: 2 h 30 min recorded, 8000 + 2000 beats, 2 V runs, 2 pauses, AF 900 s over 8800 s analysed
    assert rows[3][:9] == ["all 2", "02:30:00", "97.8 %", "10000", "9690", "120", "180", "6", "4"]
    assert rows[3][12] == "2" and rows[3][15] == "2" and rows[3][17] == "10.2 %"


def test_the_text_report_has_the_pages_rows():
    """The text report (python -m beatflow.holter) and the page draw the same rows (beatflow.holter.rows):
    every row of every table of the page, its cells in order, is a line of the text."""
    from beatflow.holter.__main__ import report

    for s in (summary(), summary() | {"start": "2026-11-29T22:30:00", "notes": []}):
        lines = {" ".join(line.split()) for line in report(s).splitlines()}
        rows = cells(render_page(s))
        assert len(rows) >= 40
        for row in rows:
            assert " ".join(c for c in row if c) in lines, row
        text = text_of(render_page(s))
        assert "Recorded 02:00:00, analysed 01:56:40 (97.2 %)" in text
        assert "Recorded 02:00:00   analysed 01:56:40 (97.2 %)" in report(s)
