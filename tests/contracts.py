"""The output contracts of one record's results (DESIGN.md, README "Outputs"), as reusable checks.

``check_record(run / "results" / name, ...)`` asserts every file of a finished record; the single checks
can be used on their own. No test functions here (so importing this module collects nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

PLOTS = ("latent", "trace", "lengths", "gallery")


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
    assert list(scores.columns) == ["beat", "peak", "time_s", "split", "score", "anomaly", "reason"]
    assert (scores.beat == beats.beat).all() and (scores.peak == beats.peak).all()
    np.testing.assert_allclose(scores.time_s, scores.peak / fs)
    assert set(scores.split) <= {"train", "test", "pruned"}
    assert ((scores.split == "pruned") == ~beats.kept).all()
    kept = scores[scores.split != "pruned"]
    assert (kept.split == "train").mean() == pytest.approx(train_fraction, abs=0.01)
    assert set(scores.reason) <= {"", "morphology", "rhythm"}
    assert ((scores.reason != "") == scores.anomaly).all() and (scores.anomaly == (scores.score > 1)).all()
    return scores


def check_latent(results: Path, scores: pd.DataFrame, *, latent_dim: int = 8) -> None:
    latent = pd.read_parquet(results / "latent.parquet")
    assert list(latent.columns) == ["beat", *[f"z{i}" for i in range(latent_dim)], "score"]
    test = scores[scores.split == "test"]
    assert latent.beat.tolist() == test.beat.tolist()
    np.testing.assert_allclose(latent.score, test.score)


def check_plots(results: Path) -> None:
    for name in PLOTS:
        assert (results / "plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert "<html" in (results / "plots" / f"{name}.html").read_text()[:2000].lower(), name


def check_evaluation(results: Path, *, min_detection: float = 0.99) -> dict:
    """Detection against the truth; the AUROC only as a number in [0, 1] (it depends on training length)."""
    e = json.loads((results / "evaluation.json").read_text())
    assert e["sensitivity"] >= min_detection and e["ppv"] >= min_detection and e["f1"] >= min_detection
    assert 0.0 <= e["auroc"] <= 1.0
    assert isinstance(e["per_label"], dict)
    return e


def check_record(results: Path, *, leads: list[str], fs: float, duration_s: float, epochs: int,
                 length_s: float = 1.0, latent_dim: int = 8, train_fraction: float = 0.75,
                 truth: bool = True) -> None:
    """Every output contract of one finished record (``results`` = ``results/{record}``)."""
    check_signal(results, leads=leads, fs=fs, n_samples=round(duration_s * fs))
    beats = check_beats(results, duration_s=duration_s)
    check_embedding(results, beats, channels=len(leads), length=round(length_s * fs))
    check_model(results, epochs=epochs, latent_dim=latent_dim, train_fraction=train_fraction)
    scores = check_scores(results, beats, fs=fs, train_fraction=train_fraction)
    check_latent(results, scores, latent_dim=latent_dim)
    check_plots(results)
    if truth:
        check_evaluation(results)
    else:
        assert not (results / "evaluation.json").exists()
