import numpy as np
import pytest

from beatflow.dsp.wavelet import ricker, ricker_for


def closed_form(t, a):
    return 2 / (np.sqrt(3 * a) * np.pi**0.25) * (1 - (t / a) ** 2) * np.exp(-(t**2) / (2 * a**2))


@pytest.mark.parametrize("points,a", [(1, 1.0), (11, 2.0), (100, 4.0), (101, 3.75)])
def test_ricker_matches_closed_form(points, a):
    t = np.arange(points) - (points - 1) / 2
    np.testing.assert_allclose(ricker(points, a), closed_form(t, a), rtol=1e-12, atol=0)


def test_ricker_known_values():
    w = ricker(101, 4.0)
    centre = 2 / (np.sqrt(12.0) * np.pi**0.25)
    assert w[50] == pytest.approx(centre) and w.argmax() == 50
    np.testing.assert_allclose(w, w[::-1])  # symmetric
    assert w[46] == pytest.approx(0.0, abs=1e-15) and w[54] == pytest.approx(0.0, abs=1e-15)  # zeros at ±a
    assert abs(w.sum()) < 1e-6 * np.abs(w).sum()  # zero mean: baseline wander gives no response


def test_ricker_for_spans_five_widths():
    w = ricker_for(250.0, 0.02)  # a = 5 samples
    assert len(w) == 51 and w.argmax() == 25


@pytest.mark.parametrize("points,a", [(0, 1.0), (10, 0.0), (10, -1.0)])
def test_ricker_rejects_bad_arguments(points, a):
    with pytest.raises(ValueError):
        ricker(points, a)
