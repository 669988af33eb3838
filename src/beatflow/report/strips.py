"""Event strips: 10 s of the real waveform for each event a cardiologist checks in a Holter report, drawn as on
ECG paper (the first three leads in mV, a 0.2 s × 0.5 mV grid with 0.04 s × 0.1 mV minor lines, each beat's
AAMI class as a coloured letter at its R peak, RR intervals in seconds; clock times on the axis and in the
titles when ``holter.json``'s ``start`` is known, elapsed time otherwise: :mod:`beatflow.holter.clock`).

The events (:func:`select_events`), from ``holter.json`` and ``scores.parquet``, in this order:

- the longest and the fastest ventricular run (one strip when they are the same run), the longest
  supraventricular run (a run among ``holter.json``'s tachycardia episodes is named VT or SVT);
- the longest pause;
- the fastest and the slowest minute (the 10 s of that minute with the fastest, or slowest, mean rate);
- each AF/flutter onset, up to :data:`MAX_AF` (the strip starts 3 s before the onset);
- the most anomalous beats: the top-scoring flagged beat of each reason (morphology, rhythm), then of each
  morphology family other than the dominant one, by score, up to :data:`MAX_BEATS` beats in all.

A strip is :data:`STRIP_S` long, centred on its event (an event longer than the strip starts 1 s before it),
kept inside the record. The traces are band-passed 0.5–40 Hz (the monitoring filter: no baseline wander, no
hum); each lead's band is as tall as its strip needs (1.5–5 mV; larger excursions are clipped).
:func:`write_strips` writes the PNG and the events as JSON (the page's list of strips)."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from beatflow.dsp.filters import butter_band_pass
from beatflow.holter.clock import at, note, ticks
from beatflow.io.atomic import atomic_path
from beatflow.report.colours import CLASS_COLOURS, REASON_COLOURS
from beatflow.timefmt import clock

log = logging.getLogger("beatflow")

STRIP_S = 10.0
MAX_AF = 3
MAX_BEATS = 4
BAND_HZ = (0.5, 40.0)
PAD_S = 2.0  # signal read either side of a strip for the filter's edges
LEAD_SPAN_MV = (1.5, 5.0)  # a lead's band height, bounds
INCH_PER_S = 1.0  # 10 s = 10 in: 0.2 s and 0.5 mV squares of 0.2 in (1 mV = 0.4 in)
INCH_PER_MV = INCH_PER_S * 0.2 / 0.5
DPI = 110

GRID_MAJOR, GRID_MINOR = "#f0a8a8", "#fbe0e0"
SPAN_COLOUR = "#fff3b0"


@dataclass
class Event:
    """One strip: what it shows (``kind``, ``title``), where (``start_s`` … ``end_s``, the strip; ``at_s``, the
    event's time, ``clock`` as the report gives it; ``span``, the event's own interval, shaded) and its
    numbers."""

    kind: str
    title: str
    at_s: float
    start_s: float
    end_s: float
    span: tuple[float, float] | None = None
    rate_bpm: float | None = None
    details: dict = field(default_factory=dict)
    number: int = 0  # its place in the figure, from 1
    clock: str = ""

    def as_json(self) -> dict:
        out = asdict(self)
        out["span"] = list(self.span) if self.span else None
        return out


def strip_window(a: float, b: float, duration_s: float, lead_in_s: float | None = None) -> tuple[float, float]:
    """The strip for an event from ``a`` to ``b`` s: centred on it, or starting ``lead_in_s`` (1 s for events
    longer than the strip) before it; inside ``[0, duration_s]``."""
    if lead_in_s is None:
        lead_in_s = 1.0 if b - a > STRIP_S - 2.0 else (STRIP_S - (b - a)) / 2.0
    start = min(max(0.0, a - lead_in_s), max(0.0, duration_s - STRIP_S))
    return start, min(duration_s, start + STRIP_S) if duration_s > 0 else start + STRIP_S


def _fmt_rate(x) -> str:
    return "—" if x is None else f"{x:.0f} bpm"


def _run_events(summary: dict, name: str, letter: str, duration_s: float, fastest: bool) -> list[Event]:
    """The longest run of ``summary[name]`` (and the fastest, with ``fastest``), named VT / SVT when it is one
    of the summary's tachycardia episodes."""
    runs = summary[name].get("runs") or []
    kind = "VT" if letter == "V" else "SVT"
    tachycardia = {t["start_s"] for t in summary["tachycardia"] if t["kind"] == kind}
    origin = summary["start"]
    if not runs:
        return []
    longest = max(runs, key=lambda r: (r["beats"], -r["start_s"]))
    chosen = [("longest", longest)]
    rated = [r for r in runs if r.get("rate_bpm") is not None]
    if fastest and rated:
        fast = max(rated, key=lambda r: (r["rate_bpm"], -r["start_s"]))
        if fast is longest:
            chosen = [("longest and fastest", longest)]
        else:
            chosen.append(("fastest", fast))
    out = []
    for what, r in chosen:
        s, e = r["start_s"], r["end_s"]
        named = f" ({kind})" if s in tachycardia else ""
        title = (
            f"{what.capitalize()} {name} run{named}: {r['beats']} {letter} beats at {_fmt_rate(r.get('rate_bpm'))}, "
            f"{at(s, origin)}–{at(e, origin)} ({e - s:.1f} s)"
        )
        kind = f"{letter.lower()}_run_" + what.replace(" and ", "_")
        out.append(
            Event(
                kind,
                title,
                s,
                *strip_window(s, e, duration_s),
                span=(s, e),
                rate_bpm=r.get("rate_bpm"),
                details={"beats": r["beats"], "end_s": e},
            )
        )
    return out


