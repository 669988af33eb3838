import numpy as np
import pytest

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import detect_peaks
from beatflow.detect.veto import (
    qrs_band,
    qrs_correlation,
    reference_rr,
    second_lead_confirms,
    surviving,
)
from beatflow.evaluate import match
from beatflow.synth import SynthSpec, generate


def drop(peaks, strength, correlation, support=None, second_noise=None):
    """Which of ``peaks`` the veto drops, with the default parameters."""
    peaks = np.asarray(peaks, dtype=np.int64)
    kept = surviving(
        peaks,
        np.asarray(strength),
        np.asarray(correlation),
        SegmentParams.defaults(),
        None if support is None else np.asarray(support),
        second_noise=None if second_noise is None else np.asarray(second_noise),
    )
    return ~np.isin(peaks, kept)


def test_reference_rr_is_the_upper_quartile_of_the_intervals_around_each_peak():
    peaks = np.cumsum([0] + [100] * 10 + [60] * 10)  # intervals: ten of 100, then ten of 60
    np.testing.assert_allclose(reference_rr(peaks, np.array([1, 10, 20])), [100.0, 100.0, 60.0])
    at_15 = np.quantile([100] * 3 + [60] * 10, 0.75)  # intervals 7..19: the window is cut at the end
    np.testing.assert_allclose(reference_rr(peaks, np.array([15])), [at_15])


def test_a_weak_odd_peak_that_splits_an_ordinary_interval_is_dropped():
    peaks = [0, 100, 200, 250, 300, 400, 500]  # 250 splits the 200-300 interval
    strength = [1.0, 1.0, 1.0, 0.8, 1.0, 1.0, 1.0]
    shape = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    np.testing.assert_array_equal(drop(peaks, strength, shape), [False] * 3 + [True] + [False] * 3)


@pytest.mark.parametrize("change", ["beat-shaped", "strong", "premature"])
def test_the_veto_needs_rhythm_shape_and_strength_together(change):
    peaks = [0, 100, 200, 250, 300, 400, 500]
    strength = [1.0, 1.0, 1.0, 0.8, 1.0, 1.0, 1.0]
    shape = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    if change == "beat-shaped":
        shape[3] = 0.95
    elif change == "strong":
        strength[3] = 1.3
    else:  # a premature beat: the next one comes a full interval after it, so nothing is split
        peaks = [0, 100, 200, 265, 365, 465, 565]
    assert not drop(peaks, strength, shape).any()


def test_weakest_first_keeps_the_beat_next_to_a_noise_peak():
    """The noise peak at 160 and the beat at 200 each 'split' an interval while both are there; the noise
    peak goes first, after which the beat's neighbours are ordinary again."""
    peaks = [0, 100, 160, 200, 300, 400, 500]
    strength = [1.0, 1.0, 0.7, 0.9, 1.0, 1.0, 1.0]
    shape = [1.0, 1.0, 0.4, 0.85, 1.0, 1.0, 1.0]
    np.testing.assert_array_equal(drop(peaks, strength, shape), [False, False, True] + [False] * 4)


def test_an_odd_peak_the_second_lead_does_not_show_is_dropped_whatever_its_rhythm_and_strength():
    peaks = np.arange(0, 2100, 100)
    peaks[10] = 1050  # on its own, strong: rhythm and strength would keep it
    strength, shape = np.ones(21), np.ones(21)
    strength[10], shape[10] = 1.5, 0.5
    support = np.ones(21)
    assert not drop(peaks, strength, shape, support).any()  # a wide beat that shows in the second lead
    support[10] = 0.1
    np.testing.assert_array_equal(np.flatnonzero(drop(peaks, strength, shape, support)), [10])
    support[:] = 0.1  # a second lead that shows none of the first lead's beats is not asked
    assert not drop(peaks, strength, shape, support).any()


def test_a_ventricular_triplet_a_quiet_second_lead_shows_as_beats_is_kept():
    """Three odd-shaped peaks at half the sinus interval, weaker than the beats around them, each splitting an
    ordinary interval: rhythm, shape and strength call them noise; a quiet second lead shows them as beats."""
    peaks = np.r_[np.arange(0, 1100, 100), 1050, 1100, 1150, np.arange(1250, 2500, 100)]
    odd = np.isin(peaks, [1050, 1100, 1150])
    strength, shape = np.where(odd, 0.6, 1.0), np.where(odd, -0.9, 1.0)  # inverted against the median beat
    support, quiet = np.ones(len(peaks)), np.full(len(peaks), 0.05)
    assert not drop(peaks, strength, shape, support, quiet).any()
    assert drop(peaks, strength, shape, support)[odd].any()  # the second lead's noise not known: not asked
    # noise in both leads: the second lead's peaks as large as a beat are no evidence of one
    assert drop(peaks, strength, shape, support, np.full(len(peaks), 0.3))[odd].any()
    support[odd] = 0.5  # a quiet second lead shows them at half a beat: the rhythm, shape and strength decide
    assert drop(peaks, strength, shape, support, quiet)[odd].any()
    assert not drop(peaks, strength, shape)[~odd].any()


