"""The record's report page: ``holter.json`` as the tables of a Holter report's first pages (recording, heart
rate, ectopy, runs and tachycardia, pauses, AF, HRV, the hourly table), the list of event strips and their
figure, and with truth the figures against the reference annotations. One self-contained HTML file (inline
CSS, the strips' PNG inlined as a data URI, no script, no request), so that it opens in the Snakemake
report's frame and on its own.

:func:`holter_report` is rule ``holter_report``'s stage: the strips (:mod:`beatflow.report.strips`) and the
page."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
from pathlib import Path

from beatflow.holter.rows import (
    MAX_ROWS,
    PAUSE_TITLE,
    TACHYCARDIA_TITLE,
    Table,
    af_rows,
    beat_rows,
    ectopy_rows,
    heart_rate_rows,
    hourly_rows,
    hrv_rows,
    pause_rows,
    recording,
    runs_rows,
    tachycardia_counts,
)
from beatflow.holter.rows import at_or_dash as _at
from beatflow.holter.rows import n as _n
from beatflow.holter.rows import pct as _pct
from beatflow.holter.summary import CLASSES
from beatflow.io.atomic import atomic_path
from beatflow.timefmt import clock

log = logging.getLogger("beatflow")

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:#222;margin:16px
20px;max-width:1100px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px;border-bottom:2px solid #c33;padding-bottom:2px}
p.sub{margin:0 0 10px;color:#444}
table{border-collapse:collapse;margin:4px 0 8px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right} th{background:#f3f3f3}
td.l,th.l{text-align:left} .grid{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.N{color:#222}.S{color:#e07000}.V{color:#dc143c}.F{color:#8e44ad}.Q{color:#7f7f7f}
.cls{font-weight:bold;font-family:monospace} .note{color:#555;font-size:12px} ul{margin:4px 0 8px 18px;padding:0}
img.strips{display:block;max-width:100%;height:auto;margin:8px 0}
"""


def _e(x) -> str:
    return html.escape(str(x))


def table(head: list, rows: list[list], left: int = 1, cls: str = "") -> str:
    """An HTML table; the first ``left`` columns left-aligned; cells are escaped unless already markup
    (a tuple ``("html", text)``)."""

    def cell(tag, x, k):
        a = ' class="l"' if k < left else ""
        body = x[1] if isinstance(x, tuple) else _e(x)
        return f"<{tag}{a}>{body}</{tag}>"

    out = [
        f"<table{f' class={cls!r}' if cls else ''}><tr>"
        + "".join(cell("th", h, k) for k, h in enumerate(head))
        + "</tr>"
    ]
    out += ["<tr>" + "".join(cell("td", x, k) for k, x in enumerate(r)) + "</tr>" for r in rows]
    return "".join(out) + "</table>"


def _cls(c: str) -> tuple[str, str]:
    return ("html", f'<span class="cls {c}">{c}</span>')


def _marked(text):
    """A head or cell that is a class letter, or ends with one in brackets (``ventricular (V)``), with the
    letter in its class colour."""
    if not isinstance(text, str):
        return text
    if text in CLASSES:
        return _cls(text)
    m = re.fullmatch(r"(.*)\(([NSVFQ])\)", text)
    return ("html", f"{_e(m[1])}({_cls(m[2])[1]})") if m else text


def _table(t: Table, class_column: bool = False) -> str:
    """A :class:`beatflow.holter.rows.Table` as HTML; ``class_column``: its first column holds class letters."""
    rows = [[_marked(r[0]), *r[1:]] for r in t.rows] if class_column else t.rows
    return table([_marked(h) for h in t.head], rows, t.left)


