"""Beats too noisy to class (beatflow.classify.noise) on synthetic records whose beats are known: a ventricular
beat stays V where one of its leads shows its QRS clearly or where its shape recurs, and becomes Q where noise in
the QRS band buries it in every lead; the rule reads the signal only where there are V beats, and decide applies
it. The conducted beat of a bigeminy that noise hides is N."""

import numpy as np
import pytest

from beatflow import synth
from beatflow.classify import noise

START_S = 0.5  # the first beat comes this long after its interval into the record


def rendered(rr: np.ndarray, kinds: np.ndarray, fs: float, burst_s: tuple[float, float], noisy_leads, seed: int):
    """Two leads of beats ``kinds`` at intervals ``rr`` (from ``START_S``) with 0.01 mV of white noise, white noise
    of 2 mV rms (a muscle burst larger than the QRS in its band) added to the ``noisy_leads`` over ``burst_s``; the
    leads and the beats' times."""
    times = START_S + np.cumsum(rr)
    n = round((times[-1] + 1.0) * fs)
    rng = np.random.default_rng(seed)
    leads = [synth._render_waves(n, fs, times, kinds, rr, i) + 0.01 * rng.standard_normal(n) for i in range(2)]
    burst = slice(round(burst_s[0] * fs), round(burst_s[1] * fs))
    for i in noisy_leads:
        leads[i][burst] += 2.0 * rng.standard_normal(burst.stop - burst.start)
    return leads, times


def record(fs: float, noisy_leads: tuple[int, ...], seed: int = 0):
    """120 beats at 75 bpm, every 6th a ventricular premature beat; the burst in the ``noisy_leads`` from 40 to
    80 s; the leads, R peaks, kinds, times."""
    kinds = np.full(120, "N")
    kinds[6::6] = "V"
    rr = np.full(120, 0.8)
    rr[6::6], rr[7::6] = 0.52, 1.08
    leads, times = rendered(rr, kinds, fs, (40.0, 80.0), noisy_leads, seed)
    return leads, np.round(times * fs).astype(np.int64), kinds, times


@pytest.mark.parametrize("fs", [128.0, 360.0])
def test_ventricular_beats_buried_in_every_lead_are_q_and_the_others_stay(fs):
    """Noise alone reads about 1.5 (a window's largest sample against the noise's 90th percentile), so a buried
    beat is Q most of the time, not always; a clear one never is, its QRS far above the bound."""
    leads, peaks, kinds, times = record(fs, (0, 1))
    signal = lambda: ({"a": leads[0], "b": leads[1]}, fs)  # noqa: E731
    got = noise.too_noisy(kinds, times, signal)
    in_burst = (times > 40 - noise.HALF_S) & (times < 80 + noise.HALF_S)  # the noise within HALF_S of the beat
    assert got[(kinds == "V") & in_burst].mean() >= 0.75 and not got[(kinds == "V") & ~in_burst].any()
    assert not got[kinds == "N"].any()
    which = np.flatnonzero(kinds == "V")
    ratio = noise.snr(leads, fs, peaks, which)
    assert ratio[~in_burst[which]].min() > 3 * noise.MIN_SNR and np.median(ratio[in_burst[which]]) < 1.6


def test_a_ventricular_shape_that_recurs_is_read_whatever_the_noise_about_it(monkeypatch):
    """With every V beat under the bound (MIN_SNR raised), the shapes decide: the clear V beats recur among the
    beats classed V and stay V (a VT whose wide complexes fill the QRS band between them reads low, MIT-BIH 205),
    the buried ones have no look-alikes."""
    leads, peaks, kinds, times = record(250.0, (0, 1))
    monkeypatch.setattr(noise, "MIN_SNR", 1e9)
    got = noise.too_noisy(kinds, times, lambda: ({"a": leads[0], "b": leads[1]}, 250.0))
    in_burst = (times > 40 - noise.HALF_S) & (times < 80 + noise.HALF_S)
    assert not got[(kinds == "V") & ~in_burst].any() and got[(kinds == "V") & in_burst].mean() >= 0.75
    assert not got[kinds == "N"].any()


def test_a_lead_that_shows_the_qrs_keeps_the_beat_classed():
    leads, peaks, kinds, times = record(250.0, (0,))
    assert not noise.too_noisy(kinds, times, lambda: ({"a": leads[0], "b": leads[1]}, 250.0)).any()


