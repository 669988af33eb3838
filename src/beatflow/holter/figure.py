"""The heart-rate trend of a whole record from its ``holter.json`` and its beats: per minute the mean rate
(line, ``holter.json``'s minutes) and the slowest-to-fastest rate of its sinus (N–N) intervals (band: a
premature beat's intervals left out), artefact and AF episodes shaded, tachycardia episodes (VT, SVT), the
slower runs and the fastest and slowest 8 sinus beats marked at their rate; clock times on the axis when the
start is known (elapsed otherwise). Holoviews with the bokeh and matplotlib renderers, saved as HTML and PNG
like every report figure (:func:`beatflow.report.plots.save`); the legend sits outside the plot and lists only
what is drawn."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from beatflow.holter.clock import axis_label, ticks
from beatflow.holter.summary import SINUS_BEATS, TACHYCARDIA_BPM, analysable, minute_table
from beatflow.report.colours import CLASS_COLOURS

TICK_STEPS_S = (300, 600, 900, 1800, 3600, 7200, 10800, 14400)
MEAN_COLOUR, BAND_COLOUR, AF_COLOUR, ARTEFACT_COLOUR = "navy", "steelblue", "orange", "#999999"
BAND_ALPHA, SHADE_ALPHA = 0.3, 0.25


@dataclass
class Mark:
    """A run class drawn as a scatter: its legend ``label``, colour, and bokeh / matplotlib marker."""

    label: str
    colour: str
    bokeh: str
    matplotlib: str


MARKS = {
    "VT": Mark(f"VT (≥ 3 V at ≥ {TACHYCARDIA_BPM:.0f} bpm)", CLASS_COLOURS["V"], "triangle", "^"),
    "SVT": Mark(f"SVT (≥ 3 S at ≥ {TACHYCARDIA_BPM:.0f} bpm)", CLASS_COLOURS["S"], "triangle", "^"),
    "V": Mark(f"V run under {TACHYCARDIA_BPM:.0f} bpm", CLASS_COLOURS["V"], "circle", "o"),
    "S": Mark(f"S run under {TACHYCARDIA_BPM:.0f} bpm", CLASS_COLOURS["S"], "circle", "o"),
    "fastest": Mark(f"fastest {SINUS_BEATS} sinus beats", MEAN_COLOUR, "triangle", "^"),
    "slowest": Mark(f"slowest {SINUS_BEATS} sinus beats", MEAN_COLOUR, "inverted_triangle", "v"),
}
MEAN_LABEL = "per minute: mean rate"
BAND_LABEL = "per minute: slowest–fastest sinus (N–N) beat"
AF_LABEL = "AF/flutter"
ARTEFACT_LABEL = "artefact (no lead readable)"


def time_ticks(duration_s: float, start: str | None = None, max_ticks: int = 12) -> list[tuple[float, str]]:
    """``(hours from the start, "HH:MM")`` ticks at round clock times (elapsed without a start), 5 min … 4 h
    apart, at most ``max_ticks``."""
    return [(s / 3600.0, label[:5]) for s, label in ticks(0.0, duration_s, start, max_ticks, TICK_STEPS_S)]


def sinus_band(summary: dict, time_s, classes) -> tuple[np.ndarray, np.ndarray]:
    """``(slowest, fastest)`` bpm per whole minute of ``summary``'s minutes: of the analysable intervals
    between two N beats that end in it (:func:`beatflow.holter.summary.analysable` with the artefact
    excluded), NaN where a minute has none."""
    order = np.argsort(np.asarray(time_s, np.float64), kind="stable")
    t, c = np.asarray(time_s, np.float64)[order], np.asarray(classes).astype(str)[order]
    artefact = [(e["start_s"], e["end_s"]) for e in summary["artefact"]["episodes"]]
    nn = analysable(t, artefact) & (c[:-1] == "N") & (c[1:] == "N")
    rows = minute_table(t, nn, summary["duration_s"] or 0.0)
    lo = np.array([np.nan if m["min_bpm"] is None else m["min_bpm"] for m in rows], np.float64)
    hi = np.array([np.nan if m["max_bpm"] is None else m["max_bpm"] for m in rows], np.float64)
    return lo, hi


def _points(summary: dict) -> dict[str, list[tuple[float, float]]]:
    """``(start_s, bpm)`` of what is marked, by :data:`MARKS` key: the tachycardia episodes, the other V and S
    runs, the fastest and the slowest :data:`~beatflow.holter.summary.SINUS_BEATS` sinus beats."""
    tachycardia = summary["tachycardia"]
    fast = {({"VT": "V", "SVT": "S"}[t["kind"]], t["start_s"]) for t in tachycardia}
    out = {kind: [(t["start_s"], t["rate_bpm"]) for t in tachycardia if t["kind"] == kind] for kind in ("VT", "SVT")}
    for key, part in (("V", "ventricular"), ("S", "supraventricular")):
        runs = summary[part]["runs"]
        out[key] = [(r["start_s"], r["rate_bpm"]) for r in runs if (key, r["start_s"]) not in fast and r["rate_bpm"]]
    for key in ("fastest", "slowest"):
        extreme = summary["heart_rate"][key]
        out[key] = [] if extreme["bpm"] is None else [(extreme["at_s"], extreme["bpm"])]
    return out


def _shades(hv, summary: dict, top: float, x: str, y: str) -> list:
    """The artefact and AF episodes as full-height rectangles (only those the record has)."""
    out = []
    for spans, label, colour in (
        ([(e["start_s"], e["end_s"]) for e in summary["artefact"]["episodes"]], ARTEFACT_LABEL, ARTEFACT_COLOUR),
        ([(e["start_s"], e["end_s"]) for e in summary["af"]["episodes"]], AF_LABEL, AF_COLOUR),
    ):
        if spans:
            boxes = [(a / 3600.0, 0.0, b / 3600.0, top) for a, b in spans]
            out.append(
                hv.Rectangles(boxes, [x, y, f"{x} end", f"{y} end"], label=label).opts(
                    hv.opts.Rectangles(fill_color=colour, fill_alpha=SHADE_ALPHA, line_alpha=0, backend="bokeh"),
                    hv.opts.Rectangles(facecolor=colour, alpha=SHADE_ALPHA, linewidth=0, backend="matplotlib"),
                )
            )
    return out


def _marks(hv, points: dict[str, list[tuple[float, float]]], x: str, y: str) -> list:
    """:func:`_points` as scatters at their time and rate (:data:`MARKS`; only the kinds the record has)."""
    out = []
    for key, part in points.items():
        if part:
            m = MARKS[key]
            out.append(
                hv.Scatter([(t / 3600.0, bpm) for t, bpm in part], x, y, label=m.label).opts(
                    hv.opts.Scatter(color=m.colour, marker=m.bokeh, size=8, backend="bokeh"),
                    hv.opts.Scatter(color=m.colour, marker=m.matplotlib, s=30, backend="matplotlib"),
                )
            )
    return out


def _title(summary: dict, runs: dict[str, list]) -> str:
    """The figure's title: record, mean rate, AF episodes and burden, tachycardia episodes, artefact."""
    hr, af = summary["heart_rate"], summary["af"]
    mean_txt = "—" if hr["mean_bpm"] is None else f"{hr['mean_bpm']:.0f}"
    artefact = summary["artefact"]["total_s"] or 0.0
    return (
        f"{summary['record']}: heart rate (mean {mean_txt} bpm); {len(af['episodes'])} AF episodes "
        f"(burden {100 * (af['burden'] or 0):.1f} %); {len(runs['VT'])} VT, {len(runs['SVT'])} SVT; "
        f"artefact {artefact / 60:.1f} min"
    )