def evaluation_section(ev: dict) -> str:
    """Detection, classes and Holter figures against the reference annotations (``evaluation.json``)."""
    out = ["<h2>Against the reference annotations</h2>"]
    det = [["beat detection", ev.get("sensitivity"), ev.get("ppv")]]
    for c in ("V", "S"):
        part = (ev.get("classes") or {}).get(c)
        if part:
            det.append(
                [
                    f"class {c} (EC57 {'VEB' if c == 'V' else 'SVEB'}, n = {part.get('n')})",
                    part.get("se"),
                    part.get("ppv"),
                ]
            )
    out.append(table(["", "sensitivity", "positive predictivity"], [[a, _pct(b), _pct(c)] for a, b, c in det]))
    ho = ev.get("holter")
    if ho:
        ref, ag = ho["reference"], ho["agreement"]
        rows = []
        for kind, name in (("ventricular", "V runs"), ("supraventricular", "S runs")):
            m = ag[kind]["runs"]
            rows.append([name, m["reference"], m["output"], _pct(m["se"], 0), _pct(m["ppv"], 0)])
            m = ag[kind]["couplets"]
            rows.append([name[0] + " couplets", m["reference"], m["output"], _pct(m["se"], 0), _pct(m["ppv"], 0)])
        m = ag["pauses"]
        rows.append(["pauses", m["reference"], m["output"], _pct(m["se"], 0), _pct(m["ppv"], 0)])
        m = ag["af"]
        rows.append(["AF episodes", m["reference"], m["output"], _pct(m["se"], 0), _pct(m["ppv"], 0)])
        rows.append(
            [
                "AF time",
                _at(m["reference_s"]),
                _at(m["output_s"]),
                _pct(m["duration_se"], 0),
                _pct(m["duration_ppv"], 0),
            ]
        )
        out.append(
            "<p class='note'>Holter figures: the reference summary from the annotations; found = a "
            "reference event that an output one overlaps (sensitivity), and the other way round "
            "(positive predictivity).</p>"
        )
        out.append(table(["", "reference", "beatflow", "sensitivity", "positive predictivity"], rows))
        hr = ag["heart_rate"]
        b = ref["beats"]
        out.append(
            f"<p class='note'>Reference beats {b['total']}: "
            + " ".join(f'<span class="cls {c}">{c}</span> {b[c]}' for c in ("N", "S", "V", "F", "Q"))
            + f"; mean rate error {_n(hr['mean_bpm_error'], '{:+.1f}', ' bpm')}; minutes within 2 bpm "
            f"{_pct(hr['minutes_within_share'], 0)}.</p>"
        )
    return "".join(out)


def _page_head(s: dict) -> str:
    """The page's HTML head, title and recording line."""
    r = recording(s)
    listed = "; ".join(r["listed"])
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(s['record'])}: Holter report"
        f"</title><style>{CSS}</style></head><body>"
        f"<h1>Holter report — record {_e(s['record'])}</h1>"
        f"<p class='sub'>Recorded {r['recorded']}, analysed {r['analysed']} ({r['share']}); "
        f"artefact (no lead readable) {r['artefact']} in {r['episodes']} episodes"
        f"{': ' + _e(listed) if listed else ''}. {_e(r['note'])}</p>"
    )


def overview_section(s: dict) -> str:
    """Beats by class, heart rate and HRV side by side, and the classes' legend."""
    return (
        f"<div class='grid'><div><h2>Beats</h2>{_table(beat_rows(s), class_column=True)}</div>"
        f"<div><h2>Heart rate</h2>{_table(heart_rate_rows(s))}</div>"
        f"<div><h2>Heart rate variability</h2>{_table(hrv_rows(s))}</div></div>"
        "<p class='note'>AAMI classes: N normal (and bundle-branch, escape), S supraventricular ectopic, "
        "V ventricular ectopic, F fusion, Q unclassifiable.</p>"
    )


