"""The shipped LightGBM booster evaluated as torch tensors, so that the GPU backend classifies beats on the device.

LightGBM's pip wheels predict on the CPU only, and the GPU forest predictors (cuML's FIL) are not among
beatflow's dependencies; a booster of 1,200 trees of at most 15 leaves is a few gathers per tree level, so it is
evaluated here: each tree flattened into arrays (leaves point to themselves), every beat walked down every tree
for as many steps as the deepest tree, in float64, with LightGBM's rules for a numerical split
(``value <= threshold`` goes left; a NaN goes the ``default_left`` way where the split learnt missing values,
else it counts as 0). The result equals ``Booster.predict`` to rounding (``tests/test_classify.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ARRAYS = ("feature", "threshold", "nan_default", "nan_left", "left", "right", "value")
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


def _flatten(root: dict) -> tuple[list[dict], int]:
    """A tree's nodes in one list (children as list indices, a leaf its own child) and its depth."""
    nodes: list[dict] = []

    def visit(node: dict, level: int) -> tuple[int, int]:
        index = len(nodes)
        nodes.append({})
        if "split_index" not in node:
            nodes[index] = {"left": index, "right": index, "value": node["leaf_value"]}
            return index, level
        if node["decision_type"] != "<=" or node["missing_type"] == "Zero":
            raise ValueError(f"a split of kind {node['decision_type']!r}, {node['missing_type']!r} is not supported")
        left, deep_left = visit(node["left_child"], level + 1)
        right, deep_right = visit(node["right_child"], level + 1)
        nodes[index] = {
            "feature": node["split_feature"],
            "threshold": float(node["threshold"]),
            "nan_default": node["missing_type"] == "NaN",
            "nan_left": node["default_left"],
            "left": left,
            "right": right,
        }
        return index, max(deep_left, deep_right)

    return nodes, visit(root, 0)[1]


def forest(booster) -> Forest:
    """``booster`` (a LightGBM multiclass booster of numerical splits) as a :class:`Forest`."""
    dump = booster.dump_model()
    trees = [_flatten(info["tree_structure"]) for info in dump["tree_info"]]
    width = max(len(nodes) for nodes, _ in trees)

    def column(key: str, default, dtype) -> np.ndarray:
        out = np.full((len(trees), width), default, dtype=dtype)
        for t, (nodes, _) in enumerate(trees):
            out[t, : len(nodes)] = [node.get(key, default) for node in nodes]
        return out

    return Forest(
        feature=column("feature", 0, np.int64),
        threshold=column("threshold", np.inf, np.float64),
        nan_default=column("nan_default", False, bool),
        nan_left=column("nan_left", False, bool),
        left=column("left", 0, np.int64),
        right=column("right", 0, np.int64),
        value=column("value", 0.0, np.float64),
        depth=max(depth for _, depth in trees),
        classes=dump["num_class"],
    )


def raw_scores(f: Forest, features, device) -> "torch.Tensor":  # noqa: F821
    """``[beats, classes]`` float64 raw scores (before the softmax) of ``features`` ``[beats, len(NAMES)]``
    (any array torch takes: numpy, cupy through DLPack, a tensor) on ``device``."""
    import torch

    x = torch.as_tensor(features, device=device).to(torch.float64)
    arrays = {k: torch.as_tensor(getattr(f, k), device=device) for k in ARRAYS}
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
