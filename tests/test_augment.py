import numpy as np
import pandas as pd
import pytest
import torch

from beatflow.learn.augment import random_stretch_after, stretch_after
from beatflow.learn.train import stretch_pivot


def test_stretch_after_known_answer_on_a_ramp():
    """Row value = sample index, so the stretched row holds the source positions themselves."""
    x = torch.arange(20, dtype=torch.float32).repeat(2, 1, 1)  # [2 rows, 1 channel, 20]
    out = stretch_after(x, pivot=8, factors=torch.tensor([0.5, 1.5]))
    t = np.arange(20)
    np.testing.assert_allclose(out[0, 0].numpy(), np.where(t < 8, t, 8 + (t - 8) * 0.5), atol=1e-4)
    np.testing.assert_allclose(out[1, 0].numpy(), np.where(t < 8, t, np.minimum(8 + (t - 8) * 1.5, 19)), atol=1e-4)


def test_a_later_t_wave_is_brought_back_by_a_factor():
    """A Gaussian 'T wave' 20 % further from the pivot than the reference's lines up with it at factor 1.2."""
    t = torch.arange(200, dtype=torch.float32)
    reference = torch.exp(-0.5 * ((t - 100) / 8) ** 2)
    later = torch.exp(-0.5 * ((t - 112) / 9.6) ** 2)  # centre 40 + 60 * 1.2, width * 1.2
    out = stretch_after(later[None, None], pivot=40, factors=torch.tensor([1.2]))[0, 0]  # reads 20 % further out
    assert torch.abs(out - reference).max() < 0.01 < torch.abs(later - reference).max()


def test_random_stretch_leaves_the_qrs_and_repeats_with_the_seed():
    x = torch.randn(64, 2, 100)
    torch.manual_seed(3)
    a = random_stretch_after(x, 30, 0.3)
    torch.manual_seed(3)
    b = random_stretch_after(x, 30, 0.3)
    assert torch.equal(a, b) and not torch.equal(a, x)
    torch.testing.assert_close(a[..., :30], x[..., :30])  # before the pivot: the row as it was
    assert random_stretch_after(x, 30, 0.0) is x


def test_the_pivot_is_a_tenth_of_a_second_after_the_peak_in_the_row():
    beats = pd.DataFrame({"peak": [20, 300, 600, 900], "start": [0, 237, 537, 837]})  # 63 before the peak
    assert stretch_pivot(beats, 250.0) == 63 + 25


@pytest.mark.parametrize("warp", [0.0, 0.3])
def test_training_with_and_without_the_stretch_learns(warp):
    from beatflow.learn.train import TrainParams, fit

    t = torch.arange(64, dtype=torch.float32)
    x = torch.exp(-0.5 * ((t - 16) / 2) ** 2).repeat(512, 1, 1) + 0.05 * torch.randn(512, 1, 64)
    _, history = fit(x, TrainParams.defaults(epochs=4, batch_size=64, warp=warp), torch.device("cpu"), pivot=24)
    assert history[-1] < history[0]
