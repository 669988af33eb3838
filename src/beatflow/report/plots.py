"""plot: holoviews figures of one record, each saved as bokeh HTML and as PNG (matplotlib renderer, so no
browser is needed): the whole recording (a density image, and the waveform at full resolution when zoomed in
the HTML), the latent space of the held-out beats, the RR-interval histogram and a gallery of flagged beats
over the median normal beat. Beats are drawn in their AAMI class colour (:mod:`beatflow.report.colours`, as in
the event strips), flagged beats with a marker per reason; the HTML's hover gives each beat's time, class,
family, reason and score. Times are clock times when the recording's start is known (``signal.parquet``'s
``start``; the trace's axis is then in seconds from the midnight before it, so that its ticks fall on round
clock times), elapsed hh:mm:ss from the start otherwise (:mod:`beatflow.holter.clock`).

Drawn on the CPU whatever the backend: the figures come from small tables and one lead. The trace's density
image is one bincount (datashader's numba functions would compile in every fresh process)."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import numpy as np

from beatflow.holter.clock import STEPS_S, at, axis_label, day_offset_s, ticks
from beatflow.io.atomic import atomic_path
from beatflow.report.colours import CLASS_COLOURS

log = logging.getLogger("beatflow")

GALLERY_SIZE = 12
GALLERY_NORMALS = 2000  # unflagged beats in the median normal beat, at most
GALLERY_APART_S = 10.0  # the gallery's flagged beats at least this far apart, while there are enough
TRACE_PIXELS = (1600, 320)
DETAIL_SAMPLES = 500_000  # samples of the waveform the trace keeps at full resolution
DETAIL_HALF_S = 2.5  # either side of a flagged beat, when the record has more
DETAIL_SPAN_S = 60.0  # the trace draws the waveform when zoomed to at most this span
LENGTH_BINS = 120
MARKERS = {"morphology": ("triangle", "^"), "rhythm": ("square", "s")}  # bokeh, matplotlib; other reasons: circle
BEAT_COLUMNS = ["time", "beat", "class", "family", "reason", "score"]
HOVER = [
    ("time", "@time"),
    ("beat", "@beat"),
    ("class", "@class"),
    ("family", "@family"),
    ("reason", "@reason"),
    ("score", "@score{0.00}"),
]


_LOADED: list = []


def load_holoviews():
    """holoviews with the bokeh and matplotlib renderers loaded (once per process)."""
    if not _LOADED:
        t0 = time.perf_counter()
        import holoviews as hv

        hv.extension("bokeh", "matplotlib", logo=False)
        log.info("holoviews %s with bokeh and matplotlib loaded in %.2f s", hv.__version__, time.perf_counter() - t0)
        _LOADED.append(hv)
    return _LOADED[0]


def save(obj, stem: Path) -> None:
    """Write ``stem.html`` (bokeh, BokehJS inlined so it opens offline) and ``stem.png`` (matplotlib).

    The HTML is bokeh's own page of the rendered figure: holoviews' ``save`` goes through Panel, whose page
    adds Panel's scripts (half the file) and asks a CDN for Panel's stylesheets and a favicon (issue 26)."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    hv = load_holoviews()
    t0 = time.perf_counter()
    page = file_html(hv.render(obj, backend="bokeh"), INLINE, title=stem.name)
    with atomic_path(stem.with_suffix(".html")) as tmp:
        Path(tmp).write_text(page, encoding="utf-8")
    t1 = time.perf_counter()
    with atomic_path(stem.with_suffix(".png")) as tmp:
        hv.save(obj, tmp, backend="matplotlib", dpi=100)
    log.info("plot %s: HTML %.2f s, PNG %.2f s", stem.name, t1 - t0, time.perf_counter() - t1)


def hover_dimensions() -> list:
    """:data:`BEAT_COLUMNS` as holoviews dimensions for the hover only: each with a fixed range, so that
    holoviews computes no range of them (of thousands of clock strings, slow)."""
    hv = load_holoviews()
    return [hv.Dimension(name, range=(0, 1)) for name in BEAT_COLUMNS]


