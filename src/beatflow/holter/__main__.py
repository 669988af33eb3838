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

from beatflow.holter.clock import at, note
from beatflow.timefmt import clock


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


def _bpm(x) -> str:
    return "—" if x is None else f"{x:.0f} bpm"


def _at(x, start=None) -> str:
    return "" if x is None else f" at {at(x, start)}"


def _ms(x) -> str:
    return "—" if x is None else f"{x:.0f} ms"


def ectopy_lines(part: dict, total: int, ventricular: bool, start=None) -> list[str]:
    runs = part["runs"]
    lines = [
        f"total {total}",
        f"isolated {part['isolated']}",
        f"couplets {part['couplets']}",
        f"runs (≥ 3) {len(runs)}",
    ]
    if runs:
        longest = max(runs, key=lambda r: r["beats"])
        lines.append(f"  longest {longest['beats']} beats{_at(longest['start_s'], start)}")
        fast = [r for r in runs if r["rate_bpm"] is not None]
        if fast:
            fastest = max(fast, key=lambda r: r["rate_bpm"])
            lines.append(f"  fastest {fastest['rate_bpm']:.0f} bpm{_at(fastest['start_s'], start)}")
    if ventricular:
        lines.append(f"bigeminy {clock(part['bigeminy_s'] or 0)}")
        lines.append(f"trigeminy {clock(part['trigeminy_s'] or 0)}")
    return lines


def _header_lines(s: dict) -> list[str]:
    """The title, the times, recorded and analysed time, artefact, and the beat counts by class."""
    dur, ana = s["duration_s"] or 0.0, s["analysed_s"] or 0.0
    b, art, start = s["beats"], s["artefact"], s["start"]
    title = f"HOLTER SUMMARY — record {s['record']}"
    lines = [
        title,
        "=" * len(title),
        note(start),
        f"Recorded {clock(dur)}   analysed {clock(ana)} ({100 * ana / dur if dur else 0:.1f} %)",
        f"Artefact (no lead readable) {clock(art['total_s'] or 0)} in {len(art['episodes'])} episodes",
    ]
    for e in sorted(art["episodes"], key=lambda e: e["start_s"] - e["end_s"])[:3]:
        why = ", ".join(f"{lead} {reason}" for lead, reason in e["leads"].items())
        lines.append(f"  {at(e['start_s'], start)}–{at(e['end_s'], start)} ({why})")
    return lines + [f"Beats {b['total']}:  N {b['N']}  S {b['S']}  V {b['V']}  F {b['F']}  Q {b['Q']}", ""]


def _rate_lines(hr: dict, start=None) -> list[str]:
    """The heart rate: mean, minimum and maximum of the minute averages, fastest and slowest 8 sinus beats."""
    fast, slow = hr["fastest"], hr["slowest"]
    return [
        "HEART RATE",
        f"  mean {_bpm(hr['mean_bpm'])}   minimum {_bpm(hr['min_bpm'])}{_at(hr['min_at_s'], start)}"
        f"   maximum {_bpm(hr['max_bpm'])}{_at(hr['max_at_s'], start)}   (minute averages)",
        f"  slowest {_bpm(slow['bpm'])}{_at(slow['at_s'], start)}   fastest {_bpm(fast['bpm'])}"
        f"{_at(fast['at_s'], start)}   (8 consecutive sinus beats)",
        "",
    ]


def _ectopy_columns(s: dict) -> list[str]:
    """Ventricular and supraventricular ectopy side by side (:func:`ectopy_lines`)."""
    b = s["beats"]
    v = ectopy_lines(s["ventricular"], b["V"], True, s["start"])
    sv = ectopy_lines(s["supraventricular"], b["S"], False, s["start"])
    out = [f"{'VENTRICULAR ECTOPY':<40}SUPRAVENTRICULAR ECTOPY"]
    for i in range(max(len(v), len(sv))):
        out.append(f"  {v[i] if i < len(v) else '':<38}  {sv[i] if i < len(sv) else ''}")
    return out + [""]


