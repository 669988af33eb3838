"""Kernels against plain-Python references; the CUDA kernels (simulated without a GPU) equal the CPU ones."""

import numpy as np
import pytest
from numba import cuda

from beatflow.detect.nms import nms_cpu
from beatflow.detect.nms_cuda import nms_cuda
from beatflow.embed.kernels import embed_cpu
from beatflow.embed.kernels_cuda import embed_cuda


def nms_reference(r, half):
    n = len(r)
    out = np.zeros(n, bool)
    for i in range(n):
        left = r[max(i - half, 0) : i]
        right = r[i + 1 : min(i + half + 1, n)]
        out[i] = (left < r[i]).all() and (right <= r[i]).all()
    return out


def embed_reference(x, starts, lengths, width):
    out = np.zeros((len(starts), x.shape[0], width), np.float32)
    for b, (s, n) in enumerate(zip(starts, lengths)):
        m = min(n, width, x.shape[1] - s)
        for c in range(x.shape[0]):
            seg = x[c, s : s + m].astype(np.float64)
            out[b, c, :m] = seg - seg.mean()
    return out


def nms_inputs():
    rng = np.random.default_rng(7)
    yield "random", rng.standard_normal(257).astype(np.float32)
    yield "plateaus", rng.integers(0, 4, 300).astype(np.float32)  # many ties
    yield "constant", np.ones(50, np.float32)
    yield "ramp", np.arange(40, dtype=np.float32)  # maximum at the right edge
    yield "single", np.array([3.0], np.float32)


@pytest.mark.parametrize("half", [1, 2, 5, 17, 400])
@pytest.mark.parametrize("name,r", list(nms_inputs()), ids=lambda v: v if isinstance(v, str) else "")
def test_nms_cpu_matches_reference(name, r, half):
    np.testing.assert_array_equal(nms_cpu(r, half), nms_reference(r, half))


@pytest.mark.parametrize("floor", [-1.0, 0.0, 0.5, 2.0])
def test_nms_floor_keeps_only_maxima_above_it(floor):
    r = next(nms_inputs())[1]
    np.testing.assert_array_equal(nms_cpu(r, 5, floor), nms_reference(r, 5) & (r > floor))
    out = cuda.to_device(np.zeros(len(r), np.bool_))
    nms_cuda(cuda.to_device(r), 5, out, floor)
    np.testing.assert_array_equal(out.copy_to_host(), nms_reference(r, 5) & (r > floor))


def test_nms_known_answer():
    r = np.array([0, 2, 2, 1, 5, 1, 0, 3, 3, 3, 0], np.float32)
    assert np.flatnonzero(nms_cpu(r, 1)).tolist() == [1, 4, 7]  # leftmost of each plateau
    assert np.flatnonzero(nms_cpu(r, 2)).tolist() == [1, 4, 7]
    assert np.flatnonzero(nms_cpu(r, 3)).tolist() == [4]


@pytest.mark.parametrize("half", [1, 5, 17])
@pytest.mark.parametrize("name,r", list(nms_inputs()), ids=lambda v: v if isinstance(v, str) else "")
def test_nms_cuda_equals_cpu(name, r, half):
    out = cuda.to_device(np.zeros(len(r), np.bool_))
    nms_cuda(cuda.to_device(r), half, out)
    np.testing.assert_array_equal(out.copy_to_host(), nms_cpu(r, half))


def embed_inputs():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 500)).astype(np.float32) + 3.0
    starts = np.array([0, 10, 100, 470, 495], np.int64)
    lengths = np.array([5, 40, 25, 100, 1], np.int64)  # shorter, longer than width; runs off the end
    return x, starts, lengths


@pytest.mark.parametrize("width", [1, 16, 32])
def test_embed_cpu_matches_reference(width):
    x, starts, lengths = embed_inputs()
    got = embed_cpu(x, starts, lengths, width)
    assert got.dtype == np.float32 and got.shape == (5, 2, width)
    np.testing.assert_allclose(got, embed_reference(x, starts, lengths, width), rtol=0, atol=1e-6)


def test_embed_rows_are_zero_padded_and_centred():
    x, starts, lengths = embed_inputs()
    got = embed_cpu(x, starts, lengths, 32)
    assert (got[0, :, 5:] == 0).all()  # beat 0 is 5 samples long
    np.testing.assert_allclose(got[1].mean(axis=1), 0, atol=1e-6)  # 40 > 32: truncated, mean removed


@pytest.mark.parametrize("width", [1, 16, 32])
def test_embed_cuda_equals_cpu(width):
    x, starts, lengths = embed_inputs()
    out = cuda.to_device(np.full((5, 2, width), np.nan, np.float32))  # poisoned: every element must be written
    means = cuda.to_device(np.empty((5, 2)))
    embed_cuda(cuda.to_device(x), cuda.to_device(starts), cuda.to_device(lengths), means, out)
    np.testing.assert_array_equal(out.copy_to_host(), embed_cpu(x, starts, lengths, width))
