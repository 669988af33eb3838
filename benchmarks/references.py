"""The reference R-peak detectors beatflow is compared with, and the machine the comparison ran on.

sleepecg (``detect_heartbeats``), NeuroKit2 (``ecg_peaks``, default method) and wfdb's XQRS
(``xqrs_detect``), each on one lead at its default settings; beatflow's own detector
(``detect.segment.detect_peaks``, default ``SegmentParams``, CPU backend) with the second lead where there
is one, as the segment rule runs it. Needs the ``bench`` extra (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DETECTORS = ("beatflow", "sleepecg", "neurokit2", "xqrs")
PACKAGES = ("numpy", "scipy", "numba", "torch", "wfdb", "sleepecg", "neurokit2")


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


def detection_figures(true: np.ndarray, detected: np.ndarray, fs: float, excluded=None) -> dict:
    """Se, +P, F1 and counts of ``detected`` against the reference beats ``true`` (samples), by
    :func:`beatflow.evaluate.evaluate` (one-to-one within 150 ms, ``excluded`` intervals left out)."""
    import pandas as pd

    from beatflow.evaluate import evaluate

    truth = pd.DataFrame({"sample": np.asarray(true, np.int64), "label": "N"})
    table = pd.DataFrame({"time_s": np.asarray(detected) / fs, "score": 0.0, "anomaly": False})
    e = evaluate(truth, table, fs, excluded)
    return {k: e[k] for k in ("n_true", "n_detected", "true_positives", "false_positives", "false_negatives",
                              "sensitivity", "ppv", "f1")}


def machine_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine() -> dict:
    """The CPU, the packages' versions and the git commit the figures come from."""
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
