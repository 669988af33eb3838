"""The Holter report's content, once: ``holter.json`` as labelled rows of display text, section by section
(recording, beats, heart rate, HRV, ectopy and its runs, tachycardia, pauses, AF, the hourly table). Two
renderers draw the same rows: plain text (``python -m beatflow.holter``, :mod:`beatflow.holter.__main__`)
and HTML (the record's report page, :mod:`beatflow.report.pages`).

Every cell is a string or an integer, formatted here (rates in bpm to the unit, shares in %, times as
:func:`beatflow.holter.clock.at` gives them: clock times where the start is known, else elapsed). A class
letter is a cell of its own (the HTML draws it in the class colour)."""

from __future__ import annotations

from dataclasses import dataclass, field

from beatflow.holter.clock import at, note
from beatflow.holter.summary import CLASSES, PAUSE_S, SINUS_BEATS, TACHYCARDIA_BPM
from beatflow.timefmt import clock

MAX_ROWS = 15  # runs, pauses, AF episodes and artefact episodes listed (the longest); the counts cover all
PAUSE_TITLE = f"Pauses (RR ≥ {PAUSE_S:.1f} s)"
TACHYCARDIA_TITLE = f"Tachycardia (runs of ≥ 3 beats at ≥ {TACHYCARDIA_BPM:.0f} bpm)"


@dataclass
class Table:
    """A table's column heads and rows; the first ``left`` columns are text (left-aligned), the rest numbers."""

    head: list[str]
    rows: list[list] = field(default_factory=list)
    left: int = 1


def n(x, fmt: str = "{:.0f}", unit: str = "") -> str:
    """A number as ``fmt`` gives it with its ``unit``; ``—`` for None."""
    return "—" if x is None else fmt.format(x) + unit


def pct(x, digits: int = 1) -> str:
    """A share as a percentage (``12.9 %``); ``—`` for None."""
    return "—" if x is None else f"{100 * x:.{digits}f} %"


def at_or_dash(x, start=None) -> str:
    """:func:`beatflow.holter.clock.at`, ``—`` for None."""
    return "—" if x is None else at(x, start)


def recording(s: dict) -> dict:
    """The recording's line: ``recorded`` and ``analysed`` time, the analysed ``share``, the ``artefact`` time,
    its ``episodes`` count, the :data:`MAX_ROWS` longest episodes ``listed`` (``from–to (lead reason, …)``)
    and the ``note`` on how times are given."""
    dur, ana, art, start = s.get("duration_s") or 0.0, s.get("analysed_s") or 0.0, s["artefact"], s["start"]
    longest = sorted(art["episodes"], key=lambda e: e["start_s"] - e["end_s"])[:MAX_ROWS]
    return {
        "recorded": clock(dur),
        "analysed": clock(ana),
        "share": pct(ana / dur if dur else None),
        "artefact": clock(art["total_s"] or 0),
        "episodes": len(art["episodes"]),
        "listed": [
            f"{at(e['start_s'], start)}–{at(e['end_s'], start)} "
            f"({', '.join(f'{lead} {why}' for lead, why in e['leads'].items())})"
            for e in longest
        ],
        "note": note(start),
    }


def beat_rows(s: dict) -> Table:
    """Beats per AAMI class, their share, and the total."""
    b = s["beats"]
    rows = [[c, b[c], pct(b[c] / b["total"] if b["total"] else None)] for c in CLASSES]
    return Table(["class", "beats", "share"], rows + [["total", b["total"], ""]])


def heart_rate_rows(s: dict) -> Table:
    """Mean, minimum and maximum of the minute averages, the slowest and fastest sinus beats, with their times."""
    hr, start = s["heart_rate"], s["start"]
    sinus = f"{SINUS_BEATS} sinus beats"
    return Table(
        ["", "bpm", "at"],
        [
            ["mean", n(hr["mean_bpm"]), ""],
            ["minimum (minute)", n(hr["min_bpm"]), at_or_dash(hr["min_at_s"], start)],
            ["maximum (minute)", n(hr["max_bpm"]), at_or_dash(hr["max_at_s"], start)],
            [f"slowest ({sinus})", n(hr["slowest"]["bpm"]), at_or_dash(hr["slowest"]["at_s"], start)],
            [f"fastest ({sinus})", n(hr["fastest"]["bpm"]), at_or_dash(hr["fastest"]["at_s"], start)],
        ],
    )


def hrv_rows(s: dict) -> Table:
    """The heart rate variability of the sinus NN intervals (the head: the share of the time they cover)."""
    h = s["hrv"]
    return Table(
        [f"sinus NN intervals ({pct(h['coverage'], 0)} of the time)", "value"],
        [
            ["SDNN", n(h["sdnn_ms"], unit=" ms")],
            ["SDANN (5 min)", n(h["sdann_ms"], unit=" ms")],
            ["SDNN index", n(h["sdnn_index_ms"], unit=" ms")],
            ["rMSSD", n(h["rmssd_ms"], unit=" ms")],
            ["pNN50", pct(h["pnn50"])],
        ],
    )


def _longest_run(part: dict, start) -> str:
    if not part["runs"]:
        return "—"
    r = max(part["runs"], key=lambda r: (r["beats"], -r["start_s"]))
    return f"{r['beats']} beats at {at(r['start_s'], start)}"


