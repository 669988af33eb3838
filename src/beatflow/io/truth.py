"""Reference beats ("truth") for evaluation: a CSV (``sample``, ``label``) or a WFDB annotation file.

A WFDB annotation file (``dir/208.atr``; any annotator extension) is read with ``wfdb.rdann``. Its beat
symbols are mapped to the AAMI EC57 classes (:data:`AAMI_CLASSES`); non-beat annotations are ignored, and the
original symbol is kept for per-symbol figures. Ventricular flutter/fibrillation episodes, from ``[`` to ``]``
and from a rhythm annotation ``(VFL`` to the next rhythm change, are returned as excluded intervals: EC57
leaves them out of the detection figures.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from beatflow.errors import BeatflowError, read_failure

AAMI_CLASSES = {
    "N": "N",
    "L": "N",
    "R": "N",
    "e": "N",
    "j": "N",
    "A": "S",
    "a": "S",
    "J": "S",
    "S": "S",
    "V": "V",
    "E": "V",
    "F": "F",
    "/": "Q",
    "f": "Q",
    "Q": "Q",
}
SHOWN_ROWS = 10  # bad rows named in a message, at most
VF_RHYTHM = "(VF"  # the rhythm annotations (VFL (flutter) and (VF (fibrillation) open a VF episode
CSV_SUFFIXES = (".csv", ".gz")


def is_annotation_file(path: Path) -> bool:
    """Truth given as a WFDB annotation file rather than a CSV."""
    return path.suffix.lower() not in CSV_SUFFIXES


def read_truth(path, length: int | None = None) -> tuple:
    """``(table, excluded)``: a DataFrame with ``sample`` (int64), ``label`` (the class: ``N`` normal) and
    ``symbol`` (the annotation's own symbol, or the label), and ``[k, 2]`` int64 sample intervals
    ``[start, end)`` excluded from detection figures (empty for a CSV). With ``length`` (the record's samples),
    every annotation must lie inside the record, or the error names those that do not."""
    path = Path(path)
    if not path.exists():
        raise BeatflowError("truth file not found")
    return read_annotations(path, length) if is_annotation_file(path) else read_truth_csv(path, length)


def check_inside(samples: np.ndarray, length: int | None, rows: np.ndarray, what: str) -> None:
    """Raise naming the ``rows`` (as the user counts them) of ``samples`` outside ``[0, length)``."""
    upper = np.iinfo(np.int64).max if length is None else length
    bad = (samples < 0) | (samples >= upper)
    if bad.any():
        shown = ", ".join(f"{row} ({sample})" for row, sample in zip(rows[bad][:SHOWN_ROWS], samples[bad][:SHOWN_ROWS]))
        more = f" and {int(bad.sum()) - SHOWN_ROWS} more" if bad.sum() > SHOWN_ROWS else ""
        span = f"the record's samples 0 to {length - 1}" if length is not None else "the record (negative)"
        raise BeatflowError(
            f"the truth does not fit the record: {int(bad.sum())} {what} outside {span}: {what} (sample) "
            f"{shown}{more}; is it another record's truth?"
        )


def read_truth_csv(path: Path, length: int | None = None) -> tuple:
    import pandas as pd

    try:
        truth = pd.read_csv(path)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise BeatflowError(f"cannot read the truth file: {read_failure(exc)}") from exc
    if not {"sample", "label"} <= set(truth.columns):
        raise BeatflowError(f"truth needs columns sample and label, has {list(truth.columns)}")
    try:
        samples = truth["sample"].to_numpy(np.int64)
    except (ValueError, TypeError) as exc:
        raise BeatflowError(f"the truth's sample column holds values that are not whole numbers ({exc})") from exc
    check_inside(samples, length, np.arange(len(samples)) + 2, "line(s)")  # line 1: the header
    table = pd.DataFrame({"sample": samples, "label": truth["label"].astype(str)})
    table["symbol"] = table["label"]
    return table, np.empty((0, 2), dtype=np.int64)


def read_annotations(path: Path, length: int | None = None) -> tuple:
    import pandas as pd
    import wfdb

    record, extension = str(path.with_suffix("")), path.suffix.lstrip(".")
    try:
        ann = wfdb.rdann(record, extension)
    except Exception as exc:  # wfdb raises ValueError, IndexError, … on a file that is not an annotation file
        raise BeatflowError(f"cannot read the WFDB annotation file: {type(exc).__name__}: {exc}") from exc
    samples = np.asarray(ann.sample, dtype=np.int64)
    check_inside(samples, length, np.arange(len(samples)) + 1, "annotation(s)")
    symbols = np.asarray(ann.symbol, dtype=object)
    aux = [(note or "").rstrip("\x00") for note in (ann.aux_note or [""] * len(samples))]
    beat = np.array([s in AAMI_CLASSES for s in symbols], dtype=bool)
    table = pd.DataFrame(
        {
            "sample": samples[beat],
            "label": [AAMI_CLASSES[s] for s in symbols[beat]],
            "symbol": symbols[beat].astype(str),
        }
    )
    return table, vf_episodes(samples, symbols, aux)


def vf_episodes(samples: np.ndarray, symbols: np.ndarray, aux: list[str]) -> np.ndarray:
    """``[k, 2]`` intervals ``[start, end)`` of ventricular flutter/fibrillation: ``[`` … ``]``, and a rhythm
    annotation (``+``) of VF or VFL up to the next rhythm annotation (to the end of the record without one)."""
    episodes, opened = [], None
    for sample, symbol, note in zip(samples, symbols, aux, strict=True):
        if symbol == "[" and opened is None:
            opened = sample
        elif symbol == "]" and opened is not None:
            episodes.append((opened, sample + 1))
            opened = None
    rhythm_at = [(s, note) for s, sym, note in zip(samples, symbols, aux, strict=True) if sym == "+"]
    for k, (sample, note) in enumerate(rhythm_at):
        if note.startswith(VF_RHYTHM):
            end = rhythm_at[k + 1][0] if k + 1 < len(rhythm_at) else np.iinfo(np.int64).max
            episodes.append((sample, end))
    if opened is not None:
        episodes.append((opened, np.iinfo(np.int64).max))
    merged: list[list[int]] = []
    for start, end in sorted(episodes):  # the two markings of one episode overlap: one interval
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return np.array(merged, dtype=np.int64).reshape(-1, 2)


def outside(samples: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Boolean mask of ``samples`` outside every interval of ``excluded``."""
    keep = np.ones(len(samples), dtype=bool)
    for start, end in excluded:
        keep &= (samples < start) | (samples >= end)
    return keep