def window_rate(time_s: np.ndarray, valid: np.ndarray, lo: float, hi: float, fastest: bool):
    """The 10 s window inside ``[lo, hi]`` (starts on a 1 s step) with the fastest (or slowest) mean rate of
    the analysable RR intervals ending in it: ``(start_s, bpm)``, or ``(lo, None)`` without intervals."""
    ends, rr = time_s[1:][valid], np.diff(time_s)[valid]
    best = (lo, None)
    for start in np.arange(lo, max(lo, hi - STRIP_S) + 1e-9, 1.0):
        inside = (ends >= start) & (ends < start + STRIP_S)
        if inside.sum() < 2:
            continue
        bpm = 60.0 / float(rr[inside].mean())
        if best[1] is None or (bpm > best[1] if fastest else bpm < best[1]):
            best = (float(start), bpm)
    return best


def _minute_events(summary: dict, time_s, valid, duration_s: float) -> list[Event]:
    hr = summary["heart_rate"]
    out = []
    for key, fastest, name in (("max", True, "Fastest"), ("min", False, "Slowest")):
        m0, bpm = hr.get(f"{key}_at_s"), hr.get(f"{key}_bpm")
        if m0 is None or bpm is None or (not fastest and m0 == hr.get("max_at_s")):
            continue  # (a record of one minute, or of one rate: one strip)
        start, strip_bpm = window_rate(time_s, valid, m0, min(m0 + 60.0, duration_s), fastest)
        start, end = strip_window(start, start + STRIP_S, duration_s, lead_in_s=0.0)
        title = (
            f"{name} minute {at(m0, summary['start'])}–{at(m0 + 60, summary['start'])}: {bpm:.0f} bpm (its "
            f"{name.lower()} 10 s: "
            f"{_fmt_rate(strip_bpm)})"
        )
        out.append(
            Event(
                f"minute_{'fastest' if fastest else 'slowest'}",
                title,
                start,
                start,
                end,
                span=None,
                rate_bpm=bpm,
                details={"minute_start_s": m0, "strip_bpm": strip_bpm},
            )
        )
    return out


def _local_rate(time_s, valid, a: float, b: float):
    ends, rr = time_s[1:][valid], np.diff(time_s)[valid]
    inside = (ends > a) & (ends <= b)
    return 60.0 / float(rr[inside].mean()) if inside.any() else None


