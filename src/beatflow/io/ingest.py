"""ingest: a record's CSV / CSV.gz / parquet, WFDB record or EDF / EDF+ / BDF file → ``signal.parquet``
(float32 leads, ``fs`` metadata).

CSV is parsed by cuDF on the GPU and by pyarrow's multithreaded reader on the CPU (never pandas' parser);
WFDB and EDF are read on the host by ``wfdb`` and ``pyedflib`` (:mod:`beatflow.io.physio`), which carry
their own sampling rate and lead names.
"""

from __future__ import annotations

import gzip
import logging
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from beatflow.errors import BeatflowError, read_failure
from beatflow.io.sheet import parse_start
from beatflow.io.signal_checks import check_clipping, fill_gaps
from beatflow.io.tables import write_signal
from beatflow.params import FromConfig

log = logging.getLogger("beatflow")

READ_ERRORS = (OSError, EOFError, ValueError, zlib.error, pa.ArrowException)  # UnicodeDecodeError: a ValueError
TIME = "time_s"
FS_TOLERANCE = 0.01  # relative disagreement allowed between the sheet's fs and the time_s column


def csv_header(path: Path) -> list[str]:
    """Column names from the first line of a CSV or CSV.gz file."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        line = f.readline().strip()
    if not line:
        raise BeatflowError("the file is empty (no header line)")
    return [c.strip().strip('"') for c in line.split(",")]


def choose_leads(columns: list[str], leads: list[str] | None, numeric: set[str] | None = None) -> list[str]:
    """The lead columns to read: those named in the sheet, or the first (numeric) column that is not time_s."""
    if leads:
        missing = [lead for lead in leads if lead not in columns]
        if missing:
            raise BeatflowError(f"lead column(s) {missing} not in the file (columns: {columns})")
        return leads
    candidates = [c for c in columns if c != TIME and (numeric is None or c in numeric)]
    if not candidates:
        raise BeatflowError(f"no lead column besides {TIME!r} (columns: {columns})")
    return candidates[:1]


def _read_cpu(path: Path, columns: list[str], csv: bool) -> dict:
    """Columns as numpy arrays, parsed by pyarrow (empty fields become NaN and are caught later)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    try:
        if csv:
            options = pacsv.ConvertOptions(include_columns=columns, column_types=dict.fromkeys(columns, pa.float64()))
            table = pacsv.read_csv(path, convert_options=options)
        else:
            table = pq.read_table(path, columns=columns).cast(pa.schema([(c, pa.float64()) for c in columns]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise BeatflowError(f"cannot parse the file: {exc}") from exc
    return {c: _as_float32(table.column(c).to_numpy(), c) for c in columns}


def _as_float32(values, column: str):
    """Leads are parsed as float64 and rounded once to float32: cuDF and pyarrow then agree to the bit
    (cuDF's direct float32 parse can differ from pyarrow's by one ulp)."""
    return values if column == TIME else values.astype("float32")


def _read_gpu(path: Path, columns: list[str], csv: bool) -> dict:
    """Columns as cupy arrays, parsed by cuDF on the device (zero-copy hand-off to CuPy)."""
    import cudf

    dtypes = dict.fromkeys(columns, "float64")
    try:
        if csv:
            frame = cudf.read_csv(path, usecols=columns, dtype=dtypes)
        else:
            frame = cudf.read_parquet(path, columns=columns).astype(dtypes)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise BeatflowError(f"cannot parse the file: {exc}") from exc
    nulls = {c: int(frame[c].null_count) for c in columns if frame[c].null_count}
    if nulls:
        raise BeatflowError(f"non-numeric or empty values (count per column: {nulls})")
    return {c: _as_float32(frame[c].to_cupy(), c) for c in columns}


def read_source(path: Path, leads: list[str] | None, gpu: bool) -> tuple[dict, list[str], float | None]:
    """Read the record file: ``(columns, leads, fs)``, column name → array (cupy or numpy), leads as float32,
    ``time_s`` as float64; ``fs`` is the file's own rate (WFDB, EDF) or None (CSV, parquet)."""
    from beatflow.io.physio import is_edf, is_wfdb, read_edf, read_wfdb

    if is_wfdb(path) or is_edf(path):
        signals, chosen, fs = (read_wfdb if is_wfdb(path) else read_edf)(path, leads)
        if gpu:
            import cupy

            signals = {name: cupy.asarray(values) for name, values in signals.items()}
        return signals, chosen, fs
    if not path.exists():
        raise BeatflowError("file not found" + ("" if path.suffix else f" (nor a WFDB header {path.name}.hea)"))
    name = path.name.lower()
    csv = name.endswith((".csv", ".csv.gz"))
    if csv:
        header = csv_header(path)
        chosen = choose_leads(header, leads)
    elif name.endswith(".parquet"):
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        header = schema.names
        numeric = {f.name for f in schema if pa.types.is_floating(f.type) or pa.types.is_integer(f.type)}
        chosen = choose_leads(header, leads, numeric)
    else:
        raise BeatflowError("unsupported file type (use .csv, .csv.gz, .parquet, a WFDB record, .edf or .bdf)")
    columns = chosen + ([TIME] if TIME in header else [])
    return (_read_gpu if gpu else _read_cpu)(path, columns, csv), chosen, None


def resolve_fs(fs: float | None, time_s, xp=np, file_fs: float | None = None) -> float:
    """The sampling rate: the file's own (WFDB, EDF) or the sheet's ``fs``, checked against ``time_s`` and
    against each other when both are given."""
    if file_fs is not None:
        if not (np.isfinite(file_fs) and file_fs > 0):
            raise BeatflowError(f"the file states a sampling rate of {file_fs:g} Hz; it must be positive")
        if fs is not None and np.isfinite(fs) and abs(file_fs - fs) > FS_TOLERANCE * fs:
            raise BeatflowError(f"fs={fs:g} in the records sheet disagrees with the file's {file_fs:g} Hz")
        return file_fs
    derived = None
    if time_s is not None and len(time_s) > 1:
        step = float(xp.median(xp.diff(time_s)))
        if not step > 0:  # also NaN
            raise BeatflowError("time_s does not increase (or has missing values)")
        derived = 1.0 / step
    if fs is None or not np.isfinite(fs):
        if derived is None:
            raise BeatflowError("fs is missing in the records sheet and the file has no time_s column")
        return derived
    if fs <= 0:
        raise BeatflowError(f"fs must be positive, got {fs}")
    if derived is not None and abs(derived - fs) > FS_TOLERANCE * fs:
        raise BeatflowError(f"fs={fs} in the records sheet disagrees with time_s (which gives {derived:.3f} Hz)")
    return float(fs)


@dataclass(frozen=True)
class IngestParams(FromConfig):
    """``ingest.*`` config keys. Each key's meaning and default: the config schema."""

    SECTION = "ingest"

    max_gap_s: float
    max_clipped_fraction: float


def ingest(
    record: str,
    inputs: dict,
    outputs: dict,
    p: IngestParams,
    backend,
    *,
    fs: float | None = None,
    leads: list[str] | None = None,
    start: str | None = None,
) -> None:
    """Convert one record to ``signal.parquet``; every problem is reported with the record and file.

    Parameters
    ----------
    record : str
        The record's name (for messages).
    inputs : dict
        ``path``: the record's file (CSV, CSV.gz, parquet, WFDB record, EDF/BDF).
    outputs : dict
        ``signal``: the ``signal.parquet`` to write.
    p : IngestParams
        The ``ingest.*`` config keys.
    backend : Backend
        Where to read and check the signal (:func:`beatflow.backend.select_backend`).
    fs : float, optional
        The records sheet's sampling rate (Hz; None: the file's own or its ``time_s`` column's).
    leads : list of str, optional
        The records sheet's leads (None: the file's default, :func:`read_source`).
    start : str, optional
        The records sheet's start of the recording (ISO 8601); None: the file's own
        (:func:`beatflow.io.physio.recorded_start`), else unknown.

    Raises
    ------
    BeatflowError
        When the file cannot be read, its rate is missing or inconsistent, or a lead has too long a gap or
        too many clipped samples.
    """
    path = Path(inputs["path"])
    try:
        log.info("ingest %s: reading %s", record, path.resolve())
        signal, fs, began = read_checked(path, p, backend, fs=fs, leads=leads, start=start)
    except BeatflowError as exc:
        raise BeatflowError(exc.problem, record=record, path=str(path)) from exc
    write_signal(signal, fs, outputs["signal"], backend.gpu, start=began)
    rows, chosen = len(next(iter(signal.values()))), list(signal)
    log.info(
        "ingest %s: %d samples x %d lead(s) %s at %.3f Hz (%.2f h), start %s",
        record,
        rows,
        len(chosen),
        chosen,
        fs,
        rows / fs / 3600,
        began.isoformat() if began else "unknown",
    )


def read_checked(path: Path, p: IngestParams, backend, *, fs=None, leads=None, start=None) -> tuple:
    """``({lead: samples}, fs, start)`` of the record's file ``path``, its gaps filled and its clipping
    checked (:func:`ingest`'s arguments); every problem a :class:`BeatflowError` without the record's name."""
    from beatflow.io.physio import recorded_start

    xp = backend.xp
    try:
        columns, chosen, file_fs = read_source(path, leads, backend.gpu)
    except READ_ERRORS as exc:  # what the readers' own checks did not catch: a file that cannot be read
        raise BeatflowError(f"cannot read the file: {read_failure(exc)}") from exc
    began = parse_start(start) if start else recorded_start(path)
    rows = len(columns[chosen[0]])
    if rows < 2:
        raise BeatflowError(f"only {rows} data row(s)")
    fs = resolve_fs(fs, columns.get(TIME), xp, file_fs)
    signal = {}
    for name in chosen:
        signal[name] = fill_gaps(columns[name], fs, p.max_gap_s, name, xp)
        check_clipping(signal[name], p.max_clipped_fraction, name, xp)
    return signal, fs, began
