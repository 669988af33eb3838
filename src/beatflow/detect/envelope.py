"""The detection envelope: the signal's Ricker-wavelet responses at a few widths (FFT convolution), each
oriented QRS-up and divided by its own local reference (the running median of block maxima), so that the
detector's threshold is a fraction of a typical beat's response. Written against the array module ``xp``."""

from __future__ import annotations

import numpy as np

from beatflow.detect.params import SegmentSamples
from beatflow.dsp.convolve import convolve_same
from beatflow.dsp.wavelet import ricker_bank

MEDIAN_BLOCKS = 7  # the threshold follows the median block maximum over ±7 blocks (≈ ±14 s by default)


def wavelet_responses(x, fs: float, widths_s, xp, work_bytes: int | None = None):
    """Convolutions of ``x`` with the Ricker wavelet at each of ``widths_s``: ``[widths, n]`` float32, by FFT in
    bounded memory, one transform of ``x`` for every width; the ends are reflected (zero padding would turn a
    baseline offset into a step there)."""
    return convolve_same(x - x.mean(), ricker_bank(fs, widths_s), xp, work_bytes)


def _rolling_median(values, k: int, xp):
    padded = xp.pad(values, k, mode="edge")
    n = values.shape[0]
    return xp.median(xp.stack([padded[i : i + n] for i in range(2 * k + 1)]), axis=0)


def polarity_and_reference(r, block: int, xp):
    """The sign that turns QRS complexes up, and the per-block reference amplitude of ``sign * r``."""
    n_blocks = max(1, r.shape[0] // block)
    body = r[: n_blocks * block].reshape(n_blocks, block)
    up, down = body.max(axis=1), -body.min(axis=1)
    median_down, median_up = xp.median(xp.stack([down, up]), axis=1).tolist()  # one device-to-host read
    sign = -1.0 if median_down > median_up else 1.0
    reference = _rolling_median(down if sign < 0 else up, MEDIAN_BLOCKS, xp)
    floor = 0.5 * xp.median(reference)  # long pauses and flat stretches must not lower the bar to noise
    return sign, xp.maximum(xp.maximum(reference, floor), np.finfo(reference.dtype).tiny)  # a flat line: 0


def per_block(r, reference, block: int):
    """Divide ``r`` in place by the reference of its block (the last block's for the samples after it)."""
    n_full = min(r.shape[0] // block, reference.shape[0]) * block
    r[:n_full].reshape(-1, block)[...] /= reference[: n_full // block, None]
    r[n_full:] /= reference[-1]
    return r


def detection_envelope(x, s: SegmentSamples, xp, work_bytes: int | None = None, absolute: bool = False):
    """The larger, sample by sample, of the oriented wavelet responses at ``s.p.widths_s``, each in units of
    its own local reference over blocks of ``s.block`` samples (so ``threshold`` is a fraction of a typical
    beat's response); ``absolute``: of their magnitudes instead (either polarity counts; the orientation is
    then always up)."""
    block = s.block
    responses = wavelet_responses(x, s.fs, s.p.widths_s, xp, work_bytes)
    for r in responses:
        if absolute:
            xp.abs(r, out=r)
        sign, reference = polarity_and_reference(r, block, xp)
        per_block(r, sign * reference, block)  # orient and scale in one pass
    return responses.max(axis=0)