def _beat_events(scores, time_s, valid, duration_s: float, max_beats: int) -> list[Event]:
    flagged = scores[scores.anomaly.to_numpy(bool)]
    if flagged.empty:
        return []
    flagged = flagged.sort_values(["score", "time_s"], ascending=[False, True], kind="stable")
    picks = []  # (why, row)
    for reason in ("morphology", "rhythm"):
        part = flagged[flagged.reason == reason]
        if len(part):
            picks.append((f"most anomalous {reason} beat", part.iloc[0]))
    families = flagged[flagged.family > 0]
    for fam, part in sorted(families.groupby("family"), key=lambda kv: -kv[1].score.iloc[0]):
        picks.append((f"most anomalous beat of family {int(fam)}", part.iloc[0]))
    out, seen = [], set()
    for why, row in picks:
        beat = int(row.beat)
        if beat in seen:
            continue
        seen.add(beat)
        t = float(row.time_s)
        i = int(np.searchsorted(time_s, t))
        rr_before = float(time_s[i] - time_s[i - 1]) if i > 0 else None
        rr_after = float(time_s[i + 1] - time_s[i]) if i + 1 < len(time_s) else None
        fam = int(row.family)
        rr = [f"{v:.2f} s {w}" for w, v in (("before", rr_before), ("after", rr_after)) if v is not None]
        fam_txt = "" if why.endswith(f"family {fam}") else f" (family {fam})" if fam >= 0 else " (no family)"
        title = (
            f"{why.capitalize()}: {row['class']}{fam_txt}, {row.reason or 'flagged'} score "
            f"{float(row.score):.2f}" + (f"; RR {', '.join(rr)}" if rr else "")
        )
        start, end = strip_window(t, t, duration_s)
        out.append(
            Event(
                "beat",
                title,
                t,
                start,
                end,
                span=(t - 0.12, t + 0.12),
                rate_bpm=_local_rate(time_s, valid, start, end),
                details={
                    "beat": beat,
                    "class": str(row["class"]),
                    "family": fam,
                    "reason": str(row.reason),
                    "score": float(row.score),
                    "rr_before_s": rr_before,
                    "rr_after_s": rr_after,
                },
            )
        )
        if len(out) >= max_beats:
            break
    return out


def select_events(
    summary: dict, scores, max_af: int = MAX_AF, max_beats: int = MAX_BEATS, duration_s: float | None = None
) -> list[Event]:
    """The record's strips (see the module docstring). ``scores``: ``scores.parquet`` as pandas (columns
    ``beat``, ``time_s``, ``score``, ``anomaly``, ``reason``, ``class``, ``family``); ``duration_s``: the
    record's, where the summary has none."""
    from beatflow.holter.summary import analysable

    duration_s = float(summary.get("duration_s") or duration_s or 0.0)
    scores = scores.sort_values("time_s", kind="stable").reset_index(drop=True)
    time_s = scores.time_s.to_numpy(np.float64)
    valid = analysable(time_s, ())
    events = []
    origin = summary["start"]  # the recording's, for clock times
    events += _run_events(summary, "ventricular", "V", duration_s, fastest=True)
    events += _run_events(summary, "supraventricular", "S", duration_s, fastest=False)
    if summary.get("pauses"):
        p = max(summary["pauses"], key=lambda p: (p["duration_s"], -p["start_s"]))
        s, e = p["start_s"], p["start_s"] + p["duration_s"]
        events.append(
            Event(
                "pause_longest",
                f"Longest pause: {p['duration_s']:.2f} s at {at(s, origin)} ({len(summary['pauses'])} pauses ≥ 2 s)",
                s,
                *strip_window(s, e, duration_s),
                span=(s, e),
                rate_bpm=60.0 / p["duration_s"],
                details={"duration_s": p["duration_s"]},
            )
        )
    events += _minute_events(summary, time_s, valid, duration_s)
    episodes = summary["af"]["episodes"]
    for k, ep in enumerate(episodes[:max_af]):
        s, e = ep["start_s"], ep["end_s"]
        start, end = strip_window(s, s, duration_s, lead_in_s=3.0)
        rate = _local_rate(time_s, valid, s, min(e, end))
        onset = "present from the start of the recording" if s < 1.0 else f"onset at {at(s, origin)}"
        title = (
            f"AF/flutter episode {k + 1} of {len(episodes)}, {onset}: {clock(e - s)} long, "
            f"{_fmt_rate(rate)} in the strip"
        )
        events.append(
            Event(
                "af_onset",
                title,
                s,
                start,
                end,
                span=(s, min(e, end)),
                rate_bpm=rate,
                details={"end_s": e, "episode": k + 1},
            )
        )
    events += _beat_events(scores, time_s, valid, duration_s, max_beats)
    for k, ev in enumerate(events, 1):
        ev.number, ev.clock = k, at(ev.at_s, origin)
    return events


