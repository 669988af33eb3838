"""train: the convolutional VAE on ``train_fraction`` of the kept beats → ``model.pt``.

On the GPU the embedding is read by kvikio into device memory and handed to torch via DLPack: no host copy.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from .params import FromConfig

log = logging.getLogger("beatflow")


@dataclass(frozen=True)
class TrainParams(FromConfig):
    """``train.*`` config keys."""

    epochs: int = 20
    batch_size: int = 128
    latent_dim: int = 8
    train_fraction: float = 0.75
    seed: int = 0
    learning_rate: float = 1e-3
    beta: float = 1.0



def as_tensor(rows, backend, device):
    """Embedding rows as a torch tensor on ``device``: DLPack from CuPy (zero-copy) or from numpy."""
    import torch

    return torch.from_dlpack(rows) if backend.gpu else torch.from_numpy(rows).to(device)


def fit(x, p: TrainParams, device):
    """Train a :class:`ConvVAE` on tensor ``x`` ``[beats, channels, length]``; return it and the loss per epoch.

    Out of GPU memory, training starts again (same seed) with half the batch size, down to one beat.
    """
    import torch

    from .errors import BeatflowError

    batch_size = p.batch_size
    while True:
        try:
            return _fit(x, p, device, batch_size)
        except torch.OutOfMemoryError as exc:
            if batch_size == 1:
                raise BeatflowError("out of GPU memory even at batch size 1: reduce embed.length_s or set "
                                    "device: cpu") from exc
            log.warning("out of GPU memory at batch size %d; starting again with %d", batch_size, batch_size // 2)
            batch_size //= 2
            if device.type == "cuda":
                torch.cuda.empty_cache()


def _fit(x, p: TrainParams, device, batch_size: int):
    import torch

    from .model import ConvVAE, loss_terms

    torch.manual_seed(p.seed)
    if device.type == "cuda":  # cuDNN's fastest convolution backward is not deterministic
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    scale = x.std(dim=(0, 2)).clamp_min(1e-6)
    model = ConvVAE(x.shape[1], x.shape[2], p.latent_dim, scale).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=p.learning_rate)
    generator = torch.Generator(device=device).manual_seed(p.seed)
    history = []
    for epoch in range(p.epochs):
        t0 = time.perf_counter()
        model.train()
        total, n = torch.zeros((), device=device), 0
        for batch in torch.randperm(x.shape[0], device=device, generator=generator).split(batch_size):
            rec, kl = loss_terms(model, x[batch])
            loss = rec + p.beta * kl
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            total += loss.detach() * len(batch)
            n += len(batch)
        history.append(float(total) / n)
        log.info("epoch %d/%d: loss %.4f (%.2f s)", epoch + 1, p.epochs, history[-1], time.perf_counter() - t0)
    return model.eval(), history


def train(record: str, embedding_path, model_path, p: TrainParams, backend) -> None:
    """Train on one record's embedding and write ``model.pt``."""
    from . import arrays
    from .backend import torch_device
    from .errors import BeatflowError
    from .model import save_model, split_indices

    device = torch_device(backend)
    rows = arrays.load(embedding_path, backend.gpu)
    if rows.ndim != 3 or rows.shape[0] < 4:
        raise BeatflowError(f"need at least 4 embedded beats [beats, channels, L], got shape {rows.shape}",
                            record=record, path=str(embedding_path))
    train_rows, _ = split_indices(rows.shape[0], p.train_fraction, p.seed)
    import torch

    x = as_tensor(rows, backend, device)[torch.as_tensor(train_rows, device=device)]
    log.info("train %s: %d of %d beats on %s", record, len(train_rows), rows.shape[0], device)
    model, history = fit(x, p, device)
    hparams = {"channels": int(x.shape[1]), "length": int(x.shape[2]), **vars(p)}
    save_model(model, hparams, history, model_path)
