"""The Holter summary from WFDB reference annotations: the annotated beats mapped to the AAMI classes
(:data:`beatflow.io.truth.AAMI_CLASSES`), AF and flutter from the rhythm annotations (``(AFIB``, ``(AFL`` in a
``+`` annotation's aux note, up to the next rhythm annotation), ventricular flutter/fibrillation episodes
excluded from the analysed time (:func:`beatflow.io.truth.vf_episodes`). The same code as the output's
summary computes every figure, so the two differ only by their beats, classes and AF episodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from beatflow.holter.summary import merge_intervals, summary_from_beats

AF_RHYTHMS = ("(AFIB", "(AFL")


def rhythm_episodes(samples, symbols, aux, end_sample: int, rhythms=AF_RHYTHMS) -> list[tuple[int, int]]:
    """``[(start, end), …]`` sample intervals of the rhythms whose aux note starts with one of ``rhythms``:
    from their ``+`` annotation to the next ``+`` annotation (or ``end_sample``)."""
    marks = [
        (int(s), (note or "").rstrip("\x00").strip())
        for s, sym, note in zip(samples, symbols, aux, strict=True)
        if sym == "+"
    ]
    out = []
    for k, (sample, note) in enumerate(marks):
        if note.startswith(rhythms):
            end = marks[k + 1][0] if k + 1 < len(marks) else end_sample
            out.append((sample, end))
    return merge_intervals(out)


def read_reference(atr_path) -> dict:
    """Beats, classes, fs, duration, AF and VF episodes of a WFDB annotation file (``dir/208.atr``; the
    record's header ``dir/208.hea`` gives fs and the duration), and whether it labels rhythms at all
    (``rhythm_labelled``: svdb's annotations do not, so their AF is unknown)."""
    import wfdb

    from beatflow.errors import BeatflowError
    from beatflow.io.truth import AAMI_CLASSES, vf_episodes

    path = Path(atr_path)
    stem, extension = str(path.with_suffix("")), path.suffix.lstrip(".")
    try:
        ann = wfdb.rdann(stem, extension)
        header = wfdb.rdheader(stem)
    except Exception as exc:  # wfdb raises ValueError, IndexError, FileNotFoundError, …
        raise BeatflowError(
            f"cannot read the WFDB annotations or header: {type(exc).__name__}: {exc}", path=str(path)
        ) from exc
    fs = float(header.fs)
    n_samples = int(header.sig_len)
    samples = np.asarray(ann.sample, dtype=np.int64)
    symbols = np.asarray(ann.symbol, dtype=object)
    aux = [(note or "").rstrip("\x00") for note in (ann.aux_note or [""] * len(samples))]
    beat = np.array([s in AAMI_CLASSES for s in symbols], dtype=bool)
    vf = vf_episodes(samples, symbols, aux)
    return {
        "fs": fs,
        "duration_s": n_samples / fs,
        "time_s": samples[beat] / fs,
        "classes": np.array([AAMI_CLASSES[s] for s in symbols[beat]], dtype=object).astype(str),
        "af_s": [(s / fs, e / fs) for s, e in rhythm_episodes(samples, symbols, aux, n_samples)],
        "vf_s": [(s / fs, min(e, n_samples) / fs) for s, e in vf],
        "rhythm_labelled": any(note.startswith("(") for note in aux),
    }


def reference_summary(atr_path, record: str | None = None) -> dict:
    """The Holter summary computed from a WFDB annotation file (beats, AAMI classes, rhythm annotations).

    Parameters
    ----------
    atr_path : path-like
        The annotation file (``dir/208.atr``); the record's header (``dir/208.hea``) gives fs and the duration.
    record : str, optional
        The record's name in the summary (default: the file's stem).

    Returns
    -------
    dict
        The ``holter.json`` dict (:func:`beatflow.holter.summary.summary_from_beats`), AF from the rhythm
        annotations, ventricular flutter/fibrillation excluded from the analysed time.

    Raises
    ------
    beatflow.errors.BeatflowError
        When the annotations or the header cannot be read.
    """
    return summary_of_reference(read_reference(atr_path), record or Path(atr_path).stem)


def summary_of_reference(ref: dict, record: str) -> dict:
    """The Holter summary of a :func:`read_reference` dict: its beats and classes, AF from its rhythm
    annotations, its ventricular flutter/fibrillation excluded from the analysed time."""
    return summary_from_beats(
        record, ref["time_s"], ref["classes"], ref["duration_s"], excluded=ref["vf_s"], af_episodes=ref["af_s"]
    )
