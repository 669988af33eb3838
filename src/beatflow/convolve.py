"""Centred ("same") FIR convolution by overlap-save in fixed blocks, written once for cupy and numpy.

A recording is cut into blocks of ``step`` output samples, each computed with an FFT of one fixed size from
its own input samples (reflected at the recording's ends). The blocks are transformed a batch at a time, so
the working memory is bounded by ``work_bytes`` whatever the recording's length (a 7-day Holter on a 16 GB
GPU), and because no block depends on which others share its batch, any batch size gives the same bits.
Out of memory, the batch is halved and the transform repeated.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("beatflow")

MIN_FFT = 1 << 16
BYTES_PER_SAMPLE = 32  # gather index, float32 frames, complex64 spectrum, float32 result


def block_layout(n_taps: int) -> tuple[int, int]:
    """FFT size and output samples per block for a filter of ``n_taps`` taps (a quarter of the FFT at most)."""
    nfft = max(MIN_FFT, 1 << int(np.ceil(np.log2(4 * n_taps))))
    return nfft, nfft - n_taps + 1


def default_work_bytes(xp) -> int:
    """Working memory for one batch of blocks: 1/8 of free GPU memory (at most 1 GiB), 256 MiB on the CPU."""
    if xp is np:
        return 256 << 20
    free, _ = xp.cuda.runtime.memGetInfo()
    return int(min(1 << 30, free // 8))


def _fft_pair(xp):
    if xp is np:
        import scipy.fft

        return (lambda a, n: scipy.fft.rfft(a, n=n, axis=-1, workers=-1),
                lambda a, n: scipy.fft.irfft(a, n=n, axis=-1, workers=-1))
    return (lambda a, n: xp.fft.rfft(a, n=n, axis=-1), lambda a, n: xp.fft.irfft(a, n=n, axis=-1))


def _reflected(n: int, first: int, last: int, xp):
    """Indices ``first .. last-1`` of a recording of ``n`` samples extended by reflection (numpy's
    ``"reflect"`` padding); indices beyond one reflection are clipped (they feed only discarded outputs)."""
    idx = xp.abs(xp.arange(first, last, dtype=xp.int64))
    return xp.clip(xp.where(idx >= n, 2 * (n - 1) - idx, idx), 0, n - 1)


def convolve_same(x, taps: np.ndarray, xp, work_bytes: int | None = None):
    """``x`` (1-D, ``n`` samples) convolved with the odd-length ``taps``, centred, ends reflected: float32,
    ``n`` samples, equal to ``np.convolve(np.pad(x, len(taps) // 2, "reflect"), taps, "valid")``."""
    n, k = x.shape[0], len(taps)
    if k % 2 == 0 or k // 2 >= n:
        raise ValueError(f"need an odd number of taps shorter than twice the signal, got {k} for {n} samples")
    nfft, step = block_layout(k)
    rfft, irfft = _fft_pair(xp)
    spectrum = rfft(xp.asarray(taps, dtype=xp.float32), nfft)
    n_blocks = -(-n // step)
    per_batch = max(1, (work_bytes or default_work_bytes(xp)) // (BYTES_PER_SAMPLE * nfft))
    out = xp.empty(n, dtype=xp.float32)
    first = 0
    while first < n_blocks:
        count = min(per_batch, n_blocks - first)
        try:
            out_block = _blocks(x, first * step, count, step, nfft, spectrum, rfft, irfft, xp)
        except MemoryError:
            if count == 1:
                raise
            per_batch = count // 2
            log.warning("out of memory convolving %d blocks at once; retrying with %d", count, per_batch)
            continue
        stop = min(n, (first + count) * step)
        out[first * step:stop] = out_block[: stop - first * step]
        first += count
    return out


def _blocks(x, start: int, count: int, step: int, nfft: int, spectrum, rfft, irfft, xp):
    """Outputs ``start .. start + count*step`` (float32): ``count`` frames of ``nfft`` inputs, ``step`` apart."""
    overlap = nfft - step  # n_taps - 1: the first outputs of each frame wrap around and are dropped
    inputs = x[_reflected(x.shape[0], start - overlap // 2, start + count * step + overlap // 2, xp)]
    inputs = inputs.astype(xp.float32, copy=False)
    frames = xp.lib.stride_tricks.as_strided(inputs, shape=(count, nfft), strides=(4 * step, 4))
    return irfft(rfft(frames, nfft) * spectrum, nfft)[:, overlap:].ravel()
