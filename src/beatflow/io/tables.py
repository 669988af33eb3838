"""Parquet artifacts: the signal (one float32 column per lead; ``fs`` and, when known, the recording's
``start`` in the key-value metadata) and the small per-beat tables (pandas: stages use them on the host). On
the GPU the signal is read storage → device by cuDF's parquet reader on KvikIO, and handed to CuPy without a
copy."""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from beatflow.errors import BeatflowError
from beatflow.io.atomic import atomic_path
from beatflow.io.sheet import parse_start

FS_KEY = b"fs"
log = logging.getLogger("beatflow")

CUFILE_POLICY = "KVIKIO"  # libcudf's file reads through KvikIO (GDS where the host has it, else its compat mode)
KEPT_ROW_GROUPS = 4  # a lead's row groups kept read: the checks come back to a stretch (an AF episode's edges)
START_KEY = b"start"  # the recording's start, ISO 8601; absent when unknown
BEATS_METADATA = ("min_rr_s", "max_rr_s", "pre_peak_s")  # segment keys that later stages read from beats.parquet


def read_schema(path) -> pa.Schema:
    """The schema (with metadata) of a parquet file, from its footer only; a clear error if unreadable."""
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise BeatflowError(f"not a readable parquet file ({exc})", path=str(path)) from exc


def signal_info(path) -> tuple[float, list[str]]:
    """``(fs, lead names)`` of a ``signal.parquet``."""
    schema = read_schema(path)
    meta = schema.metadata or {}
    if FS_KEY not in meta:
        raise BeatflowError("signal.parquet has no 'fs' metadata", path=str(path))
    return float(meta[FS_KEY]), list(schema.names)


def signal_samples(path) -> int:
    """Samples per lead of a ``signal.parquet`` (its rows, from the footer)."""
    try:
        return pq.read_metadata(path).num_rows
    except (pa.ArrowException, OSError) as exc:
        raise BeatflowError(f"not a readable parquet file ({exc})", path=str(path)) from exc


def signal_start(path) -> datetime | None:
    """The recording's start of a ``signal.parquet`` (its ``start`` metadata), or None when unknown."""
    meta = read_schema(path).metadata or {}
    if START_KEY not in meta:
        return None
    try:
        return parse_start(meta[START_KEY].decode())
    except BeatflowError as exc:
        raise BeatflowError(f"signal.parquet's metadata: {exc.problem}", path=str(path)) from exc


def write_signal(leads: dict, fs: float, path, gpu: bool, start: datetime | None = None) -> None:
    """Write lead name → float32 array (cupy on the GPU, numpy on the CPU) with ``fs`` and ``start`` (when
    known) in the file metadata, atomically. On the GPU, libcudf writes straight from device memory."""
    key_values = {FS_KEY.decode(): repr(float(fs))}
    if start is not None:
        key_values[START_KEY.decode()] = start.isoformat()
    with atomic_path(path) as tmp:
        if gpu:
            _write_signal_gpu(leads, key_values, tmp)
        else:
            table = pa.table(leads).replace_schema_metadata({k.encode(): v.encode() for k, v in key_values.items()})
            pq.write_table(table, tmp)


def _write_signal_gpu(leads: dict, key_values: dict[str, str], path) -> None:
    """cudf.DataFrame.to_parquet cannot add key-value metadata; pylibcudf's writer can."""
    import cudf
    import pylibcudf as plc

    table, _ = cudf.DataFrame(leads).to_pylibcudf()
    columns = plc.io.types.TableInputMetadata(table)
    for i, name in enumerate(leads):
        columns.column_metadata[i].set_name(name)
    options = (
        plc.io.parquet.ParquetWriterOptions.builder(plc.io.SinkInfo([str(path)]), table)
        .metadata(columns)
        .key_value_metadata([key_values])
        .compression(plc.io.types.CompressionType.SNAPPY)
        .build()
    )
    plc.io.parquet.write_parquet(options)


def read_signal(path, backend, leads: list[str] | None = None) -> tuple[dict, float]:
    """Lead name → 1-D float32 array and ``fs``: numpy by pyarrow on the CPU; on the GPU cupy, read storage →
    device (:func:`_read_signal_gpu`), with no host copy of the samples."""
    fs, names = signal_info(path)
    leads = names if leads is None else leads
    try:
        if backend.gpu:
            return _read_signal_gpu(path, leads), fs
        table = pq.read_table(path, columns=leads)
    except (pa.ArrowException, OSError, RuntimeError, ValueError) as exc:
        raise BeatflowError(f"cannot read the signal ({exc})", path=str(path)) from exc
    return {name: table.column(name).to_numpy() for name in leads}, fs


