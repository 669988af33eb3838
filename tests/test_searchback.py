import dataclasses

import numpy as np
import pytest

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import detect_peaks
from beatflow.evaluate import match
from beatflow.synth import SynthSpec, generate

# The rate-based search-back of :mod:`beatflow.detect.searchback` is tested on its own, with the fixed threshold it
# was written for (the default detector's adaptive threshold has Pan and Tompkins' search-back built in, see
# test_adaptive.py, and leaves this one off).
ON = dataclasses.replace(SegmentParams.defaults(), adaptive=False, search_back=1.5)
OFF = dataclasses.replace(ON, search_back=0)


def weakened_beats(scale=0.5, beats=(50, 120, 121, 200)):
    """A clean record whose QRS complexes at ``beats`` are shrunk to ``scale`` (120 and 121: two in a row)."""
    spec = SynthSpec(duration_s=300, fs=250, seed=31, pvc_rate=0, pac_rate=0, aberrant_rate=0)
    leads, truth, _ = generate(spec)
    x = leads["MLII"].copy()
    half = round(0.08 * spec.fs)
    for k in beats:
        x[truth[k] - half : truth[k] + half] *= scale
    return spec.fs, x, truth


def errors(truth, peaks, fs):
    found = len(match(truth, peaks, 0.150 * fs)[0])
    return len(truth) - found, len(peaks) - found


def test_weak_beats_that_leave_long_intervals_are_found(cpu):
    fs, x, truth = weakened_beats()
    assert errors(truth, detect_peaks(x, OFF.in_samples(fs), cpu), fs) == (4, 0)  # below the threshold
    assert errors(truth, detect_peaks(x, ON.in_samples(fs), cpu), fs) == (0, 0)


def test_beats_below_the_search_floor_are_not_searched_for(cpu):
    fs, x, truth = weakened_beats(scale=0.2, beats=(50,))  # its envelope: 0.21, under 0.4 × the threshold 0.6
    assert errors(truth, detect_peaks(x, ON.in_samples(fs), cpu), fs) == (1, 0)


def test_pauses_with_noise_get_no_beat(cpu):
    spec = SynthSpec(
        duration_s=600,
        fs=250,
        seed=32,
        pause_rate=0.05,
        pause_s=(2.0, 3.0),
        pause_label="P",
        baseline_mv=0.5,
        mains_mv=0.1,
        noise_mv=0.03,
        burst_mv=0.2,
        burst_every_s=10.0,
    )
    leads, truth, _ = generate(spec)
    rr = np.diff(truth)
    assert (rr > 1.5 * np.median(rr)).sum() >= 20  # long intervals to search
    peaks = detect_peaks(leads["MLII"], ON.in_samples(spec.fs), cpu, second=leads["V1"])
    np.testing.assert_array_equal(peaks, detect_peaks(leads["MLII"], OFF.in_samples(spec.fs), cpu, second=leads["V1"]))
    assert errors(truth, peaks, spec.fs)[0] == 0


@pytest.mark.gpu
def test_search_back_finds_the_same_beats_on_the_gpu(cpu, gpu):
    fs, x, _ = weakened_beats()
    on_gpu = detect_peaks(gpu.xp.asarray(x), ON.in_samples(fs), gpu)
    np.testing.assert_array_equal(on_gpu, detect_peaks(x, ON.in_samples(fs), cpu))
