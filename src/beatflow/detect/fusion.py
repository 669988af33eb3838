"""Two-lead detection: the first lead's envelope and the second lead's, averaged with weights that follow each
lead's local noise.

Muscle noise and electrode motion belong to one electrode pair more than to the heart: where a burst buries
the first lead's QRS complexes (or makes peaks as large as them), the second lead usually still shows the
beats. Each lead's detection envelope is in units of its own typical beat (1), so the two are comparable;
the local noise of each is the median magnitude of its envelope over ``NOISE_WINDOW_S`` blocks (QRS
complexes fill a small part of a block, so the median is the noise between them). The weights are the inverse
noise powers, floored at ``NOISE_FLOOR`` so that two clean leads count about equally, as the inverse-variance
weighting of two noisy measurements of one quantity does. The noise levels are interpolated linearly between
block centres, so the fused envelope has no steps, and it is formed a chunk at a time (no full-length
temporaries). Each envelope counts up to ``CAP`` (a typical beat, 1), so a sharp artefact in one lead (an electrode pop,
ten times a QRS complex) does not outvote a beat in both: with magnitude envelopes, the first lead's Ricker
side lobes beside a beat are positive, and at 2 a pop within the NMS window of a beat won over it. A peak of
the fused envelope is moved to the first lead's
largest response within ``SNAP_S`` and kept if that response is at least a floor (the caller's: half the
detection threshold): beats stay aligned on the first lead, as the records sheet's contract says. Where the
first lead shows nothing there but the second lead shows a beat (its response at least the caller's
``shown``: the level at which the second lead is said to show a peak) and the first lead shows nothing
within the T-wave interval either (:data:`beatflow.detect.adaptive.T_WAVE_S`: no beat of its own that the
peak could be the P or T wave of), the peak moves to the second lead's largest response and stays: an
electrode off the skin, an amplifier at its rail or recovering from it, leave one lead blank while the other
shows every beat (MIT-BIH 116, svdb 853), and a beat seen in either lead is a beat.
"""

from __future__ import annotations

import numpy as np

NOISE_WINDOW_S = 1.0
NOISE_FLOOR = 0.05  # in units of a typical beat's response
SNAP_S = 0.04
CAP = 1.0  # a lead's envelope counts up to a typical beat: more amplitude is no more evidence of a QRS
CHUNK = 1 << 22  # samples fused at a time


def block_noise(envelope, block: int, xp):
    """Median magnitude of ``envelope`` over consecutive blocks of ``block`` samples (the last block takes the
    remainder), and the block centres (float64 sample positions)."""
    n = envelope.shape[0]
    n_full = n // block
    step = block * max(1, CHUNK // block)  # whole blocks, about CHUNK samples at a time: bounded temporaries
    noise = [
        xp.median(xp.abs(envelope[i : min(i + step, n_full * block)].reshape(-1, block)), axis=1)
        for i in range(0, n_full * block, step)
    ]
    centres = xp.arange(n_full, dtype=xp.float64) * block + block / 2
    if n > n_full * block:
        noise.append(xp.median(xp.abs(envelope[n_full * block :]))[None])
        centres = xp.concatenate([centres, xp.asarray([(n_full * block + n) / 2], dtype=xp.float64)])
    return xp.concatenate(noise), centres


def noise_block(fs: float) -> int:
    """The samples of a block over which a lead's local noise is measured (``NOISE_WINDOW_S``)."""
    return max(1, round(NOISE_WINDOW_S * fs))


def lead_noise(envelope, fs: float, xp):
    """A lead's local noise profile: :func:`block_noise` of its detection ``envelope`` over ``NOISE_WINDOW_S``
    blocks, ``(noise, centres)`` as ``xp`` arrays (made once per lead, for the fusion and the noise veto)."""
    return block_noise(envelope, noise_block(fs), xp)


def local_noise(profile, at: np.ndarray, backend) -> np.ndarray:
    """Host float64: a lead's local noise (its :func:`lead_noise` ``profile``, interpolated linearly between block
    centres) at the host sample positions ``at``, in units of a typical beat."""
    noise, centres = (backend.to_host(a) for a in profile)
    return np.interp(np.asarray(at, dtype=np.float64), centres, noise)


def fused_envelope(first, second, fs: float, xp, second_noise=None):
    """The noise-weighted mean of two leads' detection envelopes, each capped at ``CAP`` (float32, same
    length): each lead's local noise (:func:`lead_noise`; the second's ``second_noise`` where the caller has
    it) is interpolated linearly between block centres, and its weight is 1 / (noise² + floor²)."""
    (n1, centres), (n2, _) = lead_noise(first, fs, xp), second_noise or lead_noise(second, fs, xp)
    out = xp.empty_like(first)
    for i in range(0, first.shape[0], CHUNK):
        at = xp.arange(i, min(i + CHUNK, first.shape[0]), dtype=xp.float64)
        w1, w2 = (1 / (xp.interp(at, centres, n) ** 2 + NOISE_FLOOR**2) for n in (n1, n2))
        share = (w1 / (w1 + w2)).astype(xp.float32)
        a1, a2 = xp.minimum(first[i : i + CHUNK], CAP), xp.minimum(second[i : i + CHUNK], CAP)
        out[i : i + CHUNK] = a2 + share * (a1 - a2)
    return out


def snap(peaks, envelope, second, fs: float, xp, floor: float, shown: float):
    """Each of ``peaks`` moved to the largest ``envelope`` sample within ±``SNAP_S``, kept if that sample is at
    least ``floor``; else moved to the largest sample of the ``second`` lead's envelope there, kept if that is
    at least ``shown`` and the first lead stays below ``floor`` near it (:func:`blank`) (sorted, unique)."""
    from beatflow.detect.peaks import window_index

    index = window_index(peaks, max(1, round(SNAP_S * fs)), envelope.shape[0], xp)
    rows = xp.arange(peaks.shape[0])
    first = index[rows, xp.argmax(envelope[index], axis=1)]
    other = index[rows, xp.argmax(second[index], axis=1)]
    on_first = envelope[first] >= floor
    on_second = ~on_first & (second[other] >= shown)
    if bool(on_second.any()):
        on_second &= blank(envelope, other, fs, xp, floor)
    return xp.unique(xp.where(on_first, first, other)[on_first | on_second])


def blank(envelope, at, fs: float, xp, floor: float):
    """Whether ``envelope`` stays below ``floor`` within ±:data:`beatflow.detect.adaptive.T_WAVE_S` of each of
    ``at`` (samples), to within a block: from its maxima over blocks of ``SNAP_S``."""
    from beatflow.detect.adaptive import T_WAVE_S

    block, n = max(1, round(SNAP_S * fs)), envelope.shape[0]
    block_max = envelope[: n - n % block].reshape(-1, block).max(axis=1)  # a view's maxima: no full-length copy
    if n % block:
        block_max = xp.concatenate([block_max, envelope[n - n % block :].max()[None]])
    n_blocks = block_max.shape[0]
    reach = round(T_WAVE_S * fs) // block
    near = xp.clip((at // block)[:, None] + xp.arange(-reach, reach + 1)[None, :], 0, n_blocks - 1)
    return block_max[near].max(axis=1) < floor
