"""``python -m beatflow.holter results/208``: a record's Holter summary as the first page of a Holter report.

The argument is a record's results folder (its ``holter.json``; without one, the summary is computed from its
``scores.parquet`` and ``signal.parquet``), a ``holter.json`` file, or a WFDB annotation file (``…/208.atr``:
the reference summary). ``--figure STEM`` also writes the heart-rate trend as ``STEM.html`` and ``STEM.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from beatflow.holter import rows


def load_summary(path: Path) -> dict:
    """The summary named by ``path`` (see the module docstring)."""
    from beatflow.errors import BeatflowError

    if path.is_dir():
        if (path / "holter.json").exists():
            return json.loads((path / "holter.json").read_text())
        scores, signal = path / "scores.parquet", path / "signal.parquet"
        if scores.exists() and signal.exists():
            from beatflow.holter.summary import summarise

            return summarise(path.name, scores, signal)
        raise BeatflowError(
            "no holter.json, nor scores.parquet and signal.parquet to compute it from", record=path.name, path=str(path)
        )
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.exists():
        from beatflow.holter.reference import reference_summary

        return reference_summary(path)
    raise BeatflowError("not found", path=str(path))


def load_beats(path: Path):
    """``(time_s, class)`` of the beats behind the summary named by ``path``, for the heart-rate figure's band:
    the ``scores.parquet`` of a results folder (or beside a ``holter.json``), or a WFDB annotation file's beats;
    None where there is none."""
    if not path.is_dir() and path.suffix != ".json":
        from beatflow.holter.reference import read_reference

        ref = read_reference(path)
        return ref["time_s"], ref["classes"]
    folder = path if path.is_dir() else path.parent
    if not (folder / "scores.parquet").exists():
        return None
    from beatflow.holter.summary import read_beats

    return read_beats(folder.name, folder / "scores.parquet")


def text_table(t: rows.Table, indent: str = "  ") -> list[str]:
    """A :class:`beatflow.holter.rows.Table` as aligned plain-text lines (text columns left, numbers right)."""
    cells = [[str(x) for x in row] for row in [t.head, *t.rows]]
    widths = [max(len(row[k]) for row in cells) for k in range(len(t.head))]
    return [
        indent
        + "  ".join(c.ljust(w) if k < t.left else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths))).rstrip()
        for row in cells
    ]


def _caps(title: str) -> str:
    """A section's title as the text report writes it: capitals up to its first bracket."""
    head, bracket, rest = title.partition(" (")
    return head.upper() + bracket + rest


def _header_lines(s: dict) -> list[str]:
    """The title, how times are given, recorded and analysed time, and the artefact with its longest episodes."""
    r = rows.recording(s)
    title = f"HOLTER SUMMARY — record {s['record']}"
    return [
        title,
        "=" * len(title),
        r["note"],
        f"Recorded {r['recorded']}   analysed {r['analysed']} ({r['share']})",
        f"Artefact (no lead readable) {r['artefact']} in {r['episodes']} episodes",
        *(f"  {e}" for e in r["listed"]),
        "",
    ]


def _ectopy_lines(s: dict) -> list[str]:
    """The ectopy table, the tachycardia episodes and the runs."""
    tachy = rows.tachycardia_counts(s)
    runs, every = rows.runs_rows(s)
    out = ["ECTOPY", *text_table(rows.ectopy_rows(s)), ""]
    out.append(f"{_caps(rows.TACHYCARDIA_TITLE)}: {tachy['VT']} VT, {tachy['SVT']} SVT")
    if runs.rows:
        out += [f"RUNS{'' if every else f' (the {rows.MAX_ROWS} longest of each class)'}", *text_table(runs)]
    return out + [""]


def _pause_and_af_lines(s: dict) -> list[str]:
    """The pauses (count, longest, the longest listed) and the AF/flutter episodes (count, burden, listed)."""
    longest, pauses = rows.pause_rows(s)
    out = [f"{_caps(rows.PAUSE_TITLE)}: {len(s['pauses'])}" + (f", longest {longest}" if longest else "")]
    out += text_table(pauses) if pauses.rows else []
    burden, episodes = rows.af_rows(s)
    count = len(s["af"]["episodes"])
    out += ["", f"ATRIAL FIBRILLATION / FLUTTER: {count} episode{'s' if count != 1 else ''}, burden {burden}"]
    return out + (text_table(episodes) if episodes.rows else []) + [""]


def report(s: dict) -> str:
    """The summary as a Holter report's first page (plain text): the rows of :mod:`beatflow.holter.rows`, as
    the report page (:mod:`beatflow.report.pages`) shows them.

    Parameters
    ----------
    s : dict
        The record's ``holter.json`` (:func:`load_summary`).
    """
    out = [
        *_header_lines(s),
        "BEATS",
        *text_table(rows.beat_rows(s)),
        "",
        "HEART RATE",
        *text_table(rows.heart_rate_rows(s)),
        "",
        "HEART RATE VARIABILITY",
        *text_table(rows.hrv_rows(s)),
        "",
        *_ectopy_lines(s),
        *_pause_and_af_lines(s),
        "HOURLY",
        *text_table(rows.hourly_rows(s)),
    ]
    if s.get("notes"):
        out += ["", "NOTES"] + [f"  - {n}" for n in s["notes"]]
    return "\n".join(out)


def main(argv=None) -> int:
    from beatflow.errors import BeatflowError

    p = argparse.ArgumentParser(prog="python -m beatflow.holter", description=__doc__.split("\n\n")[0])
    p.add_argument("path", type=Path, help="results/<record>, a holter.json, or a WFDB .atr file")
    p.add_argument("--figure", type=Path, metavar="STEM", help="also write the heart-rate trend STEM.html/.png")
    args = p.parse_args(argv)
    try:
        summary = load_summary(args.path)
    except BeatflowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report(summary))
    if args.figure:
        from beatflow.holter.figure import write_heart_rate_figure

        write_heart_rate_figure(summary, args.figure, load_beats(args.path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