def test_second_lead_confirms_only_when_it_shows_the_beat_shaped_peaks():
    p = SegmentParams.defaults()
    shape = np.r_[np.ones(40), 0.5]
    assert second_lead_confirms(np.r_[np.full(40, 0.9), 0.0], shape, p)
    assert not second_lead_confirms(np.r_[np.full(37, 0.9), np.full(3, 0.1), 0.0], shape, p)  # over 5 % below 0.4
    assert not second_lead_confirms(None, shape, p)
    assert not second_lead_confirms(np.full(5, 0.9), np.ones(5), p)  # too few beats to say


def test_qrs_correlation_is_one_for_the_same_beat_and_low_for_noise():
    fs = 250.0
    spec = SynthSpec(
        duration_s=60,
        fs=fs,
        seed=3,
        pvc_rate=0,
        pac_rate=0,
        aberrant_rate=0,
        baseline_mv=0,
        mains_mv=0,
        noise_mv=0,
        burst_mv=0,
    )
    leads, truth, _ = generate(spec)
    x = leads["MLII"].copy()
    noise_at = (truth[10] + truth[11]) // 2
    x[noise_at - 3 : noise_at + 4] += np.random.default_rng(0).standard_normal(7).astype(np.float32)
    peaks = np.sort(np.append(truth[5:-5], noise_at))
    correlation = qrs_correlation(qrs_band(x, fs, np), fs, peaks, np.ones(len(peaks)), np)
    beats = peaks != noise_at
    assert correlation[beats].min() > 0.95
    assert correlation[~beats][0] < 0.6


MUSCLE = SynthSpec(duration_s=600, fs=500, hr_bpm=85, seed=7, burst_mv=0.5, burst_every_s=15.0)


def test_the_veto_drops_most_muscle_noise_and_almost_no_beat(cpu):
    spec = MUSCLE
    leads, truth, _ = generate(spec)
    on = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu)
    off = detect_peaks(leads["MLII"], SegmentParams.defaults(veto_rr=0).in_samples(spec.fs), cpu)
    found_on, found_off = (len(match(truth, p, 0.150 * spec.fs)[0]) for p in (on, off))
    false_on, false_off = len(on) - found_on, len(off) - found_off
    assert false_off >= 20  # the record has noise peaks to drop
    assert false_on <= false_off / 4
    assert found_on >= found_off - 0.005 * len(truth)  # the sensitivity target: 99.5 %


def test_the_second_lead_drops_the_noise_the_rhythm_test_leaves(cpu):
    """Muscle bursts in each lead at their own times: the second lead refutes most of the first lead's
    remaining noise peaks; a second lead that is pure noise (an electrode off) changes nothing."""
    spec = MUSCLE
    leads, truth, _ = generate(spec)
    one = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu)
    two = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=leads["V1"])
    found_one, found_two = (len(match(truth, p, 0.150 * spec.fs)[0]) for p in (one, two))
    assert len(one) - found_one >= 8  # false beats the rhythm test leaves
    assert len(two) - found_two <= (len(one) - found_one) / 2
    assert found_two >= found_one
    off = np.random.default_rng(0).standard_normal(len(leads["V1"])).astype(np.float32)
    np.testing.assert_array_equal(
        detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=off), one
    )


def test_noise_in_both_leads_is_not_taken_for_beats_the_second_lead_shows(cpu, monkeypatch):
    """Heavy noise bursts in both leads, tachycardia, bigeminy, premature beats at 250-320 ms (the quality
    suite's mixed-heavy record, 3 min): the second lead shows noise peaks as large as a beat, so were its local
    noise not asked, they would be spared; with it, the veto drops what it dropped before that rule."""
    import beatflow.detect.fusion as fusion
    import beatflow.detect.veto as veto

    spec = SynthSpec(
        duration_s=180, fs=250, hr_bpm=100, hr_drift_bpm=10.0, seed=118, pac_rate=0.03, aberrant_rate=0.02,
        baseline_mv=1.0, mains_mv=0.3, noise_mv=0.05, burst_mv=0.4, burst_every_s=20.0, min_coupling_s=0.25,
        pvc_coupling_s=(0.25, 0.32), pac_coupling_s=(0.25, 0.32), bigeminy_runs=10, bigeminy_beats=(4, 12),
        pause_rate=0.01,
    )  # fmt: skip
    leads, truth, _ = generate(spec)

    def false_beats():
        peaks = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=leads["V1"])
        return peaks, len(peaks) - len(match(truth, peaks, 0.150 * spec.fs)[0])

    peaks, false = false_beats()
    with monkeypatch.context() as m:
        m.setattr(veto, "BEAT_SHOWN", np.inf)  # no peak counts as shown as a beat by the second lead
        np.testing.assert_array_equal(false_beats()[0], peaks)
        m.undo()
        m.setattr(fusion, "local_noise", lambda profile, at, backend: np.zeros(len(at)))  # every lead quiet
        assert false_beats()[1] >= false + 3


@pytest.mark.gpu
def test_the_veto_keeps_the_same_peaks_on_the_gpu(cpu, gpu):
    leads = generate(MUSCLE)[0]
    x, second = leads["MLII"], leads["V1"]
    on_gpu = detect_peaks(
        gpu.xp.asarray(x), SegmentParams.defaults().in_samples(MUSCLE.fs), gpu, second=gpu.xp.asarray(second)
    )
    assert isinstance(on_gpu, np.ndarray)  # host peaks: beat-sized
    np.testing.assert_array_equal(
        on_gpu, detect_peaks(x, SegmentParams.defaults().in_samples(MUSCLE.fs), cpu, second=second)
    )
