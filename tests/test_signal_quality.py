"""Signal quality (beatflow.holter.quality): measured in chunks, the same as in one piece; short records."""

import numpy as np
import pytest

from beatflow.holter import quality


def lead(seconds: float, fs: float = 250.0) -> np.ndarray:
    """A noisy lead with a flat stretch, a stretch at the rail and a burst of noise."""
    rng = np.random.default_rng(1)
    t = np.arange(int(seconds * fs)) / fs
    x = np.sin(2 * np.pi * 1.2 * t) ** 15 + 0.02 * rng.standard_normal(len(t))
    if seconds >= 120:
        x[int(20 * fs) : int(30 * fs)] = 0.0
        x[int(60 * fs) : int(70 * fs)] += np.diff(rng.standard_normal(int(10 * fs) + 1))  # muscle noise
        rails = rng.standard_normal(int(4 * fs)) > 0  # beyond the amplifier's range: at one rail or the other
        x[int(40 * fs) : int(44 * fs)] = np.where(rails, x.max(), x.min())
    return x.astype(np.float32)


def test_chunked_measure_equals_one_piece(monkeypatch):
    """The band filters' state is carried from chunk to chunk, so the codes do not depend on the chunk size;
    the flat, saturated and noisy stretches are found."""
    x = lead(120.0)
    whole = quality.lead_quality(x, 250.0)
    monkeypatch.setattr(quality, "CHUNK_WINDOWS", 7)
    chunked = quality.lead_quality(x, 250.0)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked, strict=True))
    codes = whole[0]
    assert (codes[21:29] == 1).all() and (codes[41:43] == 2).all() and (codes[61:69] == 4).all()
    assert (codes[80:] == 0).all()


@pytest.mark.parametrize("seconds", [1.5, 3.0, 4.9])
def test_records_shorter_than_the_spectral_span_are_measured(seconds):
    """Fewer windows than the pSQI span (5 s): one code per whole window, no error."""
    codes, quiet = quality.lead_quality(lead(seconds), 250.0)
    assert len(codes) == len(quiet) == int(seconds)
