"""Known-answer tests of the adaptive threshold (Pan–Tompkins), the P/T-wave tests, the both-polarity envelope,
the lone-lead test and the recurring-morphology exemption of the noise veto."""

import dataclasses

import numpy as np

from beatflow.detect.adaptive import adaptive_select, p_or_t_wave
from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import detect_peaks
from beatflow.detect.veto import recurring, unsupported
from beatflow.evaluate import match

FS = 250.0
P = SegmentParams.defaults()


def select(times_s, value, slope):
    peaks = np.round(np.asarray(times_s) * FS).astype(np.int64)
    return adaptive_select(peaks, np.asarray(value, float), np.asarray(slope, float), FS, P) / FS


def test_beats_at_the_typical_level_are_taken_and_noise_well_below_is_not():
    t = np.arange(1, 21) * 1.0
    noise_t = t[:-1] + 0.6
    times = np.sort(np.r_[t, noise_t])
    value = np.where(np.isin(times, t), 1.0, 0.15)
    np.testing.assert_allclose(select(times, value, np.ones_like(times)), t)


def test_a_t_wave_is_rejected_and_a_wide_premature_beat_at_the_same_delay_is_kept():
    # beats every 1 s (slope 1); at 5.3 s a T-wave-like peak (slow, smaller than its beat); at 10.3 s a wide
    # premature beat (as slow, but larger than the beat before it: a ventricular complex)
    t = np.arange(1, 16) * 1.0
    times = np.sort(np.r_[t, 5.3, 10.3])
    value = np.where(times == 5.3, 0.8, np.where(times == 10.3, 1.5, 1.0))
    slope = np.where(np.isin(times, [5.3, 10.3]), 0.3, 1.0)
    got = select(times, value, slope)
    assert 5.3 not in np.round(got, 3) and 10.3 in np.round(got, 3)


def test_the_larger_of_two_peaks_within_the_refractory_period_wins():
    t = np.arange(1, 11) * 1.0
    times = np.sort(np.r_[t, 6.1])
    value = np.where(times == 6.1, 1.2, 1.0)
    got = np.round(select(times, value, np.ones_like(times)), 3)
    assert 6.1 in got and 6.0 not in got and len(got) == 10


def test_search_back_finds_a_weak_beat_in_a_long_interval_but_not_the_noise_beside_it():
    # noise peaks (0.2) between beats lift the noise level so that THR ≈ 0.4; the weak beat at 8 s (0.35) is
    # below THR, but after 1.66 RR without a beat the largest peak over THR / 2 since the last beat is taken
    t = np.arange(1, 16) * 1.0
    noise = t[:-1] + 0.5
    times = np.sort(np.r_[t, noise])
    value = np.where(np.isin(times, t), 1.0, 0.2)
    value[np.isclose(times, 8.0)] = 0.35
    got = np.round(select(times, value, np.ones_like(times)), 3)
    np.testing.assert_allclose(got, t)


def test_p_and_t_waves_within_360_ms_of_a_beat_are_dropped_both_ways():
    t = np.array([1.0, 1.78, 2.0, 2.3, 3.0])  # a P wave 220 ms before the beat at 2 s, a T wave 300 ms after
    slope = np.array([1.0, 0.3, 1.0, 0.2, 1.0])
    value = np.array([1.0, 0.5, 1.0, 0.6, 1.0])
    np.testing.assert_array_equal(p_or_t_wave(t, slope, value), [False, True, False, True, False])
    # a wide premature beat larger than its neighbour is not a T wave, slow as it is
    np.testing.assert_array_equal(
        p_or_t_wave(np.array([1.0, 1.3]), np.array([1.0, 0.3]), np.array([1.0, 1.5])), [False, False]
    )


def test_a_flat_tall_t_wave_and_a_p_wave_as_steep_as_a_small_qrs_go_where_premature_beats_stay():
    # a chest lead's T wave 280 ms after its beat, larger in the envelope but a tenth as steep (MIT-BIH 114's
    # V5); a P wave 215 ms before its beat, as steep as the small QRS but 0.6 of its envelope (108's MLII)
    t = np.array([1.0, 1.28, 2.0, 2.785, 3.0])
    slope = np.array([1.0, 0.08, 1.0, 0.8, 1.0])
    value = np.array([1.0, 1.1, 1.0, 0.6, 1.0])
    np.testing.assert_array_equal(p_or_t_wave(t, slope, value), [False, True, False, True, False])
    # beats that stay: a narrow premature beat 240 ms after a beat at 0.9 of its envelope; a wide one 250 ms
    # after at a quarter of its slope (tachycardia at 180 bpm); a premature beat 300 ms after, as small as the
    # P wave above (beyond the 250 ms two QRS complexes need)
    for gap, steep, size in ((0.24, 1.0, 0.9), (0.25, 0.27, 1.7), (0.3, 0.8, 0.6)):
        assert not p_or_t_wave(np.array([1.0, 1.0 + gap]), np.array([1.0, steep]), np.array([1.0, size])).any()