# ---------------------------------------------------------------- drawing


def strip_traces(leads: dict, fs: float, event: Event) -> tuple[np.ndarray, dict]:
    """``(time_s, {lead: band-passed mV})`` of the event's strip."""
    n = len(next(iter(leads.values())))
    a, b = int(round(event.start_s * fs)), min(n, int(round(event.end_s * fs)))
    pa, pb = max(0, a - int(PAD_S * fs)), min(n, b + int(PAD_S * fs))
    out = {name: butter_band_pass(x[pa:pb], fs, *BAND_HZ)[a - pa : b - pa] for name, x in leads.items()}
    return np.arange(a, b) / fs, out


def _lead_band(x: np.ndarray) -> tuple[float, float]:
    """``(centre, span)`` in mV of a lead's band: its range plus a margin, rounded up to 0.5 mV, bounded."""
    if not len(x):
        return 0.0, LEAD_SPAN_MV[0]
    lo, hi = float(np.min(x)), float(np.max(x))
    span = min(max(math.ceil((hi - lo + 0.4) / 0.5) * 0.5, LEAD_SPAN_MV[0]), LEAD_SPAN_MV[1])
    centre = (lo + hi) / 2.0 if hi - lo + 0.4 <= span else float(np.median(x)) + 0.1 * span
    return centre, span


def _paper(ax, t0: float, t1: float, y0: float, y1: float) -> None:
    from matplotlib.collections import LineCollection

    for step, colour, width in ((0.04, GRID_MINOR, 0.4), (0.2, GRID_MAJOR, 0.7)):
        xs = np.arange(math.ceil(t0 / step - 1e-9) * step, t1 + 1e-9, step)
        ystep = step * 2.5  # 0.04 s ↔ 0.1 mV, 0.2 s ↔ 0.5 mV
        ys = np.arange(math.ceil(y0 / ystep - 1e-9) * ystep, y1 + 1e-9, ystep)
        segs = [[(x, y0), (x, y1)] for x in xs] + [[(t0, y), (t1, y)] for y in ys]
        ax.add_collection(LineCollection(segs, colors=colour, linewidths=width, zorder=0))


# the figure's layout (inches): margins left and right, a strip's title row, its time axis, the gap below it,
# and the figure's header
LEFT_IN, RIGHT_IN, TITLE_IN, AXIS_IN, GAP_IN, HEAD_IN = 0.55, 0.25, 0.32, 0.32, 0.18, 1.15


