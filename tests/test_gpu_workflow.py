"""The workflow on the GPU, where each warm worker also warms its kernels up: the same results as with a
process per job."""

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import copy_project, snakemake

pytestmark = [pytest.mark.gpu, pytest.mark.workflow]


def test_gpu_workflow_in_warm_workers_matches_a_process_per_job(gpu, tmp_path):
    runs = {}
    for mode in ("on", "off"):
        (tmp_path / mode).mkdir()
        runs[mode] = copy_project(tmp_path / mode)
        snakemake(runs[mode], "--config", "device=gpu", env={"BEATFLOW_WORKER": mode})
    warm, cold = (runs[m] / "results" / "demo" for m in ("on", "off"))
    for name in ("signal.parquet", "beats.parquet", "scores.parquet", "latent.parquet"):
        assert pq.read_table(warm / name).equals(pq.read_table(cold / name), check_metadata=True), name
    assert np.array_equal(np.load(warm / "embedding.npy"), np.load(cold / "embedding.npy"))
    assert (warm / "evaluation.json").read_text() == (cold / "evaluation.json").read_text()
    assert "; warm worker" in (runs["on"] / "logs/demo/segment.log").read_text()
    for rule in ("ingest", "segment", "embed", "train", "score"):
        assert "backend: gpu" in (runs["on"] / "logs/demo" / f"{rule}.log").read_text(), rule
