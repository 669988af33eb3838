"""Faults: killed jobs leave nothing that looks complete and a rerun recovers; out-of-memory handling;
results are deterministic; bad sheets and configs stop before any job runs."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import artifact_paths, copy_project, snakemake

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import segment
from beatflow.embed.rows import EmbedParams, embed
from beatflow.errors import BeatflowError
from beatflow.io.ingest import IngestParams, ingest
from beatflow.learn.train import TrainParams, fit, train
from beatflow.score.scores import ScoreParams, score


def test_killed_writer_leaves_no_artifact(tmp_path):
    out = tmp_path / "model.pt"
    code = (
        "import os, signal; from beatflow.io.atomic import atomic_path\n"
        f"with atomic_path({str(out)!r}) as tmp:\n"
        "    tmp.write_bytes(b'half written')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == -signal.SIGKILL
    assert not out.exists()


def test_failed_writer_leaves_nothing_at_all(tmp_path):
    from beatflow.io.atomic import atomic_path

    with pytest.raises(RuntimeError), atomic_path(tmp_path / "a.npy") as tmp:
        tmp.write_bytes(b"partial")
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def wait_for(path, pattern, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and (m := re.search(pattern, path.read_text())):
            return m
        time.sleep(0.2)
    raise AssertionError(f"{pattern!r} never appeared in {path}")


@pytest.mark.workflow
def test_killed_jobs_and_killed_snakemake_recover_on_rerun(tmp_path):
    run = copy_project(tmp_path)
    config = run / "config" / "config.yaml"
    config.write_text(config.read_text() + "train:\n  epochs: 5000\n")
    model = run / "results" / "demo" / "model.pt"
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2"]

    # 1. the train job is killed (OOM killer, scheduler): Snakemake fails, nothing complete-looking is left
    proc = subprocess.Popen(cmd, cwd=run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = int(wait_for(run / "logs" / "demo" / "train.log", r"start \(pid (\d+)[\s\S]*epoch 2/").group(1))
    os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=120) != 0
    assert not model.exists()

    # 2. Snakemake itself is killed mid-train: unlock, rerun, and the workflow completes
    proc = subprocess.Popen(cmd, cwd=run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for(run / "logs" / "demo" / "train.log", r"epoch 2/")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert not model.exists()
    config.write_text(config.read_text().replace("epochs: 5000", "epochs: 2"))
    snakemake(run, "--unlock")
    snakemake(run)
    assert torch.load(model, weights_only=True)["hparams"]["epochs"] == 2
    assert len(pd.read_parquet(run / "results" / "demo" / "scores.parquet")) > 1000


def test_training_out_of_memory_retries_with_smaller_batches(monkeypatch, caplog):
    from beatflow.learn import model

    real = model.loss_terms

    def small_batches_only(m, x):
        if x.shape[0] > 16:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(m, x)

    monkeypatch.setattr(model, "loss_terms", small_batches_only)
    _, history = fit(torch.randn(1024, 1, 16), TrainParams.defaults(epochs=2, batch_size=64), torch.device("cpu"))
    assert len(history) == 2
    assert (
        "batch size 64; starting again with 32" in caplog.text
        and "batch size 32; starting again with 16" in caplog.text
    )

    monkeypatch.setattr(model, "loss_terms", lambda m, x: (_ for _ in ()).throw(torch.OutOfMemoryError("oom")))
    with pytest.raises(BeatflowError, match="even at batch size 1: reduce embed.length_s or set device: cpu"):
        fit(torch.randn(8, 1, 16), TrainParams.defaults(epochs=1, batch_size=4), torch.device("cpu"))


def test_segmentation_out_of_memory_says_what_to_change(monkeypatch, short_record, tmp_path, cpu):
    import beatflow.detect.segment as seg

    ingest(
        "r",
        {"path": short_record[0]},
        {"signal": tmp_path / "s.parquet"},
        IngestParams.defaults(),
        cpu,
        fs=250.0,
        leads=None,
    )
    monkeypatch.setattr(seg, "detect_peaks", lambda *a: (_ for _ in ()).throw(MemoryError("out of memory")))
    with pytest.raises(BeatflowError, match="record 'r'.*out of CPU memory segmenting 150000 samples.*device: cpu"):
        segment(
            "r", {"signal": tmp_path / "s.parquet"}, {"beats": tmp_path / "b.parquet"}, SegmentParams.defaults(), cpu
        )
    assert not (tmp_path / "b.parquet").exists()


def test_embedding_out_of_memory_says_what_to_change(monkeypatch, short_record, tmp_path, cpu):
    import beatflow.embed.rows as emb

    ingest(
        "r",
        {"path": short_record[0]},
        {"signal": tmp_path / "s.parquet"},
        IngestParams.defaults(),
        cpu,
        fs=250.0,
        leads=None,
    )
    segment("r", {"signal": tmp_path / "s.parquet"}, {"beats": tmp_path / "b.parquet"}, SegmentParams.defaults(), cpu)
    monkeypatch.setattr(emb, "embed_beats", lambda *a: (_ for _ in ()).throw(MemoryError("out of memory")))
    with pytest.raises(
        BeatflowError,
        match=r"record 'r'.*out of CPU memory embedding \d+ beats x 1 lead\(s\) x 250 "
        r"samples.*reduce embed.length_s",
    ):
        emb.embed(
            "r",
            {"signal": tmp_path / "s.parquet", "beats": tmp_path / "b.parquet"},
            {"embedding": tmp_path / "e.npy"},
            EmbedParams.defaults(length_s=1.0),
            cpu,
        )
    assert not (tmp_path / "e.npy").exists()


def test_corrupt_signal_parquet_is_a_clear_error(short_record, tmp_path, cpu):
    ingest(
        "r",
        {"path": short_record[0]},
        {"signal": tmp_path / "s.parquet"},
        IngestParams.defaults(),
        cpu,
        fs=250.0,
        leads=None,
    )
    data = (tmp_path / "s.parquet").read_bytes()
    (tmp_path / "s.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(BeatflowError, match="s.parquet: not a readable parquet file"):
        segment(
            "r", {"signal": tmp_path / "s.parquet"}, {"beats": tmp_path / "b.parquet"}, SegmentParams.defaults(), cpu
        )


def test_same_input_config_and_seed_give_identical_results(short_record, tmp_path, cpu):
    csv, _, _ = short_record
    runs = []
    for k in range(2):
        d = tmp_path / str(k)
        d.mkdir()
        ingest(
            "r",
            {"path": csv},
            {"signal": d / "signal.parquet"},
            IngestParams.defaults(),
            cpu,
            fs=250.0,
            leads=["MLII", "V1"],
        )
        segment("r", {"signal": d / "signal.parquet"}, {"beats": d / "beats.parquet"}, SegmentParams.defaults(), cpu)
        embed(
            "r",
            {"signal": d / "signal.parquet", "beats": d / "beats.parquet"},
            {"embedding": d / "embedding.npy"},
            EmbedParams.defaults(length_s=1.0),
            cpu,
        )
        p = TrainParams.defaults(epochs=3)
        train(
            "r",
            {"embedding": d / "embedding.npy", "beats": d / "beats.parquet", "signal": d / "signal.parquet"},
            {"model": d / "model.pt"},
            p,
            cpu,
        )
        score("r", artifact_paths(d), artifact_paths(d), ScoreParams.defaults(), cpu)
        runs.append(d)
    for name in ("signal.parquet", "beats.parquet", "embedding.npy"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name
    a, b = (pd.read_parquet(d / "scores.parquet") for d in runs)
    np.testing.assert_allclose(a.score, b.score, rtol=1e-5)
    assert (a.anomaly == b.anomaly).all()


SHEET_HEADER = "record\tpath\tfs\tleads\ttruth\n"


@pytest.mark.parametrize(
    "sheet,message",
    [
        (SHEET_HEADER + "a\tx.csv\t250\t\t\na\ty.csv\t250\t\t\n", "duplicate record names ['a']"),
        (SHEET_HEADER + "../etc\tx.csv\t250\t\t\n", "record '../etc' (row 1): the name must match [A-Za-z0-9_.-]+"),
        ("record\tfs\na\t250\n", "missing column(s) ['path']"),
        ("", "records sheet config/records.tsv: not a tab-separated table with a header"),
        (SHEET_HEADER + "a\tx.txt\t250\t\t\n", "x.txt"),
        (SHEET_HEADER + "a\tx.csv\t-3\t\t\n", "-3"),
    ],
)
def test_bad_records_sheet_stops_before_any_job(tmp_path, sheet, message):
    run = copy_project(tmp_path)
    (run / "config" / "records.tsv").write_text(sheet)
    out = snakemake(run, "--dry-run", check=False)
    assert out.returncode != 0 and message in out.stdout + out.stderr
    assert not (run / "results").exists()


@pytest.mark.parametrize(
    "old,new,message",
    [  # old "": new is added to config.yaml
        ("", "segment:\n  min_rr_s: 4.0\n", "segment.min_rr_s (4.0) must be below segment.max_rr_s (3.0)"),
        ("", "train:\n  train_fraction: 1.5\n", "1.5 is greater than or equal to the maximum of 1"),
        ("", "train:\n  epochs: many\n", "'many' is not of type 'integer'"),
        ("records: config/records.tsv", "records: missing.tsv", "records sheet missing.tsv not found"),
        ("", "segment:\n  threshold: 0.6\n  thresold: 0.5\n", "'thresold' was unexpected"),
    ],
)
def test_bad_config_stops_before_any_job(tmp_path, old, new, message):
    run = copy_project(tmp_path)
    config = run / "config" / "config.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new) if old else text + new)
    out = snakemake(run, "--dry-run", check=False)
    assert out.returncode != 0 and message in out.stdout + out.stderr
