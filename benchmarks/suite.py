"""The synthetic quality suite (:mod:`benchmarks.quality`): its records, their noise, and the targets they are held to.

Every record is a :class:`beatflow.synth.SynthSpec`: the ectopy of :data:`ECTOPY`, one
:data:`beatflow.synth.NOISE` preset, and the record's own fields over both. The "unreadable" records are
deliberately buried in noise; they are reported apart and excluded from the targets.
"""

from __future__ import annotations

from dataclasses import asdict

from beatflow.synth import NOISE, SynthSpec

TARGET_DETECTION = 0.995  # sensitivity and PPV, every readable record
TARGET_AUROC = 0.99  # A vs N and L vs N
SEEDS = (0, 1, 2)  # training seeds: the anomaly chain runs once per seed
EPOCHS = 20  # training epochs of the anomaly chain
QUICK_MINUTES = 5  # --quick: records cut to this length

ECTOPY = {"pvc_rate": 0.02, "pac_rate": 0.03, "aberrant_rate": 0.02, "min_coupling_s": 0.25}
SHORT_COUPLING = {"pvc_coupling_s": (0.25, 0.32), "pac_coupling_s": (0.25, 0.32)}
PAUSES = {"pause_rate": 0.01, "pause_label": "P"}
DEMO = {**{k: getattr(SynthSpec(), k) for k in ("fs", "hr_bpm", *ECTOPY)}, "seed": 0}  # the demo record: SynthSpec's
# defaults (workflow/rules/demo.smk)

# name, what it tests, minutes, SynthSpec fields (over ECTOPY and the noise preset), noise preset, in --quick.
# The seed is 100 + the position in this list unless the fields give one.
SUITE = [
    ("nsr70-clean-250", "sinus 70 bpm, clean", 20, {"fs": 250, "hr_bpm": 70}, "clean", True),
    ("demo-250", "the workflow's demo record", 30, DEMO, "light", False),
    ("brady40-360", "40 bpm", 20, {"fs": 360, "hr_bpm": 42, "hr_drift_bpm": 2}, "light", False),
    ("tachy180-500", "180 bpm, coupling ≥ 250 ms", 15, {"fs": 500, "hr_bpm": 176, "hr_drift_bpm": 4}, "light", True),
    ("tachy150-128", "150 bpm at 128 Hz", 20, {"fs": 128, "hr_bpm": 150, "hr_drift_bpm": 10}, "light", False),
    ("fs1000-moderate", "1000 Hz, moderate noise", 15, {"fs": 1000, "hr_bpm": 80}, "moderate", False),
    ("inverted-250", "inverted lead", 20, {"fs": 250, "hr_bpm": 75, "invert": True}, "light", True),
    ("inverted-heavy-360", "inverted lead, heavy noise", 20, {"fs": 360, "hr_bpm": 90, "invert": True}, "heavy", False),
    (
        "bigeminy-360",
        "bigeminy runs (30/h, 4–20 V)",
        20,
        {"fs": 360, "hr_bpm": 72, "bigeminy_runs": 30, "bigeminy_beats": (4, 20)},
        "light",
        True,
    ),
    (
        "bigeminy-fast-500",
        "bigeminy runs at 110 bpm, moderate noise",
        15,
        {"fs": 500, "hr_bpm": 110, "bigeminy_runs": 30, "bigeminy_beats": (4, 20)},
        "moderate",
        False,
    ),
    ("pauses-250", "sinus pauses 1.5–3 s", 20, {"fs": 250, "hr_bpm": 70, **PAUSES}, "light", False),
    (
        "pauses-brady-128",
        "pauses 2–3 s at 50 bpm, 128 Hz",
        20,
        {"fs": 128, "hr_bpm": 50, "hr_drift_bpm": 5, **PAUSES, "pause_s": (2.0, 3.0)},
        "light",
        False,
    ),
    (
        "coupling250-250",
        "premature beats 250–320 ms after the last",
        20,
        {"fs": 250, "hr_bpm": 70, "pvc_rate": 0.04, "pac_rate": 0.04, **SHORT_COUPLING},
        "light",
        True,
    ),
    (
        "coupling250-tachy-360",
        "130 bpm, coupling 0.45–0.65 RR, ≥ 250 ms",
        15,
        {"fs": 360, "hr_bpm": 130, "pvc_coupling": (0.45, 0.6), "pac_coupling": (0.5, 0.65)},
        "light",
        False,
    ),
    ("wander-heavy-250", "baseline wander 1.5 mV", 20, {"fs": 250, "hr_bpm": 65, "baseline_mv": 1.5}, "light", False),
    (
        "mains60-heavy-360",
        "60 Hz mains 0.5 mV",
        15,
        {"fs": 360, "hr_bpm": 75, "mains_mv": 0.5, "mains_hz": 60.0},
        "light",
        False,
    ),
    (
        "muscle-heavy-500",
        "muscle bursts 0.5 mV every 15 s",
        15,
        {"fs": 500, "hr_bpm": 85, "burst_mv": 0.5, "burst_every_s": 15.0},
        "light",
        False,
    ),
    (
        "mixed-heavy-250",
        "heavy noise, bigeminy, pauses, coupling ≥ 250 ms",
        20,
        {"fs": 250, "hr_bpm": 100, "bigeminy_runs": 10, **PAUSES, **SHORT_COUPLING},
        "heavy",
        False,
    ),
    (
        "mixed-moderate-1000",
        "1000 Hz, moderate noise, bigeminy, pauses",
        15,
        {"fs": 1000, "hr_bpm": 60, "bigeminy_runs": 10, **PAUSES},
        "moderate",
        False,
    ),
    ("brady45-heavy-500", "45 bpm, heavy noise", 20, {"fs": 500, "hr_bpm": 45, "hr_drift_bpm": 3}, "heavy", False),
    ("unreadable-white-250", "white noise 1 mV rms", 10, {"fs": 250, "hr_bpm": 75}, "unreadable-white", True),
    (
        "unreadable-muscle-360",
        "muscle bursts 2 mV most of the time",
        10,
        {"fs": 360, "hr_bpm": 75},
        "unreadable-muscle",
        False,
    ),
    ("unreadable-all-128", "everything, 128 Hz", 10, {"fs": 128, "hr_bpm": 75}, "unreadable-all", False),
]


def suite(quick: bool, only: list[str] | None) -> list[dict]:
    """The records to run (``quick``: those marked for --quick, cut to :data:`QUICK_MINUTES`; ``only``: these
    names), each ``{"name", "what", "noise", "unreadable", "spec"}``."""
    records = []
    for i, (name, what, minutes, fields, noise, in_quick) in enumerate(SUITE, start=1):
        if (quick and not in_quick) or (only and name not in only):
            continue
        minutes = min(minutes, QUICK_MINUTES) if quick else minutes
        spec = SynthSpec(duration_s=60.0 * minutes, **{"seed": 100 + i, **ECTOPY, **NOISE[noise], **fields})
        records.append(
            {"name": name, "what": what, "noise": noise, "unreadable": noise.startswith("unreadable"), "spec": spec}
        )
    return records


def spec_dict(spec) -> dict:
    """A SynthSpec as JSON-ready fields (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(spec).items()}
