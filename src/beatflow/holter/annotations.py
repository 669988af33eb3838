"""``beats.atr``: the record's beats as a WFDB annotation file, for ``wfdb.rdann``, the PhysioNet tools and
ECG viewers. Each beat is annotated at its R peak with its class as the MIT symbol (:data:`SYMBOLS`), and each
AF/flutter episode as rhythm annotations (``+``): ``(AFIB`` at its first beat, ``(N`` at its last; samples
at the record's own sampling rate."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

SYMBOLS = {"N": "N", "S": "A", "V": "V", "F": "F", "Q": "Q"}  # AAMI class → MIT beat symbol


def annotation_arrays(peaks, classes, af_episodes, fs: float) -> tuple[np.ndarray, list[str], list[str]]:
    """``(sample, symbol, aux_note)`` in time order: every beat (a class outside :data:`SYMBOLS` as ``Q``) and,
    per AF episode ``{start_s, end_s}``, ``+`` ``(AFIB`` and ``+`` ``(N`` (a rhythm mark before a beat of the
    same sample)."""
    marks = [(int(p), 1, SYMBOLS.get(str(c), "Q"), "") for p, c in zip(peaks, classes, strict=True)]
    for e in af_episodes:
        marks.append((int(round(e["start_s"] * fs)), 0, "+", "(AFIB"))
        marks.append((int(round(e["end_s"] * fs)), 0, "+", "(N"))
    marks.sort()
    return (
        np.array([m[0] for m in marks], dtype=np.int64),
        [m[2] for m in marks],
        [m[3] for m in marks],
    )


def write_annotations(peaks, classes, af_episodes, fs: float, path) -> None:
    """Write ``beats.atr`` (:func:`annotation_arrays`) at ``path`` atomically; ``wfdb.rdann(stem, "atr")``
    reads it back (``stem`` = ``path`` less ``.atr``)."""
    import wfdb

    from beatflow.io.atomic import atomic_path

    path = Path(path)
    sample, symbol, aux = annotation_arrays(peaks, classes, af_episodes, fs)
    with atomic_path(path) as tmp, tempfile.TemporaryDirectory(dir=path.parent) as work:
        if len(sample):
            wfdb.wrann(path.stem, path.suffix.lstrip("."), sample, symbol=symbol, aux_note=aux, fs=fs, write_dir=work)
            os.replace(Path(work) / path.name, tmp)
        else:  # no beats: wrann refuses an empty file; the annotation file's end marker alone
            Path(tmp).write_bytes(b"\x00\x00")
