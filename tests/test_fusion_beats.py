"""Fusion beats (beatflow.classify.fusion) on synthetic records whose sinus, ventricular and fusion beats are
known: the rule turns the fusion beats the trees class V into F and leaves the ventricular ones V."""

import numpy as np
import pytest

from beatflow import synth
from beatflow.classify import features, fusion, model, noise

SINUS, VENTRICULAR = synth.WAVES["N"], synth.WAVES["V"]
# a fusion beat: the sinus P wave, then half the sinus QRS and T wave and half the ventricular ones
FUSION = [SINUS[0]] + [(n, t, w, (0.5 * a, 0.5 * b)) for n, t, w, (a, b) in SINUS[1:] + VENTRICULAR]


def fused_record(fs: float, monkeypatch):
    """300 beats at 75 bpm: every 10th a ventricular premature beat (at 65 % of the interval, then the
    compensatory pause), every 10th from the 5th a fusion beat on time; the leads, R peaks and true kinds."""
    monkeypatch.setitem(synth.WAVES, "F", FUSION)
    kinds = np.full(300, "N")
    kinds[10::10], kinds[5::10] = "V", "F"
    rr = np.full(300, 0.8)
    rr[10::10], rr[11::10] = 0.52, 1.08
    times = 0.5 + np.cumsum(rr)
    n = round((times[-1] + 1.0) * fs)
    rng = np.random.default_rng(1)
    leads = [synth._render_waves(n, fs, times, kinds, rr, i) + 0.01 * rng.standard_normal(n) for i in range(2)]
    return leads, np.round(times * fs).astype(np.int64), kinds


@pytest.mark.parametrize("fs", [128.0, 360.0])
def test_fusion_beats_classed_v_become_f_and_ventricular_ones_stay(fs, monkeypatch):
    """Given the true classes with the fusion beats classed V (all at class_p 0.95): exactly the fusion beats
    are F, at 128 and 360 Hz."""
    leads, peaks, kinds = fused_record(fs, monkeypatch)
    f = features.beat_features(leads, fs, peaks)
    cls = np.where(kinds == "F", "V", kinds)
    fused = fusion.fusion_beats(
        f, cls, np.full(len(cls), 0.95), peaks / fs, lambda: ({"a": leads[0], "b": leads[1]}, fs)
    )
    assert (fused == (kinds == "F")).all()


def test_a_record_with_few_ventricular_beats_is_not_read(monkeypatch):
    """Fewer than MIN_VENTRICULAR confident V beats: no ventricular template, nothing F, and the signal is
    not read (the callable would fail)."""
    leads, peaks, kinds = fused_record(250.0, monkeypatch)
    f = features.beat_features(leads, 250.0, peaks)
    cls = np.where(kinds == "F", "V", kinds)
    p = np.where(kinds == "V", 0.5, 0.95)  # the premature V beats not confident

    def unread():
        raise AssertionError("the signal was read")

    assert not fusion.fusion_beats(f, cls, p, peaks / 250.0, unread).any()


def test_mixture_gives_the_ventricular_share_of_a_blend():
    """A beat made of equal parts of the sinus and the ventricular template (the latter shifted by 2 samples)
    has a ventricular share of 0.5 and is explained far better by the blend than by either template (random
    templates: each alone explains about half); the templates themselves gain nothing from a blend."""
    rng = np.random.default_rng(0)
    pad, width = 3, 40
    sinus, ventricular = rng.standard_normal((2, 2, width + 2 * pad))
    cut = slice(pad, pad + width)

    def centred(x):
        return x - x.mean(-1, keepdims=True)

    s, v = centred(sinus[:, cut]), centred(ventricular[:, pad + 2 : pad + 2 + width])
    beats = np.stack([s / np.linalg.norm(s) + v / np.linalg.norm(v), s, v])
    gain, share = fusion.mixture(beats, sinus, ventricular, pad)
    assert share[0] == pytest.approx(0.5, abs=1e-9) and gain[0] > 0.3
    assert (gain[1:] <= 1e-9).all()


def test_decide_gives_a_fusion_beat_the_probability_of_v_or_f(monkeypatch):
    """decide: a beat the fusion rule turns F keeps as class_p the probability that it is V or F."""
    prob = np.tile([0.02, 0.02, 0.9, 0.05, 0.01], (5, 1))
    monkeypatch.setattr(fusion, "fusion_beats", lambda *a: np.array([False, True, False, False, False]))
    monkeypatch.setattr(noise, "too_noisy", lambda cls, *a: np.zeros(len(cls), bool))  # no signal to read
    cls, p = model.decide(prob, np.zeros((5, len(features.NAMES))), np.arange(5.0), lambda: None)
    assert list(cls) == ["V", "F", "V", "V", "V"] and p[1] == pytest.approx(0.95)


@pytest.mark.gpu
def test_fusion_beats_from_leads_on_the_device_are_the_hosts(gpu, monkeypatch):
    """The same rule with the leads in device memory (the GPU backend's score): the same F beats."""
    import cupy

    leads, peaks, kinds = fused_record(360.0, monkeypatch)
    f = features.beat_features(leads, 360.0, peaks)
    cls = np.where(kinds == "F", "V", kinds)
    on_device = {"a": cupy.asarray(leads[0]), "b": cupy.asarray(leads[1])}
    fused = fusion.fusion_beats(f, cls, np.full(len(cls), 0.95), peaks / 360.0, lambda: (on_device, 360.0))
    assert (fused == (kinds == "F")).all()