def beat_fields(frame, start: str | None = None) -> dict:
    """The hover's columns of scores rows (``time_s``, ``beat``, ``class``, ``family``, ``reason``, ``score``):
    the time as hh:mm:ss (:func:`beatflow.holter.clock.at`), the reason ``-`` where the beat is not flagged."""
    return {
        "time": np.array([at(t, start) for t in frame["time_s"].to_numpy()], dtype=object),
        "beat": frame["beat"].to_numpy(),
        "class": frame["class"].astype(str).to_numpy(),
        "family": frame["family"].to_numpy(),
        "reason": frame["reason"].astype(str).replace("", "-").to_numpy(),
        "score": frame["score"].to_numpy(),
    }


def _styled(element, bokeh: dict, matplotlib: dict):
    hv = load_holoviews()
    kind = type(element).__name__
    return element.opts(
        getattr(hv.opts, kind)(backend="bokeh", **bokeh), getattr(hv.opts, kind)(backend="matplotlib", **matplotlib)
    )


def latent_pcs(latent) -> np.ndarray:
    """``[n, 2]``: the latent means on their first two principal components (a second column of zeros for a
    one-dimensional latent space)."""
    z = latent[[c for c in latent.columns if c.startswith("z")]].to_numpy(np.float64)
    z = z - z.mean(axis=0)
    if z.shape[1] > 2:
        z = z @ np.linalg.svd(z, full_matrices=False)[2][:2].T
    elif z.shape[1] == 1:
        z = np.column_stack([z[:, 0], np.zeros(len(z))])
    return z


def flagged_layers(make, coords: dict, fields: dict, size: float = 7) -> list:
    """One layer of the flagged beats per class and reason: ``make(data, label)`` builds it from ``coords``
    and ``fields`` (:func:`beat_fields`) of those beats; the class colour, a marker per reason."""
    out = []
    for c, colour in CLASS_COLOURS.items():
        for reason in dict.fromkeys(fields["reason"]):
            m = (fields["class"] == c) & (fields["reason"] == reason)
            if not m.any():
                continue
            bokeh_marker, mpl_marker = MARKERS.get(reason, ("circle", "o"))
            data = {**{k: v[m] for k, v in coords.items()}, **{k: v[m] for k, v in fields.items()}}
            out.append(
                _styled(
                    make(data, f"{c}, {reason} ({int(m.sum())})"),
                    dict(color=colour, marker=bokeh_marker, size=size, line_color="white"),
                    dict(color=colour, marker=mpl_marker, s=2 * size, edgecolors="white", linewidth=0.3),
                )
            )
    return out


def latent_plot(latent, record: str, start: str | None = None):
    """Held-out beats in the latent space (first two principal components): unflagged beats as small dots and
    flagged beats as larger markers (a triangle for morphology, a square for rhythm), all in their AAMI class
    colour; the hover gives each beat's time, class, family, reason and score. ``latent``: latent.parquet
    joined with the beats' scores rows; ``start``: the recording's (ISO 8601), for clock times."""
    hv = load_holoviews()
    z = latent_pcs(latent)
    pc = [hv.Dimension("pc1", label="latent PC 1 (unitless)"), hv.Dimension("pc2", label="latent PC 2 (unitless)")]
    fields = beat_fields(latent, start)
    flagged = latent["anomaly"].to_numpy(bool)
    layers = []
    for c, colour in CLASS_COLOURS.items():
        m = ~flagged & (fields["class"] == c)
        if m.any():
            data = {"pc1": z[m, 0], "pc2": z[m, 1], **{k: v[m] for k, v in fields.items()}}
            layers.append(
                _styled(
                    hv.Points(data, pc, hover_dimensions(), label=f"{c}, not flagged ({int(m.sum())})"),
                    dict(color=colour, size=3, alpha=0.5, line_alpha=0),
                    dict(color=colour, s=3, alpha=0.5),
                )
            )
    flagged_fields = {k: v[flagged] for k, v in fields.items()}
    layers += flagged_layers(
        lambda data, label: hv.Points(data, pc, hover_dimensions(), label=label),
        {"pc1": z[flagged, 0], "pc2": z[flagged, 1]},
        flagged_fields,
    )
    title = f"{record}: latent space of {len(latent)} held-out beats, {int(flagged.sum())} flagged"
    return hv.Overlay(layers).opts(
        hv.opts.Points(tools=["hover"], hover_tooltips=HOVER, backend="bokeh"),
        hv.opts.Overlay(title=title, width=900, height=550, legend_position="right", backend="bokeh"),
        hv.opts.Overlay(title=title, fig_inches=(9, 5.5), legend_position="right", backend="matplotlib"),
    )


