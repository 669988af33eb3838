"""The records sheet (``config/records.tsv``): its columns, and every check of it that needs no job.

:func:`sheet_problems` runs when the workflow is parsed (``workflow/rules/common.smk``) and returns one line
per problem, each naming its record, so that a run with a mistaken sheet is refused before anything runs.
What only a file's contents can show (a header that does not fit its data, an unknown lead) is ingest's
(:mod:`beatflow.io.ingest`). Imports nothing heavy: Snakemake parses the workflow in every job.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import datetime
from pathlib import Path

from beatflow.errors import BeatflowError

SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "records.schema.yaml"
RECORD_NAME = "[A-Za-z0-9_.-]+"  # also the {record} wildcard's constraint
MAX_NAME = 100  # characters: results/{record}/… stays well inside a file system's 255 per name
SHOWN_NAME = 40  # characters of a name too long to show whole in a message
SOURCE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".hea", ".edf", ".bdf")  # or no suffix: a WFDB record
TRUTH_CSV_SUFFIXES = (".csv", ".csv.gz")  # any other truth file is a WFDB annotation file


@functools.cache
def columns() -> tuple[str, ...]:
    """The sheet's known columns, from its schema (``workflow/schemas/records.schema.yaml``)."""
    import yaml

    return tuple(yaml.safe_load(SCHEMA.read_text())["properties"])


def parse_start(text: str) -> datetime:
    """A recording's start from ISO 8601 (``2026-11-29T08:15:00``, optionally with seconds' fractions and a
    UTC offset)."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise BeatflowError(f"start {text!r} is not an ISO 8601 date and time (like 2026-11-29T08:15:00)") from None


def rule_names(snakefiles: list[Path]) -> set[str]:
    """The names a user may give ``snakemake`` as targets: every ``rule`` of ``snakefiles``."""
    return {name for path in snakefiles for name in re.findall(r"^rule\s+(\w+)\s*:", path.read_text(), re.MULTILINE)}


def wfdb_header(path: Path) -> Path:
    """The header of a WFDB record given as ``dir/208`` or ``dir/208.hea``."""
    return path if path.suffix.lower() == ".hea" else path.with_name(path.name + ".hea")


def is_wfdb_path(path: Path) -> bool:
    """A WFDB record: ``dir/208.hea``, or ``dir/208`` (no suffix)."""
    return path.suffix.lower() == ".hea" or not path.suffix


def wfdb_files(header: Path) -> list[Path]:
    """The files a WFDB header names: its signal files, or a multi-segment record's segment headers and
    theirs. What the header does not say clearly is left to ingest (which reads it with ``wfdb``)."""
    lines = [line.split() for line in header.read_text(errors="replace").splitlines()]
    lines = [tokens for tokens in lines if tokens and not tokens[0].startswith("#")]
    if not lines:
        return []
    record, rest = lines[0], lines[1:]
    if "/" in record[0]:  # name/segments: one line per segment, "~" a gap
        segments = [header.with_name(f"{tokens[0]}.hea") for tokens in rest if tokens[0] != "~"]
        return [f for segment in segments for f in ([segment] + (wfdb_files(segment) if segment.exists() else []))]
    names = {tokens[0] for tokens in rest if tokens[0] not in ("~", "-")}
    return [header.with_name(name) for name in sorted(names)]


def _source_problems(path_text: str) -> list[str]:
    if not path_text:
        return ["no path"]
    path = Path(path_text)
    if path.suffix and not path.name.lower().endswith(SOURCE_SUFFIXES):
        return [f"path {path_text}: unsupported file type (use {', '.join(SOURCE_SUFFIXES)} or a WFDB record)"]
    if not is_wfdb_path(path):
        return [] if path.is_file() else [f"path {path_text}: file not found"]
    header = wfdb_header(path)
    if not header.is_file():
        return [f"path {path_text}: WFDB header {header} not found"]
    missing = [str(f) for f in wfdb_files(header) if not f.is_file()]
    return [f"path {path_text}: WFDB record incomplete, {', '.join(missing)} not found"] if missing else []


def _fs_problems(text: str) -> list[str]:
    try:
        fs = float(text)
    except ValueError:
        fs = math.nan
    return [] if math.isfinite(fs) and fs > 0 else [f"fs must be a positive number of Hz, not {text!r}"]


def _leads_problems(text: str) -> list[str]:
    leads = [lead.strip() for lead in text.split(",")]
    if "" in leads:
        return [f"leads {text!r}: an empty lead name (leads are comma-separated column or signal names)"]
    repeated = sorted({lead for lead in leads if leads.count(lead) > 1})
    return [f"leads {text!r}: {repeated} named more than once"] if repeated else []


def _truth_problems(text: str) -> list[str]:
    path = Path(text)
    return [] if path.is_file() else [f"truth {text}: file not found"]


def row_problems(row: dict[str, str], reserved: set[str]) -> list[str]:
    """What is wrong with one row (a record) of the sheet, each problem one phrase."""
    name = row["record"]
    problems = []
    if not re.fullmatch(RECORD_NAME, name):
        problems.append(f"the name must match {RECORD_NAME}")
    elif name in (".", ".."):
        problems.append("the name cannot be . or ..")
    elif name in reserved:
        problems.append("the name is a target of the workflow (a rule's name); choose another")
    if len(name) > MAX_NAME:
        problems.append(f"the name is {len(name)} characters long, more than {MAX_NAME}")
    problems += _source_problems(row["path"])
    checks = {"fs": _fs_problems, "leads": _leads_problems, "truth": _truth_problems}
    problems += [p for column, check in checks.items() if row.get(column) for p in check(row[column])]
    if row.get("start"):
        try:
            parse_start(row["start"])
        except BeatflowError as exc:
            problems.append(exc.problem)
    return problems


def sheet_problems(header: list[str], rows: list[dict[str, str]], reserved: set[str]) -> list[str]:
    """Every problem of a records sheet (its column names, and its rows of stripped strings), one line each:
    unknown or missing columns, and per record (named) its name, path, fs, leads, start and truth."""
    known = columns()
    problems = []
    unknown = [c for c in header if c not in known]
    if unknown:
        problems.append(f"unknown column(s) {unknown}; the known ones: {', '.join(known)}")
    missing = [c for c in ("record", "path") if c not in header]
    if missing:
        return problems + [f"missing column(s) {missing}"]
    names = [row["record"] for row in rows]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(f"duplicate record names {repeated}")
    for k, row in enumerate(rows):
        shown = row["record"] if len(row["record"]) <= MAX_NAME else row["record"][:SHOWN_NAME] + "…"
        problems += [f"record {shown!r} (row {k + 1}): {p}" for p in row_problems(row, reserved)]
    return problems
