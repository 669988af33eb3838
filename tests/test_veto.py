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


def drop(peaks, strength, correlation, support=None):
    """Which of ``peaks`` the veto drops, with the default parameters."""
    peaks = np.asarray(peaks, dtype=np.int64)
    kept = surviving(
        peaks,
        np.asarray(strength),
        np.asarray(correlation),
        SegmentParams.defaults(),
        None if support is None else np.asarray(support),
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
