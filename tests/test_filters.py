import numpy as np
import pytest

from beatflow.dsp.filters import band_pass, band_pass_taps

FS = 250.0


def amplitude(x, hz):
    t = np.arange(x.shape[-1]) / FS
    return 2 * np.abs(np.mean(x * np.exp(-2j * np.pi * hz * t)))


@pytest.mark.parametrize(
    "hz,gain", [(0.1, 0.0), (0.2, 0.0), (0.5, 0.5), (1.0, 1.0), (10.0, 1.0), (40.0, 0.5), (50.0, 0.0), (60.0, 0.0)]
)
def test_band_pass_gain_known_answers(hz, gain):
    t = np.arange(int(60 * FS)) / FS
    x = np.sin(2 * np.pi * hz * t)[None, :].astype(np.float32)
    y = band_pass(x, FS, 0.5, 40.0, np)
    assert y.dtype == np.float32 and y.shape == x.shape
    middle = slice(int(10 * FS), int(50 * FS))  # away from the ends
    assert amplitude(y[:, middle], hz) / amplitude(x[:, middle], hz) == pytest.approx(gain, abs=0.01)


def test_band_pass_is_zero_phase():
    t = np.arange(int(60 * FS)) / FS
    x = np.sin(2 * np.pi * 5.0 * t).astype(np.float32)
    y = band_pass(x[None], FS, 0.5, 40.0, np)[0]
    middle = slice(int(10 * FS), int(50 * FS))
    np.testing.assert_allclose(y[middle], x[middle], atol=2e-3)


def test_band_pass_filters_each_channel_alone():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5000)).astype(np.float32)
    both = band_pass(x, FS, 0.5, 40.0, np)
    np.testing.assert_array_equal(both[1], band_pass(x[1:], FS, 0.5, 40.0, np)[0])


def test_taps_are_symmetric_and_span_the_low_cut_off():
    taps = band_pass_taps(FS, 0.5, 40.0)
    assert len(taps) % 2 == 1 and len(taps) / FS == pytest.approx(4.125 / 0.5, abs=0.01)
    np.testing.assert_allclose(taps, taps[::-1], rtol=1e-12)
    high_pass = band_pass_taps(100.0, 0.5, 60.0)  # 60 Hz is above Nyquist: a high-pass
    assert high_pass.sum() == pytest.approx(0.0, abs=5e-3)  # gain at 0 Hz
    assert abs((high_pass * (-1.0) ** np.arange(len(high_pass))).sum()) == pytest.approx(1.0, abs=5e-3)  # Nyquist
