"""The output contracts of one record's results (docs/contracts.md, README "Outputs"), as reusable checks.

``check_record(run / "results" / name, ...)`` asserts every file of a finished record; the single checks
can be used on their own. No test functions here (so importing this module collects nothing).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

PLOTS = ("latent", "trace", "lengths", "gallery", "heart_rate")


def check_signal(results: Path, *, leads: list[str], fs: float, n_samples: int) -> None:
    table = pq.read_table(results / "signal.parquet")
    assert table.column_names == leads
    assert all(str(t) == "float" for t in table.schema.types)  # float32
    assert float(table.schema.metadata[b"fs"]) == fs
    assert table.num_rows == n_samples


def check_beats(results: Path, *, duration_s: float, bpm: tuple[float, float] = (40, 120)) -> pd.DataFrame:
    beats = pd.read_parquet(results / "beats.parquet")
    assert list(beats.columns) == ["beat", "peak", "start", "length", "kept"]
    assert beats.peak.dtype == np.int64 and beats.start.dtype == np.int64 and beats.kept.dtype == bool
    assert (beats.beat == np.arange(len(beats))).all() and (np.diff(beats.peak) > 0).all()
    assert (beats.length.iloc[:-1].to_numpy() == np.diff(beats.peak)).all()
    assert bpm[0] * duration_s / 60 < len(beats) < bpm[1] * duration_s / 60
    return beats


def check_embedding(results: Path, beats: pd.DataFrame, *, channels: int, length: int) -> None:
    rows = np.load(results / "embedding.npy", allow_pickle=False)
    assert rows.dtype == np.float32 and rows.shape == (beats.kept.sum(), channels, length)


def check_model(results: Path, *, epochs: int, latent_dim: int = 8, train_fraction: float = 0.75) -> None:
    import torch

    saved = torch.load(results / "model.pt", weights_only=True)
    assert saved["hparams"]["latent_dim"] == latent_dim
    assert saved["hparams"]["train_fraction"] == train_fraction
    assert len(saved["loss_per_epoch"]) == epochs and saved["loss_per_epoch"][-1] < saved["loss_per_epoch"][0]
    assert "to_mu.weight" in saved["state_dict"]


def check_scores(results: Path, beats: pd.DataFrame, *, fs: float, train_fraction: float = 0.75) -> pd.DataFrame:
    scores = pd.read_parquet(results / "scores.parquet")
    assert list(scores.columns) == [
        "beat",
        "peak",
        "time_s",
        "split",
        "score",
        "anomaly",
        "reason",
        "class",
        "family",
        "class_p",
    ]
    assert (scores.beat == beats.beat).all() and (scores.peak == beats.peak).all()
    np.testing.assert_allclose(scores.time_s, scores.peak / fs)
    assert set(scores.split) <= {"train", "test", "pruned"}
    assert ((scores.split == "pruned") == ~beats.kept).all()
    kept = scores[scores.split != "pruned"]
    assert (kept.split == "train").mean() == pytest.approx(train_fraction, abs=0.01)
    assert set(scores.reason) <= {"", "morphology", "rhythm"}
    assert set(scores["class"]) <= set("NSVFQ") and (scores.family >= -1).all()
    assert scores.class_p.dtype == np.float64 and scores.class_p.between(0.0, 1.0).all()  # the class's confidence
    # an anomaly: a score above 1, an ectopic class, or a kept beat whose shape is unlike any family
    ectopic = scores["class"].isin(["S", "V", "F"])
    unlike_any_family = (scores.split != "pruned") & (scores.family < 0)
    assert ((scores.reason != "") == scores.anomaly).all()
    assert (scores.anomaly == ((scores.score > 1) | ectopic | unlike_any_family)).all()
    return scores


def check_latent(results: Path, scores: pd.DataFrame, *, latent_dim: int = 8) -> None:
    latent = pd.read_parquet(results / "latent.parquet")
    assert list(latent.columns) == ["beat", *[f"z{i}" for i in range(latent_dim)], "score"]
    test = scores[scores.split == "test"]
    assert latent.beat.tolist() == test.beat.tolist()
    np.testing.assert_allclose(latent.score, test.score)


def check_plots(results: Path) -> None:
    """Every figure as PNG and HTML; the event strips (PNG, and their list: each event inside the record, its
    strip 10 s or the record) and the report page (rule holter_report), which shows the strips' PNG inline and
    fits the report's frame (its data URI under :data:`FRAME_URI_LIMIT`)."""
    for name in PLOTS:
        assert (results / "plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert "<html" in (results / "plots" / f"{name}.html").read_text()[:2000].lower(), name
    assert (results / "plots" / "strips.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    strips = json.loads((results / "plots" / "strips.json").read_text())
    duration_s = json.loads((results / "holter.json").read_text())["duration_s"]
    assert strips["record"] == results.name and [e["number"] for e in strips["events"]] == list(
        range(1, len(strips["events"]) + 1)
    )
    for e in strips["events"]:
        assert 0 <= e["start_s"] <= e["at_s"] <= e["end_s"] <= duration_s + 1e-6, e
        assert abs(e["end_s"] - e["start_s"] - min(strips["strip_s"], duration_s)) < 1e-6, e
    page = (results / "report" / "summary.html").read_text()
    assert f"Holter report — record {results.name}" in page and 4 * len(page.encode()) / 3 < FRAME_URI_LIMIT
    strips_png = base64.b64encode((results / "plots" / "strips.png").read_bytes()).decode()
    assert f"src='data:image/png;base64,{strips_png}'" in page


HOLTER_KEYS = {
    "record",
    "start",
    "duration_s",
    "analysed_s",
    "artefact",
    "beats",
    "heart_rate",
    "hourly",
    "ventricular",
    "supraventricular",
    "pauses",
    "af",
    "tachycardia",
    "hrv",
}


def check_holter(results: Path, scores: pd.DataFrame, *, duration_s: float) -> dict:
    """``holter.json`` (docs/contracts.md "holter.json"): its fields, beat counts equal to the classes of
    ``scores.parquet``, the per-minute table over the record, the ectopy counts adding up."""
    h = json.loads((results / "holter.json").read_text())
    assert HOLTER_KEYS <= set(h), sorted(HOLTER_KEYS - set(h))
    assert h["record"] == results.name and abs(h["duration_s"] - duration_s) < 1.0
    assert 0 < h["analysed_s"] <= h["duration_s"]
    counts = scores["class"].value_counts()
    assert h["beats"] == {"total": len(scores), **{c: int(counts.get(c, 0)) for c in "NSVFQ"}}
    rate = h["heart_rate"]
    assert rate["min_bpm"] <= rate["max_bpm"] and rate["mean_bpm"] > 0  # the mean counts a last partial minute too
    assert 0 <= rate["min_at_s"] < duration_s and 0 <= rate["max_at_s"] < duration_s
    assert len(rate["minutes"]) == int(duration_s // 60)
    assert {m["bpm"] for m in rate["minutes"]} >= {rate["min_bpm"], rate["max_bpm"]}
    for part, cls in (("ventricular", "V"), ("supraventricular", "S")):
        e = h[part]
        in_runs = e["isolated"] + 2 * e["couplets"] + sum(r["beats"] for r in e["runs"])
        assert in_runs <= h["beats"][cls], (part, e)
        assert all(r["beats"] >= 3 and r["end_s"] > r["start_s"] and r["rate_bpm"] > 0 for r in e["runs"])
    assert all(p["duration_s"] >= 2.0 for p in h["pauses"])
    assert 0.0 <= h["af"]["burden"] <= 1.0
    assert set(h["hrv"]) == {"sdnn_ms", "sdann_ms", "sdnn_index_ms", "rmssd_ms", "pnn50", "coverage"}
    assert 0.0 <= h["hrv"]["coverage"] <= 1.0
    check_holter_fields(h)
    return h


def check_holter_fields(h: dict) -> None:
    """The fields docs/contracts.md added to ``holter.json``: ``start``, ``artefact``, the 8-beat ``fastest`` /
    ``slowest``, ``tachycardia``; each with its definition's bounds."""
    from datetime import datetime

    assert h["start"] is None or datetime.fromisoformat(h["start"])
    a = h["artefact"]
    assert set(a) == {"episodes", "total_s"} and 0.0 <= a["total_s"] <= h["duration_s"] - h["analysed_s"] + 1e-6
    for e in a["episodes"]:
        assert set(e) == {"start_s", "end_s", "leads"} and 0 <= e["start_s"] < e["end_s"] <= h["duration_s"] + 1e-6
    rate = h["heart_rate"]
    for key in ("fastest", "slowest"):
        assert set(rate[key]) == {"bpm", "at_s"}, key
    if rate["fastest"]["bpm"] is not None:
        assert rate["slowest"]["bpm"] <= rate["fastest"]["bpm"]
    runs = {("VT", r["start_s"]) for r in h["ventricular"]["runs"] if r["rate_bpm"] >= 100}
    runs |= {("SVT", r["start_s"]) for r in h["supraventricular"]["runs"] if r["rate_bpm"] >= 100}
    assert {(t["kind"], t["start_s"]) for t in h["tachycardia"]} == runs
    for t in h["tachycardia"]:
        assert set(t) == {"kind", "start_s", "end_s", "beats", "rate_bpm"} and t["beats"] >= 3


def check_annotations(results: Path, scores: pd.DataFrame, h: dict, *, fs: float) -> None:
    """``beats.atr`` (rule holter): ``wfdb.rdann`` reads it at the record's ``fs``, every beat at its peak with
    its class's MIT symbol, and each AF episode as ``+`` ``(AFIB`` at its start and ``+`` ``(N`` at its end."""
    import wfdb

    ann = wfdb.rdann(str(results / "beats"), "atr")
    assert ann.fs == fs
    symbols = np.array(ann.symbol)
    beat = symbols != "+"
    assert (ann.sample[beat] == scores.peak.to_numpy()).all()
    mit = scores["class"].map({"N": "N", "S": "A", "V": "V", "F": "F", "Q": "Q"}).to_numpy()
    assert (symbols[beat] == mit).all()
    rhythm = [(int(x), a) for x, a, s in zip(ann.sample, ann.aux_note, symbols, strict=True) if s == "+"]
    edges = (("start_s", "(AFIB"), ("end_s", "(N"))
    expected = [(round(e[edge] * fs), note) for e in h["af"]["episodes"] for edge, note in edges]
    assert rhythm == expected


def check_evaluation(
    results: Path, *, min_detection: float = 0.99, min_auroc: float = 0.97, labels: dict[str, float] | None = None
) -> dict:
    """Detection against the truth, and the anomaly scores against it: the AUROC (abnormal against normal
    beats) at least ``min_auroc``, and each label of ``labels`` (label -> its own AUROC floor) present in the
    truth, detected, with its AUROC at least that floor. The floors are set below what the CPU workflow
    reaches on the records of the tests that call this (each caller states its measurement)."""
    e = json.loads((results / "evaluation.json").read_text())
    assert e["sensitivity"] >= min_detection and e["ppv"] >= min_detection and e["f1"] >= min_detection, e
    assert e["auroc"] >= min_auroc, (e["auroc"], min_auroc)
    for label, floor in (labels or {}).items():
        figures = e["per_label"].get(label)
        assert figures is not None, f"label {label} missing from per_label {sorted(e['per_label'])}"
        assert figures["n"] > 0 and figures["detected"] > 0, (label, figures)
        assert figures["auroc"] is not None and figures["auroc"] >= floor, (label, figures["auroc"], floor)
    return e


def check_record(
    results: Path,
    *,
    leads: list[str],
    fs: float,
    duration_s: float,
    epochs: int,
    length_s: float = 1.0,
    latent_dim: int = 8,
    train_fraction: float = 0.75,
    truth: bool = True,
    min_detection: float = 0.99,
    min_auroc: float = 0.97,
    labels: dict[str, float] | None = None,
) -> None:
    """Every output contract of one finished record (``results`` = ``results/{record}``); with ``truth``, the
    evaluation at ``min_auroc`` and the ``labels`` floors (:func:`check_evaluation`), without it no
    evaluation.json."""
    check_signal(results, leads=leads, fs=fs, n_samples=round(duration_s * fs))
    beats = check_beats(results, duration_s=duration_s)
    check_embedding(results, beats, channels=len(leads), length=round(length_s * fs))
    check_model(results, epochs=epochs, latent_dim=latent_dim, train_fraction=train_fraction)
    scores = check_scores(results, beats, fs=fs, train_fraction=train_fraction)
    check_latent(results, scores, latent_dim=latent_dim)
    check_annotations(results, scores, check_holter(results, scores, duration_s=duration_s), fs=fs)
    check_plots(results)
    if truth:
        check_evaluation(results, min_detection=min_detection, min_auroc=min_auroc, labels=labels)
    else:
        assert not (results / "evaluation.json").exists()


def report_files(html: str) -> dict[str, bytes]:
    """The files a Snakemake report embeds: result path -> the bytes of its data URI."""
    found = re.finditer(r'"(results/[^"]+)": \{"name": .*?"data_uri": "data:[^"]*?;base64,([A-Za-z0-9+/=]*)"', html)
    return {m.group(1): base64.b64decode(m.group(2)) for m in found}


FRAME_URI_LIMIT = 2 * 1024 * 1024  # Chromium shows no frame whose address (the data URI) is longer (issue 26)
REPORT_PAGES = ("report/summary.html", "plots/strips.png")  # rule holter_report


def report_results(html: str) -> dict[str, dict]:
    """The report's ``results`` object: result path -> its entry (``mime_type``, ``data_uri``, …)."""
    start = html.index("var results = {") + len("var results = ")
    return json.JSONDecoder().raw_decode(html, start)[0]


def check_report(report: Path, run: Path, records: list[str], *, cohort: bool = False) -> dict[str, bytes]:
    """The report embeds each record's summary page, event strips and every figure's PNG byte for byte as they
    are in ``run``/results (the cohort figure's too when ``cohort``), and no HTML file that a browser would
    refuse to show in its frame (the interactive figures, each with BokehJS inlined, stay beside the report);
    returns the embedded files."""
    text = Path(report).read_text()
    embedded = report_files(text)
    expected = [f"results/{r}/plots/{name}.png" for r in records for name in PLOTS]
    expected += [f"results/{r}/{page}" for r in records for page in REPORT_PAGES]
    expected += ["results/cohort/cohort.png"] if cohort else []
    missing = sorted(set(expected) - set(embedded))
    assert not missing, f"the report lacks {missing} (it embeds {sorted(embedded)})"
    for path in expected:
        assert embedded[path] == (run / path).read_bytes(), f"the report's {path} differs from the file"
    too_big = {
        path: len(r["data_uri"])
        for path, r in report_results(text).items()
        if r["mime_type"] == "text/html" and len(r["data_uri"]) > FRAME_URI_LIMIT
    }
    assert not too_big, f"HTML files a browser shows blank in the report's frame (data URI characters): {too_big}"
    return embedded
