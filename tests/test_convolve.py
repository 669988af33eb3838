"""Overlap-save convolution: known answers against numpy, and the same bits however it is batched."""

import numpy as np
import pytest

from beatflow.dsp.convolve import BYTES_PER_SAMPLE, block_layout, convolve_same


def reference(x, taps):
    return np.convolve(np.pad(x.astype(np.float64), len(taps) // 2, mode="reflect"), taps, mode="valid")


@pytest.mark.parametrize(
    "n,n_taps",
    [(100, 1), (100, 39), (100, 199), (65536, 39), (65536, 2063), (131073, 39), (300_001, 2063), (300_001, 8251)],
)
def test_equals_numpy_convolution_with_reflected_ends(n, n_taps):
    rng = np.random.default_rng(n + n_taps)
    x, taps = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n_taps)
    y = convolve_same(x, taps, np)
    assert y.dtype == np.float32 and y.shape == x.shape
    expected = reference(x, taps)
    np.testing.assert_allclose(y, expected, rtol=0, atol=2e-6 * np.abs(expected).max())


def test_a_bank_of_filters_equals_each_filter_alone():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(150_001).astype(np.float32)
    narrow, wide = np.hanning(39), rng.standard_normal(77)
    bank = np.stack([np.pad(narrow, 19), wide])  # the narrow filter centred in the wide one's length
    out = np.full((2, len(x)), np.nan, np.float32)
    y = convolve_same(x, bank, np, out=out)
    assert y.shape == (2, len(x)) and np.shares_memory(y, out)
    for got, taps in zip(y, (narrow, wide)):
        expected = reference(x, taps)
        np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6 * np.abs(expected).max())


def test_identity_filter_returns_the_signal():
    x = np.random.default_rng(0).standard_normal(200_000).astype(np.float32)
    np.testing.assert_allclose(
        convolve_same(x, np.array([0.0, 1.0, 0.0]), np), x, rtol=0, atol=2e-6 * np.abs(x).max()
    )  # float32 FFTs


@pytest.mark.parametrize("work_bytes", [1, BYTES_PER_SAMPLE * 65536 * 2, BYTES_PER_SAMPLE * 65536 * 3])
def test_any_batching_gives_the_same_bits(work_bytes):
    x = np.random.default_rng(1).standard_normal(1_000_003).astype(np.float32)
    taps = np.hanning(501)
    np.testing.assert_array_equal(convolve_same(x, taps, np, work_bytes), convolve_same(x, taps, np))


def test_out_of_memory_halves_the_batch(monkeypatch):
    from beatflow.dsp import convolve

    real, sizes = convolve._blocks, []

    def flaky(x, start, count, *args):
        sizes.append(count)
        if count > 2:
            raise MemoryError("out of memory")
        return real(x, start, count, *args)

    monkeypatch.setattr(convolve, "_blocks", flaky)
    x = np.random.default_rng(2).standard_normal(500_000).astype(np.float32)
    y = convolve_same(x, np.hanning(101), np, work_bytes=1 << 30)
    assert sizes == [8, 4, 2, 2, 2, 2]  # 8 blocks: halved twice, then two at a time
    np.testing.assert_array_equal(y, convolve_same(x, np.hanning(101), np))


def test_bad_filters_are_refused():
    with pytest.raises(ValueError, match="odd number of taps"):
        convolve_same(np.zeros(100, np.float32), np.ones(4), np)
    with pytest.raises(ValueError, match="shorter than twice"):
        convolve_same(np.zeros(100, np.float32), np.ones(201), np)


def test_blocks_leave_room_for_the_filter():
    nfft, step = block_layout(8251)
    assert nfft >= 4 * 8251 and step == nfft - 8250 and nfft & (nfft - 1) == 0
