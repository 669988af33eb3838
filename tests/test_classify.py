"""The beat classifier (beatflow.classify) on synthetic beats with known classes, and its file."""

import json

import numpy as np
import pytest

from beatflow import synth
from beatflow.classify import context, features, model
from beatflow.classify.kmeans import kmeans
from beatflow.errors import BeatflowError


def record(times, labels, fs, shapes=None, seed=0):
    """Two synthetic leads with beats at ``times`` (s) of ``shapes`` (synth wave kinds; default ``labels``)
    and their R peaks (samples)."""
    shapes = labels if shapes is None else shapes
    n = round((times[-1] + 1.0) * fs)
    rr = np.diff(times, prepend=times[0] - 0.8)
    rng = np.random.default_rng(seed)
    leads = [synth._render_waves(n, fs, times, shapes, rr, i) + 0.01 * rng.standard_normal(n) for i in range(2)]
    return leads, np.round(times * fs).astype(np.int64)


def figures(cls, labels, label, expect):
    """Sensitivity and +P of class ``expect`` for the beats labelled ``label``."""
    here, called = labels == label, cls == expect
    return (called & here).sum() / here.sum(), (called & here).sum() / max(called.sum(), 1)


@pytest.mark.parametrize("fs", [128.0, 250.0, 360.0])
def test_ectopic_beats_get_their_classes_at_any_rate(fs):
    """Sinus rhythm with 5 % ventricular beats (wide, early, compensatory pause) and 5 % atrial ones (early,
    normal QRS, other P wave): V and S found with Se and +P of at least 90 % at 128, 250 and 360 Hz; normal
    beats stay N; every class_p is the probability of the class given, in (1/4, 1]."""
    spec = synth.SynthSpec(duration_s=600, pvc_rate=0.05, pac_rate=0.05, aberrant_rate=0.0, seed=3)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, fs)
    cls, p = model.classify(leads, fs, peaks)
    assert figures(cls, labels, "V", "V") >= (0.9, 0.9)
    assert figures(cls, labels, "A", "S") >= (0.9, 0.9)
    assert (cls[labels == "N"] != "N").mean() <= 0.02
    assert ((p > 0.25) & (p <= 1)).all()


@pytest.mark.parametrize(("aberrant_rate", "bpm"), [(0.01, 70.0), (0.3, 70.0), (0.05, 120.0)])
def test_on_time_wide_beats_after_the_sinus_p_wave_are_conducted_not_ventricular(aberrant_rate, bpm):
    """Sinus rhythm with 3 % ventricular beats and 1, 30 or (at 120 bpm, the P wave near the T wave before it)
    5 % beats conducted with a bundle-branch block (synth ``L``: wide QRS, discordant T, on time after the sinus
    P wave): at least 90 % of the conducted beats N, the ventricular beats V with Se and +P of at least 90 %."""
    spec = synth.SynthSpec(duration_s=900, hr_bpm=bpm, pvc_rate=0.03, pac_rate=0.0, aberrant_rate=aberrant_rate, seed=1)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 250.0)
    cls, _ = model.classify(leads, 250.0, peaks)
    assert (cls[labels == "L"] == "N").mean() >= 0.9
    assert figures(cls, labels, "V", "V") >= (0.9, 0.9)


def test_conducted_aberrant_needs_the_beat_and_its_family_on_time_after_the_sinus_p_wave():
    """A V beat on time after the sinus P wave, its family too, is conducted; not when it is early, has no
    sinus P wave, or its family is early or without one (late ventricular beats among premature ones)."""
    names = ("rr_pre_local", "p_alone_corr", "family_rr_pre_local", "family_p_corr")
    f = np.zeros((6, len(features.NAMES)), np.float32)
    rows = [(1.0, 0.95, 1.0, 0.95), (0.7, 0.95, 1.0, 0.95), (1.0, 0.3, 1.0, 0.95), (1.0, 0.95, 0.7, 0.95),
            (1.0, 0.95, 1.0, 0.3), (1.0, 0.95, 1.0, 0.95)]  # fmt: skip
    for i, row in enumerate(rows):
        for name, value in zip(names, row):
            f[i, features.NAMES.index(name)] = value
    cls = np.array(["V", "V", "V", "V", "V", "N"])
    assert context.conducted_aberrant(cls, f).tolist() == [True, False, False, False, False, False]


def test_beats_classed_s_on_time_outside_a_run_are_n():
    """Beats classed S in a rhythm at 0.8 s: one on time (its interval within ON_TIME of the local median and of
    the one before) and an on-time pair are N; a premature one (0.6 s) and the beat after it (a pair begun early),
    and three on time in a row (a run: rule 3's), stay S."""
    rr = np.full(60, 0.8)
    rr[30] = 0.6
    times, cls = rhythm(rr)
    cls[[10, 20, 21, 30, 31, 40, 41, 42]] = "S"
    f = np.zeros((len(times), len(features.NAMES)), np.float32)
    f[:, features.NAMES.index("rr_pre_local")] = rr / np.median(rr)
    f[:, features.NAMES.index("rr_pre_prev")] = rr / np.r_[rr[0], rr[:-1]]
    assert np.flatnonzero(context.supraventricular_on_time(cls, f)).tolist() == [10, 20, 21]


def test_the_premature_beats_of_a_ventricular_run_whose_cycle_alternates_are_v():
    """Sinus rhythm at 0.8 s, then 10 cycles of V beats at 0.67 s each followed by a beat at 0.47 s classed N
    (MIT-BIH 223's VT): the short-cycle beats without a P wave are V; not with the sinus P wave (0.7), not in
    ventricular bigeminy (V early at 0.5 s, N after the 1.1 s pause), nor for two such beats in a row."""

    def turned(rr, short_classed_n, p_wave=0.0):
        times, cls = rhythm(np.r_[np.full(20, 0.8), rr, np.full(20, 0.8)])
        cls[20 : 20 + len(rr)] = np.where(short_classed_n, "N", "V")
        f = np.zeros((len(times), len(features.NAMES)), np.float32)
        f[:, features.NAMES.index("p_alone_corr")] = p_wave
        return np.flatnonzero(context.premature_between_ventricular(times, cls, f)).tolist()

    alternating = np.tile([0.67, 0.47], 10)
    short = np.tile([False, True], 10)
    assert turned(alternating, short) == list(range(21, 39, 2))  # the last is followed by sinus rhythm
    assert turned(alternating, short, p_wave=0.7) == []
    assert turned(np.tile([0.5, 1.1], 10), short) == []
    assert turned(alternating[:5], short[:5]) == []