def _beat_marks(scores) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(time_s, class, flagged, reason)`` of every beat, in time order."""
    ordered = scores.sort_values("time_s", kind="stable")
    return (
        ordered.time_s.to_numpy(np.float64),
        ordered["class"].astype(str).to_numpy(),
        ordered.anomaly.to_numpy(bool),
        ordered.reason.astype(str).to_numpy(),
    )


def _strip_contents(events: list[Event], leads: dict, fs: float) -> list[tuple]:
    """Per event ``(event, time_s, traces, bands, height_mv)``: its traces, each lead's band
    (:func:`_lead_band`) and the strip's height in mV (the bands, the letters' row and the RR row)."""
    drawn = []
    for ev in events:
        t, traces = strip_traces(leads, fs, ev)
        bands = [_lead_band(x) for x in traces.values()]
        drawn.append((ev, t, traces, bands, sum(s for _, s in bands) + 0.8))
    return drawn


def _figure_header(
    fig, record: str, n_events: int, unit_note: str, start: str | None, fig_w: float, total_h: float
) -> None:
    """The figure's title, the notes on the times, the scale and the marks, and the classes' colour key."""
    fig.text(
        LEFT_IN / fig_w,
        1 - 0.25 / total_h,
        f"{record}: event strips ({n_events})",
        fontsize=13,
        fontweight="bold",
        va="center",
    )
    text = (
        f"10 s each at 25 mm/s: grid 0.2 s × 0.5 mV (minor 0.04 s × 0.1 mV), band-passed "
        f"{BAND_HZ[0]:g}–{BAND_HZ[1]:g} Hz{unit_note}.\nLetters: each beat's class at its R peak; ▼ flagged "
        f"beat (magenta: morphology, blue: rhythm); numbers at the bottom: RR intervals (s); shaded: the event."
        f"\n{note(start)}"
    )
    fig.text(LEFT_IN / fig_w, 1 - 0.5 / total_h, text, fontsize=8.5, va="top", color="#333333", linespacing=1.4)
    x_key = 1 - (RIGHT_IN + 1.6) / fig_w
    fig.text(x_key - 0.1 / fig_w, 1 - 0.25 / total_h, "classes:", fontsize=9, ha="right", va="center")
    for k, (c, colour) in enumerate(CLASS_COLOURS.items()):
        fig.text(
            x_key + k * 0.22 / fig_w,
            1 - 0.25 / total_h,
            c,
            color=colour,
            fontsize=12,
            fontweight="bold",
            va="center",
            family="monospace",
        )


def _draw_traces(ax, t: np.ndarray, traces: dict, bands: list, t0: float, y1: float) -> None:
    """Each lead in its band, below the letters' row, clipped to the band, with its name."""
    y = y1 - 0.5  # below the letters row
    for (name, x), (centre, span) in zip(traces.items(), bands, strict=True):
        mid = y - span / 2.0
        ax.plot(t, np.clip(x - centre, -span / 2, span / 2) + mid, color="black", lw=0.8, zorder=2)
        ax.text(
            t0 + 0.03,
            y - 0.12,
            f"{name} (mV)",
            fontsize=8,
            va="top",
            ha="left",
            zorder=3,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.75, "pad": 1},
        )
        y -= span


def _draw_beats(ax, marks: tuple, t0: float, t1: float, y0: float, y1: float) -> None:
    """Each beat's class letter at its R peak (▼ under a flagged one, coloured by its reason) and the RR
    intervals at the bottom."""
    t_all, cls_all, flag_all, reason_all = marks
    idx = np.flatnonzero((t_all >= t0) & (t_all < t1))
    for i in idx:
        c = cls_all[i]
        ax.text(
            t_all[i],
            y1 - 0.22,
            c,
            color=CLASS_COLOURS.get(c, "black"),
            fontsize=9,
            fontweight="bold",
            ha="center",
            va="center",
            zorder=3,
            family="monospace",
        )
        if flag_all[i]:
            ax.text(
                t_all[i],
                y1 - 0.45,
                "▼",
                color=REASON_COLOURS.get(reason_all[i], "black"),
                fontsize=6,
                ha="center",
                va="center",
                zorder=3,
            )
    for i in idx:
        if i + 1 < len(t_all) and t_all[i + 1] < t1:
            rr = t_all[i + 1] - t_all[i]
            ax.text(
                (t_all[i] + t_all[i + 1]) / 2,
                y0 + 0.15,
                f"{rr:.2f}",
                fontsize=6.5,
                ha="center",
                va="center",
                color="#333333",
                zorder=3,
            )


