"""The GPU backend against the CPU backend on the same inputs (skipped without a GPU)."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import artifact_paths

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import segment
from beatflow.embed.rows import embed
from beatflow.io import arrays
from beatflow.io.ingest import ingest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def both(short_record, tmp_path_factory, cpu, gpu):
    """ingest → segment → embed of one record on each backend: ``{"cpu": dir, "gpu": dir}``."""
    csv, _, _ = short_record
    out = {}
    for name, backend in (("cpu", cpu), ("gpu", gpu)):
        d = tmp_path_factory.mktemp(name)
        ingest("r", csv, 250.0, ["MLII", "V1"], d / "signal.parquet", backend)
        segment("r", d / "signal.parquet", d / "beats.parquet", SegmentParams(), backend)
        embed("r", d / "signal.parquet", d / "beats.parquet", d / "embedding.npy", 1.0, backend)
        out[name] = d
    return out


def test_ingest_gpu_writes_the_same_signal(both):
    cpu_table, gpu_table = (pq.read_table(both[k] / "signal.parquet") for k in ("cpu", "gpu"))
    assert gpu_table.schema.metadata[b"fs"] == cpu_table.schema.metadata[b"fs"] == b"250.0"
    assert gpu_table.column_names == cpu_table.column_names == ["MLII", "V1"]
    for name in cpu_table.column_names:
        np.testing.assert_array_equal(gpu_table.column(name).to_numpy(), cpu_table.column(name).to_numpy())


def test_segment_gpu_finds_the_same_beats(both):
    cpu_beats, gpu_beats = (pd.read_parquet(both[k] / "beats.parquet") for k in ("cpu", "gpu"))
    pd.testing.assert_frame_equal(gpu_beats, cpu_beats)


def test_embed_gpu_rows_equal_cpu_and_load_with_numpy(both):
    cpu_rows, gpu_rows = (np.load(both[k] / "embedding.npy") for k in ("cpu", "gpu"))
    assert gpu_rows.dtype == np.float32 and gpu_rows.shape == cpu_rows.shape
    np.testing.assert_allclose(gpu_rows, cpu_rows, rtol=0, atol=1e-5)  # float64 FFTs: cuFFT vs pocketfft


def test_kvikio_round_trip(tmp_path, gpu):
    import cupy

    a = cupy.random.default_rng(1).standard_normal((33, 2, 250), dtype=cupy.float32)
    arrays.save(tmp_path / "a.npy", a, gpu=True)
    b = arrays.load(tmp_path / "a.npy", gpu=True)
    assert isinstance(b, cupy.ndarray)
    cupy.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), a.get())


def test_dlpack_hands_device_memory_to_torch_without_copy(gpu):
    import cupy

    from beatflow.backend import torch_device
    from beatflow.learn.train import as_tensor

    rows = cupy.ones((4, 2, 8), dtype=cupy.float32)
    t = as_tensor(rows, gpu, torch_device(gpu))
    assert t.is_cuda and t.data_ptr() == rows.data.ptr


def test_train_score_plot_on_gpu(both, gpu, short_record):
    from beatflow.evaluate import write_evaluation
    from beatflow.learn.train import TrainParams, train
    from beatflow.report.plots import plot
    from beatflow.score.scores import ScoreParams, score

    d = both["gpu"]
    p = TrainParams(epochs=3)
    train("r", d / "embedding.npy", d / "beats.parquet", d / "model.pt", p, gpu, fs=250.0)
    paths = artifact_paths(d)
    score("r", paths, SegmentParams(), p, ScoreParams(), gpu)
    scores = pd.read_parquet(paths["scores"])
    assert np.isfinite(scores.score).all() and set(scores.split) == {"train", "test", "pruned"} - (
        set() if (~pd.read_parquet(paths["beats"]).kept).any() else {"pruned"})
    result = write_evaluation("r", short_record[1], paths["scores"], paths["signal"], d / "evaluation.json")
    assert result["sensitivity"] >= 0.99 and result["ppv"] >= 0.99
    plot("r", paths, d / "plots", SegmentParams(), gpu)
    for name in ("latent", "trace", "lengths", "gallery"):
        assert (d / "plots" / f"{name}.png").stat().st_size > 1000
        assert (d / "plots" / f"{name}.html").stat().st_size > 1000


def test_gpu_runs_are_deterministic(both, gpu, tmp_path):
    from beatflow.learn.train import TrainParams, train
    from beatflow.score.scores import ScoreParams, score

    d = both["gpu"]
    segment("r", d / "signal.parquet", tmp_path / "beats.parquet", SegmentParams(), gpu)
    assert (tmp_path / "beats.parquet").read_bytes() == (d / "beats.parquet").read_bytes()
    scores = []
    for k in range(2):
        p = TrainParams(epochs=3)
        train("r", d / "embedding.npy", d / "beats.parquet", tmp_path / f"m{k}.pt", p, gpu, fs=250.0)
        paths = artifact_paths(d, model=tmp_path / f"m{k}.pt", scores=tmp_path / f"s{k}.parquet",
                               latent=tmp_path / f"l{k}.parquet")
        score("r", paths, SegmentParams(), p, ScoreParams(), gpu)
        scores.append(pd.read_parquet(paths["scores"]))
    np.testing.assert_allclose(scores[0].score, scores[1].score, rtol=1e-3, atol=1e-4)
