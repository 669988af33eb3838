"""train: the convolutional VAE on ``train_fraction`` of the kept beats → ``model.pt``.

On the GPU the embedding is read by kvikio into device memory and handed to torch via DLPack: no host copy.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from beatflow.params import FromConfig

log = logging.getLogger("beatflow")


MIN_STEPS = 8  # optimiser steps per epoch at least
QRS_AFTER_PEAK_S = 0.1  # the stretch augmentation leaves each row as it is up to this long after its R peak


@dataclass(frozen=True)
class TrainParams(FromConfig):
    """``train.*`` config keys. Each key's meaning and default: the config schema."""

    SECTION = "train"

    epochs: int
    batch_size: int
    latent_dim: int
    train_fraction: float
    seed: int
    learning_rate: float
    beta: float
    warp: float


def as_tensor(rows, backend, device):
    """Embedding rows as a torch tensor on ``device``: DLPack from CuPy (zero-copy) or from numpy."""
    import torch

    return torch.from_dlpack(rows) if backend.gpu else torch.from_numpy(rows).to(device)


def fit(x, p: TrainParams, device, pivot: int | None = None):
    """Train a :class:`ConvVAE` on tensor ``x`` ``[beats, channels, length]``; return it and the loss per epoch.
    Each batch's rows are stretched after sample ``pivot`` by up to ``p.warp`` (:mod:`beatflow.learn.augment`; None:
    not stretched).

    Out of GPU memory, training starts again (same seed) with half the batch size, down to one beat.
    """
    import torch

    from beatflow.errors import BeatflowError

    batch_size = max(1, min(p.batch_size, x.shape[0] // MIN_STEPS))  # a short record still gets MIN_STEPS steps
    while True:
        try:
            return _fit(x, p, device, batch_size, pivot)
        except torch.OutOfMemoryError as exc:
            if batch_size == 1:
                raise BeatflowError(
                    "out of GPU memory even at batch size 1: reduce embed.length_s or set device: cpu"
                ) from exc
            log.warning("out of GPU memory at batch size %d; starting again with %d", batch_size, batch_size // 2)
            batch_size //= 2
            if device.type == "cuda":
                torch.cuda.empty_cache()


def _fit(x, p: TrainParams, device, batch_size: int, pivot: int | None):
    import torch

    from beatflow.learn.adam import Adam
    from beatflow.learn.model import ConvVAE, channel_scale

    t0 = time.perf_counter()
    torch.manual_seed(p.seed)
    cuda = device.type == "cuda"
    if cuda:  # cuDNN's fastest convolution backward is not deterministic
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    model = ConvVAE(x.shape[1], x.shape[2], p.latent_dim, channel_scale(x)).to(device)
    optimiser = Adam(model.parameters(), lr=p.learning_rate)
    steps = x.shape[0] // batch_size  # the last partial batch is left out, so every step has one shape
    index = torch.zeros(batch_size, dtype=torch.long, device=device)
    stretch = (pivot, p.warp) if pivot is not None else (0, 0.0)
    step = (GraphedStep if cuda else EagerStep)(model, optimiser, x, index, p.beta, stretch)
    generator = torch.Generator(device=device).manual_seed(p.seed)
    log.info(
        "model and optimiser ready in %.2f s (batch %d, %d steps an epoch)", time.perf_counter() - t0, batch_size, steps
    )
    history = []
    for epoch in range(p.epochs):
        t0 = time.perf_counter()
        model.train()
        order = torch.randperm(x.shape[0], device=device, generator=generator)
        total = torch.zeros((), device=device)
        for i in range(steps):
            index.copy_(order[i * batch_size : (i + 1) * batch_size])
            total += step()
        history.append(float(total) / steps)
        log.info("epoch %d/%d: loss %.4f (%.3f s)", epoch + 1, p.epochs, history[-1], time.perf_counter() - t0)
    return model.eval(), history


class EagerStep:
    """One optimiser step on the rows ``x[index]`` (``index`` is filled in before each call), stretched as
    ``stretch`` = ``(pivot, strength)`` says; returns the loss."""

    def __init__(self, model, optimiser, x, index, beta: float, stretch: tuple[int, float]):
        self.model, self.optimiser, self.x, self.index, self.beta = model, optimiser, x, index, beta
        self.stretch = stretch

    def loss(self):
        from beatflow.learn.augment import random_stretch_after
        from beatflow.learn.model import loss_terms

        rec, kl = loss_terms(self.model, random_stretch_after(self.x[self.index], *self.stretch))
        return rec + self.beta * kl

    def __call__(self):
        self.optimiser.zero_grad()
        loss = self.loss()
        loss.backward()
        self.optimiser.step()
        return loss.detach()


class GraphedStep(EagerStep):
    """The same step, recorded once as a CUDA graph and replayed: one launch per step instead of ~200 small
    kernel launches from Python, which bound a model this small (PyTorch's whole-network capture recipe).

    The first ``WARMUP`` calls run eagerly on a side stream, as capture requires; every call is one real step.
    """

    WARMUP = 3

    def __init__(self, *args):
        super().__init__(*args)
        import torch

        self.calls, self.graph, self.stream = 0, None, torch.cuda.Stream()

    def __call__(self):
        import torch

        if self.graph is None:
            self.calls += 1
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                if self.calls <= self.WARMUP:
                    loss = super().__call__()
                else:
                    self._record()
            torch.cuda.current_stream().wait_stream(self.stream)
            if self.graph is None:
                return loss
        self.graph.replay()
        return self.static_loss

    def _record(self):
        """Record one step (recording runs nothing: the caller replays it)."""
        import torch

        self.graph = torch.cuda.CUDAGraph()
        self.optimiser.zero_grad()  # the graph allocates the gradients that each replay refills
        with torch.cuda.graph(self.graph):
            loss = self.loss()
            loss.backward()
            self.optimiser.step()
        self.static_loss = loss.detach()


def load_embedding(record: str, path, backend):
    """The record's ``embedding.npy`` (on ``backend``); a :class:`BeatflowError` unless it holds 4 rows or more
    of ``[beats, channels, L]``."""
    from beatflow.errors import BeatflowError
    from beatflow.io import arrays

    rows = arrays.load(path, backend.gpu)
    if rows.ndim != 3 or rows.shape[0] < 4:
        raise BeatflowError(
            f"need at least 4 embedded beats [beats, channels, L], got shape {rows.shape}",
            record=record,
            path=str(path),
        )
    return rows


def train(record: str, inputs: dict, outputs: dict, p: TrainParams, backend) -> None:
    """Train on one record's embedding and write ``model.pt`` (its hyperparameters: ``p`` too, so that the
    score stage reads the split from it).

    Each beat's zero padding is filled from the training beats' median row first (:func:`row_template`, kept
    in the model): a normal beat cut short by a premature one must not look abnormal in shape.

    Parameters
    ----------
    record : str
        The record's name (for messages).
    inputs : dict
        ``embedding``, ``beats`` and ``signal`` (its sampling rate only) of the record.
    outputs : dict
        ``model``: the ``model.pt`` to write.
    p : TrainParams
        The ``train.*`` config keys.
    backend : Backend
        Where to compute (:func:`beatflow.backend.select_backend`).

    Raises
    ------
    BeatflowError
        When the embedding has fewer than 4 rows or disagrees with ``beats.parquet``, or training runs out of
        GPU memory at batch size 1.
    """
    import torch

    from beatflow.backend import torch_device
    from beatflow.io.tables import read_frame, signal_info
    from beatflow.learn.model import row_template, save_model, split_indices

    t0 = time.perf_counter()
    embedding_path, fs = inputs["embedding"], signal_info(inputs["signal"])[0]
    device = torch_device(backend)
    rows = load_embedding(record, embedding_path, backend)
    beats = read_frame(inputs["beats"], columns=["peak", "start", "length", "kept"])
    lengths = kept_lengths(beats, rows, record, embedding_path)
    train_rows, _ = split_indices(rows.shape[0], p.train_fraction, p.seed)
    pick = torch.as_tensor(train_rows, device=device)
    x, x_lengths = as_tensor(rows, backend, device)[pick], torch.as_tensor(lengths, device=device)[pick]
    template = row_template(x, x_lengths)
    where = device if backend.gpu else f"cpu, {torch.get_num_threads()} threads"
    log.info(
        "train %s: %d of %d beats on %s (inputs and row template ready in %.2f s)",
        record,
        len(train_rows),
        rows.shape[0],
        where,
        time.perf_counter() - t0,
    )
    model, history = fit_rows(x, x_lengths, template, p, device, stretch_pivot(beats, fs))
    hparams = {"channels": int(x.shape[1]), "length": int(x.shape[2]), **vars(p)}
    save_model(model, hparams, history, outputs["model"])


def fit_rows(x, lengths, template, p: TrainParams, device, pivot: int):
    """:func:`fit` on rows ``x`` whose padding after ``lengths`` is filled from ``template`` (kept in the
    model)."""
    from beatflow.learn.model import fill_tail

    model, history = fit(fill_tail(x, lengths, template), p, device, pivot)
    model.template.copy_(template)
    return model, history


def stretch_pivot(beats, fs: float) -> int:
    """The row sample ``QRS_AFTER_PEAK_S`` after the R peak."""
    from beatflow.learn.model import peak_offset

    return peak_offset(beats) + round(QRS_AFTER_PEAK_S * fs)


def kept_lengths(beats, rows, record: str, embedding_path):
    """The length (samples, at most the row width) of each embedded beat, checked against the embedding."""
    import numpy as np

    from beatflow.errors import BeatflowError

    lengths = beats["length"].to_numpy()[beats["kept"].to_numpy()]
    if len(lengths) != rows.shape[0]:
        raise BeatflowError(
            f"embedding has {rows.shape[0]} rows but beats.parquet has {len(lengths)} kept beats",
            record=record,
            path=str(embedding_path),
        )
    return np.minimum(lengths, rows.shape[2])
