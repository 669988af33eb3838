import numpy as np

from beatflow.synth import SynthSpec, generate


def test_generator_is_seeded_and_has_the_requested_shape():
    spec = SynthSpec(duration_s=120, fs=360, seed=5)
    leads, peaks, _ = generate(spec)
    again, peaks2, _ = generate(spec)
    assert list(leads) == ["MLII", "V1"] and all(v.dtype == np.float32 and len(v) == 120 * 360 for v in leads.values())
    assert np.array_equal(leads["V1"], again["V1"]) and np.array_equal(peaks, peaks2)
    assert (np.diff(peaks) > 0).all() and peaks[-1] < 120 * 360


def test_rhythm_and_ectopy_follow_the_spec():
    spec = SynthSpec(duration_s=3600, hr_bpm=60, hr_drift_bpm=0, pvc_rate=0.05, pac_rate=0.05, seed=1)
    _, peaks, labels = generate(spec)
    rr = np.diff(peaks) / spec.fs
    assert 0.9 < np.median(rr) < 1.1
    assert 0.03 < (labels == "V").mean() < 0.07 and 0.03 < (labels == "A").mean() < 0.07
    v = np.flatnonzero(labels[1:-1] == "V") + 1
    coupling = (peaks[v] - peaks[v - 1]) / spec.fs
    pause = (peaks[v + 1] - peaks[v - 1]) / spec.fs  # compensatory: two sinus cycles around a PVC
    assert (coupling < 0.75).all() and np.allclose(pause, 2.0, atol=0.1)
