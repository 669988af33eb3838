"""Training rows from annotated WFDB records: beatflow's own detector on the record (default ``segment.*``
config, CPU), each detected beat matched to a reference beat within 150 ms (EC57), its features
(:func:`beatflow.classify.features.beat_features`) and the reference beat's AAMI class as its label."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class RecordRows:
    """One record's detected beats (``record`` of the folder ``database``, read from ``source``):
    ``features`` ``[beats, features]``, ``label`` (the matched reference beat's AAMI class; ``-`` for a
    detection without one), ``peak`` (samples), ``fs``; for EC57 scoring, which detections are ``scored``
    (outside ventricular flutter/fibrillation), the reference beats outside it (their ``reference`` classes)
    and the ``matched`` pairs ``(i_reference, i_scored_detection)``."""

    record: str
    database: str
    source: Path
    features: np.ndarray
    label: np.ndarray
    peak: np.ndarray
    fs: float
    scored: np.ndarray
    reference: np.ndarray
    matched: tuple[np.ndarray, np.ndarray]


def record_leads(rows: RecordRows) -> tuple[dict, float]:
    """``(leads, fs)`` of the record ``rows`` were made from (lead name → numpy array)."""
    from beatflow.io.physio import read_wfdb

    signals, _, fs = read_wfdb(rows.source, None)
    return signals, fs


def detected_peaks(signals: list[np.ndarray], fs: float) -> np.ndarray:
    """beatflow's R peaks (samples) on ``signals`` (first lead, the second where it helps), default config."""
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import detect_peaks

    backend = select_backend("cpu")
    second = signals[1] if len(signals) > 1 else None
    return np.asarray(detect_peaks(signals[0], SegmentParams.defaults().in_samples(fs), backend, None, second))


def record_rows(path: Path) -> RecordRows:
    """The rows of the WFDB record ``path`` (``dir/name``) and its ``.atr`` annotations."""
    from beatflow.classify.features import beat_features
    from beatflow.evaluate import TOLERANCE_S, match
    from beatflow.io.physio import read_wfdb
    from beatflow.io.truth import outside, read_truth

    signals, leads, fs = read_wfdb(path, None)
    lead_signals = [signals[name] for name in leads]
    peaks = detected_peaks(lead_signals, fs)
    truth, excluded = read_truth(Path(f"{path}.atr"))
    samples = truth["sample"].to_numpy()
    in_reference, scored = outside(samples, excluded), outside(peaks, excluded)
    reference = truth["label"].to_numpy().astype(str)[in_reference]
    ti, di = match(samples[in_reference], peaks[scored], TOLERANCE_S * fs)
    label = np.full(len(peaks), "-", dtype="<U1")
    label[np.flatnonzero(scored)[di]] = reference[ti]
    features = beat_features(lead_signals, fs, peaks)
    return RecordRows(path.name, path.parent.name, path, features, label, peaks, fs, scored, reference, (ti, di))


def cached_rows(path: Path, cache: Path) -> RecordRows:
    """:func:`record_rows`, kept in ``cache`` (an ``.npz`` per record, remade when the code that makes them
    changes: the features' and the detector's)."""
    import hashlib

    from beatflow.classify import features
    from beatflow.detect import segment
    from beatflow.io.atomic import atomic_path

    sources = [Path(features.__file__), *sorted(Path(segment.__file__).parent.glob("*.py"))]
    code = hashlib.sha256(b"".join(source.read_bytes() for source in sources)).hexdigest()
    file = cache / f"{path.parent.name}_{path.name}.npz"
    if file.exists():
        with np.load(file, allow_pickle=False) as z:
            if "code" in z.files and str(z["code"]) == code:
                return RecordRows(
                    path.name,
                    path.parent.name,
                    path,
                    z["features"],
                    z["label"],
                    z["peak"],
                    float(z["fs"]),
                    z["scored"],
                    z["reference"],
                    (z["ti"], z["di"]),
                )
    rows = record_rows(path)
    with atomic_path(file) as tmp:
        np.savez(
            tmp,
            code=code,
            features=rows.features,
            label=rows.label,
            peak=rows.peak,
            fs=rows.fs,
            scored=rows.scored,
            reference=rows.reference,
            ti=rows.matched[0],
            di=rows.matched[1],
        )
    return rows


def database_rows(data: Path, cache: Path | None = None) -> list[RecordRows]:
    """Every record (``*.hea`` with an ``.atr``) of the folder ``data``."""
    paths = sorted(p.with_suffix("") for p in data.glob("*.hea") if p.with_suffix(".atr").exists())
    out = []
    for path in paths:
        out.append(cached_rows(path, cache) if cache else record_rows(path))
        print(f"{data.name}/{path.name}: {len(out[-1].peak)} beats", flush=True)
    return out
