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
BYTES_PER_SAMPLE = 32  # per filter: float32 frames, complex64 spectra, float32 result, with room to spare


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

        return (
            lambda a, n: scipy.fft.rfft(a, n=n, axis=-1, workers=-1),
            lambda a, n: scipy.fft.irfft(a, n=n, axis=-1, workers=-1),
        )
    return (lambda a, n: xp.fft.rfft(a, n=n, axis=-1), lambda a, n: xp.fft.irfft(a, n=n, axis=-1))


def _reflected_index(n: int, first: int, last: int, xp):
    """Indices ``first .. last-1`` of a recording of ``n`` samples extended by reflection (numpy's
    ``"reflect"`` padding); indices beyond one reflection are clipped (they feed only discarded outputs)."""
    idx = xp.abs(xp.arange(first, last, dtype=xp.int64))
    return xp.clip(xp.where(idx >= n, 2 * (n - 1) - idx, idx), 0, n - 1)


def _reflected(x, first: int, last: int, xp):
    """Samples ``first .. last-1`` of ``x`` extended by reflection: a view inside the recording; past its ends
    only the reflected head and tail are gathered."""
    n = x.shape[0]
    middle = x[max(first, 0) : min(last, n)]
    if first >= 0 and last <= n:
        return middle
    head = x[_reflected_index(n, first, min(last, 0), xp)]
    tail = x[_reflected_index(n, max(first, n), last, xp)]
    return xp.concatenate([head, middle, tail])


def convolve_same(x, taps, xp, work_bytes: int | None = None, out=None):
    """``x`` (1-D, ``n`` samples) convolved with the odd-length ``taps``, centred, ends reflected: float32,
    ``n`` samples, equal to ``np.convolve(np.pad(x, len(taps) // 2, "reflect"), taps, "valid")``.

    ``taps`` may be a 2-D bank of filters of one length; the result is then ``[filters, n]`` and one
    transform of ``x`` serves them all. ``out`` (float32, the result's shape) receives the result."""
    bank = np.atleast_2d(taps)
    n, (filters, k) = x.shape[0], bank.shape
    if k % 2 == 0 or k // 2 >= n:
        raise ValueError(f"need an odd number of taps shorter than twice the signal, got {k} for {n} samples")
    nfft, step = block_layout(k)
    rfft, irfft = _fft_pair(xp)
    spectra = rfft(xp.asarray(bank, dtype=xp.float32), nfft)
    n_blocks = -(-n // step)
    per_batch = max(1, (work_bytes or default_work_bytes(xp)) // (BYTES_PER_SAMPLE * filters * nfft))
    result = xp.empty((filters, n), dtype=xp.float32) if out is None else out.reshape(filters, n)
    first = 0
    while first < n_blocks:
        count = min(per_batch, n_blocks - first)
        try:
            blocks = _blocks(x, first * step, count, step, nfft, spectra, rfft, irfft, xp)
        except MemoryError:
            if count == 1:
                raise
            per_batch = count // 2
            log.warning("out of memory convolving %d blocks at once; retrying with %d", count, per_batch)
            continue
        _place(blocks, result, first * step, step)
        first += count
    return result.reshape(np.shape(taps)[:-1] + (n,))


def _blocks(x, start: int, count: int, step: int, nfft: int, spectra, rfft, irfft, xp):
    """Outputs ``start .. start + count*step`` per filter, ``[filters, count, step]`` float32: ``count``
    frames of ``nfft`` inputs, ``step`` apart."""
    overlap = nfft - step  # n_taps - 1: the first outputs of each frame wrap around and are dropped
    inputs = _reflected(x, start - overlap // 2, start + count * step + overlap // 2, xp)
    inputs = xp.ascontiguousarray(inputs, dtype=xp.float32)
    frames = xp.lib.stride_tricks.as_strided(inputs, shape=(count, nfft), strides=(4 * step, 4))
    return irfft(rfft(frames, nfft)[None] * spectra[:, None], nfft)[..., overlap:]


def _place(blocks, result, start: int, step: int) -> None:
    """Copy ``blocks`` ``[filters, count, step]`` into ``result[:, start:]``, dropping what runs past its end."""
    n = result.shape[1]
    whole = min(blocks.shape[1], (n - start) // step)
    for row, filtered in zip(result, blocks):  # a 1-D slice reshapes to a view, so this writes into result
        row[start : start + whole * step].reshape(whole, step)[...] = filtered[:whole]
    if whole < blocks.shape[1]:
        result[:, start + whole * step :] = blocks[:, whole, : n - start - whole * step]