def test_the_wide_premature_beats_of_a_bigeminy_the_trees_doubt_are_v():
    """Sinus rhythm at 0.8 s, then 10 cycles of a premature beat at 0.5 s (QRS 35 % wider than the beats between,
    log ratio 0.3) and a beat after a 1.0 s pause, all classed N or S (MIT-BIH 223's ventricular bigeminy as the
    svdb-fitted trees gave it, P(V) 0.3): the premature beats are V. Not where the trees rule V out (P(V) 0.01:
    an aberrated atrial bigeminy, MIT-BIH 201), nor with a QRS as wide as the others', nor for two of them."""

    def turned(cycles=10, wider=0.3, p_v=0.3):
        rr = np.r_[np.full(20, 0.8), np.tile([0.5, 1.0], cycles), np.full(20, 0.8)]
        times, cls = rhythm(rr)
        premature = np.zeros(len(times), bool)
        premature[20 : 20 + 2 * cycles : 2] = True
        cls[premature] = "S"
        f = np.zeros((len(times), len(features.NAMES)), np.float32)
        f[premature, features.NAMES.index("qrs_width_ratio")] = wider
        return np.flatnonzero(context.wide_in_bigeminy(times, cls, f, np.where(premature, p_v, 0.0))).tolist()

    assert turned() == list(range(20, 40, 2))
    assert turned(p_v=0.01) == []
    assert turned(wider=0.1) == []
    assert turned(cycles=2) == []


def test_an_interpolated_premature_beat_of_another_qrs_is_v_and_the_sinus_beat_after_it_n():
    """Sinus rhythm at 0.8 s with a beat 0.4 s early whose QRS correlates 0.3 less than its neighbours', the next
    beat 0.45 s after it (one sinus cycle, the PR a little longer), both classed S: the first is V, the second N.
    Not with a compensatory pause (the next beat 1.2 s after), nor with a QRS as the others' (then both stay S);
    where the trees already class the first V, the second is N."""

    def moved(rr_after, contrast, first="S"):
        rr = np.r_[np.full(20, 0.8), 0.4, rr_after, np.full(20, 0.8)]
        times, cls = rhythm(rr)
        cls[20:22] = first, "S"
        f = np.zeros((len(times), len(features.NAMES)), np.float32)
        f[:, features.NAMES.index("rr_pre_local")] = rr / 0.8
        f[20, features.NAMES.index("qrs_corr_contrast")] = contrast
        ventricular, sinus = context.interpolated(times, cls, f)
        return np.flatnonzero(ventricular).tolist(), np.flatnonzero(sinus).tolist()

    assert moved(0.45, -0.3) == ([20], [21])
    assert moved(1.2, -0.3) == ([], [])
    assert moved(0.45, -0.1) == ([], [])
    assert moved(0.45, -0.1, first="V") == ([], [21])


def test_a_family_shares_its_ventricular_evidence_and_each_beat_keeps_n_against_s():
    """Two families of ten beats (told apart by their family figures alone): in the ventricular one (P(V) 0.9) a
    borderline member (N 0.55, S 0.05, V 0.4) becomes V; in the sinus one (P(V) 0.02) a member at V 0.55 becomes
    N. The probabilities still sum to one and each beat's N against S keeps its ratio."""
    f = np.zeros((20, len(features.NAMES)), np.float32)
    f[:10, features.NAMES.index("family_share")] = 0.5
    f[10:, features.NAMES.index("family_p_corr")] = 0.9
    family = features.family_of(f)
    assert len(set(family[:10])) == 1 and len(set(family[10:])) == 1 and family[0] != family[10]
    prob = np.zeros((20, len(model.CLASSES)))
    prob[:10, :3] = [0.1, 0.0, 0.9]
    prob[0, :3] = [0.55, 0.05, 0.4]
    prob[10:, :3] = [0.9, 0.08, 0.02]
    prob[10, :3] = [0.45, 0.0, 0.55]
    shared = model.family_shared(prob, f)
    assert np.allclose(shared.sum(1), 1.0)
    assert shared[0].argmax() == model.CLASSES.index("V") and shared[10].argmax() == model.CLASSES.index("N")
    assert np.isclose(shared[0, 0] / shared[0, 1], 11.0) and np.allclose(shared[1:10].argmax(1), 2)
    assert np.allclose(shared[11:], prob[11:], atol=0.02)


def test_atrial_fibrillation_is_not_supraventricular(monkeypatch):
    """Atrial fibrillation: irregular intervals (log RR with a 0.15 standard deviation), normal QRS without P
    waves, fibrillatory waves (4-8 Hz, 0.05 mV): irregularity is not prematurity, so few beats are S and
    almost none V."""
    monkeypatch.setitem(synth.WAVES, "f", [w for w in synth.WAVES["N"] if w[0] != "P"])
    rng = np.random.default_rng(5)
    times = 0.5 + np.cumsum(0.75 * np.exp(0.15 * rng.standard_normal(600)))
    leads, peaks = record(times, np.full(len(times), "N"), 250.0, shapes=np.full(len(times), "f"))
    t = np.arange(len(leads[0])) / 250.0
    phase = np.cumsum(2 * np.pi * (6 + 2 * np.sin(2 * np.pi * 0.1 * t)) / 250.0)
    leads = [x + 0.05 * np.sin(phase + k) for k, x in enumerate(leads)]
    cls, _ = model.classify(leads, 250.0, peaks)
    assert (cls == "S").mean() <= 0.05 and (cls == "V").sum() <= 3