def scan_lead(x, peaks, windows: np.ndarray, shape: tuple[int, int] = TRACE_PIXELS):
    """One pass over lead ``x`` (an array or a :class:`beatflow.io.tables.LeadStretches`, a chunk in memory at
    a time): ``(image, y_range, at_peaks, kept)``. ``image`` counts the samples in each pixel of a ``width ×
    height`` image of the whole recording (the count aggregate datashader draws, one bincount a chunk at a
    time), ``[height, width]`` with its top row at the largest value and NaN where no sample falls; ``at_peaks``
    the samples at ``peaks``; ``kept`` the samples of ``windows`` (:func:`detail_windows`), end to end."""
    from beatflow.io.tables import lead_chunks, lead_range

    width, height = shape
    n = len(x)
    lo, hi = lead_range(x)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    counts = np.zeros(width * height, dtype=np.int64)
    scale = np.float32(height / (hi - lo))
    order = np.argsort(np.asarray(peaks, np.int64), kind="stable")
    peaks = np.asarray(peaks, np.int64)[order]
    at_peaks = np.zeros(len(peaks), np.float32)
    lengths = (windows[:, 1] - windows[:, 0]).astype(np.int64)
    kept, offsets = np.zeros(int(lengths.sum()), np.float32), np.cumsum(lengths) - lengths
    for start, part in lead_chunks(x):
        part = np.asarray(part, dtype=np.float32)
        end = start + part.shape[0]
        row = np.minimum(((part - np.float32(lo)) * scale).astype(np.int32), height - 1)
        cell = ((np.arange(start, end, dtype=np.int64) * width) // n).astype(np.int32)
        cell *= height
        cell += row
        counts += np.bincount(cell, minlength=width * height)
        here = slice(*np.searchsorted(peaks, [start, end]))
        at_peaks[here] = part[peaks[here] - start]
        first, last = np.searchsorted(windows[:, 1], start, "right"), np.searchsorted(windows[:, 0], end)
        for k in range(first, last):  # the windows this chunk overlaps (they are in order and apart)
            a, b = max(windows[k, 0], start), min(windows[k, 1], end)
            kept[offsets[k] + a - windows[k, 0] : offsets[k] + b - windows[k, 0]] = part[a - start : b - start]
    image = counts.reshape(width, height).T[::-1].astype(np.float64)
    image[image == 0] = np.nan
    return image, (lo, hi), at_peaks[np.argsort(order)], kept


def detail_windows(
    n: int, fs: float, peaks, scores, budget: int = DETAIL_SAMPLES, half_s: float = DETAIL_HALF_S
) -> np.ndarray:
    """``[k, 2]`` sample windows ``[start, end)`` of the waveform kept at full resolution, in time order: the
    whole record when it has at most ``budget`` samples, else ``half_s`` either side of the flagged beats
    (``peaks``), the highest ``scores`` first, as many as the budget holds, overlapping windows merged."""
    if n <= budget:
        return np.array([[0, n]], dtype=np.int64)
    h = max(int(half_s * fs), 1)
    top = np.argsort(-np.asarray(scores, np.float64), kind="stable")[: max(budget // (2 * h), 1)]
    p = np.sort(np.asarray(peaks, np.int64)[top])
    if not len(p):
        return np.zeros((0, 2), dtype=np.int64)
    starts, ends = np.clip(p - h, 0, n), np.clip(p + h, 0, n)
    new = np.concatenate([[True], starts[1:] > np.maximum.accumulate(ends)[:-1]])
    return np.column_stack([starts[new], np.maximum.reduceat(ends, np.flatnonzero(new))]).astype(np.int64)


WAVEFORM_JS = """
const a = xr.start, b = xr.end, zoomed = b - a <= limit;
image.glyph.global_alpha = zoomed ? 0.2 : 1.0;
line.visible = zoomed;
if (!zoomed) return;
const y = store.data.y, st = windows.data.start, off = windows.data.offset, len = windows.data.length;
const i0 = Math.floor((a - t0) * fs) - 1, i1 = Math.ceil((b - t0) * fs) + 1, xs = [], ys = [];
for (let k = 0; k < st.length; k++) {
  const lo = Math.max(st[k], i0), hi = Math.min(st[k] + len[k], i1);
  if (lo >= hi) continue;
  for (let i = lo; i < hi; i++) { xs.push(t0 + i / fs); ys.push(y[off[k] + i - st[k]] * scale); }
  xs.push(NaN); ys.push(NaN);
}
source.data = {x: xs, y: ys};
"""


def waveform_store(kept: np.ndarray, windows: np.ndarray) -> dict:
    """The windows' samples ``kept`` (end to end, :func:`scan_lead`) as int16 (``y`` × ``scale`` = the signal)
    with each window's ``start`` (sample), ``offset`` into ``y`` and ``length``: what the trace's page draws
    when zoomed in."""
    y = np.asarray(kept, np.float32)
    peak = float(np.abs(y).max()) if y.size else 0.0
    scale = peak / 32000.0 if peak > 0 else 1.0
    lengths = (windows[:, 1] - windows[:, 0]).astype(np.int32)
    return {
        "y": np.round(y / scale).astype(np.int16),
        "scale": scale,
        "start": windows[:, 0].astype(np.int32),
        "offset": (np.cumsum(lengths) - lengths).astype(np.int32),
        "length": lengths,
    }


def _waveform_hook(store: dict, fs: float, limit_s: float, t0: float):
    """A bokeh hook: a line of the stored full-resolution waveform (sample i at ``t0 + i / fs`` on the axis),
    drawn (and the density image faded) while the visible span is at most ``limit_s``."""

    def hook(plot, element) -> None:
        from bokeh.models import ColumnDataSource, CustomJS
        from bokeh.models import Image as ImageGlyph

        fig = plot.state
        image = next(r for r in fig.renderers if isinstance(getattr(r, "glyph", None), ImageGlyph))
        source = ColumnDataSource({"x": np.zeros(0), "y": np.zeros(0)})
        line = fig.line("x", "y", source=source, color="black", line_width=1.0, visible=False, level="underlay")
        windows = ColumnDataSource({k: store[k] for k in ("start", "offset", "length")})
        code = CustomJS(
            args=dict(
                xr=fig.x_range,
                image=image,
                line=line,
                source=source,
                windows=windows,
                store=ColumnDataSource({"y": store["y"]}),
                fs=float(fs),
                t0=float(t0),
                scale=store["scale"],
                limit=float(limit_s),
            ),
            code=WAVEFORM_JS,
        )
        fig.x_range.js_on_change("start", code)
        fig.x_range.js_on_change("end", code)
        if fig.x_range.end - fig.x_range.start <= limit_s:  # a record shorter than the limit: drawn from the start
            source.data = {
                "x": t0 + np.concatenate([np.arange(a, a + n) / fs for a, n in zip(store["start"], store["length"])]),
                "y": store["y"] * store["scale"],
            }
            line.visible, image.glyph.global_alpha = True, 0.2

    return hook


def trace_plot(x, fs: float, lead: str, flagged, record: str, start: str | None = None):
    """The whole recording ``x`` (an array or a :class:`beatflow.io.tables.LeadStretches`, read once by
    :func:`scan_lead`) as a density image with the flagged beats (scores rows) at their R peaks, coloured by
    class, shaped by reason, with a hover; zoomed in to at most :data:`DETAIL_SPAN_S`, the page draws the
    waveform at full resolution where :func:`detail_windows` kept it. The axis: clock time when ``start``
    (ISO 8601) is known, elapsed time otherwise (module docstring)."""
    hv = load_holoviews()
    peaks = flagged.peak.to_numpy()
    windows = detail_windows(len(x), fs, peaks, flagged.score.to_numpy())
    image, (lo, hi), at_peaks, kept = scan_lead(x, peaks, windows)
    t0, duration_s = day_offset_s(start), len(x) / fs
    t = hv.Dimension("t", label=axis_label(start))
    y = hv.Dimension("mv", label=f"{lead} (mV)")  # the signal is in mV (WFDB, EDF; CSV as given)
    density = hv.Image(image.astype(np.float32), bounds=(t0, lo, t0 + duration_s, hi), kdims=[t, y], vdims=["samples"])
    marks = flagged_layers(
        lambda data, label: hv.Scatter(data, t, [y, *hover_dimensions()], label=label),
        {"t": t0 + flagged.time_s.to_numpy(), "mv": at_peaks},
        beat_fields(flagged, start),
    )
    where = "the whole record" if len(kept) == len(x) else f"{len(windows)} stretches around the top flagged beats"
    title = f"{record}: {lead}, {len(flagged)} flagged beats"
    titles = (f"{title} (zoom to ≤ {DETAIL_SPAN_S:.0f} s for the waveform: {where})", title)
    xticks = [(t0 + s, label) for s, label in ticks(0.0, duration_s, start)]
    overlay = hv.Overlay([density, *marks])
    return _trace_opts(overlay, titles, waveform_store(kept, windows), fs, t0, xticks, wrap=start is not None)


CLOCK_JS = """
const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 1;
const s = wrap ? Math.max(tick, 0) % 86400 : Math.max(tick, 0);
const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s - 60 * Math.floor(s / 60);
const digits = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
const ss = sec.toFixed(digits).padStart(digits ? 3 + digits : 2, "0");
return String(h).padStart(2, "0") + ":" + String(m).padStart(2, "0") + ":" + ss;
"""


def _clock_axis(wrap: bool) -> dict:
    """Bokeh options of a time axis in seconds drawn as hh:mm:ss: ticks at round seconds, minutes and hours
    (tenths and hundredths of a second when zoomed further); ``wrap``: the axis is the time of day in seconds,
    its labels turn at midnight."""
    from bokeh.models import AdaptiveTicker, CompositeTicker, CustomJSTickFormatter, SingleIntervalTicker

    fine = AdaptiveTicker(mantissas=[1, 2, 5], base=10, max_interval=0.5, num_minor_ticks=0)
    ticker = CompositeTicker(tickers=[fine, *[SingleIntervalTicker(interval=s, num_minor_ticks=0) for s in STEPS_S]])
    return dict(xticks=ticker, xformatter=CustomJSTickFormatter(code=CLOCK_JS, args={"wrap": wrap}))


def _trace_opts(overlay, titles: tuple[str, str], store: dict, fs: float, t0: float, xticks: list, wrap: bool):
    """The trace's options: ``titles`` (the HTML's, which says how to zoom, and the PNG's), the HTML's
    waveform on zooming (:func:`_waveform_hook`) and clock axis, the PNG's ``xticks``."""
    hv = load_holoviews()
    return overlay.opts(
        hv.opts.Image(cmap="Blues", cnorm="eq_hist", backend="bokeh"),
        hv.opts.Image(cmap="Blues", cnorm="eq_hist", backend="matplotlib"),
        hv.opts.Scatter(tools=["hover"], hover_tooltips=HOVER, backend="bokeh"),
        hv.opts.Overlay(
            title=titles[0],
            width=1250,
            height=360,
            legend_position="right",
            backend="bokeh",
            hooks=[_waveform_hook(store, fs, DETAIL_SPAN_S, t0)],
            **_clock_axis(wrap),
        ),
        hv.opts.Overlay(
            title=titles[1],
            aspect=4,
            fig_size=400,
            legend_position="right",
            backend="matplotlib",
            xticks=xticks,
        ),
    )


def rr_histogram(rr_s: np.ndarray, upper_s: float, bins: int = LENGTH_BINS):
    """``(counts, edges, over)``: the histogram of the RR intervals up to ``upper_s`` and how many are longer."""
    rr_s = np.asarray(rr_s, np.float64)
    counts, edges = np.histogram(rr_s[rr_s <= upper_s], bins=bins, range=(0.0, upper_s))
    return counts, edges, int((rr_s > upper_s).sum())


def lengths_plot(length_s: np.ndarray, min_rr_s: float, max_rr_s: float, record: str):
    """Histogram of the RR intervals (each detected beat's time to the next R peak) with the pruning bounds, up
    to 1.25 × the upper bound; the intervals longer than that as one grey overflow bar beside it, labelled."""
    hv = load_holoviews()
    upper = 1.25 * max_rr_s
    counts, edges, over = rr_histogram(length_s, upper)
    rr, n = hv.Dimension("rr", label="RR interval (s)"), hv.Dimension("beats", label="beats (count)")
    w = edges[1] - edges[0]
    overflow = hv.Histogram(([upper + 2 * w, upper + 8 * w], [over]), kdims=[rr], vdims=[n])
    text = hv.Labels(([upper + 5 * w], [over], [f"> {upper:.2f} s: {over}"]), [rr, n], "text")
    bounds = hv.VLine(min_rr_s) * hv.VLine(max_rr_s)
    title = (
        f"{record}: RR intervals, pruning bounds {min_rr_s}–{max_rr_s} s (dashed); "
        f"{over} longer than {upper:.2f} s (grey bar)"
    )
    ticks = [float(v) for v in np.arange(0.0, upper + 1e-9, 0.5 if upper > 2 else 0.25)]  # none under the bar
    grey = dict(fill_color="#999999", line_color="#666666"), dict(facecolor="#999999", edgecolor="#666666")
    return (hv.Histogram((edges, counts), kdims=[rr], vdims=[n]) * _styled(overflow, *grey) * text * bounds).opts(
        hv.opts.Labels(text_baseline="bottom", text_font_size="9pt", text_color="#555555", backend="bokeh"),
        hv.opts.Labels(verticalalignment="bottom", size=8, color="#555555", backend="matplotlib"),
        hv.opts.VLine(color="red", line_dash="dashed", backend="bokeh"),
        hv.opts.VLine(color="red", linestyle="--", backend="matplotlib"),
        hv.opts.Overlay(title=title, width=750, height=350, xticks=ticks, backend="bokeh"),
        hv.opts.Overlay(title=title, aspect=2, fig_size=200, xticks=ticks, backend="matplotlib"),
    )


def gallery_plot(
    rows: np.ndarray,
    normal: np.ndarray,
    info,
    fs: float,
    lead: str,
    record: str,
    pre_peak_s: float = 0.0,
    start: str | None = None,
):
    """The gallery's beats (first lead, ``rows`` [k, L], NaN past each beat's end) each over the median normal
    beat ``normal`` [L] (light grey), stacked top to bottom in :func:`gallery_pick`'s order in one panel, each in
    its class colour, time from the R peak (the rows start ``pre_peak_s`` before it), with a 1 mV bar. Beside
    each trace, clear of it, two lines: beat, time (:func:`beatflow.holter.clock.at` of ``start``), class and
    family; reason, score and the RR intervals before and after (``info``'s ``rr_before_s`` / ``rr_after_s``
    where it has them). One panel: a layout of k panels renders far slower (docs/experiments/speed.md §5.5)."""
    hv = load_holoviews()
    t = np.arange(rows.shape[1]) / fs - pre_peak_s
    finite = np.concatenate([rows[np.isfinite(rows)], normal[np.isfinite(normal)], [0.0]])
    step = 1.1 * max(float(finite.max() - finite.min()), 1e-6)
    offsets = -step * np.arange(len(rows))
    x, y = "time from the R peak (s)", f"{lead} (mV)"
    classes = info["class"].astype(str).to_numpy() if "class" in info else np.full(len(rows), "")
    paths = _coloured(hv.Path([np.column_stack([t, normal + o]) for o in offsets], [x, y]), "#bbbbbb")
    for c in dict.fromkeys(classes):
        mine = np.flatnonzero(classes == c)
        paths = paths * _coloured(
            hv.Path([np.column_stack([t, rows[i] + offsets[i]]) for i in mine], [x, y]), CLASS_COLOURS.get(c, "crimson")
        )
    text = [
        f"beat {int(b.beat)} at {at(b.time_s, start)}{_class_of(b)}\n{b.reason or 'not flagged'} {b.score:.2f}"
        f"{_rr_text(b)}"
        for _, b in info.iterrows()
    ]
    span = t[-1] - t[0]
    labels = hv.Labels((np.full(len(rows), t[-1] + 0.05 * span), offsets, text), [x, y], "beat")
    bar = _scale_bar(hv, t[0], (offsets[-1] if len(offsets) else 0.0) - 0.5 * step, [x, y])
    flagged = int(info["anomaly"].sum()) if "anomaly" in info else len(rows)
    title = (
        f"{record}: {len(rows)} most anomalous beats ({flagged} flagged) in their class colour, "
        "over the median normal beat (grey)"
    )
    xlim = (t[0], t[-1] + span)  # the right half holds the labels
    xticks = [float(v) for v in np.arange(np.ceil(t[0] / 0.2) * 0.2, t[-1] + 1e-9, 0.2)]
    height = max(len(rows), 4)
    return (paths * labels * bar).opts(
        hv.opts.Labels(
            text_align="left", text_baseline="middle", text_font_size="8pt", text_color="black", backend="bokeh"
        ),
        hv.opts.Labels(
            horizontalalignment="left", verticalalignment="center", size=7.5, color="black", backend="matplotlib"
        ),
        hv.opts.Overlay(
            title=title, width=1000, height=70 * height, xlim=xlim, xticks=xticks, yaxis=None, backend="bokeh"
        ),
        hv.opts.Overlay(
            title=title, fig_inches=(10, 0.7 * height), xlim=xlim, xticks=xticks, yaxis=None, backend="matplotlib"
        ),
    )


def _scale_bar(hv, x0: float, y0: float, kdims: list[str]):
    """The gallery's 1 mV bar from ``(x0, y0)`` up, and its label."""
    bar = _coloured(hv.Path([np.array([[x0, y0], [x0, y0 + 1.0]])], kdims), "black")
    return bar * hv.Labels(([x0 + 0.01], [y0 + 0.5], ["1 mV"]), kdims, "scale")


def _rr_text(beat) -> str:
    """``", RR 0.81 / 0.42 s"`` from a row's ``rr_before_s`` / ``rr_after_s`` (``""`` without them)."""
    before, after = beat.get("rr_before_s"), beat.get("rr_after_s")
    if before is None and after is None:
        return ""
    seconds = [("—" if v is None or not np.isfinite(v) else f"{v:.2f}") for v in (before, after)]
    return f", RR {seconds[0]} / {seconds[1]} s"


def _class_of(beat) -> str:
    """``", class V, family 2"`` for a scores row with a class (``", no family"`` for family −1; ``""`` without a
    class)."""
    if "class" not in beat:
        return ""
    if "family" not in beat:
        return f", class {beat['class']}"
    family = int(beat["family"])
    return f", class {beat['class']}, " + (f"family {family}" if family >= 0 else "no family")


def _coloured(path, color: str):
    return _styled(path, dict(color=color), dict(color=color))


def gallery_pick(kept, k: int = GALLERY_SIZE, apart_s: float = GALLERY_APART_S):
    """The gallery's beats, ``kept``'s index labels in order: the flagged beats taken in turn from each group of
    one reason and one family (the groups in the order of their top score, each group by score), leaving out a
    beat within ``apart_s`` of one already taken; when fewer than ``k``, the rest by score."""
    flagged = kept[kept.anomaly.to_numpy(bool)].sort_values("score", ascending=False, kind="stable")
    key = flagged.reason.astype(str) + "/" + flagged.family.astype(str)
    group = {g: i for i, g in enumerate(dict.fromkeys(key))}
    order = flagged.assign(_turn=key.groupby(key).cumcount(), _group=key.map(group))
    order = order.sort_values(["_turn", "_group"], kind="stable")
    chosen, times = [], []
    for label, t in zip(order.index, order.time_s.to_numpy(), strict=True):
        if len(chosen) == k:
            break
        if all(abs(t - u) >= apart_s for u in times):
            chosen.append(label)
            times.append(t)
    rest = kept.drop(index=chosen).sort_values("score", ascending=False, kind="stable")
    return chosen + rest.index[: k - len(chosen)].tolist()


def gallery_rows(rows: np.ndarray, kept, lengths=None):
    """The first lead of the gallery's kept beats (:func:`gallery_pick`) and the median of the unflagged ones
    (of :data:`GALLERY_NORMALS` of them spread evenly over the record, where it has more).
    ``kept`` is scores.parquet without the pruned beats: its row i is row i of the embedding ``rows``. With
    ``lengths`` (each kept beat's, in samples), the zero padding after a beat's end is NaN (drawn as nothing,
    not as a step to zero)."""
    top = kept.loc[gallery_pick(kept)]
    normal = np.flatnonzero(~kept.anomaly.to_numpy())
    if len(normal) == 0:
        normal = np.arange(len(kept))
    normal = normal[np.linspace(0, len(normal) - 1, min(len(normal), GALLERY_NORMALS)).astype(np.int64)]

    def first_lead(idx):
        part = rows[idx, 0, :].astype(np.float64)
        if lengths is not None:
            part[np.arange(part.shape[1])[None, :] >= np.asarray(lengths)[idx][:, None]] = np.nan
        return part

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a sample no normal beat reaches: NaN
        median = np.nanmedian(first_lead(normal), axis=0)
    return first_lead(top.index.to_numpy()), median, top


def plot(record: str, paths: dict, out_dir) -> None:
    """Rule ``plot``'s stage: the record's figures (trace, latent, lengths, gallery; HTML and PNG) into
    ``out_dir``; the RR bounds and a beat window's start are those the beats were made with (``beats.parquet``'s
    metadata).

    Parameters
    ----------
    record : str
        The record's name (in titles and messages).
    paths : dict
        ``signal``, ``beats``, ``embedding``, ``scores``, ``latent``: the record's artifacts.
    out_dir : path-like
        The folder of the figures.
    """
    from beatflow.backend import select_backend
    from beatflow.io.tables import beats_parameters, read_frame, read_signal_stretches, signal_info, signal_start

    select_backend("cpu")  # the figures are drawn on the CPU on both backends, as the rule's log says
    seg = beats_parameters(paths["beats"])
    out_dir = Path(out_dir)
    scores = read_frame(paths["scores"])
    beats = read_frame(paths["beats"])
    fs, leads = signal_info(paths["signal"])
    lead = leads[0]
    x = read_signal_stretches(paths["signal"], [lead])[lead]  # the trace reads it a row group at a time
    start = signal_start(paths["signal"])
    start = None if start is None else start.isoformat()
    save(trace_plot(x, fs, lead, scores[scores.anomaly], record, start), out_dir / "trace")
    latent = read_frame(paths["latent"]).drop(columns="score").merge(scores, on="beat", how="left")
    save(latent_plot(latent, record, start), out_dir / "latent")
    save(lengths_plot(beats.length.to_numpy() / fs, seg["min_rr_s"], seg["max_rr_s"], record), out_dir / "lengths")

    kept = scores[scores.split != "pruned"].reset_index(drop=True)
    lengths = beats.set_index("beat").length.reindex(kept.beat).to_numpy()
    embedding = np.load(paths["embedding"], mmap_mode="r", allow_pickle=False)  # reads the gallery's rows only
    top_rows, median, top = gallery_rows(embedding, kept, lengths)
    times = scores.sort_values("beat").time_s.to_numpy()  # beat = 0..n-1 in time order
    i = top.beat.to_numpy()
    last = len(times) - 1
    top = top.assign(
        rr_before_s=np.where(i > 0, times[i] - times[np.maximum(i - 1, 0)], np.nan),
        rr_after_s=np.where(i < last, times[np.minimum(i + 1, last)] - times[i], np.nan),
    )
    save(gallery_plot(top_rows, median, top, fs, lead, record, seg["pre_peak_s"], start), out_dir / "gallery")
    log.info("plot %s: 4 figures (HTML + PNG) in %s", record, out_dir)
