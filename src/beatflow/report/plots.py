"""plot: holoviews figures of one record, each saved as bokeh HTML and as PNG (matplotlib renderer, so no
browser is needed): the latent space of the held-out beats, the whole recording (a density image), the
beat-length histogram and a gallery of the most anomalous beats over the median normal beat.

Drawn on the CPU whatever the backend: the figures come from small tables and one lead, and the GPU path
(cuDF frames for datashader) was slower on the 20 h record (25.3 s against 14.8 s for the rule) while it held
the workflow's one GPU slot. The trace's density image is one bincount (datashader's numba functions,
compiled in every fresh process, took 4.9 s of the rule on 2 cores)."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from beatflow.io.atomic import atomic_path
from beatflow.timefmt import clock

log = logging.getLogger("beatflow")

GALLERY_SIZE = 12
TRACE_PIXELS = (1600, 320)


_LOADING = threading.Lock()  # the warm worker loads it in a thread while a job may ask for it
_LOADED: list = []


def load_holoviews():
    """holoviews with the bokeh and matplotlib renderers loaded (once per process)."""
    with _LOADING:
        if not _LOADED:
            t0 = time.perf_counter()
            import holoviews as hv

            hv.extension("bokeh", "matplotlib", logo=False)
            log.info("holoviews %s with bokeh and matplotlib loaded in %.2f s", hv.__version__,
                     time.perf_counter() - t0)
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


def latent_plot(latent, record: str):
    """Held-out beats in the latent space (first two principal components), coloured by score; the hover names
    each beat's class and family when ``latent`` has them."""
    hv = load_holoviews()
    z = latent[[c for c in latent.columns if c.startswith("z")]].to_numpy(np.float64)
    z = z - z.mean(axis=0)
    if z.shape[1] > 2:
        z = z @ np.linalg.svd(z, full_matrices=False)[2][:2].T
    elif z.shape[1] == 1:
        z = np.column_stack([z[:, 0], np.zeros(len(z))])
    data = {"pc1": z[:, 0], "pc2": z[:, 1], "score": latent["score"].to_numpy(), "beat": latent["beat"].to_numpy()}
    extra = [c for c in ("class", "family") if c in latent]
    data.update({c: latent[c].to_numpy() for c in extra})
    points = hv.Points(data, kdims=["pc1", "pc2"], vdims=["score", "beat", *extra])
    title = f"{record}: latent space of held-out beats (colour: anomaly score)"
    return points.opts(
        hv.opts.Points(color="score", cmap="viridis", clim=(0, 2), colorbar=True, title=title, backend="bokeh",
                       width=700, height=550, size=4, tools=["hover"]),
        hv.opts.Points(color="score", cmap="viridis", clim=(0, 2), colorbar=True, title=title, backend="matplotlib",
                       fig_inches=(7, 5.5), s=6))


def trace_density(x: np.ndarray, shape: tuple[int, int] = TRACE_PIXELS, chunk: int = 1 << 22):
    """How many samples of ``x`` fall in each pixel of a ``width × height`` image of the whole recording (the
    count aggregate datashader draws, here one bincount a chunk at a time): ``(image, y_range)``, the image
    ``[height, width]`` with its top row at the largest value and NaN where no sample falls."""
    width, height = shape
    n = x.shape[0]
    lo, hi = float(x.min()), float(x.max())
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    counts = np.zeros(width * height, dtype=np.int64)
    for start in range(0, n, chunk):
        part = x[start:start + chunk].astype(np.float64)
        column = (np.arange(start, start + part.shape[0], dtype=np.int64) * width) // n
        row = np.minimum(((part - lo) / (hi - lo) * height).astype(np.int64), height - 1)
        counts += np.bincount(column * height + row, minlength=width * height)
    image = counts.reshape(width, height).T[::-1].astype(np.float64)
    image[image == 0] = np.nan
    return image, (lo, hi)