def _pause_lines(pauses: list[dict], start=None) -> list[str]:
    """The pauses' count and the longest."""
    line = f"PAUSES (RR ≥ 2.0 s): {len(pauses)}"
    if pauses:
        longest = max(pauses, key=lambda p: p["duration_s"])
        line += f", longest {longest['duration_s']:.2f} s{_at(longest['start_s'], start)}"
    return [line, ""]


def _tachycardia_lines(episodes: list[dict], start=None) -> list[str]:
    """The tachycardia episodes (runs of ≥ 3 V or S beats at ≥ 100 bpm): count by kind and the fastest."""
    out = [f"TACHYCARDIA (≥ 3 beats, ≥ 100 bpm): {len(episodes)}"]
    for kind in ("VT", "SVT"):
        mine = [e for e in episodes if e["kind"] == kind]
        if mine:
            fast = max(mine, key=lambda e: e["rate_bpm"])
            out.append(
                f"  {kind} {len(mine)}, fastest {fast['rate_bpm']:.0f} bpm, {fast['beats']} beats"
                f"{_at(fast['start_s'], start)}"
            )
    return out + [""]


def _af_lines(af: dict, start=None) -> list[str]:
    """The AF/flutter episodes' count, the burden and the longest episode."""
    eps = af["episodes"]
    line = f"ATRIAL FIBRILLATION / FLUTTER: {len(eps)} episodes"
    if af["burden"] is not None:
        line += f", burden {100 * af['burden']:.1f} %"
    out = [line]
    if eps:
        longest = max(eps, key=lambda e: e["end_s"] - e["start_s"])
        out.append(f"  longest {clock(longest['end_s'] - longest['start_s'])} from {at(longest['start_s'], start)}")
    return out + [""]


def _hrv_lines(h: dict) -> list[str]:
    """The heart rate variability of the sinus NN intervals and the share of the analysed time they cover."""
    pnn50 = "—" if h["pnn50"] is None else f"{100 * h['pnn50']:.1f} %"
    coverage = "—" if h["coverage"] is None else f"{100 * h['coverage']:.0f} %"
    return [
        f"HEART RATE VARIABILITY (sinus NN intervals, {coverage} of the analysed time)",
        f"  SDNN {_ms(h['sdnn_ms'])}   SDANN {_ms(h['sdann_ms'])}   SDNN index {_ms(h['sdnn_index_ms'])}   "
        f"rMSSD {_ms(h['rmssd_ms'])}   pNN50 {pnn50}",
        "",
    ]


def _hourly_lines(hourly: list[dict], start=None) -> list[str]:
    """The hourly table: beats, mean/min/max rate, V, S and pauses per hour."""

    def fmt(x):
        return "—" if x is None else f"{x:.0f}"

    out = ["HOURLY", f"  {'from':>8} {'beats':>7} {'mean':>5} {'min':>5} {'max':>5} {'V':>6} {'S':>6} {'pauses':>6}"]
    for row in hourly:
        out.append(
            f"  {at(row['start_s'], start):>8} {row['beats']:>7} {fmt(row['mean_bpm']):>5} {fmt(row['min_bpm']):>5} "
            f"{fmt(row['max_bpm']):>5} {row['V']:>6} {row['S']:>6} {row['pauses']:>6}"
        )
    return out


def report(s: dict) -> str:
    """The summary as a Holter report's first page (plain text)."""
    start = s["start"]
    out = [
        *_header_lines(s),
        *_rate_lines(s["heart_rate"], start),
        *_ectopy_columns(s),
        *_tachycardia_lines(s["tachycardia"], start),
        *_pause_lines(s["pauses"], start),
        *_af_lines(s["af"], start),
        *_hrv_lines(s["hrv"]),
        *_hourly_lines(s["hourly"], start),
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
