"""Segmentation and embedding in bounded memory: a run transforming one block at a time writes the same
``beats.parquet`` and ``embedding.npy`` as a run transforming all blocks at once (CPU, and GPU when present)."""

import numpy as np
import pytest

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import segment
from beatflow.dsp import convolve
from beatflow.embed.rows import EmbedParams, embed
from beatflow.io.ingest import IngestParams, ingest


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    return request.getfixturevalue(request.param)


def test_one_block_at_a_time_writes_identical_artifacts(short_record, backend, tmp_path, monkeypatch):
    csv, _, _ = short_record
    ingest(
        "r",
        {"path": csv},
        {"signal": tmp_path / "signal.parquet"},
        IngestParams.defaults(),
        backend,
        fs=250.0,
        leads=["MLII", "V1"],
    )
    batches = []
    real = convolve._blocks
    monkeypatch.setattr(
        convolve, "_blocks", lambda x, start, count, *a: batches.append(count) or real(x, start, count, *a)
    )
    for run, work_bytes in (("whole", None), ("chunked", 1)):
        batches.clear()
        d = tmp_path / run
        d.mkdir()
        segment(
            "r",
            {"signal": tmp_path / "signal.parquet"},
            {"beats": d / "beats.parquet"},
            SegmentParams.defaults(),
            backend,
            work_bytes,
        )
        embed(
            "r",
            {"signal": tmp_path / "signal.parquet", "beats": d / "beats.parquet"},
            {"embedding": d / "embedding.npy"},
            EmbedParams.defaults(length_s=1.0),
            backend,
            work_bytes=work_bytes,
        )
        assert (max(batches) == 1) == (run == "chunked") and sum(
            batches
        ) == 15  # 3 blocks × (bank, second lead's bank, veto, 2 leads)
    assert (tmp_path / "chunked" / "beats.parquet").read_bytes() == (tmp_path / "whole" / "beats.parquet").read_bytes()
    np.testing.assert_array_equal(
        np.load(tmp_path / "chunked" / "embedding.npy"), np.load(tmp_path / "whole" / "embedding.npy")
    )