def trace_plot(x: np.ndarray, fs: float, lead: str, flagged_t, flagged_v, record: str, flagged_class=None):
    """The whole recording as a density image (:func:`trace_density`), with flagged beats marked; their classes
    (``flagged_class``) in the hover and counted in the legend."""
    hv = load_holoviews()
    image, (lo, hi) = trace_density(x)
    x_dim, y_dim = "time (s)", f"{lead} (mV)"  # the signal is in mV (WFDB, EDF; CSV as given)
    density = hv.Image(image, bounds=(0.0, lo, x.shape[0] / fs, hi), kdims=[x_dim, y_dim], vdims=["samples"])
    classes = np.full(len(flagged_t), "", dtype=object) if flagged_class is None else np.asarray(flagged_class)
    names, counts = np.unique(classes.astype(str), return_counts=True)
    label = "flagged beats" + (" (" + ", ".join(f"{n} {c}" for n, c in zip(names, counts) if n) + ")"
                               if flagged_class is not None and len(classes) else "")
    marks = hv.Scatter({x_dim: np.asarray(flagged_t), y_dim: np.asarray(flagged_v), "class": classes.astype(str)},
                       x_dim, [y_dim, "class"], label=label)
    title = f"{record}: {lead}, {len(flagged_t)} flagged beats"
    return (density * marks).opts(
        hv.opts.Image(cmap="Blues", cnorm="eq_hist", width=1100, height=320, title=title, backend="bokeh"),
        hv.opts.Scatter(color="red", size=5, tools=["hover"], backend="bokeh"),
        hv.opts.Image(cmap="Blues", cnorm="eq_hist", backend="matplotlib"),
        hv.opts.Scatter(color="red", s=8, backend="matplotlib"),
        hv.opts.Overlay(title=title, aspect=4, fig_size=400, backend="matplotlib"))


def lengths_plot(length_s: np.ndarray, min_rr_s: float, max_rr_s: float, record: str):
    """Histogram of beat lengths (seconds to the next peak) with the pruning bounds."""
    hv = load_holoviews()
    upper = max(max_rr_s * 1.2, float(np.quantile(length_s, 0.999)))
    hist = hv.Histogram(np.histogram(np.clip(length_s, 0, upper), bins=120, range=(0, upper)),
                        kdims=["length (s)"], vdims=["beats"])
    bounds = hv.VLine(min_rr_s) * hv.VLine(max_rr_s)
    title = f"{record}: beat lengths, pruning bounds {min_rr_s}–{max_rr_s} s"
    return (hist * bounds).opts(
        hv.opts.Histogram(title=title, width=700, height=350, backend="bokeh"),
        hv.opts.VLine(color="red", line_dash="dashed", backend="bokeh"),
        hv.opts.VLine(color="red", linestyle="--", backend="matplotlib"),
        hv.opts.Overlay(title=title, aspect=2, fig_size=200, backend="matplotlib"))


def gallery_plot(rows: np.ndarray, normal: np.ndarray, info, fs: float, lead: str, record: str,
                 pre_peak_s: float = 0.0):
    """The most anomalous beats (first lead, ``rows`` [k, L], NaN past each beat's end) each over the median
    normal beat ``normal`` [L], stacked top to bottom by score in one panel, time from the R peak (the rows start
    ``pre_peak_s`` before it), labelled with time, class and family, reason, score and the RR intervals before
    and after (``info``'s ``rr_before_s`` / ``rr_after_s`` where it has them), with a 1 mV bar. One panel renders
    in a fraction of a second; a layout of k panels took 5 s (docs/design.md)."""
    hv = load_holoviews()
    t = np.arange(rows.shape[1]) / fs - pre_peak_s
    finite = np.concatenate([rows[np.isfinite(rows)], normal[np.isfinite(normal)], [0.0]])
    step = 1.1 * max(float(finite.max() - finite.min()), 1e-6)
    offsets = -step * np.arange(len(rows))
    gray = [np.column_stack([t, normal + o]) for o in offsets]
    red = [np.column_stack([t, row + o]) for row, o in zip(rows, offsets)]

    def rr(b) -> str:
        before, after = b.get("rr_before_s"), b.get("rr_after_s")
        if before is None and after is None:
            return ""
        seconds = [("—" if v is None or not np.isfinite(v) else f"{v:.2f}") for v in (before, after)]
        return f", RR {seconds[0]} / {seconds[1]} s"

    text = [f"beat {int(b.beat)} @ {clock(b.time_s)}: {_class_of(b)}{b.reason or 'top score'} {b.score:.2f}{rr(b)}"
            for _, b in info.iterrows()]
    x, y = "time from the R peak (s)", f"{lead} (mV)"
    labels = hv.Labels((np.full(len(rows), t[-1]), offsets + 0.35 * step, text), [x, y], "beat")
    bar_y = (offsets[-1] if len(offsets) else 0.0) - 0.5 * step
    bar = _coloured(hv.Path([np.array([[t[0], bar_y], [t[0], bar_y + 1.0]])], [x, y]), "black")
    bar_label = hv.Labels(([t[0] + 0.01], [bar_y + 0.5], ["1 mV"]), [x, y], "scale")
    title = f"{record}: {len(rows)} most anomalous beats (red) over the median normal beat (grey)"
    paths = _coloured(hv.Path(gray, [x, y]), "gray") * _coloured(hv.Path(red, [x, y]), "crimson")
    return (paths * labels * bar * bar_label.opts(
        hv.opts.Labels(text_align="left", text_font_size="8pt", backend="bokeh"),
        hv.opts.Labels(horizontalalignment="left", size=7, backend="matplotlib"))).opts(
        hv.opts.Labels(text_align="right", text_font_size="9pt", text_color="black", yaxis=None, backend="bokeh"),
        hv.opts.Labels(horizontalalignment="right", size=8, color="black", yaxis=None, backend="matplotlib"),
        hv.opts.Overlay(title=title, width=700, height=60 * max(len(rows), 4), yaxis=None, backend="bokeh"),
        hv.opts.Overlay(title=title, fig_inches=(8, 0.6 * max(len(rows), 4)), yaxis=None, backend="matplotlib"))


