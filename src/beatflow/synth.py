"""Synthetic multi-lead ECG with ground truth: the demo record and the benchmark records.

Each beat is a sum of Gaussian waves (P, Q, R, S, T) per lead, placed on an RR series with slow heart-rate
drift and respiratory variation. Ectopic beats: ventricular (``V``: early, wide QRS, no P, discordant T,
compensatory pause), atrial (``A``: early, normal QRS, odd P) and aberrant conduction at normal timing
(``L``: wide QRS, on time). Optional rhythms for the quality benchmark: ventricular bigeminy runs (N, V,
N, V, …), sinus pauses (the sinus beat that ends one is labelled ``pause_label``, ``N`` by default), and
coupling intervals in absolute seconds or with a floor. Noise: baseline wander, mains hum, white and burst
muscle noise. Every optional rhythm is off by default and then draws no random numbers, so the default
output (the demo record) does not change.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from beatflow.errors import BeatflowError

LEADS = ("MLII", "V1")
MIN_DURATION_S = 10.0  # a few beats: the first comes after 0.5 s, none in the last 0.5 s

# Noise presets (SynthSpec fields, mV), for the quality suite's records and for real records read with noise
# added (:func:`beatflow.classify.dataset.read_leads`). "light" is the demo record's noise (the SynthSpec defaults).
NOISE = {
    "clean": {"baseline_mv": 0.0, "mains_mv": 0.0, "noise_mv": 0.005, "burst_mv": 0.0},
    "light": {"baseline_mv": 0.15, "mains_mv": 0.02, "noise_mv": 0.01, "burst_mv": 0.05, "burst_every_s": 60.0},
    "moderate": {"baseline_mv": 0.5, "mains_mv": 0.1, "noise_mv": 0.03, "burst_mv": 0.2, "burst_every_s": 30.0},
    "heavy": {"baseline_mv": 1.0, "mains_mv": 0.3, "noise_mv": 0.05, "burst_mv": 0.4, "burst_every_s": 20.0},
    # deliberately unreadable: in-band noise as large as the QRS complexes
    "unreadable-white": {"baseline_mv": 1.0, "mains_mv": 0.2, "noise_mv": 1.0, "burst_mv": 0.0},
    "unreadable-muscle": {"baseline_mv": 1.0, "mains_mv": 0.2, "noise_mv": 0.05, "burst_mv": 2.0, "burst_every_s": 5.0},
    "unreadable-all": {"baseline_mv": 2.0, "mains_mv": 0.5, "noise_mv": 0.8, "burst_mv": 2.0, "burst_every_s": 6.0},
}
NOISE_FREE = {"baseline_mv": 0.0, "mains_mv": 0.0, "noise_mv": 0.0, "burst_mv": 0.0}  # same beats, no noise

# Waves per beat kind: (name, centre in s from the R peak, width in s, amplitude per lead in mV).
# The T wave centre is scaled by sqrt(RR) (Bazett); P is absent in V beats.
WAVES = {
    "N": [
        ("P", -0.20, 0.025, (0.15, 0.08)),
        ("Q", -0.028, 0.010, (-0.12, -0.05)),
        ("R", 0.0, 0.011, (1.10, 0.55)),
        ("S", 0.028, 0.010, (-0.28, -0.60)),
        ("T", 0.26, 0.060, (0.32, 0.18)),
    ],
    "A": [
        ("P", -0.16, 0.020, (-0.12, 0.10)),
        ("Q", -0.028, 0.010, (-0.12, -0.05)),
        ("R", 0.0, 0.011, (1.10, 0.55)),
        ("S", 0.028, 0.010, (-0.28, -0.60)),
        ("T", 0.26, 0.060, (0.30, 0.18)),
    ],
    "V": [("R", 0.0, 0.035, (1.40, -0.90)), ("S", 0.070, 0.035, (-0.45, 0.40)), ("T", 0.30, 0.080, (-0.40, 0.30))],
    "L": [
        ("P", -0.22, 0.025, (0.15, 0.08)),
        ("R", 0.0, 0.028, (1.00, -0.50)),
        ("S", 0.055, 0.025, (-0.35, 0.35)),
        ("T", 0.30, 0.070, (-0.25, 0.20)),
    ],
}


@dataclass
class SynthSpec:
    """What to generate. Rates are per beat unless named per hour; noise amplitudes in mV.

    Coupling intervals (premature beat to the beat before it) are fractions of the sinus RR
    (``pvc_coupling``, ``pac_coupling``) unless ``pvc_coupling_s`` / ``pac_coupling_s`` give them in seconds;
    either way they are raised to at least ``min_coupling_s`` and kept below 0.95 RR. ``bigeminy_runs`` per
    hour start a run of ``bigeminy_beats`` ventricular beats, each after one sinus beat. ``pause_rate`` per
    beat replaces a sinus interval by a pause (sinus arrest) of ``pause_s`` seconds.
    """

    duration_s: float = 1800.0
    fs: float = 250.0
    hr_bpm: float = 70.0
    hr_drift_bpm: float = 10.0
    pvc_rate: float = 0.02
    pac_rate: float = 0.02
    aberrant_rate: float = 0.01
    pvc_coupling: tuple[float, float] = (0.55, 0.70)
    pac_coupling: tuple[float, float] = (0.65, 0.80)
    baseline_mv: float = 0.15
    mains_mv: float = 0.02
    mains_hz: float = 50.0
    noise_mv: float = 0.01
    burst_mv: float = 0.05
    burst_every_s: float = 60.0
    invert: bool = False
    leads: tuple[str, ...] = field(default=LEADS)
    seed: int = 0
    pvc_coupling_s: tuple[float, float] | None = None
    pac_coupling_s: tuple[float, float] | None = None
    min_coupling_s: float = 0.0
    bigeminy_runs: float = 0.0
    bigeminy_beats: tuple[int, int] = (4, 12)
    pause_rate: float = 0.0
    pause_s: tuple[float, float] = (1.5, 3.0)
    pause_label: str = "N"


def _coupling(spec: SynthSpec, rng: np.random.Generator, rr: float, kind: str) -> float:
    """Coupling interval in seconds of a premature beat of ``kind`` (``"pvc"`` or ``"pac"``)."""
    seconds = getattr(spec, f"{kind}_coupling_s")
    c = rng.uniform(*seconds) if seconds is not None else rng.uniform(*getattr(spec, f"{kind}_coupling")) * rr
    if seconds is not None or spec.min_coupling_s > 0:  # the default path keeps its exact arithmetic
        c = min(max(c, spec.min_coupling_s), 0.95 * rr)
    return c


def rr_series(spec: SynthSpec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Beat times (s) and labels: sinus rhythm with drift, ectopic beats with their coupling and pauses."""
    times, labels = [], []
    t = 0.5
    phase = rng.uniform(0, 2 * np.pi, 3)
    bigeminy_left = 0  # ventricular beats still to come in the current bigeminy run
    while t < spec.duration_s - 0.5:
        hr = (
            spec.hr_bpm
            + spec.hr_drift_bpm * np.sin(2 * np.pi * t / 600 + phase[0])
            + 0.3 * spec.hr_drift_bpm * np.sin(2 * np.pi * t / 97 + phase[1])
        )
        rr = 60.0 / hr * (1 + 0.03 * np.sin(2 * np.pi * 0.25 * t + phase[2]) + 0.01 * rng.standard_normal())
        u = rng.uniform()
        previous_normal = bool(labels) and labels[-1] in ("N", spec.pause_label)
        if spec.bigeminy_runs > 0 and bigeminy_left == 0 and rng.uniform() < spec.bigeminy_runs * rr / 3600:
            lo, hi = spec.bigeminy_beats
            bigeminy_left = int(rng.integers(lo, hi + 1))
        paused = spec.pause_rate > 0 and rng.uniform() < spec.pause_rate
        if previous_normal and (bigeminy_left > 0 or u < spec.pvc_rate):
            times.append(t + _coupling(spec, rng, rr, "pvc"))
            labels.append("V")
            t += rr  # the sinus beat it pre-empts is blocked: the next one comes 2 RR after the last (compensatory)
            bigeminy_left = max(0, bigeminy_left - 1)
        elif previous_normal and u < spec.pvc_rate + spec.pac_rate:
            t += _coupling(spec, rng, rr, "pac")
            times.append(t)
            labels.append("A")  # the sinus node resets: the next beat comes one RR later
        elif previous_normal and paused:
            t += rng.uniform(*spec.pause_s)  # sinus arrest: no P wave for pause_s, then a sinus beat
            times.append(t)
            labels.append(spec.pause_label)
        else:
            t += rr
            times.append(t)
            labels.append("L" if previous_normal and u > 1 - spec.aberrant_rate else "N")
        if times and times[-1] >= spec.duration_s - 0.5:
            times.pop(), labels.pop()
            break
    return np.asarray(times), np.asarray(labels)