def test_a_narrow_run_classed_v_inside_atrial_fibrillation_is_conducted():
    """Rule 4 on given classes: inside AF (log RR with a 0.15 standard deviation) a run of four beats classed V
    whose QRS is as wide as the sinus template's is N, and so is an S beat; not where one of the run's beats is
    wider by more than FAMILY_SAME, nor a run of two, nor the same run in sinus rhythm (no AF)."""
    rng = np.random.default_rng(5)
    irregular = 0.75 * np.exp(0.15 * rng.standard_normal(600))

    def turned(rr, widths, run=slice(300, 304)):
        times, cls = rhythm(rr)
        cls[run], cls[200] = "V", "S"
        f = np.zeros((len(times), len(features.NAMES)))
        f[run, features.NAMES.index("qrs_width_ratio")] = widths
        return np.flatnonzero(context.in_atrial_fibrillation(times, cls, f)).tolist()

    assert turned(irregular, [0.05, -0.1, 0.15, 0.0]) == [200, 300, 301, 302, 303]
    assert turned(irregular, [0.05, -0.1, 1.5 * features.FAMILY_SAME, 0.0]) == [200]
    assert turned(irregular, [0.05, -0.1], run=slice(300, 302)) == [200]
    assert turned(np.full(600, 0.8), [0.05, -0.1, 0.15, 0.0]) == []


def test_premature_narrow_beat_in_regular_rhythm_is_s():
    """The same beat throughout; one beat at 70 % of the sinus interval (the sinus node reset after it) is S,
    every other beat N."""
    rr = np.full(200, 0.8)
    rr[100] = 0.56
    times = 0.5 + np.cumsum(rr)
    labels = np.full(len(times), "N")
    leads, peaks = record(times, labels, 250.0)
    cls, _ = model.classify(leads, 250.0, peaks)
    assert cls[100] == "S"
    assert (np.delete(cls, 100) == "N").mean() >= 0.99


@pytest.mark.parametrize("bpm", [45.0, 150.0])
def test_steady_sinus_rhythm_at_any_rate_is_normal(bpm):
    """Sinus bradycardia and sinus tachycardia, each the whole record: every beat N (no absolute rate makes a
    beat S)."""
    spec = synth.SynthSpec(duration_s=600, hr_bpm=bpm, pvc_rate=0.0, pac_rate=0.0, aberrant_rate=0.0, seed=2)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 128.0)
    cls, _ = model.classify(leads, 128.0, peaks)
    assert (cls == "N").mean() >= 0.99


def test_the_p_wave_alone_stays_on_the_t_wave_at_fast_rates():
    """Sinus tachycardia (150 bpm): each P wave lies on the T wave before it, as it does in the sinus
    template, so the P-wave window with the previous beat taken out still matches the template's P wave."""
    spec = synth.SynthSpec(duration_s=300, hr_bpm=150.0, pvc_rate=0.0, pac_rate=0.0, aberrant_rate=0.0, seed=2)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 250.0)
    f = features.beat_features(leads, 250.0, peaks)
    assert np.nanmedian(f[:, features.NAMES.index("p_alone_corr")]) >= 0.9


def test_a_record_of_one_sinus_shape_is_one_family():
    """Sinus rhythm with 5 % ventricular beats: every sinus beat's family is the whole sinus population (the
    k-means groups of one shape merged), the ventricular beats' a small one. The sinus beat after a ventricular
    beat is left out: after the pause its T wave is another."""
    spec = synth.SynthSpec(duration_s=300, hr_bpm=60.0, pvc_rate=0.05, pac_rate=0.0, aberrant_rate=0.0, seed=2)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 250.0)
    share = features.beat_features(leads, 250.0, peaks)[:, features.NAMES.index("family_share")]
    sinus = (labels == "N") & (np.roll(labels, 1) == "N")
    assert sinus.sum() >= 250 and (share[sinus] >= 0.9).all() and (share[labels == "V"] <= 0.1).all()


def test_a_window_past_the_records_ends_is_not_measured():
    """The record ends 0.2 s after its last R peak and begins 0.1 s before its first: the last beat's T window
    and the first beat's P window run past its ends, so they are missing (NaN), not the log amplitude of a
    flat, clipped stretch; every other beat is measured."""
    fs = 250.0
    spec = synth.SynthSpec(duration_s=120, pvc_rate=0.0, pac_rate=0.0, aberrant_rate=0.0, seed=4)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, fs)
    a, b = peaks[0] - round(0.1 * fs), peaks[-1] + round(0.2 * fs)
    f = features.beat_features([x[a:b] for x in leads], fs, peaks - a)
    t_amp, p_amp = (f[:, features.NAMES.index(n)] for n in ("t_amp_min", "p_amp_min"))
    assert np.isnan(t_amp[-1]) and np.isnan(p_amp[0])
    assert np.isfinite(t_amp[:-1]).all() and np.isfinite(p_amp[1:]).all() and (t_amp[:-1] > -3).all()


def test_a_running_statistic_reads_a_nan_as_its_nearest_finite_neighbour():
    """Inside the series as at its ends: a NaN takes the nearest finite value (the earlier one on a tie)."""
    x = np.array([np.nan, 1.0, np.nan, np.nan, np.nan, 9.0, np.nan])
    assert features._rolling(x, 1, 50).tolist() == [1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0]
    assert features._rolling(x, 3, 50).tolist() == [1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0]
    assert np.isnan(features._rolling(np.full(4, np.nan), 3, 50)).all()


def test_groups_of_one_shape_merge_without_chaining():
    """Groups whose medians lie within FAMILY_SAME join the largest such group; a group within reach of a
    joined group but not of its founder begins one of its own."""
    step = 0.75 * features.FAMILY_SAME
    f = np.r_[np.zeros(50), np.full(30, step), np.full(20, 2 * step), np.full(10, 5.0)][:, None]
    label = np.repeat([3, 1, 0, 2], [50, 30, 20, 10])
    merged = features.same_shape(f, label)
    assert (merged[:80] == 3).all() and (merged[80:100] == 0).all() and (merged[100:] == 2).all()


def rhythm(rr, shapes=None):
    """Beat times (s) for the intervals ``rr`` and, by default, every beat N."""
    times = 0.5 + np.cumsum(rr)
    return times, np.full(len(times), "N") if shapes is None else shapes


def test_a_supraventricular_run_is_s_beat_by_beat():
    """Sinus rhythm at 75 bpm broken twice by a run of 30 atrial beats at 133 bpm that starts and ends at once
    (other P wave, normal QRS): every beat of each run S, however little prematurity it shows against the run
    before it; the sinus beats N."""
    rr = np.full(400, 0.8)
    run = np.r_[100:130, 250:280]
    rr[run] = 0.45
    shapes = np.full(len(rr), "N")
    shapes[run] = "A"
    times, labels = rhythm(rr, shapes)
    leads, peaks = record(times, labels, 250.0)
    cls, p = model.classify(leads, 250.0, peaks)
    assert (cls[run] == "S").mean() >= 0.95
    assert (np.delete(cls, run) == "N").mean() >= 0.99
    assert ((p > 0.25) & (p <= 1)).all()


