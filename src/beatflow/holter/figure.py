"""The heart-rate trend of a whole record from its ``holter.json``: per minute the mean rate (line) and the
slowest-to-fastest beat-to-beat rate (band), AF episodes shaded, ventricular and supraventricular runs marked at
their rate; time from the record's start as HH:MM. Holoviews with the bokeh and matplotlib renderers, saved as
HTML and PNG like every report figure (:func:`beatflow.report.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from beatflow.report.colours import CLASS_COLOURS
from beatflow.timefmt import clock


def time_ticks(duration_s: float, max_ticks: int = 12) -> list[tuple[float, str]]:
    """``(hours, "HH:MM")`` ticks at a round step (5 min … 4 h) that gives at most ``max_ticks`` ticks."""
    steps_min = (5, 10, 15, 30, 60, 120, 180, 240)
    total_min = max(duration_s / 60.0, 1.0)
    step = next((s for s in steps_min if total_min // s + 1 <= max_ticks), steps_min[-1])
    return [(m / 60.0, clock(m * 60.0)[:5]) for m in range(0, int(total_min) + 1, step)]


def _run_marks(hv, runs: dict[str, list[dict]], x: str, y: str):
    """The ventricular and supraventricular runs as scatters at their start and rate, in their class colours."""

    def scatter(kind: str, label: str):
        part = runs[kind]
        points = ([r["start_s"] / 3600.0 for r in part], [r["rate_bpm"] or np.nan for r in part])
        return hv.Scatter(points, x, y, label=label)

    v = scatter("ventricular", "V runs (≥ 3)").opts(
        hv.opts.Scatter(color=CLASS_COLOURS["V"], backend="bokeh"),
        hv.opts.Scatter(color=CLASS_COLOURS["V"], backend="matplotlib"),
    )
    s = scatter("supraventricular", "S runs (≥ 3)").opts(
        hv.opts.Scatter(color=CLASS_COLOURS["S"], marker="^", backend="matplotlib"),
        hv.opts.Scatter(color=CLASS_COLOURS["S"], marker="triangle", backend="bokeh"),
    )
    return v, s


def _title(summary: dict, n_episodes: int, runs: dict[str, list[dict]]) -> str:
    """The figure's title: record, mean rate, AF episodes and burden, run counts."""
    hr = summary["heart_rate"]
    mean_txt = "—" if hr["mean_bpm"] is None else f"{hr['mean_bpm']:.0f}"
    return (
        f"{summary['record']}: heart rate (mean {mean_txt} bpm), {n_episodes} AF episodes "
        f"(burden {100 * (summary['af']['burden'] or 0):.1f} %), "
        f"{len(runs['ventricular'])} V runs, {len(runs['supraventricular'])} S runs"
    )


def _rate_top(lo: np.ndarray, hi: np.ndarray, runs: dict[str, list[dict]]) -> float:
    """The highest rate drawn (band or run), 120 bpm where there is none."""
    rates = np.concatenate([lo, hi, [r["rate_bpm"] for part in runs.values() for r in part if r["rate_bpm"]]])
    return float(np.nanmax(rates)) if rates.size and np.isfinite(rates).any() else 120.0


def _styles(hv, title: str, ticks, xlim, ylim, x: str, y: str) -> list:
    """The overlay's options for both backends: element colours, sizes, axes and the legend."""
    return [
        hv.opts.VSpans(color="orange", alpha=0.25, backend="bokeh"),
        hv.opts.VSpans(color="orange", alpha=0.25, backend="matplotlib"),
        hv.opts.Area(color="steelblue", alpha=0.3, line_alpha=0, backend="bokeh"),
        hv.opts.Area(color="steelblue", alpha=0.3, linewidth=0, backend="matplotlib"),
        hv.opts.Curve(color="navy", line_width=1.5, backend="bokeh"),
        hv.opts.Curve(color="navy", linewidth=1.2, backend="matplotlib"),
        hv.opts.Scatter(size=7, backend="bokeh"),
        hv.opts.Scatter(s=25, backend="matplotlib"),
        hv.opts.Overlay(
            title=title,
            width=1100,
            height=360,
            xticks=ticks,
            xlim=xlim,
            legend_position="top_left",
            xlabel=x,
            ylabel=y,
            backend="bokeh",
        ),
        hv.opts.Overlay(
            title=title,
            aspect=3.5,
            fig_size=300,
            xticks=ticks,
            xlim=xlim,
            ylim=ylim,
            xlabel=x,
            ylabel=y,
            hooks=[_legend],
            backend="matplotlib",
        ),
    ]


def heart_rate_plot(summary: dict):
    """The holoviews overlay of the trend (see the module docstring)."""
    from beatflow.report.plots import load_holoviews

    hv = load_holoviews()
    minutes = [m for m in summary["heart_rate"]["minutes"] if m["bpm"] is not None]
    hours = np.array([(m["start_s"] + 30.0) / 3600.0 for m in minutes])
    mean = np.array([m["bpm"] for m in minutes], dtype=np.float64)
    lo = np.array([m.get("min_bpm") or m["bpm"] for m in minutes], dtype=np.float64)
    hi = np.array([m.get("max_bpm") or m["bpm"] for m in minutes], dtype=np.float64)
    x, y = "time from start (h:min)", "heart rate (bpm)"
    band = hv.Area((hours, lo, hi), x, [y, "max"], label="per minute: slowest–fastest beat")
    line = hv.Curve((hours, mean), x, y, label="per minute: mean")
    episodes = summary["af"]["episodes"]
    af = hv.VSpans([(e["start_s"] / 3600.0, e["end_s"] / 3600.0) for e in episodes], kdims=[x, y], label="AF/flutter")
    runs = {k: summary[k]["runs"] for k in ("ventricular", "supraventricular")}
    v, s = _run_marks(hv, runs, x, y)
    ticks = time_ticks(summary["duration_s"] or 60.0)
    xlim = (0.0, max((summary["duration_s"] or 60.0) / 3600.0, 1 / 60))
    ylim = (0.0, 1.3 * _rate_top(lo, hi, runs))  # room above the data for the legend
    return (af * band * line * v * s).opts(*_styles(hv, _title(summary, len(episodes), runs), ticks, xlim, ylim, x, y))


def _legend(plot, element) -> None:
    """The PNG's legend, with the band and the AF shading (holoviews' matplotlib legend leaves areas out)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Line2D([], [], color="navy", linewidth=1.2, label="per minute: mean"),
        Patch(color="steelblue", alpha=0.3, label="per minute: slowest–fastest beat"),
        Patch(color="orange", alpha=0.25, label="AF/flutter"),
        Line2D([], [], color=CLASS_COLOURS["V"], marker="o", linestyle="", label="V runs (≥ 3), at their rate"),
        Line2D([], [], color=CLASS_COLOURS["S"], marker="^", linestyle="", label="S runs (≥ 3), at their rate"),
    ]
    plot.handles["axis"].legend(handles=handles, loc="upper left", fontsize=8, ncols=3, framealpha=0.85)


def write_heart_rate_figure(summary: dict, stem) -> None:
    """Write the heart-rate trend as ``stem.html`` and ``stem.png`` (atomically, as the report's other figures).

    Parameters
    ----------
    summary : dict
        The record's ``holter.json``.
    stem : path-like
        The figure's path without its suffix.

    Returns
    -------
    None
    """
    from beatflow.report.plots import save

    save(heart_rate_plot(summary), Path(stem))