def _render_waves(n: int, fs: float, beat_times, labels, rr, lead: int) -> np.ndarray:
    """Sum every beat's Gaussian waves for one lead (vectorised per wave kind with bincount)."""
    x = np.zeros(n)
    for kind, waves in WAVES.items():
        sel = labels == kind
        if not sel.any():
            continue
        for name, centre, width, amps in waves:
            c = beat_times[sel] + centre * (np.sqrt(rr[sel]) if name == "T" else 1.0)
            half = int(np.ceil(4 * width * fs))
            offsets = np.arange(-half, half + 1)
            idx = np.round(c * fs).astype(np.int64)[:, None] + offsets[None, :]
            t = idx / fs - c[:, None]
            vals = amps[lead] * np.exp(-0.5 * (t / width) ** 2)
            ok = (idx >= 0) & (idx < n)
            x += np.bincount(idx[ok], weights=vals[ok], minlength=n)
    return x


def noise(n: int, spec: SynthSpec, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples at ``spec.fs`` of ``spec``'s noise (mV): baseline wander (0.2 and 0.05 Hz), mains hum, white
    noise and bursts of muscle noise (2-5 s every ``burst_every_s``), drawn from ``rng``."""
    t = np.arange(n) / spec.fs
    wander = spec.baseline_mv * (
        np.sin(2 * np.pi * 0.2 * t + rng.uniform(0, 6.3)) + 0.7 * np.sin(2 * np.pi * 0.05 * t + rng.uniform(0, 6.3))
    )
    mains = spec.mains_mv * np.sin(2 * np.pi * spec.mains_hz * t + rng.uniform(0, 6.3))
    white = spec.noise_mv * rng.standard_normal(n)
    bursts = np.zeros(n)
    if spec.burst_mv > 0 and spec.burst_every_s > 0:
        for start in np.arange(rng.uniform(0, spec.burst_every_s), t[-1], spec.burst_every_s):
            i0, i1 = int(start * spec.fs), int((start + rng.uniform(2, 5)) * spec.fs)
            i1 = min(i1, n)
            raw = rng.standard_normal(i1 - i0)
            kernel = np.ones(3) / 3  # muscle noise: broadband, a little smoothed
            bursts[i0:i1] = spec.burst_mv * np.convolve(raw, kernel, mode="same") * np.sqrt(3)
    return wander + mains + white + bursts


def generate(spec: SynthSpec) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Return ``(leads, r_peak_samples, labels)``; ``leads`` maps lead name to a float32 signal in mV.

    Raises
    ------
    BeatflowError
        When the record would be shorter than :data:`MIN_DURATION_S` or ``fs`` is not positive.
    """
    if not (spec.duration_s >= MIN_DURATION_S and spec.fs > 0):
        raise BeatflowError(
            f"a synthetic record lasts at least {MIN_DURATION_S:g} s ({MIN_DURATION_S / 3600:.4f} h) at a positive "
            f"fs; asked for {spec.duration_s:g} s at {spec.fs:g} Hz"
        )
    rng = np.random.default_rng(spec.seed)
    n = round(spec.duration_s * spec.fs)
    beat_times, labels = rr_series(spec, rng)
    rr = np.diff(beat_times, prepend=beat_times[0] - 60.0 / spec.hr_bpm)
    sign = -1.0 if spec.invert else 1.0
    shapes = np.where(labels == spec.pause_label, "N", labels)  # the beat that ends a pause is a sinus beat
    leads = {}
    for i, name in enumerate(spec.leads[:2]):
        x = sign * _render_waves(n, spec.fs, beat_times, shapes, rr, i) + noise(n, spec, rng)
        leads[name] = x.astype(np.float32)
    return leads, np.round(beat_times * spec.fs).astype(np.int64), labels


def write_record(spec: SynthSpec, csv_path, truth_path) -> None:
    """Write the record as CSV (``time_s`` + one column per lead) and its truth (``sample``, ``label``)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from beatflow.io.atomic import atomic_path

    leads, peaks, labels = generate(spec)
    n = len(next(iter(leads.values())))
    columns = {"time_s": np.round(np.arange(n) / spec.fs, 6)}
    columns.update({k: np.round(v, 4).astype(np.float32) for k, v in leads.items()})
    with atomic_path(csv_path) as tmp:
        pacsv.write_csv(pa.table(columns), tmp)
    with atomic_path(truth_path) as tmp:
        pacsv.write_csv(pa.table({"sample": peaks, "label": labels}), tmp)


def main(argv=None) -> None:
    """``beatflow-synth OUT.csv TRUTH.csv [--hours H] [--fs FS] [--seed S] [--sheet SHEET.tsv]``: write a
    synthetic record with its truth and, with ``--sheet``, a records sheet for it (e.g. 20 h at 250 Hz:
    the seed-scale Holter case, ~18 M rows)."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("csv", type=Path)
    p.add_argument("truth", type=Path)
    p.add_argument("--hours", type=float, default=0.5)
    p.add_argument("--fs", type=float, default=250.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sheet", type=Path, help="also write a records sheet naming this record")
    a = p.parse_args(argv)
    try:
        write_record(SynthSpec(duration_s=a.hours * 3600, fs=a.fs, seed=a.seed), a.csv, a.truth)
    except BeatflowError as exc:
        p.error(str(exc))
    if a.sheet:
        a.sheet.write_text(
            "record\tpath\tfs\tleads\ttruth\n"
            f"{a.csv.name.split('.')[0]}\t{a.csv}\t{a.fs:g}\t{','.join(LEADS)}\t{a.truth}\n"
        )


if __name__ == "__main__":
    main()