def test_runs_need_a_sudden_onset_and_an_s_beat_first():
    """The run rule on given classes: a stretch that starts with an S beat at a sudden shortening of the RR
    interval (by more than ONSET) and keeps its rate is S throughout; not when the rate rises gradually
    (sinus tachycardia: 1 % a beat) or when the stretch's first beat is N. A beat classed V inside it stays V,
    a stretch of its own, and the run goes on around it."""
    rr = np.full(200, 0.8)
    rr[80:120] = 0.5
    times, cls = rhythm(rr)
    cls[80] = "S"
    assert np.flatnonzero(context.supraventricular_runs(times, cls)).tolist() == list(range(81, 120))
    assert not context.supraventricular_runs(times, np.where(np.arange(200) == 80, "N", cls)).any()
    with_v = cls.copy()
    with_v[100] = "V"
    assert np.flatnonzero(context.supraventricular_runs(times, with_v)).tolist() == [*range(81, 100), *range(101, 120)]
    ramp = 0.8 * 0.99 ** np.minimum(np.arange(200), 50)
    ramp_times, ramp_cls = rhythm(ramp)
    ramp_cls[[10, 30, 50]] = "S"
    assert not context.supraventricular_runs(ramp_times, ramp_cls).any()


def test_a_run_begun_by_a_premature_beat_at_its_own_coupling_interval_is_s():
    """A tachycardia whose first beat (S) comes 0.62 s after the sinus beat and whose cycle is then 0.5 s: the
    first beat is a stretch of its own (its interval over 15 % from the next), and the run after it is S; not
    when that first beat is N."""
    rr = np.full(200, 0.8)
    rr[80], rr[81:120] = 0.62, 0.5
    times, cls = rhythm(rr)
    cls[80] = "S"
    assert np.flatnonzero(context.supraventricular_runs(times, cls)).tolist() == list(range(81, 120))
    assert not context.supraventricular_runs(times, np.where(np.arange(200) == 80, "N", cls)).any()


def test_a_run_whose_cycle_warms_up_is_one_run():
    """A tachycardia begun by an S beat whose cycle shortens by more than ONSET after two beats (0.6 s, then
    0.45 s: two stretches, neither three beats long) is one run; not when its first beat is N."""
    rr = np.full(200, 0.9)
    rr[80:82], rr[82:84] = 0.6, 0.45
    times, cls = rhythm(rr)
    cls[80] = "S"
    assert np.flatnonzero(context.supraventricular_runs(times, cls)).tolist() == [81, 82, 83]
    assert not context.supraventricular_runs(times, np.where(np.arange(200) == 80, "N", cls)).any()


def test_a_run_goes_on_across_an_ectopic_beat_at_its_own_rate():
    """A run cut by a V beat (short interval, then its pause) goes on where the rhythm resumes at the run's
    interval within RESUME_BEATS beats; not where it resumes 30 % slower, nor, for a run too short to be
    sustained, after a beat that is N (a sinus pause ends the run; that beat, faster still, is the run's last)."""
    rr = np.full(200, 0.8)
    rr[80:150] = 0.5
    rr[90], rr[91] = 0.3, 0.7  # the V beat at 90, the pause after it
    times, cls = rhythm(rr)
    cls[80], cls[90] = "S", "V"
    expected = [*range(81, 90), *range(92, 150)]
    assert np.flatnonzero(context.supraventricular_runs(times, cls)).tolist() == expected
    slower = rr.copy()
    slower[92:150] = 0.65
    assert np.flatnonzero(context.supraventricular_runs(rhythm(slower)[0], cls)).tolist() == list(range(81, 90))
    assert np.flatnonzero(context.supraventricular_runs(times, np.where(cls == "V", "N", cls))).tolist() == list(
        range(81, 91)
    )


def test_a_run_goes_on_across_a_ventricular_couplet_and_its_pause():
    """A run (0.45 s) cut by a ventricular couplet and the beat that ends its pause (0.56 s, N: a stretch of its
    own) goes on where the rhythm resumes at the run's interval; not where two of the three beats between are N
    (the run has stopped)."""
    rr = np.full(200, 0.8)
    rr[80:150] = 0.45
    rr[90:93] = 0.38, 0.4, 0.56  # the couplet at 90 and 91, the pause's beat at 92
    times, cls = rhythm(rr)
    cls[80], cls[90:92] = "S", "V"
    assert np.flatnonzero(context.supraventricular_runs(times, cls)).tolist() == [*range(81, 90), *range(93, 150)]
    rr[91] = 0.6  # one V beat, then two beats ending pauses
    cls[91] = "N"
    assert np.flatnonzero(context.supraventricular_runs(rhythm(rr)[0], cls)).tolist() == list(range(81, 90))


def test_a_run_goes_on_where_its_beats_keep_their_phase_across_a_false_or_a_missed_beat():
    """A tachycardia at 0.42 s, its first beat S, through noise: a false detection splits one cycle (0.15 and
    0.27 s), then a missed beat leaves 0.84 s, every beat classed N. The run keeps its phase across each (its
    next beats a whole number of cycles after its last), so it goes on: every beat of it S but the beat that
    ends the gap. Not where the rhythm comes back out of phase (the gap 0.63 s, 1.5 cycles: the run, too short
    to recur, stopped and another began)."""

    def record(gap_s: float):
        rr = [0.8] * 60 + [0.42] * 8 + [0.15, 0.27] + [0.42] * 4 + [gap_s] + [0.42] * 30 + [0.8] * 40
        cls = np.full(len(rr), "N")
        cls[60] = "S"
        return rhythm(np.array(rr))[0], cls

    assert np.flatnonzero(context.supraventricular_runs(*record(0.84))).tolist() == [*range(61, 74), *range(75, 105)]
    assert np.flatnonzero(context.supraventricular_runs(*record(0.63))).tolist() == list(range(61, 74))


