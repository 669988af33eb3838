"""Beat classes without labels (beatflow.score.classes) on synthetic beats with known classes."""

import numpy as np
import pytest

from beatflow import synth
from beatflow.score.classes import classify, kmeans, run_lengths
from beatflow.score.scores import ScoreParams, timing

FS = 250.0
PRE_S, ROW_S = 0.25, 1.0


def rows_of(leads: dict, peaks: np.ndarray):
    """Embedding-like rows (``PRE_S`` before each peak, ``ROW_S`` long, mean removed) of every beat but the
    last, as a float32 tensor, and ``kept``."""
    import torch

    x = np.stack([leads[k] for k in synth.LEADS[:2]])
    pre, length = round(PRE_S * FS), round(ROW_S * FS)
    kept = (peaks - pre >= 0) & (peaks - pre + length <= x.shape[1])
    kept[-1] = False
    rows = np.stack([x[:, p - pre : p - pre + length] for p in peaks[kept]]).astype(np.float32)
    rows -= rows.mean(-1, keepdims=True)
    return torch.from_numpy(rows), kept


def classes_of(times, labels, shapes=None, seed=0):
    """Render beats at ``times`` (s) with ``shapes`` (synth wave kinds; default ``labels``), classify them
    with no latent information (zeros) and return ``(class, family, labels, kept)``."""
    shapes = labels if shapes is None else shapes
    n = round((times[-1] + 1.0) * FS)
    rr = np.diff(times, prepend=times[0] - 0.8)
    rng = np.random.default_rng(seed)
    leads = {
        name: synth._render_waves(n, FS, times, shapes, rr, i) + 0.01 * rng.standard_normal(n)
        for i, name in enumerate(synth.LEADS)
    }
    peaks = np.round(times * FS).astype(np.int64)
    x, kept = rows_of(leads, peaks)
    parts = timing(peaks, ScoreParams.defaults())
    cls, family = classify(
        peaks,
        kept,
        x,
        np.ones(2),
        round(PRE_S * FS),
        FS,
        np.zeros((int(kept.sum()), 2)),
        np.ones(int(kept.sum()), bool),
        parts,
    )
    return cls, family, labels, kept


def figures(cls, labels, kept, label, expect):
    here, called = (labels == label) & kept, (cls == expect) & kept
    return (called & here).sum() / here.sum(), (called & here).sum() / max(called.sum(), 1)


def test_ectopic_beats_get_their_classes():
    """Sinus rhythm with 5 % ventricular beats (wide, early, compensatory pause) and 5 % atrial ones (early,
    normal QRS): V and S found with Se and +P of at least 95 %, normal beats stay N."""
    spec = synth.SynthSpec(duration_s=600, pvc_rate=0.05, pac_rate=0.05, aberrant_rate=0.0, seed=3)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    cls, family, labels, kept = classes_of(times, labels)
    assert figures(cls, labels, kept, "V", "V") >= (0.95, 0.95)
    assert figures(cls, labels, kept, "A", "S") >= (0.95, 0.95)
    normal = (labels == "N") & kept
    assert (cls[normal] != "N").mean() <= 0.01
    assert (family[normal] == 0).mean() >= 0.95  # the dominant family
    assert set(family[(labels == "V") & kept]) <= {-1} | set(range(1, family.max() + 1))
    assert (cls[~kept] == "Q").all() and (family[~kept] == -1).all()


def test_bundle_branch_block_record_is_not_ventricular():
    """Every sinus beat conducted with a wide QRS (bundle branch block, synth ``L`` shape, on time): they are
    the dominant family and N; the premature ventricular beats among them are still V."""
    spec = synth.SynthSpec(duration_s=600, pvc_rate=0.04, pac_rate=0.0, aberrant_rate=0.0, seed=4)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    shapes = np.where(labels == "N", "L", labels)
    cls, family, labels, kept = classes_of(times, labels, shapes)
    bbb = (labels == "N") & kept
    assert (cls[bbb] == "N").mean() >= 0.99 and (family[bbb] == 0).mean() >= 0.95
    assert figures(cls, labels, kept, "V", "V") >= (0.95, 0.95)


def test_isolated_aberrant_beats_on_time_after_a_p_wave_are_n():
    """Isolated wide beats on time and after the sinus P wave (synth ``L``: aberrant conduction) are N, the
    ventricular beats (no P wave, early) V."""
    spec = synth.SynthSpec(duration_s=600, pvc_rate=0.03, pac_rate=0.0, aberrant_rate=0.03, seed=7)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    cls, _, labels, kept = classes_of(times, labels)
    aberrant = (labels == "L") & kept
    assert aberrant.sum() >= 10 and (cls[aberrant] == "N").mean() >= 0.9
    assert figures(cls, labels, kept, "V", "V") >= (0.95, 0.95)


def test_irregular_rhythm_is_not_supraventricular():
    """Atrial-fibrillation-like intervals (log RR with a 0.15 standard deviation) and normal QRS: irregularity
    is not prematurity, so (almost) no beat is S."""
    rng = np.random.default_rng(5)
    rr = 0.75 * np.exp(0.15 * rng.standard_normal(600))
    times = 0.5 + np.cumsum(rr)
    labels = np.full(len(times), "N")
    cls, _, _, kept = classes_of(times, labels)
    assert (cls[kept] == "S").mean() <= 0.01 and (cls[kept] == "V").sum() == 0


def test_regular_rhythm_premature_narrow_beat_is_s_and_its_absence_n():
    """The same normal QRS throughout; one beat at 70 % of the sinus interval (the sinus node reset after it)
    is S, the rest N."""
    rr = np.full(200, 0.8)
    rr[100] = 0.56
    times = 0.5 + np.cumsum(rr)
    labels = np.full(len(times), "N")
    cls, family, _, kept = classes_of(times, labels)
    assert cls[100] == "S"
    assert (np.delete(cls, 100)[np.delete(kept, 100)] == "N").all()
    assert (family[kept] == 0).all()


def test_kmeans_is_deterministic_and_separates_two_groups():
    rng = np.random.default_rng(0)
    f = np.r_[rng.normal(0, 1, (300, 3)), rng.normal(8, 1, (30, 3))]
    a, b = kmeans(f, 2), kmeans(f, 2)
    assert (a == b).all()
    assert len(set(a[:300])) == 1 and len(set(a[300:])) == 1 and a[0] != a[-1]


def test_run_lengths_known_answer():
    assert run_lengths(np.array([0, 0, 1, 0, 2, 2, 2])).tolist() == [2, 2, 1, 1, 3, 3, 3]


@pytest.mark.parametrize("fs", [128.0, 360.0])
def test_classes_at_other_sampling_rates(fs, monkeypatch):
    """The constants are in seconds: at 128 and 360 Hz the ventricular and atrial beats are still found."""
    monkeypatch.setattr(__import__(__name__), "FS", fs)
    spec = synth.SynthSpec(duration_s=400, pvc_rate=0.05, pac_rate=0.05, aberrant_rate=0.0, seed=6)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    cls, _, labels, kept = classes_of(times, labels)
    assert figures(cls, labels, kept, "V", "V") >= (0.9, 0.9)
    assert figures(cls, labels, kept, "A", "S") >= (0.9, 0.9)
