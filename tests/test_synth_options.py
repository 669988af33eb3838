"""The optional rhythms of the synthetic ECG (bigeminy runs, pauses, short coupling) used by the quality
benchmark, and that leaving them at their defaults changes nothing."""

import numpy as np

from beatflow.synth import SynthSpec, generate


def _runs(labels: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of every stretch of strictly alternating N/V of at least 3 ventricular beats."""
    runs, i = [], 0
    while i < len(labels):
        j = i
        while j + 1 < len(labels) and labels[j] == "N" and labels[j + 1] == "V":
            j += 2
        if (j - i) // 2 >= 3:
            runs.append((i, j))
        i = max(j, i + 1)
    return runs


def test_defaults_draw_nothing_extra():
    base = SynthSpec(duration_s=300, seed=4)
    explicit = SynthSpec(
        duration_s=300,
        seed=4,
        bigeminy_runs=0.0,
        pause_rate=0.0,
        min_coupling_s=0.0,
        pvc_coupling_s=None,
        pac_coupling_s=None,
        pause_label="N",
    )
    (a, pa, la), (b, pb, lb) = generate(base), generate(explicit)
    assert np.array_equal(pa, pb) and np.array_equal(la, lb)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_bigeminy_runs_alternate_normal_and_ventricular_beats():
    spec = SynthSpec(
        duration_s=1800,
        hr_bpm=75,
        pvc_rate=0,
        pac_rate=0,
        aberrant_rate=0,
        bigeminy_runs=20,
        bigeminy_beats=(5, 8),
        seed=2,
    )
    _, peaks, labels = generate(spec)
    runs = _runs(labels)
    assert len(runs) >= 5
    for start, stop in runs:
        assert "".join(labels[start : stop + 1]).startswith("NVNVNV")
        assert 5 <= (stop - start) // 2 <= 8
    assert (labels == "V").sum() == sum((stop - start) // 2 for start, stop in runs)
    v = np.flatnonzero(labels == "V")
    coupling = (peaks[v] - peaks[v - 1]) / spec.fs
    assert (coupling < 0.75 * 60 / (75 - 20)).all()  # every V of a run is premature


def test_pauses_last_1_5_to_3_seconds():
    spec = SynthSpec(duration_s=1800, hr_bpm=75, pause_rate=0.01, pause_label="P", seed=3)
    _, peaks, labels = generate(spec)
    rr = np.diff(peaks, prepend=peaks[0]) / spec.fs
    p = np.flatnonzero(labels == "P")
    assert 5 <= len(p) <= 40
    assert (rr[p] >= 1.5 - 1 / spec.fs).all() and (rr[p] <= 3.0 + 1 / spec.fs).all()
    sinus = (labels == "N") & np.isin(np.roll(labels, 1), ["N", "P"])
    sinus[0] = False
    assert (rr[sinus] < 1.2).all()  # between sinus beats only the pauses are long


def test_the_beat_after_a_pause_is_drawn_as_a_sinus_beat():
    spec = SynthSpec(
        duration_s=600,
        hr_bpm=75,
        pause_rate=0.02,
        pause_label="P",
        noise_mv=0,
        burst_mv=0,
        baseline_mv=0,
        mains_mv=0,
        seed=3,
    )
    leads, peaks, labels = generate(spec)
    x = leads["MLII"]
    r = {lab: np.median(x[peaks[labels == lab]]) for lab in ("N", "P")}
    assert (labels == "P").sum() >= 3 and abs(r["P"] - r["N"]) < 0.05 and r["N"] > 0.9


def test_pause_label_defaults_to_normal():
    spec = SynthSpec(duration_s=600, hr_bpm=75, pause_rate=0.02, seed=3)
    _, peaks, labels = generate(spec)
    assert set(labels) <= {"N", "V", "A", "L"}
    assert (np.diff(peaks) / spec.fs >= 1.5 - 1 / spec.fs).sum() >= 3


def test_absolute_coupling_reaches_250_ms():
    spec = SynthSpec(
        duration_s=1200,
        hr_bpm=70,
        pvc_rate=0.05,
        pac_rate=0.05,
        pvc_coupling_s=(0.25, 0.30),
        pac_coupling_s=(0.25, 0.30),
        seed=6,
    )
    _, peaks, labels = generate(spec)
    for kind in "VA":
        i = np.flatnonzero(labels == kind)
        coupling = (peaks[i] - peaks[i - 1]) / spec.fs
        assert len(i) > 20
        assert (coupling >= 0.25 - 1 / spec.fs).all() and (coupling <= 0.30 + 1 / spec.fs).all()
        assert coupling.min() < 0.26


def test_fractional_coupling_at_high_rate_with_a_floor():
    spec = SynthSpec(
        duration_s=600,
        hr_bpm=150,
        hr_drift_bpm=20,
        pvc_rate=0.05,
        pac_rate=0.05,
        pvc_coupling=(0.3, 0.6),
        pac_coupling=(0.3, 0.6),
        min_coupling_s=0.25,
        seed=7,
    )
    _, peaks, labels = generate(spec)
    i = np.flatnonzero(np.isin(labels, ["V", "A"]))
    coupling = (peaks[i] - peaks[i - 1]) / spec.fs
    assert (coupling >= 0.25 - 1 / spec.fs).all() and coupling.min() < 0.26
    assert (np.diff(peaks) > 0).all()
