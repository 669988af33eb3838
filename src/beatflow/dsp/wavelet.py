"""The Ricker wavelet (negative normalised second derivative of a Gaussian).

Written here because SciPy removed ``scipy.signal.ricker`` in 1.15; same convention as SciPy's was.
"""

import numpy as np


def ricker(points: int, a: float) -> np.ndarray:
    """Ricker wavelet of ``points`` samples and width ``a`` samples, centred, unit energy in the continuum.

    ``A (1 - t²/a²) exp(-t²/(2a²))`` with ``A = 2 / (sqrt(3a) π^¼)`` and ``t`` in samples from the centre.
    """
    if points < 1 or a <= 0:
        raise ValueError(f"ricker needs points >= 1 and a > 0, got points={points}, a={a}")
    amplitude = 2.0 / (np.sqrt(3.0 * a) * np.pi**0.25)
    t = np.arange(points, dtype=np.float64) - (points - 1) / 2.0
    ratio = (t / a) ** 2
    return amplitude * (1.0 - ratio) * np.exp(-ratio / 2.0)


def ricker_for(fs: float, width_s: float) -> np.ndarray:
    """The Ricker wavelet of width ``width_s`` seconds at sampling rate ``fs``, spanning ±5 widths (odd length)."""
    a = width_s * fs
    half = max(1, int(np.ceil(5 * a)))
    return ricker(2 * half + 1, a)


def ricker_bank(fs: float, widths_s) -> np.ndarray:
    """``[widths, taps]``: :func:`ricker_for` at each width, zero-padded about its centre to the longest."""
    wavelets = [ricker_for(fs, w) for w in widths_s]
    longest = max(len(w) for w in wavelets)
    return np.stack([np.pad(w, (longest - len(w)) // 2) for w in wavelets])