def ectopy_section(s: dict) -> str:
    """The ectopy table and the list of runs (the :data:`MAX_ROWS` longest of each class)."""
    tachy = tachycardia_counts(s)
    runs, every = runs_rows(s)
    out = [
        "<h2>Ectopy</h2>" + _table(ectopy_rows(s)),
        f"<p class='note'>{TACHYCARDIA_TITLE}: {tachy['VT']} VT, {tachy['SVT']} SVT. "
        "Runs, couplets and bigeminy are not counted inside AF/flutter or artefact.</p>",
    ]
    if runs.rows:
        shown = "" if every else f" (the {MAX_ROWS} longest of each class)"
        out.append(f"<p class='note'>Runs{shown}:</p>")
        out.append(_table(runs, class_column=True))
    return "".join(out)


def pauses_section(s: dict) -> str:
    """The pauses' count, the longest, and the :data:`MAX_ROWS` longest listed."""
    longest, top = pause_rows(s)
    if longest is None:
        return f"<h2>{PAUSE_TITLE}: none</h2>"
    return f"<h2>{PAUSE_TITLE}: {len(s['pauses'])}</h2><p class='sub'>longest {longest}</p>" + _table(top)


def af_section(s: dict) -> str:
    """The AF episodes' count and burden, and the :data:`MAX_ROWS` longest listed in time order."""
    count = len(s["af"]["episodes"])
    burden, top = af_rows(s)
    out = (
        f"<h2>Atrial fibrillation / flutter: {count} episode{'s' if count != 1 else ''}</h2>"
        f"<p class='sub'>burden {burden}</p>"
    )
    return out + _table(top) if top.rows else out


def hourly_section(s: dict) -> str:
    """The hourly table."""
    return "<h2>Hourly</h2>" + _table(hourly_rows(s))


def events_section(events: list[dict], strips_png: bytes | None = None) -> str:
    """The list of event strips (``strips.json``'s ``events``) and their figure (``strips_png``, inlined)."""
    out = "<h2>Event strips</h2>"
    if not events:
        return out + "<p>No events to show.</p>"
    out += "<p class='note'>10 s of every lead for each event, numbered as in the figure below.</p>" + table(
        ["#", "at", "event", "rate (bpm)"],
        [[e["number"], e["clock"], e["title"], _n(e.get("rate_bpm"))] for e in events],
        left=3,
    )
    if strips_png is not None:
        data = base64.b64encode(strips_png).decode("ascii")
        out += f"<img class='strips' alt='the event strips, numbered as listed' src='data:image/png;base64,{data}'>"
    return out


def render_page(
    s: dict, events: list[dict] | None = None, evaluation: dict | None = None, strips_png: bytes | None = None
) -> str:
    """The record's report page (see the module docstring).

    Parameters
    ----------
    s : dict
        The record's ``holter.json``.
    events : list of dict, optional
        ``strips.json``'s ``events``; None leaves the strips' section out.
    evaluation : dict, optional
        ``evaluation.json``; without it, no section against the reference annotations.
    strips_png : bytes, optional
        The event strips' PNG, shown below their list; None shows the list only.

    Returns
    -------
    str
        The page, a self-contained HTML document.
    """
    out = [_page_head(s), overview_section(s), ectopy_section(s)]
    out.append("<div class='grid'><div>" + pauses_section(s) + "</div><div>" + af_section(s) + "</div></div>")
    out.append(hourly_section(s))
    if events is not None:
        out.append(events_section(events, strips_png))
    if evaluation:
        out.append(evaluation_section(evaluation))
    if s.get("notes"):
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in s["notes"]) + "</ul>")
    out.append(
        "<p class='note'>Definitions: docs/contracts.md (holter.json). Rates are 60 / mean RR; minimum "
        "and maximum over whole minutes.</p></body></html>\n"
    )
    return "".join(out)


COHORT_HEAD = [
    "record",
    "recorded",
    "analysed",
    "beats",
    "N",
    "S",
    "V",
    "F",
    "Q",
    "mean bpm",
    "min bpm",
    "max bpm",
    "V runs",
    "longest V run",
    "S runs",
    "pauses",
    "longest pause (s)",
    "AF burden",
    "SDNN (ms)",
]
COHORT_TRUTH_HEAD = ["detection Se", "detection +P", "V Se", "V +P", "S Se", "S +P"]