def test_a_sustained_run_that_stops_and_starts_again_at_its_rate_is_the_same_run():
    """A sustained tachycardia (30 beats at 0.42 s, its first beat S) stops for ventricular bigeminy and starts
    again 15 s later at 0.42 s, its first beat classed N (the trees no longer see it premature): the second
    stretch is S too, the V beats among it V. Not when the first run was too short to be sustained
    (LOCAL_BEATS), when the second starts at another rate, or when it starts more than RECUR_S later."""

    def record(first_beats: int, second_rr: float, bigeminy_cycles: int):
        rr = [0.8] * 60 + [0.42] * first_beats + [0.8, 0.45] * bigeminy_cycles + [second_rr] * 40 + [0.8] * 40
        cls = np.full(len(rr), "N")
        cls[60] = "S"
        bigeminy = 60 + first_beats + np.arange(bigeminy_cycles) * 2 + 1
        cls[bigeminy] = "V"
        cls[bigeminy[-1] + 1 + 20] = "V"  # a ventricular beat inside the second stretch, at its rate
        second = np.arange(bigeminy[-1] + 1, bigeminy[-1] + 41)
        return rhythm(np.array(rr))[0], cls, second

    times, cls, second = record(30, 0.42, 12)  # 15 s of bigeminy
    marked = context.supraventricular_runs(times, cls)
    assert marked[61:90].all() and marked[second].sum() == 39 and not marked[second[20]]
    for first_beats, second_rr, cycles in ((8, 0.42, 12), (30, 0.6, 12), (30, 0.42, 30)):  # 30 cycles: 37.5 s
        times, cls, second = record(first_beats, second_rr, cycles)
        assert not context.supraventricular_runs(times, cls)[second].any(), (first_beats, second_rr, cycles)


def test_the_conducted_beats_of_ventricular_bigeminy_classed_v_are_n():
    """Sinus rhythm at 0.8 s, then 20 cycles of bigeminy (a premature beat at 0.5 s, the compensatory pause
    1.1 s), every beat of it classed V: the beats after the pauses are N when their QRS differs from the
    premature beats' (the conducted rhythm in a bundle-branch block); not when every beat has one shape, not in
    a ventricular run at a steady rate, and not in a tachycardia whose cycle alternates (0.5 and 0.75 s around
    sinus rhythm at 0.75 s: its long cycle is no pause). Without NN intervals near the stretch the pause is
    measured against the record's."""
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], 20), np.full(60, 0.8)]
    times, cls = rhythm(rr)
    cls[60:100] = "V"
    f = np.zeros((len(rr), len(features.NAMES)), np.float32)
    conducted = np.arange(61, 100, 2)
    f[conducted, features.NAMES.index("qrs_corr_mean")] = 0.5  # the premature beats' stays 0
    f[:, features.NAMES.index("family_share")] = 0.8  # three families: sinus, premature and conducted beats
    f[60:100:2, features.NAMES.index("family_share")], f[conducted, features.NAMES.index("family_share")] = 0.1, 0.1001
    assert np.flatnonzero(context.conducted_in_bigeminy(times, cls, f)).tolist() == conducted.tolist()
    assert not context.conducted_in_bigeminy(times, cls, np.zeros_like(f)).any()
    steady = rhythm(np.r_[np.full(60, 0.8), np.full(40, 0.45), np.full(60, 0.8)])[0]
    assert not context.conducted_in_bigeminy(steady, cls, f).any()
    alternating = rhythm(np.r_[np.full(60, 0.75), np.tile([0.5, 0.75], 20), np.full(60, 0.75)])[0]
    assert not context.conducted_in_bigeminy(alternating, cls, f).any()
    far = cls.copy()
    far[20:60], far[100:140] = "Q", "Q"  # no NN interval within 32 beats of the stretch: the record's counts
    assert np.flatnonzero(context.conducted_in_bigeminy(times, far, f)).tolist() == conducted.tolist()
    prob = np.where((cls == "V")[:, None], [0.05, 0.05, 0.9, 0.0, 0.0], [0.9, 0.05, 0.05, 0.0, 0.0])
    decided, p = model.decide(prob, f, times)
    assert (decided[conducted] == "N").all() and (decided[60:100:2] == "V").all()
    assert np.allclose(p[conducted], 0.1)


def test_the_conducted_beats_of_bigeminy_the_trees_class_v_among_those_they_class_n_are_n_by_their_shape():
    """The bigeminy above, its premature beats classed V and its conducted beats N but for three classed V: the
    two whose QRS is that of the other conducted beats are N (MIT-BIH 207's conducted beats, unlike the record's
    sinus template), the one with a QRS of its own stays V (the middle beat of a triplet after the pause, MIT-BIH
    223's multiform beats); with no conducted beat of the pair's shape around them, neither goes."""
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], 20), np.full(60, 0.8)]
    times, cls = rhythm(rr)
    cls[60:100:2], cls[[71, 81, 91]] = "V", "V"
    f = np.zeros((len(rr), len(features.NAMES)), np.float32)
    f[61:100:2, features.NAMES.index("qrs_corr_mean")] = 0.5  # the conducted beats' shape
    f[91, features.NAMES.index("qrs_amp_mean")] = 0.6  # a shape of its own
    assert np.flatnonzero(context.conducted_in_bigeminy(times, cls, f)).tolist() == [71, 81]
    alone = f.copy()
    others = np.setdiff1d(np.arange(61, 100, 2), [71, 81, 91])
    alone[others, features.NAMES.index("qrs_amp_mean")] = -0.6
    alone[81, features.NAMES.index("qrs_width_ratio")] = 0.6
    assert not context.conducted_in_bigeminy(times, cls, alone).any()