def test_a_peak_the_second_lead_does_not_show_next_to_one_it_shows_is_dropped():
    t = np.array([1.0, 1.78, 2.0, 3.0, 3.5, 4.0])
    support = np.array([1.0, 0.05, 1.0, 1.0, 0.05, 1.0])  # 1.78: next to a beat; 3.5: 500 ms from both
    for confirmed in (True, False):
        np.testing.assert_array_equal(
            unsupported(t, support, np.ones(6), 0.2, 0.36, confirmed), [False, True, False, False, False, False]
        )
        # where the second lead shows nothing near (off, flat), nothing is dropped
        assert not unsupported(t, np.zeros(6), np.ones(6), 0.2, 0.36, confirmed).any()
    # where the second lead shows the record's beats, a ventricular beat's tall T wave 240 ms after it, a
    # quarter of a beat there (svdb 865), goes; a couplet's second beat (a beat or more there) and a weakly
    # shown beat 340 ms after a large one (svdb 859) stay; where the lead may be noise, only next to nothing goes
    t = np.array([1.0, 1.24, 2.2, 2.45, 3.2, 3.54])
    support = np.array([1.0, 0.28, 1.0, 1.3, 2.5, 0.3])
    np.testing.assert_array_equal(
        unsupported(t, support, np.ones(6), 0.2, 0.36, True), [False, True, False, False, False, False]
    )
    assert not unsupported(t, support, np.ones(6), 0.2, 0.36, False).any()


def test_a_p_wave_the_second_lead_shows_faintly_goes_even_where_its_qrs_there_is_small():
    # MIT-BIH 108's last minutes: a P wave 215 ms before each beat, 0.65 of it in the first lead's envelope;
    # the second lead shows the QRS at 0.35 of its typical beat (under 2 × veto_support) and the P at 0.05
    t = np.array([1.0, 1.785, 2.0, 2.785, 3.0])
    support = np.array([0.35, 0.05, 0.35, 0.05, 0.35])
    strength = np.array([1.0, 0.65, 1.0, 0.65, 1.0])
    np.testing.assert_array_equal(unsupported(t, support, strength, 0.2, 0.36, False), [0, 1, 0, 1, 0])
    # the same peaks as large as the beat in the first lead, or shown at half the beat in the second, stay
    assert not unsupported(t, support, np.ones(5), 0.2, 0.36, False).any()
    assert not unsupported(t, np.where(support < 0.1, 0.2, 0.35), strength, 0.2, 0.36, False).any()
    # ventricular tachycardia at 230 ms (MIT-BIH 205): both leads show each beat; and a premature ventricular
    # beat 344 ms after a beat, faint in both leads (svdb 859), is beyond the 250 ms that two QRS complexes need
    t = np.array([1.0, 1.23, 1.46, 1.69, 3.0, 3.344])
    support = np.array([1.0, 0.9, 1.1, 1.0, 1.2, 0.45])
    strength = np.array([1.0, 0.95, 1.0, 0.9, 0.9, 0.55])
    assert not unsupported(t, support, strength, 0.2, 0.36, False).any()


def test_a_recurring_second_morphology_is_recognised_and_noise_is_not(cpu):
    fs, n = 250.0, 250 * 120
    rng = np.random.default_rng(0)
    y = (0.01 * rng.standard_normal(n)).astype(np.float32)
    peaks = np.arange(250, n - 250, 250)
    shape = np.float32(np.sin(np.linspace(0, 3 * np.pi, 31)) * np.hanning(31))
    suspect = np.zeros(len(peaks), bool)
    suspect[::4] = True  # every fourth peak: the same ectopic shape
    noisy = np.zeros(len(peaks), bool)
    noisy[2::8] = True  # others: noise bursts of random shapes
    for k in np.flatnonzero(suspect):
        y[peaks[k] - 15 : peaks[k] + 16] += shape
    for k in np.flatnonzero(noisy):
        y[peaks[k] - 15 : peaks[k] + 16] += rng.standard_normal(31).astype(np.float32)
    got = recurring(y, fs, peaks, suspect | noisy, cpu)
    assert got[suspect].all() and not got[noisy].any()


