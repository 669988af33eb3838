"""``beats.atr``: the record's beats as a WFDB annotation file, for ``wfdb.rdann``, the PhysioNet tools and
ECG viewers. Each beat is annotated at its R peak with its class as the MIT symbol (:data:`SYMBOLS`), and each
AF/flutter episode as rhythm annotations (``+``): ``(AFIB`` at its first beat, ``(N`` at its last; samples
at the record's own sampling rate.

The file is the one ``wfdb.wrann(..., fs=fs)`` writes, byte for byte (``tests/test_holter.py``), encoded here
with numpy: wfdb encodes it one annotation at a time in Python, 11 s for a week's 700,000 beats. The format
(WFDB's ``annot(5)``): per annotation a little-endian 16-bit word of its type code (6 bits) and the samples
since the previous one (10 bits), after a ``SKIP`` word and a 32-bit interval where that exceeds 1023, and
followed by an ``AUX`` word and the note (padded to even length) where it has one; a zero word ends the file.
wfdb's own code writes the header that records ``fs``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SYMBOLS = {"N": "N", "S": "A", "V": "V", "F": "F", "Q": "Q"}  # AAMI class → MIT beat symbol
SKIP, AUX = 59, 63  # annot(5)'s pseudo-annotation codes
MAX_STEP = 1023  # samples since the previous annotation that fit in its word
END_OF_SPECIAL = bytes([0, 236, 255, 255, 255, 255, 1, 0])  # wfdb's mark after the fs header


def annotation_arrays(peaks, classes, af_episodes, fs: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(sample, symbol, aux_note)`` in time order: every beat (a class outside :data:`SYMBOLS` as ``Q``) and,
    per AF episode ``{start_s, end_s}``, ``+`` ``(AFIB`` and ``+`` ``(N`` (a rhythm mark before a beat of the
    same sample)."""
    classes = np.asarray(classes, dtype=object)
    symbol = np.full(len(classes), "Q", dtype=object)
    for cls, mark in SYMBOLS.items():
        symbol[classes == cls] = mark
    rhythm = [(round(e[key] * fs), note) for e in af_episodes for key, note in (("start_s", "(AFIB"), ("end_s", "(N"))]
    sample = np.r_[np.asarray(peaks, dtype=np.int64), np.array([s for s, _ in rhythm], dtype=np.int64)]
    symbol = np.r_[symbol, np.array(["+"] * len(rhythm), dtype=object)]
    aux = np.r_[np.full(len(classes), "", dtype=object), np.array([n for _, n in rhythm], dtype=object)]
    beat_last = np.r_[np.ones(len(classes), np.int8), np.zeros(len(rhythm), np.int8)]
    order = np.lexsort((beat_last, sample))
    return sample[order], symbol[order], list(aux[order])


def _type_codes(symbols) -> np.ndarray:
    """WFDB's type code of each MIT symbol (wfdb's label table)."""
    from wfdb.io.annotation import ann_label_table

    code = dict(zip(ann_label_table["symbol"], ann_label_table["label_store"], strict=True))
    return np.array([code[s] for s in symbols], dtype=np.int64)


def encode(sample: np.ndarray, symbol, aux_note: list[str], fs: float) -> bytes:
    """The bytes of the annotation file of ``sample`` (increasing), ``symbol`` and ``aux_note`` ('' for none)."""
    from wfdb.io.annotation import Annotation

    n = len(sample)
    step = np.diff(np.asarray(sample, dtype=np.int64), prepend=0)
    unique, inverse = np.unique(np.asarray(symbol, dtype=str), return_inverse=True)
    code = _type_codes(unique)[inverse]
    skip = step > MAX_STEP
    notes = {i: note.encode("ascii") for i, note in enumerate(aux_note) if note}
    aux_len = np.zeros(n, np.int64)
    for i, note in notes.items():
        aux_len[i] = 2 + len(note) + len(note) % 2
    size = 6 * skip + 2 + aux_len
    start = np.cumsum(size) - size
    out = np.zeros(int(size.sum()), np.uint8)
    at = start[skip]
    big = step[skip]
    out[at + 1] = SKIP << 2
    out[at + 2], out[at + 3] = (big >> 16) & 255, (big >> 24) & 255  # PDP-11 order: the high word first
    out[at + 4], out[at + 5] = big & 255, (big >> 8) & 255
    word = start + 6 * skip
    small = np.where(skip, 0, step)
    out[word], out[word + 1] = small & 255, (small >> 8) + 4 * code
    for i, note in notes.items():
        w = word[i] + 2
        out[w], out[w + 1] = len(note), AUX << 2
        out[w + 2 : w + 2 + len(note)] = np.frombuffer(note, np.uint8)
    header = bytes(
        np.asarray(Annotation("x", "atr", sample=np.array([0]), symbol=["N"], fs=fs).calc_fs_bytes(), np.uint8)
    )
    return header + END_OF_SPECIAL + out.tobytes() + b"\x00\x00"


def write_annotations(peaks, classes, af_episodes, fs: float, path) -> None:
    """Write ``beats.atr`` (:func:`annotation_arrays`) at ``path`` atomically; ``wfdb.rdann(stem, "atr")``
    reads it back (``stem`` = ``path`` less ``.atr``)."""
    from beatflow.io.atomic import atomic_path

    sample, symbol, aux = annotation_arrays(peaks, classes, af_episodes, fs)
    with atomic_path(Path(path)) as tmp:
        Path(tmp).write_bytes(encode(sample, symbol, aux, fs) if len(sample) else b"\x00\x00")
