"""The shipped LightGBM booster evaluated as torch tensors, so that the GPU backend classifies beats on the device.

LightGBM's pip wheels predict on the CPU only, and the GPU forest predictors (cuML's FIL) are not among
beatflow's dependencies; a booster of 1,200 trees of at most 15 leaves is a few gathers per tree level, so it is
evaluated here: each tree read from the booster's text format into arrays (leaves point to themselves), every
beat walked down every tree
for as many steps as the deepest tree, in float64, with LightGBM's rules for a numerical split
(``value <= threshold`` goes left; a NaN goes the ``default_left`` way where the split learnt missing values,
else it counts as 0; a value within :data:`ZERO` of 0 is 0, as LightGBM's reader of dense rows makes it). The result
equals ``Booster.predict`` to rounding (``tests/test_classify.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ARRAY_TYPES = {
    "feature": np.int64,
    "threshold": np.float64,
    "nan_default": bool,
    "nan_left": bool,
    "left": np.int64,
    "right": np.int64,
    "value": np.float64,
}
ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold: a feature value this close to 0 is read as 0
BEATS_PER_STEP = 16384  # beats walked down the forest at a time: [beats, trees] int64 node indices each


@dataclass(frozen=True)
class Forest:
    """A booster's trees as arrays ``[trees, nodes]`` (numpy), and its number of classes."""

    feature: np.ndarray
    threshold: np.ndarray
    nan_default: np.ndarray  # the split learnt where missing values go: a NaN goes that way (else it counts as 0)
    nan_left: np.ndarray  # ... and that way is left
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    depth: int
    classes: int


def _fields(block: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in block.splitlines() if "=" in line)


def forest(model_text: str) -> Forest:
    """The trees of a LightGBM multiclass booster of numerical splits, from its text format
    (``Booster.model_to_string()``: per tree its splits' ``split_feature``, ``threshold``, ``decision_type``
    bits — 1 categorical, 2 default left, 4-8 the missing type: 0 none, 1 zero, 2 NaN — and children, a leaf
    as ``~leaf``), as a :class:`Forest`: node ``i < leaves - 1`` is split ``i``, node ``leaves - 1 + j`` is
    leaf ``j``."""
    header, *blocks = model_text.split("\nTree=")
    trees = [_fields(b) for b in blocks if "num_leaves=" in b.split("\n", 2)[1]]
    width = max(2 * int(t["num_leaves"]) - 1 for t in trees)
    arrays = {k: np.zeros((len(trees), width), dtype=d) for k, d in ARRAY_TYPES.items()}
    arrays["threshold"][:] = np.inf
    for row, t in enumerate(trees):
        leaves = int(t["num_leaves"])
        arrays["value"][row, leaves - 1 : 2 * leaves - 1] = np.array(t["leaf_value"].split(), dtype=np.float64)
        arrays["left"][row], arrays["right"][row] = np.arange(width), np.arange(width)  # leaves point to themselves
        if leaves == 1:
            continue
        decision = np.array(t["decision_type"].split(), dtype=np.int64)
        if (decision & 1).any() or ((decision >> 2) & 3 == 1).any():
            raise ValueError("a categorical split or zero-as-missing split is not supported")
        splits = slice(0, leaves - 1)
        arrays["feature"][row, splits] = np.array(t["split_feature"].split(), dtype=np.int64)
        arrays["threshold"][row, splits] = np.array(t["threshold"].split(), dtype=np.float64)
        arrays["nan_default"][row, splits] = (decision >> 2) & 3 == 2
        arrays["nan_left"][row, splits] = (decision & 2) > 0
        for side in ("left", "right"):
            child = np.array(t[f"{side}_child"].split(), dtype=np.int64)
            arrays[side][row, splits] = np.where(child >= 0, child, leaves - 1 + ~child)
    classes = int(_fields(header)["num_class"])
    # a tree of L leaves is at most L - 1 deep: that many steps bring every beat to its leaf
    return Forest(**arrays, depth=max(int(t["num_leaves"]) for t in trees) - 1, classes=classes)


def raw_scores(f: Forest, features, device) -> "torch.Tensor":  # noqa: F821
    """``[beats, classes]`` float64 raw scores (before the softmax) of ``features`` ``[beats, len(NAMES)]``
    (any array torch takes: numpy, cupy through DLPack, a tensor) on ``device``."""
    import torch

    x = torch.as_tensor(features, device=device).to(torch.float64)
    x = torch.where(x.abs() <= ZERO, 0.0, x)  # NaN stays NaN
    arrays = {k: torch.as_tensor(getattr(f, k), device=device) for k in ARRAY_TYPES}
    trees = torch.arange(f.feature.shape[0], device=device)[None, :]
    out = torch.zeros((len(x), f.classes), dtype=torch.float64, device=device)
    for start in range(0, len(x), BEATS_PER_STEP):
        rows = x[start : start + BEATS_PER_STEP]
        node = torch.zeros((len(rows), len(trees[0])), dtype=torch.int64, device=device)
        for _ in range(f.depth):
            at = {k: a[trees, node] for k, a in arrays.items() if k != "value"}
            v = rows.gather(1, at["feature"])
            missing = torch.isnan(v)
            go_left = torch.where(missing, 0.0, v) <= at["threshold"]
            go_left = torch.where(missing & at["nan_default"], at["nan_left"], go_left)
            node = torch.where(go_left, at["left"], at["right"])
        leaf = arrays["value"][trees, node]  # [beats, trees]; tree t scores class t % classes
        out[start : start + len(rows)] = leaf.reshape(len(rows), -1, f.classes).sum(1)
    return out


def probabilities(f: Forest, features, device) -> np.ndarray:
    """``[beats, classes]`` class probabilities (the softmax of :func:`raw_scores`), as numpy."""
    import torch

    return torch.softmax(raw_scores(f, features, device), dim=1).cpu().numpy()
