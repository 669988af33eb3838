import numpy as np
import pytest

from beatflow.filters import band_pass

FS = 250.0


def amplitude(x, hz):
    t = np.arange(x.shape[-1]) / FS
    return 2 * np.abs(np.mean(x * np.exp(-2j * np.pi * hz * t)))


@pytest.mark.parametrize("hz,gain", [(0.1, 0.0), (10.0, 1.0), (50.0, 0.065), (60.0, 0.008), (0.5, 0.5), (40.0, 0.5)])
def test_band_pass_gain_known_answers(hz, gain):
    t = np.arange(int(60 * FS)) / FS
    x = np.sin(2 * np.pi * hz * t)[None, :].astype(np.float32)
    y = band_pass(x, FS, 0.5, 40.0, np)
    assert y.dtype == np.float32 and y.shape == x.shape
    middle = slice(int(10 * FS), int(50 * FS))  # away from the ends
    assert amplitude(y[:, middle], hz) / amplitude(x[:, middle], hz) == pytest.approx(gain, abs=0.02)


def test_band_pass_filters_each_channel_alone():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5000)).astype(np.float32)
    both = band_pass(x, FS, 0.5, 40.0, np)
    np.testing.assert_allclose(both[1], band_pass(x[1:], FS, 0.5, 40.0, np)[0], atol=1e-6)