def test_a_conducted_beat_of_bigeminy_nearer_the_conducted_shape_in_most_figures_is_n():
    """The bigeminy above, its conducted beats classed N but for two classed V. The conducted and premature beats
    differ in every QRS figure (correlation 0.5 and 0, amplitude 0 and -0.4, width -0.3 and 0). Beat 71 has the
    conducted beats' correlation and width but the premature beats' amplitude (MIT-BIH 207 at 203.6 s): nearer the
    conducted shape in two figures of three, it is N. Beat 81 has an amplitude (0.6) far from both shapes (a
    shape of its own: a multiform triplet's middle beat) and stays V, as does a beat nearer the premature shape in
    two figures."""
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], 20), np.full(60, 0.8)]
    times, cls = rhythm(rr)
    cls[60:100:2], cls[[71, 81]] = "V", "V"
    f = np.zeros((len(rr), len(features.NAMES)), np.float32)
    corr, amp, width = (features.NAMES.index(name) for name in context.QRS_BY)
    f[61:100:2, corr], f[61:100:2, width] = 0.5, -0.3  # the conducted beats' shape
    f[60:100:2, amp] = -0.4  # the premature beats'
    f[71, amp], f[81, amp] = -0.4, 0.6
    assert np.flatnonzero(context.conducted_in_bigeminy(times, cls, f)).tolist() == [71]
    f[71, width] = 0.0  # now the premature beats' width as well
    assert not context.conducted_in_bigeminy(times, cls, f).any()


def test_two_cycles_of_bigeminy_classed_v_have_their_conducted_beats_n():
    """Sinus rhythm at 0.8 s, two cycles of bigeminy (premature beats at 0.5 s, pauses of 1.1 s), all four beats
    classed V: the two beats after the pauses share a shape of their own (MIT-BIH 207's conducted beats in another
    bundle-branch shape) and are N, two being the fewest that can share a shape; not where they have the premature
    beats' shape, nor after pauses no longer than the sinus cycle, nor where the two differ (a triplet's late
    middle beat and the conducted beat after it)."""
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], 2), np.full(60, 0.8)]
    times, cls = rhythm(rr)
    cls[60:64] = "V"
    f = np.zeros((len(rr), len(features.NAMES)), np.float32)
    f[[61, 63], features.NAMES.index("qrs_corr_mean")] = 0.5
    assert np.flatnonzero(context.conducted_in_bigeminy(times, cls, f)).tolist() == [61, 63]
    assert not context.conducted_in_bigeminy(times, cls, np.zeros_like(f)).any()
    no_pause = rhythm(np.r_[np.full(60, 0.8), np.tile([0.5, 0.8], 2), np.full(60, 0.8)])[0]
    assert not context.conducted_in_bigeminy(no_pause, cls, f).any()
    f[61, features.NAMES.index("qrs_amp_mean")] = 0.6  # a shape of its own
    assert not context.conducted_in_bigeminy(times, cls, f).any()


def test_the_chain_shape_helpers_agree_with_their_pairwise_definitions():
    """leave_one_out_median and nearest_other (one sort, a k-d tree: a bigeminy may last hours) give, per row, the
    median of the other rows and the Chebyshev distance to the nearest other row, ties and pairs included."""
    rng = np.random.default_rng(7)
    for n in (2, 3, 4, 7, 40):
        x = rng.normal(size=(n, 3)).round(1)  # rounding makes ties
        medians = np.array([np.median(np.delete(x, k, 0), 0) for k in range(n)])
        distance = np.abs(x[:, None] - x[None]).max(2)
        np.fill_diagonal(distance, np.inf)
        assert np.allclose(context.leave_one_out_median(x), medians)
        assert np.allclose(context.nearest_other(x), distance.min(1))


def test_a_single_beat_between_ventricular_beats_after_a_pause_and_the_sinus_p_wave_is_conducted():
    """Sinus rhythm at 0.8 s with ``V N V`` (coupling 0.5 s, the pause 1.1 s), all three classed V: the middle
    beat is N when its P wave reads as the sinus one (0.7) and its neighbours' do not (0.2); not when a
    neighbour's reads as sinus too, when its own is weak, nor in a triplet at a steady 0.45 s (no pause)."""

    def classes(rr, p_waves):
        times, cls = rhythm(np.asarray(rr))
        cls[20:23] = "V"
        f = np.zeros((len(times), len(features.NAMES)), np.float32)
        f[20:23, features.NAMES.index("p_alone_corr")] = p_waves
        return np.flatnonzero(context.conducted_between_ventricular(times, cls, f)).tolist()

    bigeminy = np.r_[np.full(20, 0.8), 0.5, 1.1, 0.5, 1.1, np.full(20, 0.8)]
    assert classes(bigeminy, [0.2, 0.7, 0.2]) == [21]
    assert classes(bigeminy, [0.2, 0.7, 0.6]) == []
    assert classes(bigeminy, [-0.4, 0.4, -0.4]) == []
    assert classes(np.r_[np.full(20, 0.8), 0.45, 0.45, 0.45, 1.1, np.full(20, 0.8)], [0.2, 0.7, 0.2]) == []


def test_a_single_beat_between_ventricular_beats_after_a_compensatory_pause_and_the_sinus_qrs_is_conducted():
    """Sinus rhythm at 0.8 s with ``V N V`` (coupling 0.5 s, the pause 1.1 s), all three classed V and no P wave
    read: the middle beat is N when its QRS correlates with the sinus template (0.8) by 0.3 more than its
    neighbours' (0.2) and it ends a pause (1.1 s against the sustained 0.8 s); not when a neighbour's QRS is as
    sinus-like, nor where the middle interval is no pause of the rhythm (a fast run whose cycle alternates)."""

    def classes(qrs, sustained=1.1 / 0.8):
        times, cls = rhythm(np.r_[np.full(20, 0.8), 0.5, 1.1, 0.5, 1.1, np.full(20, 0.8)])
        cls[20:23] = "V"
        f = np.zeros((len(times), len(features.NAMES)), np.float32)
        f[20:23, features.NAMES.index("qrs_corr_mean")] = qrs
        f[21, features.NAMES.index("rr_pre_sustained")] = sustained
        return np.flatnonzero(context.conducted_between_ventricular(times, cls, f)).tolist()

    assert classes([0.2, 0.8, 0.2]) == [21]
    assert classes([0.2, 0.8, 0.6]) == []
    assert classes([0.2, 0.8, 0.2], sustained=0.7) == []