def _cohort_row(record: str, s: dict) -> list:
    """One record's cohort row from its ``holter.json`` summary (without the truth columns)."""
    b, hr, v, sv = s["beats"], s["heart_rate"], s["ventricular"], s["supraventricular"]
    longest_v = max((r["beats"] for r in v["runs"]), default=None)
    longest_p = max((p["duration_s"] for p in s["pauses"]), default=None)
    dur, ana = s.get("duration_s") or 0.0, s.get("analysed_s") or 0.0
    return [
        record,
        clock(dur),
        _pct(ana / dur if dur else None),
        b["total"],
        *(b[c] for c in "NSVFQ"),
        _n(hr["mean_bpm"]),
        _n(hr["min_bpm"]),
        _n(hr["max_bpm"]),
        len(v["runs"]),
        _n(longest_v),
        len(sv["runs"]),
        len(s["pauses"]),
        _n(longest_p, "{:.2f}"),
        _pct(s["af"]["burden"]),
        _n(s["hrv"]["sdnn_ms"]),
    ]


def _truth_cells(ev: dict | None) -> list:
    """A record's truth columns from its ``evaluation.json``: detection, then V and S sensitivity and +P."""
    ev = ev or {}
    classes = ev.get("classes") or {}
    cells = [_pct(ev.get("sensitivity")), _pct(ev.get("ppv"))]
    return cells + [_pct((classes.get(c) or {}).get(k)) for c in ("V", "S") for k in ("se", "ppv")]


def _cohort_totals(summaries: dict[str, dict]) -> dict:
    """The counts and times summed over the records' summaries."""
    total = {
        "duration_s": 0.0,
        "analysed_s": 0.0,
        "beats": dict.fromkeys(("total", *"NSVFQ"), 0),
        "v_runs": 0,
        "s_runs": 0,
        "pauses": 0,
        "af_s": 0.0,
    }
    for s in summaries.values():
        total["duration_s"] += s.get("duration_s") or 0.0
        total["analysed_s"] += s.get("analysed_s") or 0.0
        for k in total["beats"]:
            total["beats"][k] += s["beats"][k]
        total["v_runs"] += len(s["ventricular"]["runs"])
        total["s_runs"] += len(s["supraventricular"]["runs"])
        total["pauses"] += len(s["pauses"])
        total["af_s"] += sum(e["end_s"] - e["start_s"] for e in s["af"]["episodes"])
    return total


def _totals_row(n_records: int, t: dict, with_truth: bool) -> list:
    """The cohort's last row: the totals of :func:`_cohort_totals` (rates and HRV left blank)."""
    return [
        f"all {n_records}",
        clock(t["duration_s"]),
        _pct(t["analysed_s"] / t["duration_s"] if t["duration_s"] else None),
        t["beats"]["total"],
        *(t["beats"][c] for c in "NSVFQ"),
        "",
        "",
        "",
        t["v_runs"],
        "",
        t["s_runs"],
        t["pauses"],
        "",
        _pct(t["af_s"] / t["analysed_s"] if t["analysed_s"] else None),
        "",
    ] + [""] * (len(COHORT_TRUTH_HEAD) if with_truth else 0)


def cohort_rows(summaries: dict[str, dict], evaluations: dict[str, dict] | None = None) -> tuple[list[str], list[list]]:
    """The cohort table: one row per record from its ``holter.json`` (and ``evaluation.json`` where given),
    then a row of the totals (counts summed; rates and HRV left out)."""
    evaluations = evaluations or {}
    with_truth = any(evaluations.get(r) for r in summaries)
    head = COHORT_HEAD + (COHORT_TRUTH_HEAD if with_truth else [])
    rows = []
    for record, s in summaries.items():
        row = _cohort_row(record, s)
        if with_truth:
            row += _truth_cells(evaluations.get(record))
        rows.append(row)
    rows.append(_totals_row(len(summaries), _cohort_totals(summaries), with_truth))
    return head, rows


