import logging

import numpy as np
import pytest

from beatflow.detect.fusion import CAP, NOISE_FLOOR, block_noise, fused_envelope, snap
from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import detect_peaks
from beatflow.evaluate import match
from beatflow.synth import SynthSpec, generate


def test_block_noise_is_the_median_magnitude_of_each_block_and_of_the_remainder():
    e = np.array([1, -2, 3, 0, 0, 5, -1, -1, 7, 4], dtype=np.float32)  # blocks of 4, then a remainder of 2
    noise, centres = block_noise(e, 4, np)
    np.testing.assert_allclose(noise, [1.5, 1.0, 5.5])
    np.testing.assert_allclose(centres, [2.0, 6.0, 9.0])


def test_the_fused_envelope_weighs_each_lead_by_its_inverse_noise_power():
    n = 4000  # fs 1000: four 1-s blocks
    first = np.tile(np.float32([0.5, -0.5]), n // 2)  # noise 0.5 everywhere
    second = np.zeros(n, np.float32)  # quiet: noise 0, weight 1 / floor²
    w1, w2 = 1 / (0.25 + NOISE_FLOOR**2), 1 / NOISE_FLOOR**2
    np.testing.assert_allclose(fused_envelope(first, second, 1000.0, np), first * w1 / (w1 + w2), rtol=1e-5)
    np.testing.assert_allclose(
        fused_envelope(first, first[::-1].copy(), 1000.0, np), 0.0, atol=1e-6
    )  # equal noise: the mean


def test_each_lead_counts_up_to_the_cap():
    first = np.tile(np.float32([-10 * CAP, 10 * CAP]), 1000)  # the same noise in both leads: the plain mean
    second = -first
    np.testing.assert_allclose(fused_envelope(first, second, 1000.0, np), (CAP - 10 * CAP) / 2, rtol=1e-6)


def test_snap_moves_each_peak_to_the_largest_sample_nearby_merges_duplicates_and_drops_those_below_the_floor():
    e = np.zeros(1000, np.float32)
    e[[100, 500, 700, 900]] = 1.0, 1.0, 0.2, 0.3
    blank = np.zeros_like(e)
    np.testing.assert_array_equal(
        snap(np.array([90, 110, 480, 700, 900]), e, blank, 1000.0, np, floor=0.3, shown=0.4), [100, 500, 900]
    )


def test_a_peak_the_first_lead_does_not_show_moves_to_the_second_lead_where_that_lead_shows_a_beat():
    first, second = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    first[100] = 1.0
    second[[102, 505, 712]] = 1.0, 0.5, 0.3  # 505: a beat in the second lead alone; 712: under its "shown"
    peaks = np.array([100, 500, 700])
    np.testing.assert_array_equal(snap(peaks, first, second, 1000.0, np, floor=0.3, shown=0.4), [100, 505])
    # without the second lead's level (veto_support 0), only what the first lead shows
    np.testing.assert_array_equal(snap(peaks, first, second, 1000.0, np, floor=0.3, shown=np.inf), [100])


def buried_first_lead(seconds=(120.0, 150.0), mv=1.0):
    """A clean two-lead record whose first lead has white noise of 1 mV rms (as large as its QRS complexes) for 30 s."""
    spec = SynthSpec(duration_s=300, fs=250, seed=11, baseline_mv=0, mains_mv=0, noise_mv=0.005, burst_mv=0)
    leads, truth, _ = generate(spec)
    i0, i1 = (round(s * spec.fs) for s in seconds)
    first = leads["MLII"].copy()
    first[i0:i1] += (mv * np.random.default_rng(0).standard_normal(i1 - i0)).astype(np.float32)
    return spec.fs, first, leads["V1"], truth, (i0, i1)


def test_the_second_lead_carries_detection_where_noise_buries_the_first(cpu):
    fs, first, second, truth, (i0, i1) = buried_first_lead()
    inside = truth[(truth >= i0) & (truth < i1)]
    fused = detect_peaks(first, SegmentParams.defaults().in_samples(fs), cpu, second=second)
    alone = detect_peaks(first, SegmentParams.defaults(fuse_leads=False).in_samples(fs), cpu, second=second)

    def errors(peaks):
        found = len(match(inside, peaks[(peaks >= i0) & (peaks < i1)], 0.150 * fs)[0])
        return len(inside) - found, int(((peaks >= i0) & (peaks < i1)).sum()) - found

    assert sum(errors(alone)) >= 5  # the first lead alone cannot read the stretch
    assert errors(fused) == (0, 0)
    outside = (fused < i0 - fs) | (fused >= i1 + fs)
    np.testing.assert_array_equal(fused[outside], alone[(alone < i0 - fs) | (alone >= i1 + fs)])


def blank_first_lead():
    """MIT-BIH 116 at 1355 s: the first lead's amplifier swings to 3 mV and recovers over seconds (120–128 s), its
    QRS complexes gone, while the second lead shows every beat."""
    spec = SynthSpec(duration_s=300, fs=360, seed=14, baseline_mv=0, mains_mv=0, noise_mv=0.005, burst_mv=0)
    leads, truth, _ = generate(spec)
    i0, i1 = (round(s * spec.fs) for s in (120.0, 128.0))
    first = leads["MLII"].copy()
    first[i0:i1] = 3.0 * np.exp(-np.arange(i1 - i0) / (1.5 * spec.fs))  # no QRS: the amplifier's recovery
    return spec, first, leads, truth, (i0, i1)


def test_the_second_leads_beats_count_where_the_first_lead_goes_blank(cpu):
    """Those beats are found, on the second lead."""
    spec, first, leads, truth, (i0, i1) = blank_first_lead()
    inside = truth[(truth >= i0 + 0.4 * spec.fs) & (truth < i1 - 0.4 * spec.fs)]
    p = SegmentParams.defaults()
    peaks = detect_peaks(first, p.in_samples(spec.fs), cpu, second=leads["V1"])
    assert len(inside) >= 6 and len(match(inside, peaks, 0.150 * spec.fs)[0]) == len(inside)
    # without the second lead's level (veto_support 0) they are lost, as before
    lost = detect_peaks(first, SegmentParams.defaults(veto_support=0).in_samples(spec.fs), cpu, second=leads["V1"])
    assert len(match(inside, lost, 0.150 * spec.fs)[0]) < len(inside) / 2
    outside = (peaks < i0 - spec.fs) | (peaks >= i1 + spec.fs)
    assert len(match(truth, peaks[outside], 0.150 * spec.fs)[0]) == outside.sum()


def test_on_clean_leads_fusion_keeps_the_first_leads_peaks(cpu, caplog):
    spec = SynthSpec(duration_s=300, fs=360, seed=12, pvc_rate=0.05, aberrant_rate=0.03)
    leads, truth, _ = generate(spec)
    with caplog.at_level(logging.INFO, logger="beatflow"):
        fused = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=leads["V1"])
    assert "detection on both leads" in caplog.text
    alone = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu)
    np.testing.assert_array_equal(fused, alone)
    assert len(match(truth, fused, 0.150 * spec.fs)[0]) == len(truth) == len(fused)


