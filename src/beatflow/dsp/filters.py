"""Band-pass filters, the one home of both kinds the project uses.

- :func:`band_pass`: zero phase, a linear-phase FIR (``scipy.signal.firwin``, Hamming window) applied centred
  by :func:`beatflow.dsp.convolve.convolve_same`, so a long recording is filtered in bounded memory and
  identically however it is batched, on either backend (``xp``). The stages' filter: detection's QRS band,
  the embedding's band (``embed.band_hz``), the classifier's features. It spans ``TRANSITION_CYCLES /
  low_hz`` seconds: 8.25 s for a 0.5 Hz cut-off, whose transition band is then 0.3–0.7 Hz; the gain is 1/2 at
  each cut-off and below 0.2 % (−54 dB) in the stop bands (mains).
- :func:`butter_band_pass`: a 2nd-order Butterworth (numpy, the CPU), forward-backward (zero phase) or
  causal; short stretches and small bands: the Holter summary's signal quality, AF's P waves and missed-beat
  test (:mod:`beatflow.holter`), the report's event strips (:mod:`beatflow.report.strips`).
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


BUTTER_ORDER = 2
BUTTER_MAX_HIGH = 0.45  # × fs: the Butterworth's upper edge held below Nyquist
BUTTER_MIN_SAMPLES = 3 * (2 * BUTTER_ORDER + 1)  # sosfiltfilt's padding of a band-pass's BUTTER_ORDER sections


def butter_sos(fs: float, low_hz: float, high_hz: float) -> np.ndarray:
    """Second-order sections of :func:`butter_band_pass`'s filter (for ``scipy.signal.sosfilt`` with its state
    carried across the chunks of a long signal)."""
    from scipy.signal import butter

    return butter(BUTTER_ORDER, [low_hz, min(high_hz, BUTTER_MAX_HIGH * fs)], btype="band", fs=fs, output="sos")


def butter_band_pass(x: np.ndarray, fs: float, low_hz: float, high_hz: float, zero_phase: bool = True) -> np.ndarray:
    """``x`` (float64, filtered along its last axis) band-passed by a :data:`BUTTER_ORDER` Butterworth filter
    whose upper edge is held at or below :data:`BUTTER_MAX_HIGH` × ``fs``.

    Parameters
    ----------
    x : numpy.ndarray
        The signal, 1-D, or 2-D with one stretch per row.
    fs : float
        Its sampling rate (Hz).
    low_hz, high_hz : float
        The pass band (Hz).
    zero_phase : bool
        Forward-backward (``sosfiltfilt``); False: causal (``sosfilt``).

    Returns
    -------
    numpy.ndarray
        The filtered signal, float64, ``x``'s shape; an ``x`` too short to filter (:data:`BUTTER_MIN_SAMPLES`
        samples or fewer) less its median, unfiltered.
    """
    from scipy.signal import sosfilt, sosfiltfilt

    sos = butter_sos(fs, low_hz, high_hz)
    x = np.asarray(x, dtype=np.float64)
    if x.shape[-1] <= BUTTER_MIN_SAMPLES:
        return x - np.median(x) if len(x) else x
    return sosfiltfilt(sos, x, axis=-1) if zero_phase else sosfilt(sos, x, axis=-1)