def render_cohort_page(summaries: dict[str, dict], evaluations: dict[str, dict] | None = None) -> str:
    """The cohort page: :func:`cohort_rows` as one table (self-contained HTML, as the record's page)."""
    head, rows = cohort_rows(summaries, evaluations)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>cohort: Holter summaries</title>"
        f"<style>{CSS} body{{max-width:none}} td,th{{padding:2px 6px}} td{{white-space:nowrap}}</style>"
        "</head><body>"
        f"<h1>Cohort — {len(summaries)} record{'s' if len(summaries) != 1 else ''}</h1>"
        "<p class='sub'>One row per record from its holter.json (and evaluation.json with truth); the last "
        "row sums the counts and the times (AF burden: AF time over analysed time).</p>"
        + table(head, rows)
        + "</body></html>\n"
    )


def write_cohort_page(path, records: list[str], holter_paths, evaluation_paths: dict[str, str] | None = None) -> None:
    """Rule ``cohort_report``'s stage: the cohort page from the records' ``holter.json`` (and ``evaluation.json``).

    Parameters
    ----------
    path : path-like
        Where the page goes (written atomically).
    records : list of str
        The records, in the table's order.
    holter_paths : sequence of path-like
        Each record's ``holter.json``, in the order of ``records``.
    evaluation_paths : dict of str to path-like, optional
        Record → ``evaluation.json``, for the records with truth.

    Returns
    -------
    None
    """
    summaries = {r: json.loads(Path(p).read_text()) for r, p in zip(records, holter_paths, strict=True)}
    evaluations = {r: json.loads(Path(p).read_text()) for r, p in (evaluation_paths or {}).items()}
    with atomic_path(Path(path)) as tmp:
        Path(tmp).write_text(render_cohort_page(summaries, evaluations), encoding="utf-8")
    log.info("cohort page: %d records in %s", len(records), path)


def write_page(
    path, summary: dict, events: list[dict] | None = None, evaluation: dict | None = None, strips_png=None
) -> None:
    """Write :func:`render_page`'s page atomically (``strips_png``: bytes, or None)."""
    with atomic_path(Path(path)) as tmp:
        Path(tmp).write_text(render_page(summary, events, evaluation, strips_png), encoding="utf-8")


def write_record_report(
    record: str, holter_path, scores_path, signal_path, page_path, strips_png, strips_json, evaluation_path=None
) -> None:
    """Rule ``holter_report``'s stage: the event strips (PNG and JSON) and the record's page.

    Parameters
    ----------
    record : str
        The record's name.
    holter_path : path-like
        The record's ``holter.json``.
    scores_path, signal_path : path-like
        The record's ``scores.parquet`` and ``signal.parquet``.
    page_path : path-like
        Where the page goes.
    strips_png, strips_json : path-like
        Where the strips' figure and their events go (:func:`beatflow.report.strips.write_strips`).
    evaluation_path : path-like, optional
        The record's ``evaluation.json``, with truth.

    Returns
    -------
    None
        Every output is written atomically.
    """
    from beatflow.io.tables import read_frame
    from beatflow.report.strips import write_strips

    summary = json.loads(Path(holter_path).read_text())
    scores = read_frame(scores_path, columns=["beat", "time_s", "score", "anomaly", "reason", "class", "family"])
    events = write_strips(record, summary, scores, signal_path, strips_png, strips_json)
    evaluation = json.loads(Path(evaluation_path).read_text()) if evaluation_path else None
    write_page(page_path, summary, [e.as_json() for e in events], evaluation, Path(strips_png).read_bytes())
    log.info("report page %s: %s", record, page_path)