def test_a_second_lead_that_shows_no_beats_is_not_fused(cpu, caplog):
    spec = SynthSpec(duration_s=300, fs=250, seed=13)
    leads, _, _ = generate(spec)
    off = np.random.default_rng(0).standard_normal(len(leads["V1"])).astype(np.float32)  # an electrode off
    with caplog.at_level(logging.INFO, logger="beatflow"):
        peaks = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=off)
    assert "first lead alone" in caplog.text
    np.testing.assert_array_equal(peaks, detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu))


def test_electrode_pops_in_the_second_lead_add_no_beat(cpu):
    """Forty 20-ms pops of ±10 mV (twenty QRS complexes high) in the second lead, some within the NMS window
    of a beat: the capped envelope and the first lead's floor keep every beat and add none."""
    spec = SynthSpec(duration_s=600, fs=250, seed=21)
    leads, truth, _ = generate(spec)
    second = leads["V1"].copy()
    rng = np.random.default_rng(1)
    for t in rng.integers(1000, len(second) - 1000, 40):
        second[t : t + 5] += 10 * rng.choice([-1, 1]) * np.hanning(5).astype(np.float32)
    peaks = detect_peaks(leads["MLII"], SegmentParams.defaults().in_samples(spec.fs), cpu, second=second)
    assert len(match(truth, peaks, 0.150 * spec.fs)[0]) == len(truth) == len(peaks)


@pytest.mark.gpu
def test_fusion_finds_the_same_peaks_on_the_gpu(cpu, gpu):
    fs, first, second, _, _ = buried_first_lead()
    xp = gpu.xp
    on_gpu = detect_peaks(xp.asarray(first), SegmentParams.defaults().in_samples(fs), gpu, second=xp.asarray(second))
    np.testing.assert_array_equal(
        on_gpu, detect_peaks(first, SegmentParams.defaults().in_samples(fs), cpu, second=second)
    )
    np.testing.assert_allclose(
        xp.asnumpy(fused_envelope(xp.asarray(first), xp.asarray(second), fs, xp)),
        fused_envelope(first, second, fs, np),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.gpu
def test_the_second_leads_beats_where_the_first_is_blank_are_the_same_on_the_gpu(cpu, gpu):
    spec, first, leads, _, _ = blank_first_lead()
    p, xp = SegmentParams.defaults().in_samples(spec.fs), gpu.xp
    on_gpu = detect_peaks(xp.asarray(first), p, gpu, second=xp.asarray(leads["V1"]))
    np.testing.assert_array_equal(on_gpu, detect_peaks(first, p, cpu, second=leads["V1"]))