def test_a_second_morphology_is_recognised_where_its_peaks_wander(cpu):
    """The R peak picked on a wide ventricular QRS wanders by a few samples from beat to beat (±12 ms here, at
    250 Hz): its windows still recur, compared at their best shift; noise bursts still do not."""
    from beatflow.detect import veto

    fs, n = 250.0, 250 * 120
    rng = np.random.default_rng(1)
    y = (0.01 * rng.standard_normal(n)).astype(np.float32)
    beats = np.arange(250, n - 250, 250)
    shape = np.float32(np.sin(np.linspace(0, 5 * np.pi, 31)) * np.hanning(31))  # 20 Hz, the QRS band's middle
    suspect, noisy = np.zeros(len(beats), bool), np.zeros(len(beats), bool)
    suspect[::4], noisy[2::8] = True, True
    for k in np.flatnonzero(suspect):
        y[beats[k] - 15 : beats[k] + 16] += shape
    for k in np.flatnonzero(noisy):
        y[beats[k] - 15 : beats[k] + 16] += rng.standard_normal(31).astype(np.float32)
    picked = beats + np.where(suspect, rng.integers(-3, 4, len(beats)), 0)  # where the detector put each peak
    got = recurring(y, fs, picked, suspect | noisy, cpu)
    assert got[suspect].all() and not got[noisy].any()
    unaligned = veto.RECUR_SHIFT_S
    try:
        veto.RECUR_SHIFT_S = 0.0  # compared as picked, most of them miss the 0.9
        assert recurring(y, fs, picked, suspect | noisy, cpu)[suspect].mean() < 0.5
    finally:
        veto.RECUR_SHIFT_S = unaligned


def pulses(fs, times, widths, amplitudes, n):
    t = np.arange(n) / fs
    x = np.zeros(n, np.float32)
    for c, w, a in zip(times, widths, amplitudes):
        x += np.float32(a * np.exp(-0.5 * ((t - c) / w) ** 2))
    return x


def test_beats_of_the_other_polarity_are_found_with_both_polarities():
    # narrow upright QRS complexes every 0.8 s, every fourth one replaced by a wide inverted (ventricular) one
    fs, n = 360.0, 360 * 120
    times = np.arange(0.5, 119.5, 0.8)
    v = np.arange(len(times)) % 4 == 3
    x = pulses(fs, times, np.where(v, 0.025, 0.010), np.where(v, -0.6, 1.0), n)
    x += np.float32(0.01) * np.random.default_rng(1).standard_normal(n).astype(np.float32)
    truth = np.round(times * fs).astype(np.int64)
    from beatflow.backend import select_backend

    cpu = select_backend("cpu")
    both = detect_peaks(x, P.in_samples(fs), cpu)
    oriented = detect_peaks(x, dataclasses.replace(P, both_polarities=False, adaptive=False).in_samples(fs), cpu)
    assert len(match(truth, both, 0.15 * fs)[0]) == len(truth) == len(both)
    assert len(match(truth, oriented, 0.15 * fs)[0]) < len(truth)


def test_a_shape_is_counted_in_full_where_the_suspects_outnumber_the_references(cpu):
    """With more suspects than :data:`~beatflow.detect.veto.RECUR_REFERENCE`, each is compared with every
    ``step``-th suspect and its look-alikes counted ``step`` times; only a reference matches itself. A shape of 15
    beats, 4 of them references (12 look-alikes estimated), meets the 11 that 1,100 suspects need."""
    from beatflow.detect import veto

    fs, count = 250.0, 1100
    rng = np.random.default_rng(2)
    peaks = np.arange(count) * 100 + 100
    y = rng.standard_normal(peaks[-1] + 100).astype(np.float32)  # every other suspect: a window of its own
    step = -(-count // veto.RECUR_REFERENCE)
    assert step == 3 and max(veto.RECUR_MIN, veto.RECUR_FRACTION * count) == 11
    members = np.r_[np.arange(4) * 3 * 40, np.flatnonzero(np.arange(count) % 3 == 1)[:11] * 7 + 1]
    members = np.unique(members % count)
    assert len(members) == 15 and (members % step == 0).sum() == 4
    shape = np.float32(np.sin(np.linspace(0, 5 * np.pi, 31)) * np.hanning(31))
    for k in members:
        y[peaks[k] - 15 : peaks[k] + 16] = 10 * shape + 0.01 * rng.standard_normal(31).astype(np.float32)
    got = recurring(y, fs, peaks, np.ones(count, bool), cpu)
    others = members[members % step != 0]
    assert got[others].all()  # 4 references × 3: 12 look-alikes each
    assert got.sum() == len(others)  # a reference's own 3 look-alikes × 3 (9), and no noise window, fall short