class LeadStretches:
    """One lead of a ``signal.parquet`` read a part at a time, for work on days of signal in bounded memory:
    ``lead[a:b]`` and ``lead[index]`` (an integer array) read only the row groups that hold those samples
    (float32 numpy, read-only where it is a view), keeping the last :data:`KEPT_ROW_GROUPS` read;
    :meth:`chunks` goes through the whole lead a row group at a time; ``len(lead)`` is the samples per lead.
    Made by :func:`read_signal_stretches`: each lead its own reader of the file (a pyarrow reader is not safe
    to read from two threads at once), the footer parsed once for all."""

    def __init__(self, file: pq.ParquetFile, name: str, path):
        meta = file.metadata
        self._file, self.name, self.path = file, name, path
        self._starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
        self._recent: OrderedDict[int, np.ndarray] = OrderedDict()  # row group → samples, the latest used last

    def __len__(self) -> int:
        return int(self._starts[-1])

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise TypeError("a lead's stretch is read by a slice with step 1")
            a, b, _ = key.indices(len(self))
            if b <= a:
                return np.zeros(0, np.float32)
            first = int(np.searchsorted(self._starts, a, "right")) - 1
            groups = list(range(first, int(np.searchsorted(self._starts, b, "left"))))
            return self._span(groups)[a - self._starts[first] : b - self._starts[first]]
        index = np.asarray(key)
        if index.dtype.kind not in "iu":
            raise TypeError("a lead is read by a slice with step 1 or an array of sample indices")
        if index.size == 0:
            return np.zeros(index.shape, np.float32)
        if index.min() < 0 or index.max() >= len(self):
            raise IndexError(f"sample index outside the lead's {len(self)} samples")
        group = np.searchsorted(self._starts, index, "right") - 1
        out = np.empty(index.shape, np.float32)
        for g in np.unique(group).tolist():
            here = group == g
            out[here] = self._kept(g)[index[here] - self._starts[g]]
        return out

    def _span(self, groups: list[int]) -> np.ndarray:
        """The row groups ``groups``' samples end to end (the kept ones not read again)."""
        parts = [self._kept(i) for i in groups]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _kept(self, group: int) -> np.ndarray:
        """Row group ``group``'s samples, from the :data:`KEPT_ROW_GROUPS` used last or read (a dict, not
        ``functools.lru_cache`` on the bound method, which would keep the reader alive in a reference cycle)."""
        samples = self._recent.pop(group, None)
        self._recent[group] = samples = self._read(group) if samples is None else samples
        while len(self._recent) > KEPT_ROW_GROUPS:
            self._recent.popitem(last=False)
        return samples

    def _read(self, group: int) -> np.ndarray:
        try:
            table = self._file.read_row_groups([group], columns=[self.name])
        except (pa.ArrowException, OSError) as exc:
            raise BeatflowError(f"cannot read the signal ({exc})", path=str(self.path)) from exc
        samples = table.column(0).to_numpy()
        samples.flags.writeable = False  # kept and handed out as views
        return samples

    def chunks(self):
        """``(start, samples)`` of each row group in order: the whole lead, one row group in memory at a time."""
        for i, start in enumerate(self._starts[:-1].tolist()):
            yield start, self._read(i)

    def value_range(self) -> tuple[float, float]:
        """The lead's smallest and largest sample: from the row groups' statistics in the footer where every
        row group has them (pyarrow and libcudf write them), else by reading the lead."""
        column = self._file.schema_arrow.get_field_index(self.name)
        meta = self._file.metadata
        stats = [meta.row_group(i).column(column).statistics for i in range(meta.num_row_groups)]
        if stats and all(s is not None and s.has_min_max for s in stats):
            return float(min(s.min for s in stats)), float(max(s.max for s in stats))
        lo, hi = np.inf, -np.inf
        for _, part in self.chunks():
            if part.size:
                lo, hi = min(lo, float(part.min())), max(hi, float(part.max()))
        return lo, hi


