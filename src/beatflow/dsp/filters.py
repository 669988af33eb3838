"""Zero-phase band-pass filtering: a linear-phase FIR (``scipy.signal.firwin``, Hamming window) applied
centred by :func:`beatflow.dsp.convolve.convolve_same`, so a long recording is filtered in bounded memory and
identically however it is batched.

The filter spans ``TRANSITION_CYCLES / low_hz`` seconds: 8.25 s for a 0.5 Hz cut-off, whose transition band
is then 0.3–0.7 Hz; the gain is 1/2 at each cut-off and below 0.2 % (−54 dB) in the stop bands (mains).
"""

from __future__ import annotations

import numpy as np

from beatflow.dsp.convolve import convolve_same

TRANSITION_CYCLES = 4.125  # Hamming: transition width ≈ 3.3 / duration → 0.8 × low_hz


def band_pass_taps(fs: float, low_hz: float, high_hz: float) -> np.ndarray:
    """FIR taps (odd count) passing ``low_hz``–``high_hz``; a high-pass when ``high_hz`` is at or above Nyquist."""
    from scipy.signal import firwin

    n_taps = 2 * int(np.ceil(TRANSITION_CYCLES * fs / low_hz / 2)) + 1
    cutoffs = [low_hz, high_hz] if high_hz < fs / 2 else low_hz
    return firwin(n_taps, cutoffs, pass_zero=False, fs=fs)


def band_pass(x, fs: float, low_hz: float, high_hz: float, xp, work_bytes: int | None = None):
    """Channels ``x`` (``[channels, n]`` or a list of 1-D float32 arrays) band-passed between ``low_hz`` and
    ``high_hz``: float32 ``[channels, n]``."""
    taps = band_pass_taps(fs, low_hz, high_hz)
    out = xp.empty((len(x), x[0].shape[0]), dtype=xp.float32)
    for channel, row in zip(x, out):
        convolve_same(channel, taps, xp, work_bytes, out=row)
    return out