def _style_axes(ax, t0: float, t1: float, y0: float, y1: float, start: str | None) -> None:
    """Limits, ticks each second labelled with the time (:func:`beatflow.holter.clock.ticks`), no y axis, a
    light bottom spine."""
    ax.set_xlim(t0, t1)
    ax.set_ylim(y0, y1)
    ax.set_yticks([])
    positions, labels = zip(*ticks(t0, t1, start, max_ticks=STRIP_S + 1, steps=(1,)), strict=True)
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, fontsize=7.5)
    ax.tick_params(axis="x", length=2, pad=2)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.spines["bottom"].set_color("#999999")


def _draw_strip(fig, strip: tuple, marks: tuple, start: str | None, top: float, fig_w: float, total_h: float) -> None:
    """One event's strip, its top ``top`` inches from the figure's bottom: paper, the event's shading (and an
    AF onset's line), traces, beats, axes, and the title row."""
    ev, t, traces, bands, h_mv = strip
    width_in = STRIP_S * INCH_PER_S
    ax_h = h_mv * INCH_PER_MV
    bottom = top - TITLE_IN - ax_h
    ax = fig.add_axes((LEFT_IN / fig_w, bottom / total_h, width_in / fig_w, ax_h / total_h))
    y1 = 0.0
    y0 = -h_mv
    t0, t1 = ev.start_s, ev.start_s + STRIP_S
    _paper(ax, t0, t1, y0, y1)
    if ev.span:
        ax.axvspan(max(t0, ev.span[0]), min(t1, ev.span[1]), color=SPAN_COLOUR, alpha=0.6, zorder=0.5, lw=0)
    if ev.kind == "af_onset":
        ax.axvline(ev.at_s, color="#e07000", lw=1.2, ls="--", zorder=1)
    _draw_traces(ax, t, traces, bands, t0, y1)
    _draw_beats(ax, marks, t0, t1, y0, y1)
    _style_axes(ax, t0, t1, y0, y1, start)
    rate = "" if ev.rate_bpm is None else f"  ·  {ev.rate_bpm:.0f} bpm"
    fig.text(
        LEFT_IN / fig_w,
        (bottom + ax_h + 0.06) / total_h,
        f"{ev.number}. {ev.title}",
        fontsize=9.5,
        fontweight="bold",
        va="bottom",
        ha="left",
    )
    fig.text(
        (LEFT_IN + width_in) / fig_w,
        (bottom + ax_h + 0.06) / total_h,
        f"{ev.clock}{rate}",
        fontsize=8.5,
        va="bottom",
        ha="right",
        color="#444444",
    )