def _fastest_run(part: dict, start) -> str:
    rated = [r for r in part["runs"] if r.get("rate_bpm") is not None]
    if not rated:
        return "—"
    r = max(rated, key=lambda r: (r["rate_bpm"], -r["start_s"]))
    return f"{r['rate_bpm']:.0f} bpm at {at(r['start_s'], start)}"


def ectopy_rows(s: dict) -> Table:
    """Ventricular and supraventricular ectopy side by side: beats, per hour analysed, isolated, couplets,
    runs, the longest and fastest run, bigeminy and trigeminy (ventricular)."""
    v, sv, b, start = s["ventricular"], s["supraventricular"], s["beats"], s["start"]
    hours = (s.get("analysed_s") or 0) / 3600.0

    def per_h(count):
        return "—" if hours <= 0 else f"{count / hours:.1f}"

    return Table(
        ["", "ventricular (V)", "supraventricular (S)"],
        [
            ["total beats", b["V"], b["S"]],
            ["per hour analysed", per_h(b["V"]), per_h(b["S"])],
            ["isolated", v["isolated"], sv["isolated"]],
            ["couplets", v["couplets"], sv["couplets"]],
            ["runs (≥ 3 beats)", len(v["runs"]), len(sv["runs"])],
            ["longest run", _longest_run(v, start), _longest_run(sv, start)],
            ["fastest run", _fastest_run(v, start), _fastest_run(sv, start)],
            ["bigeminy (time)", at_or_dash(v.get("bigeminy_s") or 0), ""],
            ["trigeminy (time)", at_or_dash(v.get("trigeminy_s") or 0), ""],
        ],
    )


def tachycardia_counts(s: dict) -> dict[str, int]:
    """The tachycardia episodes by kind (``VT``, ``SVT``)."""
    return {kind: sum(t["kind"] == kind for t in s["tachycardia"]) for kind in ("VT", "SVT")}


def _class_runs(runs: list[dict], letter: str, tachycardia: list[dict], start) -> list[list]:
    kind = "VT" if letter == "V" else "SVT"
    fast = {t["start_s"] for t in tachycardia if t["kind"] == kind}
    longest = sorted(runs, key=lambda r: (-r["beats"], r["start_s"]))[:MAX_ROWS]
    return [
        [letter, at(r["start_s"], start), at(r["end_s"], start), r["beats"], n(r.get("rate_bpm"))]
        + [kind if r["start_s"] in fast else ""]
        for r in sorted(longest, key=lambda r: r["start_s"])
    ]


def runs_rows(s: dict) -> tuple[Table, bool]:
    """The :data:`MAX_ROWS` longest runs of each class in time order, V then S, each named VT / SVT when it is
    a tachycardia episode; and whether every run is listed."""
    start, tachy = s["start"], s["tachycardia"]
    rows = _class_runs(s["ventricular"]["runs"], "V", tachy, start)
    rows += _class_runs(s["supraventricular"]["runs"], "S", tachy, start)
    every = len(rows) == len(s["ventricular"]["runs"]) + len(s["supraventricular"]["runs"])
    return Table(["class", "from", "to", "beats", "rate (bpm)", "tachycardia"], rows), every


def pause_rows(s: dict) -> tuple[str | None, Table]:
    """The longest pause (``3.45 s at 01:23:20``; None without pauses) and the :data:`MAX_ROWS` longest."""
    pauses, start = s["pauses"], s["start"]
    if not pauses:
        return None, Table(["at", "duration (s)"])
    p = max(pauses, key=lambda p: p["duration_s"])
    top = sorted(pauses, key=lambda p: -p["duration_s"])[:MAX_ROWS]
    rows = [[at(q["start_s"], start), f"{q['duration_s']:.2f}"] for q in top]
    return f"{p['duration_s']:.2f} s at {at(p['start_s'], start)}", Table(["at", "duration (s)"], rows)


def af_rows(s: dict) -> tuple[str, Table]:
    """The AF/flutter burden (``12.9 % (00:15:00)``) and the :data:`MAX_ROWS` longest episodes in time order."""
    eps, start = s["af"]["episodes"], s["start"]
    burden = f"{pct(s['af']['burden'])} ({clock(sum(e['end_s'] - e['start_s'] for e in eps))})"
    top = sorted(sorted(eps, key=lambda e: e["start_s"] - e["end_s"])[:MAX_ROWS], key=lambda e: e["start_s"])
    rows = [[at(e["start_s"], start), at(e["end_s"], start), clock(e["end_s"] - e["start_s"])] for e in top]
    return burden, Table(["from", "to", "duration"], rows)


def hourly_rows(s: dict) -> Table:
    """The hourly table: beats, mean, minimum and maximum rate, V, S and pauses per hour."""
    start = s["start"]
    return Table(
        ["hour from", "beats", "mean bpm", "min bpm", "max bpm", "V", "S", "pauses"],
        [
            [at(r["start_s"], start), r["beats"], n(r["mean_bpm"]), n(r["min_bpm"]), n(r["max_bpm"])]
            + [r["V"], r["S"], r["pauses"]]
            for r in s["hourly"]
        ],
    )
