import numpy as np
import pytest
import torch

from beatflow.errors import BeatflowError
from beatflow.learn.model import (
    ConvVAE,
    channel_scale,
    load_model,
    save_model,
    split_indices,
)
from beatflow.learn.train import TrainParams, fit


def reconstruction_error(model, x):
    recon, _, _ = model(x)
    return ((recon - model.normalise(x)) ** 2).mean(dim=(1, 2))


def test_split_is_seeded_disjoint_and_sized():
    train, test = split_indices(1000, 0.75, seed=3)
    assert len(train) == 750 and len(test) == 250 and not set(train) & set(test)
    assert (np.sort(np.concatenate([train, test])) == np.arange(1000)).all()
    again, _ = split_indices(1000, 0.75, seed=3)
    other, _ = split_indices(1000, 0.75, seed=4)
    assert (again == train).all() and not (other == train).all()


@pytest.mark.parametrize("length", [250, 257, 8])
def test_vae_shapes_for_any_length(length):
    model = ConvVAE(2, length, 5).eval()
    x = torch.randn(3, 2, length)
    recon, mu, logvar = model(x)
    assert recon.shape == x.shape and mu.shape == logvar.shape == (3, 5)


def test_training_learns_and_is_reproducible():
    t = torch.linspace(0, 1, 64)
    base = torch.exp(-(((t - 0.3) / 0.03) ** 2))
    x = base[None, None, :] * (1 + 0.1 * torch.randn(256, 1, 1, generator=torch.Generator().manual_seed(0)))
    p = TrainParams.defaults(epochs=15, batch_size=32, latent_dim=2, seed=1)
    model, history = fit(x, p, torch.device("cpu"))
    _, again = fit(x, p, torch.device("cpu"))
    assert history == again and history[-1] < 0.3 * history[0]
    with torch.inference_mode():
        normal, odd = (reconstruction_error(model, rows) for rows in (x[:8], torch.roll(x[:8], 20, dims=2)))
    assert odd.min() > normal.max()  # a shifted beat is a worse fit than the beats it learned


def test_channel_scale_weighs_leads_by_their_noise():
    """Two leads with the same beat shape, one twice as large, with noise 0.05 and 0.2: the divisors are in
    the noise levels' ratio (1 : 4), not the standard deviations' (about 2 : 1), and the normalised rows have
    unit variance overall. One lead: its standard deviation."""
    rng = torch.Generator().manual_seed(0)
    shape = torch.sin(torch.linspace(0, 6.28, 100))
    noise = torch.tensor([0.05, 0.2])[None, :, None] * torch.randn(4000, 2, 100, generator=rng)
    x = torch.stack([2 * shape, shape])[None] + noise
    scale = channel_scale(x)
    assert scale[1] / scale[0] == pytest.approx(4.0, rel=0.03)
    assert (x / scale[None, :, None]).pow(2).mean(dim=(0, 2)).mean() == pytest.approx(1.0, rel=0.03)
    assert channel_scale(x[:, :1]).item() == pytest.approx(x[:, 0].std().item(), rel=1e-5)


def test_save_load_round_trip_with_weights_only(tmp_path):
    model = ConvVAE(2, 40, 3, scale=torch.tensor([2.0, 0.5]))
    save_model(model, {"channels": 2, "length": 40, "latent_dim": 3}, [1.0, 0.5], tmp_path / "m.pt")
    loaded, hparams = load_model(tmp_path / "m.pt", torch.device("cpu"))
    assert hparams["latent_dim"] == 3 and torch.equal(loaded.scale, torch.tensor([2.0, 0.5]))
    x = torch.randn(2, 2, 40)
    torch.testing.assert_close(loaded(x)[0], model.eval()(x)[0])


def test_foreign_or_truncated_model_is_a_clear_error(tmp_path):
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    with pytest.raises(BeatflowError, match="not a beatflow model"):
        load_model(tmp_path / "bad.pt", torch.device("cpu"))
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(BeatflowError, match="not a beatflow model"):
        load_model(tmp_path / "other.pt", torch.device("cpu"))


def test_row_template_known_answer():
    """Median of the rows that reach each sample, 0 where fewer than half of them do."""
    import torch

    from beatflow.learn.model import fill_tail, row_template

    x = torch.arange(1.0, 5.0)[:, None, None].expand(4, 1, 5).clone()  # row i holds i + 1 everywhere
    lengths = torch.tensor([5, 3, 3, 1])
    template = row_template(x, lengths)
    # sample 0: rows 1-4 (lower median 2); 1-2: rows 1-3 (2); 3-4: only row 1, a quarter of the rows
    torch.testing.assert_close(template, torch.tensor([[2.0, 2.0, 2.0, 0.0, 0.0]]))
    filled = fill_tail(x, lengths, template)
    torch.testing.assert_close(filled[3, 0], torch.tensor([4.0, 2.0, 2.0, 0.0, 0.0]))
    torch.testing.assert_close(filled[0], x[0])


def test_fill_head_takes_the_template_shifted_to_meet_the_row():
    import torch

    from beatflow.learn.model import fill_head

    x = torch.arange(12.0).reshape(2, 1, 6)  # rows 0..5 and 6..11
    template = torch.tensor([[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]])
    filled = fill_head(x, 2, template)
    # head from the template, shifted by row[2] - template[2]: row 0 by -28, row 1 by -22
    torch.testing.assert_close(filled[:, 0], torch.tensor([[-18.0, -8.0, 2, 3, 4, 5], [-12.0, -2.0, 8, 9, 10, 11]]))
    assert fill_head(x, 0, template) is x
