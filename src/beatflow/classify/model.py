"""The shipped beat classifier: gradient-boosted trees (LightGBM) over the beat features of
:mod:`beatflow.classify.features`, stored as one JSON file (the booster in LightGBM's text format, the feature
names, classes and how it was trained) so that loading it runs no code. ``python -m beatflow.classify.fit``
remakes it from annotated WFDB records."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from beatflow.errors import BeatflowError

MODEL_FILE = Path(__file__).with_name("beat_classes.json")
# the classes it gives; Q (EC57's unclassifiable) is learnt from the detections that match no annotated beat
# (noise, a T wave counted twice) and the annotated Q beats, so that noise is not ventricular
CLASSES = ("N", "S", "V", "F", "Q")
# a beat's probability of V moves this share of the way to its shape family's mean (:func:`family_shared`)
FAMILY_WEIGHT = 0.3


@lru_cache(maxsize=4)
def load(path: Path = MODEL_FILE):
    """``(booster, meta)``: the LightGBM booster and the file's other fields."""
    import lightgbm

    from beatflow.classify.features import NAMES

    try:
        meta = json.loads(Path(path).read_text())
        booster = lightgbm.Booster(model_str=meta.pop("booster"))
    except (OSError, ValueError, KeyError, lightgbm.basic.LightGBMError) as exc:
        raise BeatflowError(f"cannot read the beat classifier {path}: {exc}") from exc
    if tuple(meta["features"]) != NAMES or tuple(meta["classes"]) != CLASSES:
        raise BeatflowError(
            f"the beat classifier {path} was made for other features or classes: remake it with "
            "python -m beatflow.classify.fit"
        )
    return booster, meta


def save(booster, path: Path, **meta) -> None:
    """Write ``booster`` and ``meta`` as the classifier file ``path`` (atomically)."""
    from beatflow.classify.features import NAMES
    from beatflow.io.atomic import atomic_path

    text = json.dumps({"classes": CLASSES, "features": NAMES, **meta, "booster": booster.model_to_string()})
    with atomic_path(path) as tmp:
        tmp.write_text(text)


@lru_cache(maxsize=4)
def forest(path: Path = MODEL_FILE):
    """The classifier file's booster as tensors (:mod:`beatflow.classify.trees`), for the GPU."""
    from beatflow.classify.trees import forest

    return forest(load(path)[0].model_to_string())


def probabilities(features: np.ndarray, booster=None, device=None) -> np.ndarray:
    """``[beats, len(CLASSES)]`` class probabilities of feature rows (the shipped booster by default), by
    LightGBM on the CPU, or as tensors on ``device`` where it is a CUDA device (the same to rounding)."""
    if len(features) == 0:
        return np.zeros((0, len(CLASSES)))
    if device is not None and str(device).startswith("cuda"):
        from beatflow.classify.trees import forest as as_forest
        from beatflow.classify.trees import probabilities as forest_probabilities

        return forest_probabilities(
            forest() if booster is None else as_forest(booster.model_to_string()), features, device
        )
    booster = booster if booster is not None else load()[0]
    # num_threads 0: OpenMP's default, which a warm worker caps at the job's threads (threadpoolctl)
    return np.asarray(booster.predict(features, num_threads=0)).reshape(len(features), len(CLASSES))


def family_shared(prob: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``prob`` with each beat's probability of V moved :data:`FAMILY_WEIGHT` of the way to its shape family's mean
    (the family as :func:`~beatflow.classify.features.family_of` reads it), its other classes scaled to keep their
    ratios.
    Shape is the evidence of a ventricular origin, and one record's beats of one shape share it (the template
    classification of Holter analysis: a family is judged as a whole), so a member the trees find borderline
    follows the rest; N against S, judged on each beat's own timing and P wave, is left to the beat."""
    from beatflow.classify.features import family_of

    v = CLASSES.index("V")
    family = family_of(features)
    mean = np.bincount(family, weights=prob[:, v]) / np.bincount(family)
    shared = (1 - FAMILY_WEIGHT) * prob[:, v] + FAMILY_WEIGHT * mean[family]
    rest = 1 - prob[:, v]
    out = prob * np.divide(1 - shared, rest, out=np.zeros_like(rest), where=rest > 1e-9)[:, None]
    out[:, v] = shared
    return out


