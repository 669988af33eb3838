"""Physiological recording formats: WFDB records (``wfdb``) and EDF / EDF+ / BDF files (``pyedflib``).

Both readers return the chosen leads as float32 numpy arrays in millivolts (the header's physical units,
scaled when they are µV or V), their names and the sampling rate from the file itself;
:func:`recorded_start` gives the recording's start from the header (WFDB ``base_date`` and ``base_time``, EDF
start date and time). A lead a record uses
must share one rate with the others, or the error says which differ. The libraries parse the headers; a
header that does not parse, a missing signal file, an unknown format or an unknown lead name is a
:class:`BeatflowError` naming the file.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import numpy as np

from beatflow.errors import BeatflowError

log = logging.getLogger("beatflow")

WFDB_SUFFIX = ".hea"
WFDB_BITS = {
    "8": 8,
    "16": 16,
    "24": 24,
    "32": 32,
    "61": 16,
    "80": 8,
    "160": 16,
    "212": 12,
    "310": 32 / 3,
    "311": 32 / 3,
}
# bits per sample of WFDB's uncompressed signal formats (310 and 311: three samples in 32 bits); FLAC ones vary
EDF_SUFFIXES = (".edf", ".bdf")
TO_MV = {"mv": 1.0, "uv": 1e-3, "µv": 1e-3, "μv": 1e-3, "v": 1e3}  # unknown units are kept as they are


def is_wfdb(path: Path) -> bool:
    """A WFDB record: ``dir/208.hea``, or ``dir/208`` (no suffix) beside its ``.hea``."""
    return path.suffix.lower() == WFDB_SUFFIX or (not path.suffix and path.with_name(path.name + WFDB_SUFFIX).exists())


def is_edf(path: Path) -> bool:
    return path.suffix.lower() in EDF_SUFFIXES


def wfdb_record_name(path: Path) -> str:
    """The record name ``wfdb`` takes (``dir/208``) from ``dir/208`` or ``dir/208.hea``."""
    return str(path.with_suffix("")) if path.suffix.lower() == WFDB_SUFFIX else str(path)


def choose_named_leads(names: list[str], leads: list[str] | None, what: str) -> list[int]:
    """Indices of the sheet's ``leads`` among a file's signal ``names`` (every signal when none are given)."""
    if not leads:
        return list(range(len(names)))
    missing = [lead for lead in leads if lead not in names]
    if missing:
        raise BeatflowError(f"lead(s) {missing} not in the {what} (signals: {names})")
    return [names.index(lead) for lead in leads]


def one_rate(names: list[str], rates: list[float]) -> float:
    """The leads' common sampling rate, or an error listing each lead's rate."""
    if len(set(rates)) > 1:
        listed = ", ".join(f"{n} {r:g} Hz" for n, r in zip(names, rates))
        raise BeatflowError(
            f"the leads have different sampling rates ({listed}); choose leads of one rate "
            "in the records sheet's leads column"
        )
    return float(rates[0])


def in_millivolts(values: np.ndarray, unit: str) -> np.ndarray:
    """``values`` (float64) scaled to mV when ``unit`` is a voltage, as float32."""
    return (values * TO_MV.get(unit.strip().lower(), 1.0)).astype(np.float32)


def unique(names: list[str]) -> None:
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise BeatflowError(
            f"signal name(s) {duplicated} appear more than once; name distinct leads in the "
            "records sheet's leads column"
        )


def read_wfdb(path: Path, leads: list[str] | None) -> tuple[dict, list[str], float]:
    """A WFDB record (single- or multi-segment): ``({lead: float32 mV}, leads, fs)``."""
    import wfdb

    name = wfdb_record_name(path)
    header_file = Path(name + WFDB_SUFFIX)
    if not header_file.exists():
        raise BeatflowError(f"WFDB header {header_file} not found")
    try:
        header = wfdb.rdheader(name, rd_segments=True)
    except Exception as exc:  # wfdb raises ValueError, IndexError, … on a malformed header
        raise BeatflowError(f"cannot parse the WFDB header {header_file}: {exc}") from exc
    check_rate(header_file)
    segments = [s for s in header.segments if s is not None] if isinstance(header, wfdb.MultiRecord) else [header]
    for segment in segments:
        check_signal_files(segment, header_file.parent)
    if isinstance(header, wfdb.MultiRecord):  # the signals are described by the (layout) segment headers
        header = next((s for s in header.segments if s is not None and s.sig_name), header)
    names = list(header.sig_name or [])
    if not names:
        raise BeatflowError(f"the WFDB header {header_file} lists no signals")
    chosen = choose_named_leads(names, leads, f"WFDB record {header_file}")
    unique([names[i] for i in chosen])
    per_frame = getattr(header, "samps_per_frame", None) or [1] * len(names)
    one_rate([names[i] for i in chosen], [header.fs * per_frame[i] for i in chosen])
    try:
        record = wfdb.rdrecord(name, channels=chosen, physical=True, m2s=True)
    except FileNotFoundError as exc:
        raise BeatflowError(f"a signal file of WFDB record {header_file} is missing ({exc.filename or exc})") from exc
    except Exception as exc:  # an unknown signal format, a truncated file, …
        raise BeatflowError(
            f"cannot read the signals of WFDB record {header_file}: {type(exc).__name__}: {exc}"
        ) from exc
    units = list(record.units or ["mV"] * len(chosen))
    chosen_names = [names[i] for i in chosen]
    signals = {n: in_millivolts(record.p_signal[:, k], units[k]) for k, n in enumerate(chosen_names)}
    log.info("WFDB record %s: %d signal(s) at %g Hz, units %s", name, len(chosen), record.fs, units)
    return signals, chosen_names, float(record.fs)


def check_rate(header_file: Path) -> None:
    """The sampling rate the header's record line states (``wfdb`` reads 0 as given and drops a minus sign):
    a positive finite number, or absent (WFDB's default, 250 Hz)."""
    lines = [line.split() for line in header_file.read_text(errors="replace").splitlines()]
    record = next((tokens for tokens in lines if tokens and not tokens[0].startswith("#")), [])
    if len(record) < 3:
        return
    stated = record[2].split("/")[0].split("(")[0]
    try:
        fs = float(stated)
    except ValueError:
        fs = float("nan")
    if not (np.isfinite(fs) and fs > 0):
        raise BeatflowError(f"the WFDB header {header_file} states a sampling rate of {stated} Hz; it must be positive")


def check_signal_files(header, directory: Path) -> None:
    """Each signal file of a (single-segment) WFDB header holds what the header promises: its signals'
    samples per frame × the record's length in the file's format. A header that names fewer or more signals,
    or a wrong length, otherwise reads as a wrong signal (a halved heart rate) or fails deep in ``wfdb``."""
    if not header.sig_len or not header.file_name:
        return  # no length stated: wfdb takes it from the file
    per_frame = header.samps_per_frame or [1] * len(header.file_name)
    offsets = header.byte_offset or [None] * len(header.file_name)
    files: dict[str, list] = {}
    for name, fmt, spf, offset in zip(header.file_name, header.fmt, per_frame, offsets, strict=True):
        files.setdefault(name, []).append((fmt, spf or 1, offset or 0))
    for name, signals in files.items():
        path = directory / name
        if name == "~" or not path.is_file() or any(fmt not in WFDB_BITS for fmt, _, _ in signals):
            continue  # a missing file is read_wfdb's error; a compressed (FLAC) format is not checked
        frame_bits = sum(WFDB_BITS[fmt] * spf for fmt, spf, _ in signals)
        expected = int(np.ceil(header.sig_len * frame_bits / 8))
        held = path.stat().st_size - signals[0][2]
        if abs(held - expected) >= max(1, frame_bits / 8):
            formats = "/".join(sorted({fmt for fmt, _, _ in signals}))
            raise BeatflowError(
                f"the WFDB header {directory / header.record_name}.hea does not fit its signal file {path}: "
                f"{len(signals)} signal(s) of {header.sig_len} samples in format {formats} make {expected} "
                f"bytes, the file holds {held}; is the header's number of signals or length wrong?"
            )


def read_edf(path: Path, leads: list[str] | None) -> tuple[dict, list[str], float]:
    """An EDF, EDF+ or BDF file: ``({lead: float32 mV}, leads, fs)``; the chosen leads must share one rate."""
    import pyedflib

    if not path.exists():
        raise BeatflowError("file not found")
    try:
        reader = pyedflib.EdfReader(str(path))
    except Exception as exc:  # OSError with pyedflib's own message for a malformed header
        raise BeatflowError(f"cannot parse the EDF/BDF header: {exc}") from exc
    try:
        names = [label.strip() for label in reader.getSignalLabels()]
        chosen = choose_named_leads(names, leads, "EDF file")
        chosen_names = [names[i] for i in chosen]
        unique(chosen_names)
        fs = one_rate(chosen_names, [reader.getSampleFrequency(i) for i in chosen])
        signals = {
            n: in_millivolts(reader.readSignal(i), reader.getPhysicalDimension(i)) for n, i in zip(chosen_names, chosen)
        }
    finally:
        reader.close()
    log.info("EDF file %s: %d signal(s) at %g Hz", path, len(chosen), fs)
    return signals, chosen_names, fs


def recorded_start(path: Path) -> dt.datetime | None:
    """The recording's start from a WFDB header (both ``base_date`` and ``base_time``) or an EDF/BDF header;
    None for other files, or a WFDB header without a date and a time."""
    if is_wfdb(path):
        import wfdb

        try:
            header = wfdb.rdheader(wfdb_record_name(path))
        except Exception as exc:  # as in read_wfdb
            raise BeatflowError(f"cannot parse the WFDB header: {exc}") from exc
        if header.base_date is None or header.base_time is None:
            return None
        return dt.datetime.combine(header.base_date, header.base_time)
    if is_edf(path):
        import pyedflib

        try:
            with pyedflib.EdfReader(str(path)) as reader:
                return reader.getStartdatetime()
        except Exception as exc:  # as in read_edf
            raise BeatflowError(f"cannot parse the EDF/BDF header: {exc}") from exc
    return None