def _legend_handles(drawn: list[str]) -> list:
    """The PNG's legend entries of the labels ``drawn`` (holoviews' matplotlib legend leaves areas out)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = {
        MEAN_LABEL: Line2D([], [], color=MEAN_COLOUR, linewidth=1.2),
        BAND_LABEL: Patch(color=BAND_COLOUR, alpha=BAND_ALPHA),
        AF_LABEL: Patch(color=AF_COLOUR, alpha=SHADE_ALPHA),
        ARTEFACT_LABEL: Patch(color=ARTEFACT_COLOUR, alpha=SHADE_ALPHA),
        **{m.label: Line2D([], [], color=m.colour, marker=m.matplotlib, linestyle="") for m in MARKS.values()},
    }
    return [handles[label] for label in drawn]


def _legend_hook(drawn: list[str]):
    """A matplotlib hook: the legend of ``drawn`` below the plot, clear of the data."""

    def hook(plot, element) -> None:
        ax = plot.handles["axis"]
        if ax.get_legend():
            ax.get_legend().remove()
        ax.legend(
            handles=_legend_handles(drawn),
            labels=drawn,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
            ncols=min(len(drawn), 4),
            fontsize=8,
            frameon=False,
        )

    return hook


def heart_rate_plot(summary: dict, beats=None):
    """The holoviews overlay of the trend (see the module docstring).

    Parameters
    ----------
    summary : dict
        The record's ``holter.json``.
    beats : tuple of (array_like, array_like), optional
        ``(time_s, class)`` of every beat, for the sinus band (:func:`sinus_band`); None draws no band.

    Returns
    -------
    holoviews.Overlay
    """
    from beatflow.report.plots import load_holoviews

    hv = load_holoviews()
    duration_s = summary["duration_s"] or 60.0
    x, y = axis_label(summary["start"], "hh:mm"), "heart rate (bpm)"
    minutes = summary["heart_rate"]["minutes"]
    hours = np.array([(m["start_s"] + 30.0) / 3600.0 for m in minutes])
    mean = np.array([np.nan if m["bpm"] is None else m["bpm"] for m in minutes], np.float64)
    points = _points(summary)
    rates = [mean, *([bpm for _, bpm in part] for part in points.values())]
    layers, drawn = [], []
    if beats is not None:
        lo, hi = sinus_band(summary, *beats)
        rates += [hi]
        layers.append(
            hv.Area((hours, lo, hi), x, [y, "fastest"], label=BAND_LABEL).opts(
                hv.opts.Area(color=BAND_COLOUR, alpha=BAND_ALPHA, line_alpha=0, backend="bokeh"),
                hv.opts.Area(color=BAND_COLOUR, alpha=BAND_ALPHA, linewidth=0, backend="matplotlib"),
            )
        )
        drawn.append(BAND_LABEL)
    every = np.concatenate([np.asarray(r, np.float64) for r in rates])
    top = 1.1 * float(np.nanmax(every)) if np.isfinite(every).any() else 120.0
    shades = _shades(hv, summary, top, x, y)
    line = hv.Curve((hours, mean), x, y, label=MEAN_LABEL).opts(
        hv.opts.Curve(color=MEAN_COLOUR, line_width=1.5, backend="bokeh"),
        hv.opts.Curve(color=MEAN_COLOUR, linewidth=1.2, backend="matplotlib"),
    )
    marks = _marks(hv, points, x, y)
    drawn = [s.label for s in shades] + drawn + [MEAN_LABEL] + [m.label for m in marks]
    xticks = time_ticks(duration_s, summary["start"])
    xlim, ylim = (0.0, max(duration_s / 3600.0, 1 / 60)), (0.0, top)
    frame = {"title": _title(summary, points), "xticks": xticks, "xlim": xlim, "ylim": ylim, "xlabel": x, "ylabel": y}
    return hv.Overlay([*shades, *layers, line, *marks]).opts(*_overlay_opts(hv, frame, drawn))


def _overlay_opts(hv, frame: dict, drawn: list[str]) -> tuple:
    """The trend's overlay options, bokeh and matplotlib: its ``frame`` (title, ticks, limits, labels), size and
    legend (the matplotlib legend in the ``drawn`` order)."""
    return (
        hv.opts.Overlay(**frame, width=1100, height=380, legend_position="bottom", legend_cols=4, backend="bokeh"),
        hv.opts.Overlay(**frame, fig_inches=12, aspect=3.2, hooks=[_legend_hook(drawn)], backend="matplotlib"),
    )


def write_heart_rate_figure(summary: dict, stem, beats=None) -> None:
    """Write the heart-rate trend as ``stem.html`` and ``stem.png`` (atomically, as the report's other figures).

    Parameters
    ----------
    summary : dict
        The record's ``holter.json``.
    stem : path-like
        The figure's path without its suffix.
    beats : tuple of (array_like, array_like), optional
        ``(time_s, class)`` of every beat, for the sinus band (:func:`heart_rate_plot`).

    Returns
    -------
    None
    """
    from beatflow.report.plots import save

    save(heart_rate_plot(summary, beats), Path(stem))