def draw_strips(
    events: list[Event], leads: dict, fs: float, scores, record: str, start: str | None = None, unit_note: str = ""
):
    """The strips' figure: one strip per event, stacked, each with its title (see the module docstring).

    Parameters
    ----------
    events : list of Event
        The strips, in order (:func:`select_events`).
    leads : dict of str to numpy.ndarray
        Lead name → the whole record's samples in mV (a numpy array, or a
        :class:`beatflow.io.tables.LeadStretches`: each strip is sliced out of it).
    fs : float
        Sampling frequency (Hz).
    scores : pandas.DataFrame
        ``scores.parquet`` (``time_s``, ``class``, ``anomaly``, ``reason``): the beats' marks.
    record : str
        The record's name, in the title.
    start : str, optional
        The recording's start (ISO 8601): clock times on the axes; None, elapsed times (said in the header).
    unit_note : str, optional
        Appended to the note on the scale.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    marks = _beat_marks(scores)
    drawn = _strip_contents(events, leads, fs)
    heights = [TITLE_IN + h * INCH_PER_MV + AXIS_IN + GAP_IN for *_, h in drawn]
    total_h = HEAD_IN + sum(heights) + 0.1 if drawn else HEAD_IN + 0.6
    fig_w = LEFT_IN + STRIP_S * INCH_PER_S + RIGHT_IN
    fig = Figure(figsize=(fig_w, total_h), dpi=DPI)
    _figure_header(fig, record, len(events), unit_note, start, fig_w, total_h)
    if not drawn:
        fig.text(LEFT_IN / fig_w, 1 - (HEAD_IN + 0.3) / total_h, "No events in this record.", fontsize=11)
        return fig
    top = total_h - HEAD_IN
    for strip, h_in in zip(drawn, heights, strict=True):
        _draw_strip(fig, strip, marks, start, top, fig_w, total_h)
        top -= h_in
    return fig


def _palette() -> list[tuple[int, int, int]]:
    """The figure's colours and their blends with its backgrounds (anti-aliased edges): at most 256."""
    from matplotlib.colors import to_rgb

    base = [
        "#ffffff",
        "#000000",
        "#333333",
        "#444444",
        "#999999",
        GRID_MAJOR,
        GRID_MINOR,
        SPAN_COLOUR,
        *CLASS_COLOURS.values(),
        *REASON_COLOURS.values(),
    ]
    rgb = [np.array(to_rgb(c)) for c in dict.fromkeys(base)]
    backgrounds = rgb[:1] + [np.array(to_rgb(c)) for c in (GRID_MAJOR, GRID_MINOR, SPAN_COLOUR)]
    out = list(rgb)
    for c in rgb:
        for b in backgrounds:
            out += [a * c + (1 - a) * b for a in (0.25, 0.5, 0.75)]
    colours = list(dict.fromkeys(tuple(int(round(255 * v)) for v in c) for c in out))
    return colours[:256]


def save_png(fig, path) -> None:
    """The figure as an 8-bit palette PNG of :func:`_palette`'s colours (no dithering): a quarter of the RGB
    file's size, the class colours kept exactly (a median-cut palette loses the rare ones)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3])
    colours = _palette()
    pal = Image.new("P", (1, 1))
    pal.putpalette([v for c in colours for v in c] + [0] * 3 * (256 - len(colours)))
    image.quantize(palette=pal, dither=Image.Dither.NONE).save(path, format="PNG", optimize=True)


def write_strips(
    record: str,
    summary: dict,
    scores,
    signal_path,
    png_path,
    json_path=None,
    max_af: int = MAX_AF,
    max_beats: int = MAX_BEATS,
) -> list[Event]:
    """Select the record's events, draw them from ``signal.parquet`` and write the figure and the events.

    Parameters
    ----------
    record : str
        The record's name.
    summary : dict
        The record's ``holter.json``.
    scores : pandas.DataFrame
        ``scores.parquet`` (``beat``, ``time_s``, ``score``, ``anomaly``, ``reason``, ``class``, ``family``).
    signal_path : path-like
        The record's ``signal.parquet`` (its first three leads are drawn).
    png_path : path-like
        Where the figure goes, an 8-bit palette PNG (:func:`save_png`), written atomically.
    json_path : path-like, optional
        Where the events go as JSON (:func:`write_events`), atomically; None writes none.
    max_af, max_beats : int, optional
        At most this many AF onsets, and anomalous beats (:func:`select_events`).

    Returns
    -------
    list of Event
        The events drawn, numbered as in the figure.
    """
    from beatflow.io.tables import read_signal_stretches, signal_info

    fs, names = signal_info(signal_path)
    leads = read_signal_stretches(signal_path, names[:3])  # each strip reads its own seconds
    events = select_events(summary, scores, max_af, max_beats, duration_s=len(leads[names[0]]) / fs)
    fig = draw_strips(events, leads, fs, scores, record, summary["start"])
    with atomic_path(Path(png_path)) as tmp:
        save_png(fig, tmp)
    if json_path is not None:
        write_events(events, record, json_path)
    log.info("strips %s: %d events", record, len(events))
    return events


def write_events(events: list[Event], record: str, path) -> None:
    with atomic_path(Path(path)) as tmp:
        Path(tmp).write_text(
            json.dumps({"record": record, "strip_s": STRIP_S, "events": [ev.as_json() for ev in events]}, indent=1)
        )
