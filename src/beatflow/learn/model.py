"""The convolutional VAE over embedded beats, and what train and score share (split, loading)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from beatflow.errors import BeatflowError


def split_indices(n: int, train_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted row indices of the training and held-out beats: a seeded random ``train_fraction`` split."""
    order = np.random.default_rng(seed).permutation(n)
    n_train = min(n - 1, max(1, round(train_fraction * n))) if n > 1 else n
    return np.sort(order[:n_train]), np.sort(order[n_train:])


WIDTHS = (8, 16, 32)  # feature maps of the three convolutions


class ConvVAE(nn.Module):
    """1-D convolutional VAE: three stride-2 convolutions down, a Gaussian latent, three transposed up.

    Inputs are ``[batch, channels, length]`` in the signal's units; the per-channel ``scale`` (fitted on the
    training beats by :func:`channel_scale`) normalises them inside the model, so a saved model is
    self-contained.
    """

    def __init__(self, channels: int, length: int, latent_dim: int, scale=None):
        super().__init__()
        self.channels, self.length, self.latent_dim = channels, length, latent_dim
        self.padded = 8 * math.ceil(length / 8)
        a, b, c = WIDTHS
        features = c * self.padded // 8
        self.register_buffer("scale", torch.ones(channels) if scale is None else torch.as_tensor(scale).float())
        self.register_buffer("template", torch.zeros(channels, length))
        self.encoder = nn.Sequential(
            nn.Conv1d(channels, a, 7, stride=2, padding=3),
            nn.GELU(),
            nn.Conv1d(a, b, 5, stride=2, padding=2),
            nn.GELU(),
            nn.Conv1d(b, c, 5, stride=2, padding=2),
            nn.GELU(),
            nn.Flatten(),
        )
        self.to_mu = nn.Linear(features, latent_dim)
        self.to_logvar = nn.Linear(features, latent_dim)
        self.from_latent = nn.Linear(latent_dim, features)
        self.decoder = nn.Sequential(
            nn.ConvTranspose1d(c, b, 4, stride=2, padding=1),
            nn.GELU(),
            nn.ConvTranspose1d(b, a, 4, stride=2, padding=1),
            nn.GELU(),
            nn.ConvTranspose1d(a, channels, 4, stride=2, padding=1),
        )

    def complete(self, x, lengths):
        """Rows ``x`` whose beat is ``lengths`` samples long, with the zero padding after it replaced by the
        row ``template``: a beat cut short by an early next beat then looks like its full-length self."""
        return fill_tail(x, lengths, self.template)

    def normalise(self, x):
        return x / self.scale[None, :, None]

    def encode(self, x):
        h = self.encoder(nn.functional.pad(self.normalise(x), (0, self.padded - self.length)))
        return self.to_mu(h), self.to_logvar(h)

    def decode(self, z):
        h = self.from_latent(z).view(-1, WIDTHS[2], self.padded // 8)
        return self.decoder(h)[..., : self.length]

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        return self.decode(z), mu, logvar


def _padding(x, lengths):
    """``[rows, 1, length]`` mask of the zero padding after each row's beat."""
    return (torch.arange(x.shape[2], device=x.device)[None, :] >= lengths[:, None])[:, None, :]


def fill_tail(x, lengths, template):
    """Rows ``x`` with the padding after each beat (``lengths`` samples) taken from ``template`` ``[channels, L]``."""
    return torch.where(_padding(x, lengths), template[None], x)


def fill_head(x, end: int, template):
    """Rows ``x`` with their first ``end`` samples taken from ``template`` ``[channels, L]``, shifted to meet each
    row at sample ``end`` (no step where they join); ``end <= 0``: ``x``."""
    if end <= 0:
        return x
    head = template[None, :, :end] + (x[:, :, end : end + 1] - template[None, :, end : end + 1])
    return torch.cat([head, x[:, :, end:]], dim=2)


def peak_offset(beats) -> int:
    """The row sample of the R peak: rows start ``pre_peak_s`` before it, the median ``peak - start`` of
    ``beats.parquet`` (which beats cut at the recording's start do not move)."""
    return int(np.median((beats["peak"] - beats["start"]).to_numpy()))


def row_template(x, lengths, max_rows: int = 8192):
    """``[channels, L]``: at each sample, the median over the rows whose beat reaches it, where at least half
    of the rows do (0 beyond: at a fast rate the few rows that reach far are the beats before a pause, and
    their shape must not become every beat's tail); from at most ``max_rows`` rows spread evenly over the
    recording."""
    step = max(1, x.shape[0] // max_rows)
    x, lengths = x[::step], lengths[::step]
    padding = _padding(x, lengths)
    median = torch.nanmedian(x.masked_fill(padding, float("nan")), dim=0).values
    return torch.where((~padding).float().mean(dim=0) >= 0.5, median, 0.0)


def channel_scale(x, max_rows: int = 8192):
    """``[channels]`` divisors for rows ``x``: each lead's noise level (the root mean square of the rows about
    their median row, from at most ``max_rows`` rows), times the one factor that gives the normalised rows unit
    variance over all leads. The reconstruction loss then weighs each lead by its signal-to-noise ratio, as a
    Gaussian likelihood with a noise level per lead does; a lead's own standard deviation would weigh a small,
    noisy lead as much as a large, clean one. One lead: its standard deviation."""
    import torch

    sample = x[:: max(1, x.shape[0] // max_rows)]
    noise = (sample - sample.median(dim=0).values).pow(2).mean(dim=(0, 2)).sqrt().clamp_min(1e-9)
    factor = torch.sqrt(((x.std(dim=(0, 2)) / noise) ** 2).mean())
    return (factor * noise).clamp_min(1e-6)


def loss_terms(model: ConvVAE, x):
    """Reconstruction (sum of squares per beat) and KL divergence, both averaged over the batch."""
    recon, mu, logvar = model(x)
    rec = ((recon - model.normalise(x)) ** 2).sum(dim=(1, 2)).mean()
    kl = (-0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(dim=1)).mean()
    return rec, kl


def save_model(model: ConvVAE, hparams: dict, history: list[float], path) -> None:
    from beatflow.io.atomic import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file object: the zip's folder is "archive", not tmp's name
        torch.save(
            {
                "state_dict": {k: v.cpu() for k, v in model.state_dict().items()},
                "hparams": hparams,
                "loss_per_epoch": history,
            },
            f,
        )


def load_model(path, device) -> tuple[ConvVAE, dict]:
    """Load ``model.pt`` (``weights_only=True``: no pickled code is ever executed)."""
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
        h = saved["hparams"]
        model = ConvVAE(h["channels"], h["length"], h["latent_dim"])
        model.load_state_dict(saved["state_dict"])
    except Exception as exc:  # torch raises many types for a truncated or foreign file
        raise BeatflowError(f"not a beatflow model ({type(exc).__name__}: {exc})", path=str(path)) from exc
    return model.to(device).eval(), h