def test_the_premature_beats_of_atrial_bigeminy_classed_n_are_s():
    """Sinus rhythm at 0.9 s, then 20 cycles of atrial bigeminy (a premature beat at 0.55 s, the pause 1.2 s)
    that the trees class N throughout: each premature beat is S and each beat after a pause N; sinus rhythm
    alone, and a stretch whose every other beat is a V beat, give none."""
    rr = np.r_[np.full(60, 0.9), np.tile([0.55, 1.2], 20), np.full(60, 0.9)]
    times, cls = rhythm(rr)
    assert np.flatnonzero(context.premature_in_bigeminy(times, cls)).tolist() == list(range(60, 100, 2))
    assert not context.premature_in_bigeminy(rhythm(np.full(200, 0.9))[0], cls).any()
    assert not context.premature_in_bigeminy(times, np.where(np.arange(len(rr)) % 2 == 0, "V", cls)).any()
    f = np.zeros((len(rr), len(features.NAMES)))
    decided, p = model.decide(np.tile([0.9, 0.08, 0.02, 0.0, 0.0], (len(rr), 1)), f, times)
    assert (decided[60:100:2] == "S").all() and (decided[61:100:2] == "N").all()
    assert np.allclose(p[60:100:2], 0.98)


def test_one_lead_record_is_classified():
    """A record with one lead: every beat gets a class (the lead features of the missing lead are the one's)."""
    spec = synth.SynthSpec(duration_s=300, pvc_rate=0.05, pac_rate=0.0, aberrant_rate=0.0, seed=8)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 250.0)
    cls, p = model.classify(leads[:1], 250.0, peaks)
    assert len(cls) == len(peaks) and figures(cls, labels, "V", "V")[0] >= 0.9


def test_a_lead_that_does_not_show_a_beat_is_left_out_of_its_features():
    """MIT-BIH 116 at 1355 s: the first lead's amplifier at its rail, then recovering, for 8 s while the second
    lead shows every beat: those beats read as the second lead alone shows them (one lead's figures: the
    lead-wise min, mean and max agree) and are N, as the sinus beats around them."""
    fs = 250.0
    spec = synth.SynthSpec(duration_s=300, pvc_rate=0.0, pac_rate=0.0, aberrant_rate=0.0, seed=10)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, fs)
    i0, i1 = round(120 * fs), round(128 * fs)
    leads[0][i0:i1] = 3.0 * np.exp(-np.arange(i1 - i0) / (1.5 * fs))  # no QRS: the amplifier's recovery
    blank = (peaks > i0 + 0.2 * fs) & (peaks < i1 - 0.2 * fs)
    f = features.beat_features(leads, fs, peaks)
    lo, mean, hi = (f[:, features.NAMES.index(f"qrs_corr_{agg}")] for agg in ("min", "mean", "max"))
    assert blank.sum() >= 6 and np.allclose(lo[blank], hi[blank]) and np.allclose(mean[blank], hi[blank])
    assert (lo[blank] > 0.9).all() and not np.allclose(lo[~blank], hi[~blank])
    cls, _ = model.classify(leads, fs, peaks)
    assert (cls[blank] == "N").all()


def test_features_are_ratios_to_the_record():
    """Scaling a record's amplitude or its sampling rate leaves the features (nearly) unchanged."""
    spec = synth.SynthSpec(duration_s=300, pvc_rate=0.05, pac_rate=0.05, aberrant_rate=0.0, seed=9)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 250.0)
    a = features.beat_features(leads, 250.0, peaks)
    b = features.beat_features([3 * x for x in leads], 250.0, peaks)
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
    leads500, peaks500 = record(times, labels, 500.0)
    c = features.beat_features(leads500, 500.0, peaks500)
    corr = features.NAMES.index("qrs_corr_mean")
    assert np.nanmedian(np.abs(a[:, corr] - c[:, corr])) < 0.02


def test_the_shipped_file_names_its_features_data_and_licence():
    meta = json.loads(model.MODEL_FILE.read_text())
    assert tuple(meta["features"]) == features.NAMES and tuple(meta["classes"]) == model.CLASSES
    assert "ODC-By 1.0" in meta["licence"] and len(meta["trained_on"]["mitdb"]) == 22
    assert len(meta["trained_on"]["svdb"]) == 39


def test_a_classifier_file_for_other_features_is_refused(tmp_path):
    meta = json.loads(model.MODEL_FILE.read_text())
    meta["features"] = meta["features"][:-1]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(meta))
    with pytest.raises(BeatflowError, match="remake it"):
        model.load(path)


def test_detections_without_a_reference_beat_are_learnt_as_q():
    """Training rows: each detection takes its matched reference beat's class; one that matches none (noise, a
    T wave counted twice) is Q, so that the trees learn noise apart from ventricular beats; every class's rows
    weigh in proportion to the square root of its count; each beat comes twice, with its features over the
    record's leads and over its first lead alone, the two alike in weight."""
    from pathlib import Path

    from beatflow.classify.dataset import RecordRows
    from beatflow.classify.fit import training_set

    label = np.array(["N"] * 16 + ["V"] * 4 + ["-"])
    both, alone = np.zeros((len(label), 2)), np.ones((len(label), 2))
    rows = RecordRows(
        "r", "db", Path("r"), both, label, np.arange(len(label)), 250.0,
        np.ones(len(label), bool), label, (np.zeros(0, int), np.zeros(0, int)), None, alone,
    )  # fmt: skip
    x, y, w = training_set([rows])
    assert [model.CLASSES[i] for i in y] == ["Q" if c == "-" else c for c in label] * 2
    assert (x[: len(label)] == both).all() and (x[len(label) :] == alone).all()
    assert w[: len(label)].sum() == pytest.approx(w[len(label) :].sum())
    totals = {c: w[y == model.CLASSES.index(c)].sum() for c in ("N", "V", "Q")}
    assert totals["N"] / totals["Q"] == pytest.approx(4.0) and totals["V"] / totals["Q"] == pytest.approx(2.0)


def test_kmeans_is_deterministic_and_separates_two_groups():
    rng = np.random.default_rng(0)
    f = np.r_[rng.normal(0, 1, (300, 3)), rng.normal(8, 1, (30, 3))]
    a, b = kmeans(f, 2), kmeans(f, 2)
    assert (a == b).all()
    assert len(set(a[:300])) == 1 and len(set(a[300:])) == 1 and a[0] != a[-1]


class NumpyStandingInForCupy:
    """numpy under another name: kmeans's device path (a one-hot product for the group sums) on the host."""

    def __getattr__(self, name):
        return getattr(np, name)

    asnumpy = staticmethod(np.asarray)