def _class_of(beat) -> str:
    """``"class V, family 2: "`` for a scores row with a class (``""`` without)."""
    if "class" not in beat:
        return ""
    return f"class {beat['class']}, family {int(beat['family'])}: " if "family" in beat else f"class {beat['class']}: "


def _coloured(path, color: str):
    hv = load_holoviews()
    return path.opts(hv.opts.Path(color=color, backend="bokeh"), hv.opts.Path(color=color, backend="matplotlib"))


def gallery_rows(rows: np.ndarray, kept, lengths=None):
    """The first lead of the top-scoring kept beats and the median of the unflagged ones. ``kept`` is
    scores.parquet without the pruned beats: its row i is row i of the embedding ``rows``. With ``lengths``
    (each kept beat's, in samples), the zero padding after a beat's end is NaN (drawn as nothing, not as a
    step to zero)."""
    top = kept.nlargest(GALLERY_SIZE, "score")
    normal = np.flatnonzero(~kept.anomaly.to_numpy())
    if len(normal) == 0:
        normal = np.arange(len(kept))

    def first_lead(idx):
        part = rows[idx, 0, :].astype(np.float64)
        if lengths is not None:
            part[np.arange(part.shape[1])[None, :] >= np.asarray(lengths)[idx][:, None]] = np.nan
        return part

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a sample no normal beat reaches: NaN
        median = np.nanmedian(first_lead(normal), axis=0)
    return first_lead(top.index.to_numpy()), median, top


def plot(record: str, paths: dict, out_dir, seg) -> None:
    """All plots of one record into ``out_dir``.

    ``paths``: ``signal``, ``beats``, ``embedding``, ``scores``, ``latent``.
    """
    from beatflow.backend import select_backend
    from beatflow.io import arrays
    from beatflow.io.tables import read_frame, read_signal, signal_info

    out_dir = Path(out_dir)
    scores = read_frame(paths["scores"])
    beats = read_frame(paths["beats"])
    fs, leads = signal_info(paths["signal"])
    signals, _ = read_signal(paths["signal"], select_backend("cpu"), leads[:1])
    lead, x = leads[0], signals[leads[0]]
    flagged = scores[scores.anomaly]
    classes = flagged["class"].to_numpy() if "class" in flagged else None
    save(trace_plot(x, fs, lead, flagged.time_s.to_numpy(), x[flagged.peak.to_numpy()], record, classes),
         out_dir / "trace")
    latent = read_frame(paths["latent"])
    if "class" in scores:
        latent = latent.merge(scores[["beat", "class", "family"]], on="beat", how="left")
    save(latent_plot(latent, record), out_dir / "latent")
    save(lengths_plot(beats.length.to_numpy() / fs, seg.min_rr_s, seg.max_rr_s, record), out_dir / "lengths")

    kept = scores[scores.split != "pruned"].reset_index(drop=True)
    lengths = beats.set_index("beat").length.reindex(kept.beat).to_numpy()
    top_rows, median, top = gallery_rows(arrays.load(paths["embedding"], gpu=False), kept, lengths)
    times = scores.sort_values("beat").time_s.to_numpy()  # beat = 0..n-1 in time order
    i = top.beat.to_numpy()
    last = len(times) - 1
    top = top.assign(rr_before_s=np.where(i > 0, times[i] - times[np.maximum(i - 1, 0)], np.nan),
                     rr_after_s=np.where(i < last, times[np.minimum(i + 1, last)] - times[i], np.nan))
    save(gallery_plot(top_rows, median, top, fs, lead, record, seg.pre_peak_s), out_dir / "gallery")
    log.info("plot %s: 4 figures (HTML + PNG) in %s", record, out_dir)