def lead_chunks(x, chunk: int = 1 << 22):
    """``(start, samples)`` over the whole lead ``x`` in order: a :class:`LeadStretches`' row groups, each read
    once, or an array's slices of ``chunk`` samples."""
    if isinstance(x, LeadStretches):
        yield from x.chunks()
    else:
        for start in range(0, len(x), chunk):
            yield start, np.asarray(x[start : start + chunk])


def lead_blocks(x, size: int):
    """The whole lead ``x`` (as :func:`lead_chunks`) in consecutive blocks of ``size`` samples, the last one
    shorter: what a computation over fixed windows reads, one chunk in memory at a time."""
    held: list[np.ndarray] = []
    count = 0
    for _, part in lead_chunks(x):
        held.append(part)
        count += part.shape[0]
        if count >= size:
            joined = np.concatenate(held)
            whole = count // size * size
            for a in range(0, whole, size):
                yield joined[a : a + size]
            held, count = [joined[whole:]], count - whole
    if count:
        yield np.concatenate(held)


def lead_range(x) -> tuple[float, float]:
    """The smallest and largest sample of lead ``x`` (an array, or a :class:`LeadStretches` from its footer)."""
    if isinstance(x, LeadStretches):
        return x.value_range()
    return float(np.min(x)), float(np.max(x))


def read_signal_stretches(path, leads: list[str]) -> dict[str, LeadStretches]:
    """Lead name → :class:`LeadStretches` of a ``signal.parquet`` (its footer read once; a reader per lead, so
    that leads are read in parallel threads): nothing else is read until a stretch is."""
    try:
        footer = pq.read_metadata(path)
        return {name: LeadStretches(pq.ParquetFile(path, metadata=footer), name, path) for name in leads}
    except (pa.ArrowException, OSError) as exc:
        raise BeatflowError(f"not a readable parquet file ({exc})", path=str(path)) from exc


def _read_signal_gpu(path, leads: list[str]) -> dict:
    """cuDF's parquet reader with libcudf's file policy :data:`CUFILE_POLICY` (set unless the user set
    ``LIBCUDF_CUFILE_POLICY``): the file's pages go storage → device through KvikIO and are decoded there; the
    log gives the bytes, the rate and KvikIO's mode."""
    os.environ.setdefault("LIBCUDF_CUFILE_POLICY", CUFILE_POLICY)
    import cudf

    from beatflow.io.arrays import io_mode

    t0 = time.perf_counter()
    frame = cudf.read_parquet(str(path), columns=leads)
    columns = {name: frame[name].values for name in leads}  # cupy views of cuDF's device columns
    seconds, nbytes = time.perf_counter() - t0, Path(path).stat().st_size
    log.info(
        "cuDF read %s: %.1f MB in %.3f s (%.2f GB/s), libcudf file policy %s, kvikio mode %s",
        Path(path).name,
        nbytes / 1e6,
        seconds,
        nbytes / max(seconds, 1e-9) / 1e9,
        os.environ["LIBCUDF_CUFILE_POLICY"],
        io_mode(),
    )
    return columns


def write_frame(frame, path, metadata: dict[str, str] | None = None) -> None:
    """Write a small pandas table to parquet atomically (no index), with optional key-value metadata."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata:
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
        )
    with atomic_path(Path(path)) as tmp:
        pq.write_table(table, tmp)


def read_metadata(path) -> dict[str, str]:
    """The key-value metadata of a parquet file (decoded), pandas' own entry left out."""
    meta = read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k != b"pandas"}


def read_frame(path, columns=None):
    """Read a small parquet table into pandas; a clear error if the file is missing columns or corrupt."""
    import pandas as pd

    try:
        return pd.read_parquet(path, columns=columns)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise BeatflowError(f"cannot read table ({exc})", path=str(path)) from exc


def beats_parameters(path) -> dict[str, float]:
    """The segment parameters a ``beats.parquet`` was made with (:data:`BEATS_METADATA`, seconds), by name.

    Raises
    ------
    BeatflowError
        When the file lacks one of them.
    """
    meta = read_metadata(path)
    missing = [name for name in BEATS_METADATA if name not in meta]
    if missing:
        raise BeatflowError(f"beats.parquet has no {missing} metadata: write it with the segment stage", path=str(path))
    return {name: float(meta[name]) for name in BEATS_METADATA}
