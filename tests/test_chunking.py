"""Segmentation and embedding in bounded memory: a run transforming one block at a time writes the same
``beats.parquet`` and ``embedding.npy`` as a run transforming all blocks at once (CPU, and GPU when present)."""

import numpy as np
import pytest

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import segment
from beatflow.dsp import convolve
from beatflow.embed.rows import embed
from beatflow.io.ingest import ingest


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    return request.getfixturevalue(request.param)


def test_one_block_at_a_time_writes_identical_artifacts(short_record, backend, tmp_path, monkeypatch):
    csv, _, _ = short_record
    ingest("r", csv, 250.0, ["MLII", "V1"], tmp_path / "signal.parquet", backend)
    batches = []
    real = convolve._blocks
    monkeypatch.setattr(convolve, "_blocks", lambda x, start, count, *a: batches.append(count) or
                        real(x, start, count, *a))
    for run, work_bytes in (("whole", None), ("chunked", 1)):
        batches.clear()
        d = tmp_path / run
        d.mkdir()
        segment("r", tmp_path / "signal.parquet", d / "beats.parquet", SegmentParams(), backend, work_bytes)
        embed("r", tmp_path / "signal.parquet", d / "beats.parquet", d / "embedding.npy", 1.0, backend,
              work_bytes=work_bytes)
        assert (max(batches) == 1) == (run == "chunked") and sum(batches) == 15  # 3 blocks × (bank, second lead's bank, veto, 2 leads)
    assert (tmp_path / "chunked" / "beats.parquet").read_bytes() == (tmp_path / "whole" / "beats.parquet").read_bytes()
    np.testing.assert_array_equal(np.load(tmp_path / "chunked" / "embedding.npy"),
                                  np.load(tmp_path / "whole" / "embedding.npy"))
