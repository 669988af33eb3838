"""Zero-phase band-pass filtering in the frequency domain, written once for cupy and numpy.

The gain is that of Butterworth low- and high-pass filters of order ``order`` applied forwards and
backwards (as ``sosfiltfilt`` would): |H(f)|², 1/2 at each cut-off, with no phase shift. In the frequency domain it is one FFT each way, which
parallelises on the GPU where a recursive (IIR) filter does not.
"""

from __future__ import annotations

from scipy.fft import next_fast_len

PAD_S = 2.0  # reflected padding at both ends, so the circular FFT does not join the recording's two ends


def band_pass(x, fs: float, low_hz: float, high_hz: float, xp, order: int = 6):
    """``x`` ``[channels, n]`` (float32) band-passed between ``low_hz`` and ``high_hz``; same shape and dtype."""
    pad = min(int(PAD_S * fs), x.shape[-1] - 1)
    padded = xp.pad(x.astype(xp.float64), ((0, 0), (pad, pad)), mode="reflect")
    n = next_fast_len(padded.shape[-1], real=True)
    f = xp.fft.rfftfreq(n, d=1.0 / fs)
    ratio = (f / low_hz) ** (2 * order)
    gain = ratio / (1.0 + ratio) / (1.0 + (f / high_hz) ** (2 * order))  # |H|² of high-pass × low-pass
    filtered = xp.fft.irfft(xp.fft.rfft(padded, n=n, axis=-1) * gain, n=n, axis=-1)
    return filtered[:, pad:pad + x.shape[-1]].astype(xp.float32)