def decide(prob: np.ndarray, features: np.ndarray, time_s: np.ndarray, signal=None) -> tuple[np.ndarray, np.ndarray]:
    """Each beat's class (the most probable after :func:`family_shared`) and ``class_p``, its probability, then the
    rules of :mod:`beatflow.classify.context` in order: bigeminy (rule 1), atrial bigeminy and supraventricular runs
    (2, 3), AF (4; its P-wave check on ``signal`` when given: a callable returning ``(leads, fs)``), S on time
    (5); with ``signal`` fusion (:mod:`beatflow.classify.fusion`); conducted with another shape and interpolated
    beats (6, 7); last, with ``signal``, the noise rules (:mod:`beatflow.classify.noise`). A beat a rule makes N
    or S keeps as ``class_p`` the probability that it is N or S; V, P(V); F, P(V) + P(F); Q, P(V) + P(Q).
    ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify import context, fusion, noise

    prob = family_shared(prob, features)
    n = len(prob)
    best = prob.argmax(1) if n else np.zeros(0, np.int64)
    cls, p = np.array(CLASSES)[best], prob[np.arange(n), best]
    either = prob[:, CLASSES.index("N")] + prob[:, CLASSES.index("S")]
    p_v = prob[:, CLASSES.index("V")]
    conducted = context.conducted_in_bigeminy(time_s, cls, features)
    cls[conducted], p[conducted] = "N", either[conducted]
    conducted = context.conducted_between_ventricular(time_s, cls, features)
    cls[conducted], p[conducted] = "N", either[conducted]
    alternating = context.premature_between_ventricular(time_s, cls, features)
    cls[alternating], p[alternating] = "V", p_v[alternating]
    wide = context.wide_in_bigeminy(time_s, cls, features, p_v)
    cls[wide], p[wide] = "V", p_v[wide]
    premature = context.premature_in_bigeminy(time_s, cls)
    cls[premature], p[premature] = "S", either[premature]
    run = context.supraventricular_runs(time_s, cls)
    cls[run], p[run] = "S", either[run]
    af = context.in_atrial_fibrillation(time_s, cls, features, signal)
    cls[af], p[af] = "N", either[af]
    timely = context.supraventricular_on_time(cls, features)
    cls[timely], p[timely] = "N", either[timely]
    if signal is not None:
        fused = fusion.fusion_beats(features, cls, p, time_s, signal)
        cls[fused], p[fused] = "F", p_v[fused] + prob[fused, CLASSES.index("F")]
    aberrant = context.conducted_aberrant(cls, features)
    cls[aberrant], p[aberrant] = "N", either[aberrant]
    ventricular, sinus = context.interpolated(time_s, cls, features)
    cls[ventricular], p[ventricular] = "V", p_v[ventricular]
    cls[sinus], p[sinus] = "N", either[sinus]
    if signal is not None:
        noisy = noise.too_noisy(cls, time_s, signal)
        cls[noisy], p[noisy] = "Q", p_v[noisy] + prob[noisy, CLASSES.index("Q")]
        conducted = noise.conducted_in_noise(cls, time_s, features, signal)
        cls[conducted], p[conducted] = "N", either[conducted]
    return cls, p


def classify(
    signals: list, fs: float, peaks: np.ndarray, booster=None, xp=np, device=None
) -> tuple[np.ndarray, np.ndarray]:
    """Every beat's AAMI class and ``class_p`` from its record's leads ``signals`` and R ``peaks`` (samples).

    Parameters
    ----------
    signals : the record's leads (1-D arrays, raw units; the first two are used).
    fs : their sampling rate (Hz).
    peaks : the beats' R peaks (samples, increasing).
    booster : a LightGBM booster (the shipped one by default).
    xp, device : where the work runs: numpy and None (the CPU), or cupy and a CUDA torch device (the GPU:
        ``signals`` cupy arrays there, and only per-beat figures come back to the host).
    """
    from beatflow.classify.features import beat_features

    features = beat_features(signals, fs, peaks, xp)
    return decide(probabilities(features, booster, device), features, np.asarray(peaks) / fs, signal_of(signals, fs))


def signal_of(signals: list, fs: float):
    """The ``signal`` :func:`decide` takes for the leads ``signals`` at ``fs``: a callable returning them by name
    (``lead 1``, ``lead 2``, …) with the rate, for the P-wave check of a candidate AF episode and the fusion test."""
    leads = {f"lead {i + 1}": x for i, x in enumerate(signals)}
    return lambda: (leads, fs)