def test_without_ventricular_beats_the_signal_is_not_read():
    def unread():
        raise AssertionError("the signal was read")

    assert not noise.too_noisy(np.array(["N", "S", "N"]), np.array([1.0, 1.8, 2.6]), unread).any()


def test_decide_classes_a_buried_ventricular_beat_q_with_its_probability_of_v_or_q():
    from beatflow.classify import features, model

    fs = 250.0
    leads, peaks, kinds, times = record(fs, (0, 1))
    f = features.beat_features(leads, fs, peaks)
    prob = np.zeros((len(kinds), len(model.CLASSES)))
    prob[:, 0] = np.where(kinds == "V", 0.05, 0.97)
    prob[:, 2] = np.where(kinds == "V", 0.9, 0.01)
    prob[:, 4] = 1 - prob.sum(1)
    signal = lambda: ({"a": leads[0], "b": leads[1]}, fs)  # noqa: E731
    cls, p = model.decide(prob, f, times, signal)
    buried = noise.too_noisy(np.where(kinds == "V", "V", "N"), times, signal)
    assert buried.sum() >= 6 and (cls[buried] == "Q").all() and (cls[(kinds == "V") & ~buried] == "V").all()
    shared = model.family_shared(prob, f)
    np.testing.assert_allclose(p[buried], shared[buried, 2] + shared[buried, 4])


def bigeminy(fs: float, rr_run: float = 0.0, seed: int = 0):
    """60 sinus beats at 0.8 s, 40 cycles of ventricular bigeminy (the premature beat at 0.5 s, the conducted beat
    after a 1.1 s pause), 20 sinus beats; with ``rr_run``, the bigeminy's intervals are a ventricular rhythm's
    instead, its every other interval 20 % longer (no pause: all under the sinus cycle). White noise of 2 mV rms
    in both leads over the middle of the bigeminy. The leads, kinds, times and the conducted beats' mask."""
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], 40), np.full(20, 0.8)]
    kinds = np.r_[np.full(60, "N"), np.tile(["V", "N"], 40), np.full(20, "N")]
    if rr_run:
        rr[60:140] = np.tile([rr_run, 1.2 * rr_run], 40)
        kinds[60:140] = "V"
    burst_s = (START_S + rr[:91].sum(), START_S + rr[:121].sum())  # beats 90 to 120
    leads, times = rendered(rr, kinds, fs, burst_s, (0, 1), seed)
    conducted = np.zeros(len(rr), bool)
    conducted[61:140:2] = True
    return leads, kinds, times, conducted


def test_a_bigeminys_conducted_beat_that_noise_hides_is_n_and_a_clear_one_keeps_its_class():
    """The beats of a bigeminy all classed V (as the trees class MIT-BIH 106's in a muscle burst): the conducted
    beats (each after a pause, every other beat) whose QRS the burst hides are N, most of them (noise alone reads
    about 1.5, under PAUSE_SNR); those outside it, with a clear QRS, and the premature beats stay V. In a
    ventricular rhythm whose every other interval is 20 % longer, under the sinus cycle (no pause), no beat is."""
    from beatflow.classify import features

    fs = 250.0
    leads, kinds, times, conducted = bigeminy(fs)
    peaks = np.round(times * fs).astype(np.int64)
    f = features.beat_features(leads, fs, peaks)
    cls = np.full(len(kinds), "N")
    cls[60:140] = "V"
    signal = lambda: ({"a": leads[0], "b": leads[1]}, fs)  # noqa: E731
    got = noise.conducted_in_noise(cls, times, f, signal)
    in_burst = (times > times[90] + noise.HALF_S) & (times < times[120] - noise.HALF_S)
    assert got[conducted & in_burst].mean() >= 0.75
    assert not got[conducted & (times < times[90] - noise.HALF_S)].any() and not got[~conducted].any()
    leads, kinds, times, _ = bigeminy(fs, rr_run=0.4)
    f = features.beat_features(leads, fs, np.round(times * fs).astype(np.int64))
    assert not noise.conducted_in_noise(kinds, times, f, lambda: ({"a": leads[0], "b": leads[1]}, fs)).any()
