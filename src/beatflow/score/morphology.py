"""The shape part of the anomaly score: where a beat's VAE latent mean lies relative to the training beats.

The distance is the sum of squared robust z-scores (median / MAD per latent dimension, of the training
beats). Its threshold is the ``score.quantile`` of a scaled chi-square law fitted to the training beats'
distances at their lower quartile and 80th percentile (:func:`fitted_threshold`): the normal bulk's distances
have heavier tails than the Gaussian ``chi2(latent_dim)``, more so the noisier the record, and the fit follows
them while ignoring up to a fifth of the training beats (abnormal or buried in noise). The judge's ratio is
in linear units, the square root of the squared distance over the threshold, as the rhythm ratio is linear in
the interval's deviation: a beat halfway to either threshold scores 0.5 (:mod:`beatflow.score.scores` takes the larger).

Two things a row holds are not its beat's shape, and the judge discounts them:

* *T-wave timing.* The T wave follows the preceding RR interval (QT adaptation); the VAE was trained on rows
  stretched after the QRS by up to ``train.warp`` (:mod:`beatflow.learn.augment`). A row is judged at the
  alignments :func:`alignments` lists, by the same stretch, and counts at the closest one. The threshold comes
  from the training rows as they are: aligned distances shrink more in the bulk than in the tail, so a law
  fitted to them would sit lower than the normal beats' spread.
* *The previous beat's spill.* At a fast rate the row's first ``pre_peak_s`` hold the previous beat's T wave.
  After an anomalous beat (a wide complex and its discordant T wave) that makes a normal beat look odd, so the
  beat after an anomalous one is judged again with its row up to ``QRS_BEFORE_PEAK_S`` before its R peak taken
  from the row template (:func:`beatflow.learn.model.fill_head`).
"""

from __future__ import annotations

import numpy as np

FIT_QUANTILES = (0.25, 0.8)  # where fitted_threshold matches the law to the training distances
ALIGN_STEPS = (-1.0, -0.5, 0.0, 0.5, 1.0)  # a row is judged stretched by 1 + train.warp x each of these
QRS_BEFORE_PEAK_S = 0.05  # the head filled after an anomalous beat ends this long before the R peak


def alignments(warp: float) -> tuple[float, ...]:
    """The stretch factors a row is judged at, ``1 + warp × ALIGN_STEPS`` (``warp`` 0: the row as it is)."""
    return tuple(sorted({1 + warp * step for step in ALIGN_STEPS}))


def robust_reference(latent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension median and MAD (scaled to a Gaussian's standard deviation) of training latents
    ``[rows, dim]``; a collapsed dimension gets a small floor instead of 0, so that it cannot explode."""
    centre = np.median(latent, axis=0)
    spread = 1.4826 * np.median(np.abs(latent - centre), axis=0)
    return centre, np.maximum(spread, max(1e-3 * spread.max(), 1e-12))


def squared_z(latent, centre, spread):
    """Sum of squared robust z-scores over the last axis of ``latent`` (numpy arrays or torch tensors)."""
    return (((latent - centre) / spread) ** 2).sum(-1)


def fitted_threshold(distances: np.ndarray, quantile: float) -> float:
    """The ``quantile`` of ``s * chi2(nu)`` matched to ``distances`` at the two ``FIT_QUANTILES``.

    The lower four fifths of the training beats fix the law, so up to a fifth of them may be abnormal or
    noisy. The law's ratio of the two quantiles falls from infinity to 1 as ``nu`` grows, so one ``nu``
    matches the data's (searched in [0.05, 500]); ``s`` then matches the upper one."""
    from scipy.optimize import brentq
    from scipy.stats import chi2

    q_low, q_high = FIT_QUANTILES
    lower, upper = np.quantile(distances, FIT_QUANTILES)
    low_nu, high_nu = 0.05, 500.0

    def excess(nu):
        return chi2.ppf(q_high, nu) / chi2.ppf(q_low, nu) - upper / max(lower, 1e-300)

    if excess(high_nu) >= 0:
        nu = high_nu
    elif excess(low_nu) <= 0:
        nu = low_nu
    else:
        nu = brentq(excess, low_nu, high_nu)
    return float(upper / chi2.ppf(q_high, nu) * chi2.ppf(quantile, nu))


def rows_after_anomalies(anomaly: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Indices among the kept beats of those right after an anomalous beat (``anomaly``, ``kept``: per beat)."""
    after = np.zeros(len(kept), dtype=bool)
    after[1:] = anomaly[:-1]
    return np.flatnonzero(after[kept])


class Morphology:
    """Judge of beat shapes: ``latents`` of rows at each alignment, ``fit`` on the training rows, then
    ``ratio`` (> 1: anomalous). ``pivot`` is the row sample the stretch starts at. Latents stay on the model's
    device; only the training rows' plain latents and each row's result come to the host."""

    def __init__(self, model, pivot: int, factors: tuple[float, ...], batch_size: int):
        self.model, self.pivot, self.factors, self.batch_size = model, pivot, factors, batch_size
        self.centre = self.spread = self.threshold = None

    def latents(self, x):
        """``[factors, rows, latent_dim]`` tensor (float64, on ``x``'s device): the VAE's latent mean of every
        row of tensor ``x`` stretched by each factor."""
        import torch

        from beatflow.learn.augment import stretch_after

        def aligned(chunk, factor):
            if factor == 1:
                return chunk
            return stretch_after(chunk, self.pivot, torch.full((chunk.shape[0],), factor, device=chunk.device))

        with torch.inference_mode():
            out = [
                torch.stack([self.model.encode(aligned(chunk, f))[0] for f in self.factors])
                for chunk in x.split(self.batch_size)
            ]
        return torch.cat(out, dim=1).double()

    def fit(self, latents, train_rows: np.ndarray, quantile: float) -> Morphology:
        """Reference (median, MAD) and threshold from the training rows as they are (factor 1)."""
        import torch

        plain = latents[self.factors.index(1.0)][torch.as_tensor(train_rows, device=latents.device)].cpu().numpy()
        centre, spread = robust_reference(plain)
        self.threshold = fitted_threshold(squared_z(plain, centre, spread), quantile)
        self.centre, self.spread = (torch.as_tensor(v, device=latents.device) for v in (centre, spread))
        return self

    def ratio(self, latents) -> tuple[np.ndarray, np.ndarray]:
        """Each row's distance at its closest alignment relative to the threshold, in linear units (the square
        root of the squared distance over the threshold), and its latent mean there (host)."""
        import torch

        distance, best = squared_z(latents, self.centre, self.spread).min(dim=0)
        chosen = latents[best, torch.arange(latents.shape[1], device=latents.device)]
        return (distance / self.threshold).sqrt().cpu().numpy(), chosen.cpu().numpy()

    def ratio_with_template_head(self, x, rows: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`ratio` of rows ``rows`` of tensor ``x`` with their first ``end`` samples from the model's row
        template (:func:`beatflow.learn.model.fill_head`)."""
        import torch

        from beatflow.learn.model import fill_head

        heads = fill_head(x[torch.as_tensor(rows, device=x.device)], end, self.model.template)
        return self.ratio(self.latents(heads))