def test_kmeans_device_path_finds_the_host_groups():
    rng = np.random.default_rng(1)
    f = np.concatenate([rng.normal(centre, 1.0, (500, 4)) for centre in (0, 6, 12, 18, 24)])
    host, device = kmeans(f, 8), kmeans(f, 8, xp=NumpyStandingInForCupy())
    assert (host == device).all()
    assert len(np.unique(host)) == 8
    for block in range(5):  # a well-separated group is never split across another group
        assert not set(host[block * 500 : (block + 1) * 500]) & set(
            np.delete(host, np.s_[block * 500 : (block + 1) * 500])
        )


def test_forest_as_tensors_predicts_what_lightgbm_predicts():
    """The shipped booster walked as torch tensors (the GPU backend's path, here on the CPU) gives LightGBM's
    probabilities to rounding, on feature rows with missing values and with values exactly at split
    thresholds (``<=`` goes left)."""
    from beatflow.classify.trees import forest, probabilities

    booster = model.load()[0]
    f = forest(booster.model_to_string())
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((300, len(features.NAMES))).astype(np.float32)
    rows[rng.random(rows.shape) < 0.1] = np.nan
    internal = np.isfinite(f.threshold) & (f.left != np.arange(f.left.shape[1]))
    at = np.flatnonzero(internal.ravel())[:300]
    rows[np.arange(len(at)), f.feature.ravel()[at]] = f.threshold.ravel()[at].astype(np.float32)
    expected = booster.predict(rows)
    got = probabilities(f, rows, "cpu")
    assert np.abs(got - expected).max() < 1e-12
    assert (got.argmax(1) == expected.argmax(1)).all()


@pytest.mark.gpu
def test_gpu_classes_agree_with_the_cpu(gpu):
    """The same record classified on the device (features in CuPy, the forest in torch) and on the host: the
    features agree to float rounding and at least 99.5 % of the beats get the same class."""
    import cupy
    import torch

    spec = synth.SynthSpec(duration_s=900, pvc_rate=0.05, pac_rate=0.05, aberrant_rate=0.0, seed=4)
    times, labels = synth.rr_series(spec, np.random.default_rng(spec.seed))
    leads, peaks = record(times, labels, 360.0)
    host = features.beat_features(leads, 360.0, peaks)
    device = features.beat_features([cupy.asarray(x) for x in leads], 360.0, peaks, cupy)
    assert np.allclose(host, device, rtol=1e-3, atol=1e-4, equal_nan=True)
    cls_host, p_host = model.classify(leads, 360.0, peaks)
    cls_gpu, p_gpu = model.classify(
        [cupy.asarray(x) for x in leads], 360.0, peaks, xp=cupy, device=torch.device("cuda")
    )
    assert (cls_host == cls_gpu).mean() >= 0.995
    assert np.abs(p_host - p_gpu)[cls_host == cls_gpu].max() < 1e-3


@pytest.mark.gpu
def test_gpu_kmeans_gives_the_host_groups_on_every_run(gpu):
    import cupy

    rng = np.random.default_rng(2)
    f = np.concatenate([rng.normal(centre, 1.0, (20_000, 19)) for centre in range(0, 64, 4)])
    host = kmeans(f, 16)
    runs = [kmeans(f, 16, xp=cupy) for _ in range(3)]
    assert all((r == runs[0]).all() for r in runs)
    assert (runs[0] == host).mean() >= 0.999


@pytest.mark.gpu
def test_p_wave_check_reads_only_the_beats_windows_from_the_device(gpu):
    """The AF detector's P-wave check on a lead in device memory (the GPU backend's score) gives the host's
    figure; only the beats' windows are copied (the lead itself is never converted to numpy)."""
    import cupy

    from beatflow.holter.af import p_wave_consistency

    leads, peaks = record(np.arange(1.0, 120.0, 0.8), np.full(149, "N"), 250.0)
    host = p_wave_consistency(leads[0], 250.0, peaks / 250.0)
    assert host is not None
    assert p_wave_consistency(cupy.asarray(leads[0]), 250.0, peaks / 250.0) == pytest.approx(host, abs=1e-9)


def test_out_of_database_scores_every_record_with_trees_that_never_saw_it(monkeypatch):
    """The protocol of ``python -m benchmarks.classes``: each database scored by the trees fitted on the other,
    then every record of both by the trees fitted on the folds it is not in."""
    from types import SimpleNamespace

    from beatflow.classify import fit

    def rows(database, record):
        labels, both = np.array(["N", "V", "N", "S"]), (np.arange(4), np.arange(4))
        return SimpleNamespace(record=record, database=database, reference=labels, scored=np.arange(4), matched=both)

    mitdb = [rows("mitdb", r) for r in ("100", "101", "102")]
    svdb = [rows("svdb", r) for r in ("800", "801", "802", "803", "804", "805")]
    fitted = []

    def booster_of(records):  # a "booster" that is the set of records it was fitted on
        fitted.append({r.record for r in records})
        return fitted[-1]

    def record_classes(r, seen):
        assert r.record not in seen, f"{r.record} scored by trees fitted on it"
        return np.array(["N", "V", "N", "N"])

    monkeypatch.setattr(fit, "record_classes", record_classes)
    out = fit.out_of_database(mitdb, svdb, booster_of=booster_of)
    assert list(out) == ["mitdb → svdb", "svdb → mitdb", f"{fit.FOLDS}-fold by record, both"]
    assert fitted[:2] == [{"100", "101", "102"}, {"800", "801", "802", "803", "804", "805"}]
    assert len(fitted) == 2 + fit.FOLDS
    every = {r.record for r in mitdb + svdb}
    assert set(out[f"{fit.FOLDS}-fold by record, both"]["records"]) == every
    assert all(len(every - seen) >= 1 for seen in fitted[2:])
    gross = out["mitdb → svdb"]["gross"]
    assert (gross["V"]["n"], gross["V"]["tp"], gross["S"]["n"], gross["S"]["tp"]) == (6, 6, 6, 0)


def test_each_set_of_records_is_fitted_once():
    from types import SimpleNamespace

    from beatflow.classify import fit

    calls = []
    once = fit.fitted_once(lambda records: calls.append([r.record for r in records]) or object())
    mitdb, svdb = [SimpleNamespace(database="mitdb", record="100")], [SimpleNamespace(database="svdb", record="100")]
    assert once(mitdb) is once(list(mitdb)) and once(svdb) is not once(mitdb)
    assert calls == [["100"], ["100"]]
