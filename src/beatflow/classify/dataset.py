"""Training rows from annotated WFDB records: beatflow's own detector on the record (default ``segment.*``
config, CPU), each detected beat matched to a reference beat within 150 ms (EC57), its features
(:func:`beatflow.classify.features.beat_features`) and the reference beat's AAMI class as its label; the record
as recorded or resampled to another rate (scipy's polyphase filter, the reference's samples scaled alike), to
measure what another sampling rate does; its first lead alone, to measure what a one-lead recording does; or
with synthetic noise added to every lead (a :data:`beatflow.synth.NOISE` preset), to measure what noise does."""

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
    and the ``matched`` pairs ``(i_reference, i_scored_detection)``; ``leads`` read (the record's first ``leads``;
    None: all), ``alone``, the beats' features from the first lead alone (what a one-lead record gives), and the
    ``noise`` preset added to its leads (None: none)."""

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
    leads: int | None
    alone: np.ndarray
    noise: str | None = None


def read_leads(
    path: Path, fs: float | None = None, leads: int | None = None, noise: str | None = None
) -> tuple[dict, list[str], float, float]:
    """The WFDB record ``path``'s leads (name → numpy array; its first ``leads`` where given), their names in
    order, their rate and the factor from the recorded rate: resampled to ``fs`` (Hz) where given and other than
    the recorded rate; with the :data:`beatflow.synth.NOISE` preset ``noise`` added to each lead where given (in
    mV, as the records are; drawn afresh for each lead, the same for the same record each time)."""
    import zlib
    from fractions import Fraction

    from beatflow.io.physio import read_wfdb

    signals, names, rate = read_wfdb(path, None)
    names = names[:leads]
    signals = {name: signals[name] for name in names}
    ratio = Fraction(1) if fs is None else Fraction(fs / rate).limit_denominator(1000)
    if ratio != 1:
        from scipy.signal import resample_poly

        signals = {name: resample_poly(x, ratio.numerator, ratio.denominator) for name, x in signals.items()}
    if noise is not None:
        from beatflow.synth import NOISE, SynthSpec
        from beatflow.synth import noise as drawn

        spec = SynthSpec(fs=rate * float(ratio), **NOISE[noise])
        signals = {
            name: x + drawn(len(x), spec, np.random.default_rng([zlib.crc32(path.name.encode()), i]))
            for i, (name, x) in enumerate(signals.items())
        }
    signals = {name: np.asarray(x, dtype=np.float32) for name, x in signals.items()}
    return signals, names, rate * float(ratio), float(ratio)


def read_reference_beats(path: Path, ratio: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``.atr`` annotations of the WFDB record ``path``: its reference beats' samples and labels and the
    intervals left out (ventricular flutter; ``[n, 2]`` samples), the samples scaled by ``ratio`` (a rate's factor
    from :func:`read_leads`)."""
    from beatflow.io.truth import read_truth

    truth, excluded = read_truth(Path(f"{path}.atr"))
    samples = np.round(truth["sample"].to_numpy() * ratio).astype(np.int64)
    excluded = np.asarray(excluded, dtype=np.float64).reshape(-1, 2) * ratio
    return samples, truth["label"].to_numpy().astype(str), excluded


def record_leads(rows: RecordRows) -> tuple[dict, float]:
    """``(leads, fs)`` of the record ``rows`` were made from (lead name → numpy array), at the rows' rate."""
    signals, _, fs, _ = read_leads(rows.source, rows.fs, rows.leads, rows.noise)
    return signals, fs


def detected_peaks(signals: list[np.ndarray], fs: float) -> np.ndarray:
    """beatflow's R peaks (samples) on ``signals`` (first lead, the second where it helps), default config."""
    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import detect_peaks

    backend = select_backend("cpu")
    second = signals[1] if len(signals) > 1 else None
    return np.asarray(detect_peaks(signals[0], SegmentParams.defaults().in_samples(fs), backend, None, second))


def record_rows(path: Path, fs: float | None = None, leads: int | None = None, noise: str | None = None) -> RecordRows:
    """The rows of the WFDB record ``path`` (``dir/name``) and its ``.atr`` annotations, the record resampled to
    ``fs`` (Hz), cut to its first ``leads`` and with the ``noise`` preset added where given (:func:`read_leads`)."""
    from beatflow.classify.features import beat_features
    from beatflow.evaluate import TOLERANCE_S, match
    from beatflow.io.truth import outside

    signals, names, fs, ratio = read_leads(path, fs, leads, noise)
    lead_signals = [signals[name] for name in names]
    peaks = detected_peaks(lead_signals, fs)
    samples, labels, excluded = read_reference_beats(path, ratio)
    in_reference, scored = outside(samples, excluded), outside(peaks, excluded)
    reference = labels[in_reference]
    ti, di = match(samples[in_reference], peaks[scored], TOLERANCE_S * fs)
    label = np.full(len(peaks), "-", dtype="<U1")
    label[np.flatnonzero(scored)[di]] = reference[ti]
    features = beat_features(lead_signals, fs, peaks)
    alone = beat_features(lead_signals[:1], fs, peaks) if len(lead_signals) > 1 else features
    matched = (ti, di)
    return RecordRows(
        path.name, path.parent.name, path, features, label, peaks, fs, scored, reference, matched, leads, alone, noise
    )


def cached_rows(
    path: Path, cache: Path, fs: float | None = None, leads: int | None = None, noise: str | None = None
) -> RecordRows:
    """:func:`record_rows`, kept in ``cache`` (an ``.npz`` per record, rate, leads and noise, remade when the code
    that makes them changes: the features', the detector's and the noise's)."""
    import hashlib

    from beatflow import synth
    from beatflow.classify import features
    from beatflow.detect import segment
    from beatflow.io.atomic import atomic_path

    sources = [Path(features.__file__), *sorted(Path(segment.__file__).parent.glob("*.py"))]
    sources += [Path(synth.__file__)] if noise is not None else []
    code = hashlib.sha256(b"".join(source.read_bytes() for source in sources)).hexdigest()
    suffix = ("" if fs is None else f"_{fs:g}hz") + ("" if leads is None else f"_{leads}lead")
    suffix += "" if noise is None else f"_{noise}-noise"
    file = cache / f"{path.parent.name}_{path.name}{suffix}.npz"
    if file.exists():
        with np.load(file, allow_pickle=False) as z:
            if "alone" in z.files and str(z["code"]) == code:
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
                    leads,
                    z["alone"],
                    noise,
                )
    rows = record_rows(path, fs, leads, noise)
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
            alone=rows.alone,
        )
    return rows


def database_rows(
    data: Path, cache: Path | None = None, fs: float | None = None, leads: int | None = None, noise: str | None = None
) -> list[RecordRows]:
    """Every record (``*.hea`` with an ``.atr``) of the folder ``data``, resampled to ``fs`` (Hz), cut to its
    first ``leads`` and with the ``noise`` preset added where given."""
    paths = sorted(p.with_suffix("") for p in data.glob("*.hea") if p.with_suffix(".atr").exists())
    out = []
    for path in paths:
        out.append(cached_rows(path, cache, fs, leads, noise) if cache else record_rows(path, fs, leads, noise))
        print(f"{data.name}/{path.name}: {len(out[-1].peak)} beats", flush=True)
    return out
