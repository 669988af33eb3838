"""The reference R-peak detectors beatflow is compared with, and the machine the comparison ran on.

sleepecg (``detect_heartbeats``), NeuroKit2 (``ecg_peaks``, default method) and wfdb's XQRS
(``xqrs_detect``), each on one lead at its default settings; beatflow's own detector
(``detect.segment.detect_peaks``, the config's segment section, CPU backend) with the second lead where there
is one, as the segment rule runs it. sleepecg and NeuroKit2 come with the ``bench`` extra
(``pip install -e ".[bench]"``); a script's ``--detectors`` can leave them out.
"""

from __future__ import annotations

import importlib.util
import time
import warnings

import numpy as np

from benchmarks import common

DETECTORS = ("beatflow", "sleepecg", "neurokit2", "xqrs")
PACKAGES = ("numpy", "scipy", "numba", "torch", "wfdb", "sleepecg", "neurokit2")
MODULE = {"beatflow": "beatflow", "sleepecg": "sleepecg", "neurokit2": "neurokit2", "xqrs": "wfdb"}


def _beatflow(x, fs, second=None):
    from beatflow.backend import select_backend
    from beatflow.detect.segment import detect_peaks

    return detect_peaks(x, common.stage_params()[0].in_samples(fs), select_backend("cpu"), second=second)


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


def chosen(names: str | None) -> tuple[str, ...]:
    """The detectors of a comma-separated ``names`` (None: all), beatflow first; stops if one is unknown or
    its package is not installed."""
    wanted = tuple(DETECTORS if names is None else ["beatflow"] + [n for n in names.split(",") if n != "beatflow"])
    unknown = sorted(set(wanted) - set(DETECTORS))
    if unknown:
        raise SystemExit(f"unknown detectors {unknown}: choose from {', '.join(DETECTORS)}")
    missing = [n for n in wanted if importlib.util.find_spec(MODULE[n]) is None]
    if missing:
        raise SystemExit(
            f'detectors {missing} need their packages (pip install -e ".[bench]"), or leave them out with --detectors'
        )
    return wanted


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


def warm_up(detectors=DETECTORS) -> None:
    """Compile/import everything once (Numba JIT, module imports), so that the seconds are steady state."""
    from beatflow.synth import SynthSpec, generate

    for fs in (128.0, 360.0):
        leads, _, _ = generate(SynthSpec(duration_s=60, fs=fs, seed=0))
        for name in detectors:
            detect(name, leads["MLII"], fs, leads["V1"])


def detection_figures(true: np.ndarray, detected: np.ndarray, fs: float, excluded=None) -> dict:
    """Se, +P, F1 and counts of ``detected`` against the reference beats ``true`` (samples), by
    :func:`beatflow.evaluate.evaluate` (one-to-one within 150 ms, ``excluded`` intervals left out)."""
    import pandas as pd

    from beatflow.evaluate import evaluate

    truth = pd.DataFrame({"sample": np.asarray(true, np.int64), "label": "N"})
    table = pd.DataFrame({"time_s": np.asarray(detected) / fs, "score": 0.0, "anomaly": False})
    e = evaluate(truth, table, fs, excluded)
    return {
        k: e[k]
        for k in (
            "n_true",
            "n_detected",
            "true_positives",
            "false_positives",
            "false_negatives",
            "sensitivity",
            "ppv",
            "f1",
        )
    }


def machine() -> dict:
    """The CPU, the detectors' packages' versions and the git commit the figures come from."""
    return common.machine(PACKAGES)
