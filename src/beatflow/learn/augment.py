"""Training-time augmentation: the part of each row after the QRS complex, stretched or squeezed in time.

The T wave's timing follows the preceding RR interval (QT adaptation): the normal beat after a compensatory
pause has a later T wave, the one before a premature beat a truncated row. Trained on rows whose post-QRS
part is resampled by a random factor, the VAE learns that timing as normal variation, and keeps the T wave's
shape and the QRS (left as it is) as what sets a beat apart.
"""

from __future__ import annotations


def stretch_after(x, pivot: int, factors):
    """Rows ``x`` ``[B, C, L]`` with sample ``t ≥ pivot`` taken from ``pivot + (t - pivot) * factors[b]`` (linear
    interpolation by ``torch.nn.functional.grid_sample``, twice as fast on the CPU as two gathers; positions
    past the row's end read its last sample). ``factors`` is ``[B]``."""
    import torch

    length = x.shape[2]
    t = torch.arange(length, device=x.device, dtype=x.dtype)[None, :]
    source = torch.where(t < pivot, t, pivot + (t - pivot) * factors[:, None].to(x.dtype))
    grid = torch.stack([2 * source / (length - 1) - 1, torch.zeros_like(source)], dim=-1)[:, None]  # [B, 1, L, xy]
    return torch.nn.functional.grid_sample(
        x[:, :, None, :], grid, mode="bilinear", padding_mode="border", align_corners=True
    )[:, :, 0, :]


def random_stretch_after(x, pivot: int, strength: float):
    """:func:`stretch_after` with one factor per row drawn uniformly from ``[1 - strength, 1 + strength]`` (torch's
    default generator, so a seeded run repeats, and a CUDA graph can replay it); ``strength`` 0: ``x``."""
    import torch

    if strength <= 0:
        return x
    return stretch_after(x, pivot, 1 + strength * (2 * torch.rand(x.shape[0], device=x.device) - 1))
