"""The report figures: the HTML is bokeh's own page (BokehJS inlined, no CDN, no Panel); the hover gives each
beat's clock time, class, family, reason and score; the latent plot and the trace colour beats by class (the
strips' colours); the trace keeps the waveform at full resolution for a zoom; the RR histogram counts the
intervals past its range in an overflow bar; the gallery draws no zero padding and mixes reasons and families."""

import numpy as np
import pandas as pd
import pytest

from beatflow.report import strips
from beatflow.report.colours import CLASS_COLOURS
from beatflow.report.plots import (
    DETAIL_SPAN_S,
    detail_windows,
    gallery_pick,
    gallery_rows,
    latent_plot,
    lengths_plot,
    load_holoviews,
    rr_histogram,
    save,
    scan_lead,
    trace_plot,
    waveform_store,
)

FS = 250.0


def test_save_writes_an_offline_html_without_panel_and_a_png(tmp_path):
    hv = load_holoviews()
    save(hv.Curve(([0.0, 1.0, 2.0], [0.0, 1.0, 0.5]), "time (s)", "MLII (mV)"), tmp_path / "fig")
    html = (tmp_path / "fig.html").read_text()
    assert "<html" in html[:2000].lower() and "Bokeh" in html
    assert "cdn.holoviz.org" not in html and "cdn.bokeh.org" not in html  # offline: nothing fetched
    assert len(html) < 2_000_000  # BokehJS once, without Panel's scripts (about 2.9 MB through Panel)
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def scores_rows(n: int = 120, seconds: float = 0.8) -> pd.DataFrame:
    """``n`` beats every ``seconds`` s: every tenth flagged, alternating reasons and classes."""
    beat = np.arange(n)
    flagged = beat % 10 == 3
    return pd.DataFrame(
        {
            "beat": beat,
            "peak": (beat * seconds * FS).astype(np.int64) + 50,
            "time_s": beat * seconds + 50 / FS,
            "split": "test",
            "score": np.where(flagged, 2.0 + beat / n, 0.3),
            "anomaly": flagged,
            "reason": np.where(flagged, np.where(beat % 20 == 3, "morphology", "rhythm"), ""),
            "class": np.where(flagged & (beat % 20 == 3), "V", np.where(flagged, "S", "N")),
            "family": np.where(flagged & (beat % 20 == 3), 1, 0),
        }
    )


def bokeh_model(obj):
    return load_holoviews().render(obj, backend="bokeh")


def hovers(model):
    from bokeh.models import HoverTool

    return [t for t in model.select(type=HoverTool) if t.tooltips]


def test_trace_hover_names_time_class_family_reason_score_and_colours_by_class():
    from bokeh.models import ColumnDataSource

    scores = scores_rows()
    x = np.sin(np.arange(int(100 * FS)) / FS * 2 * np.pi).astype(np.float32)
    model = bokeh_model(trace_plot(x, FS, "MLII", scores[scores.anomaly], "r"))
    tools = hovers(model)
    assert tools
    for tool in tools:
        assert [name for name, _ in tool.tooltips][:6] == ["time", "beat", "class", "family", "reason", "score"]
    marks = [s for s in model.select(type=ColumnDataSource) if "reason" in s.data]
    assert {c for s in marks for c in s.data["class"]} == {"V", "S"}
    first = next(s for s in marks if 13 in list(s.data["beat"]))
    assert first.data["time"][list(first.data["beat"]).index(13)] == "00:00:10"  # 13 × 0.8 s + 0.2 s
    colours = {r.glyph.fill_color for r in model.renderers if hasattr(r.glyph, "marker")}
    assert colours == {CLASS_COLOURS["V"], CLASS_COLOURS["S"]}
    assert model.xaxis[0].axis_label == "time from the start (hh:mm:ss)" and model.yaxis[0].axis_label == "MLII (mV)"


def test_trace_gives_clock_times_when_the_start_is_known():
    from bokeh.models import ColumnDataSource, CustomJSTickFormatter

    scores = scores_rows()
    x = np.sin(np.arange(int(100 * FS)) / FS * 2 * np.pi).astype(np.float32)
    plot = trace_plot(x, FS, "MLII", scores[scores.anomaly], "r", start="2026-11-29T23:59:30")
    model = bokeh_model(plot)
    assert model.xaxis[0].axis_label == "clock time from 2026-11-29 (hh:mm:ss)"
    assert model.xaxis[0].formatter.args["wrap"] and isinstance(model.xaxis[0].formatter, CustomJSTickFormatter)
    marks = [s for s in model.select(type=ColumnDataSource) if "reason" in s.data]
    first = next(s for s in marks if 13 in list(s.data["beat"]))
    k = list(first.data["beat"]).index(13)
    assert first.data["time"][k] == "23:59:40"  # 10.4 s + 0.2 s after 23:59:30
    assert first.data["t"][k] == pytest.approx(86370.0 + 10.6)  # the axis: seconds from midnight
    # the PNG: ticks at round clock times across midnight, and no word of zooming in its title
    png = load_holoviews().render(plot, backend="matplotlib")
    ax = png.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:3] == ["23:59:30", "23:59:45", "00:00:00"]  # 15 s apart: at most 10 ticks in 100 s
    assert "zoom" not in ax.get_title() and "zoom" in model.title.text


def test_trace_keeps_the_waveform_for_a_zoom():
    from bokeh.models import CustomJS

    scores = scores_rows()
    x = (np.sin(np.arange(int(100 * FS)) / FS * 2 * np.pi) * 1.3).astype(np.float32)
    model = bokeh_model(trace_plot(x, FS, "MLII", scores[scores.anomaly], "r"))
    callback = next(c for c in model.select(type=CustomJS) if "store" in c.args)
    assert callback.args["limit"] == DETAIL_SPAN_S and callback.args["fs"] == FS
    stored = np.asarray(callback.args["store"].data["y"]) * callback.args["scale"]
    np.testing.assert_allclose(stored, x, atol=1e-4)  # a short record: every sample, each to 0.1 µV
    assert model.x_range in {v for v in callback.args.values() if hasattr(v, "start")}


def test_detail_windows_around_the_top_flagged_beats_within_the_budget():
    assert detail_windows(1000, FS, [10], [1.0], budget=1000).tolist() == [[0, 1000]]
    n = 100_000
    peaks, scores = np.array([5000, 5100, 60000, 90000, 99990]), np.array([3.0, 2.0, 5.0, 1.0, 4.0])
    windows = detail_windows(n, FS, peaks, scores, budget=4 * 500, half_s=1.0)  # 4 beats of ±250 samples
    assert windows.tolist() == [[4750, 5350], [59750, 60250], [99740, 100000]]  # 90000 scores last; 5000+5100 merge
    _, _, _, kept = scan_lead(np.arange(n, dtype=np.float32) / n, [], windows)
    store = waveform_store(kept, windows)
    assert store["y"].dtype == np.int16 and len(store["y"]) == (windows[:, 1] - windows[:, 0]).sum()
    assert store["offset"].tolist() == [0, 600, 1100]
    k = store["offset"][1] + 10  # sample 59760
    assert store["y"][k] * store["scale"] == pytest.approx(59760 / n, abs=1e-4)


def test_the_trace_reads_a_signal_file_a_row_group_at_a_time_and_draws_what_the_whole_lead_draws(tmp_path):
    """scan_lead over a signal.parquet of many row groups (windows and peaks across their edges) gives the
    density image, y range, peak samples and kept windows of the whole lead in memory, reading each row group
    once; the y range comes from the footer's statistics, and from the samples where a file has none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beatflow.io.tables import read_signal_stretches

    x = (np.sin(np.arange(50_000) / FS * 2 * np.pi) * np.linspace(0.5, 2.0, 50_000)).astype(np.float32)
    peaks = np.array([30_000, 999, 1000, 12_345, 49_999])  # not in order; on a row group's first and last sample
    windows = np.array([[900, 2100], [2999, 3001], [12_000, 16_500], [49_000, 50_000]])
    whole = scan_lead(x, peaks, windows, shape=(64, 16))
    for statistics in (True, False):
        path = tmp_path / f"signal-{statistics}.parquet"
        pq.write_table(pa.table({"MLII": x}), path, row_group_size=1000, write_statistics=statistics)
        lead = read_signal_stretches(path, ["MLII"])["MLII"]
        read, read_row_groups = [], lead._file.read_row_groups
        lead._file.read_row_groups = lambda groups, columns: read.extend(groups) or read_row_groups(groups, columns)
        image, y_range, at_peaks, kept = scan_lead(lead, peaks, windows, shape=(64, 16))
        np.testing.assert_array_equal(image, whole[0])
        assert y_range == whole[1] == (float(x.min()), float(x.max()))
        np.testing.assert_array_equal(at_peaks, x[peaks])
        np.testing.assert_array_equal(kept, np.concatenate([x[a:b] for a, b in windows]))
        np.testing.assert_array_equal(whole[3], kept)
        assert read == list(range(50)) * (1 if statistics else 2)  # without statistics: a pass for the range


def test_latent_colours_are_the_class_colours_with_flagged_beats_by_reason():
    from bokeh.models import ColorBar, LinearColorMapper

    scores = scores_rows()
    latent = scores.assign(z0=np.arange(len(scores)) % 7, z1=np.arange(len(scores)) % 5, z2=0.0)
    model = bokeh_model(latent_plot(latent, "r"))
    assert not model.select(type=LinearColorMapper) and not model.select(type=ColorBar)  # no continuous scale
    glyphs = [r.glyph for r in model.renderers if hasattr(r.glyph, "marker")]
    assert {g.fill_color for g in glyphs} == {CLASS_COLOURS[c] for c in "NSV"}
    assert {g.marker for g in glyphs} == {"circle", "triangle", "square"}  # not flagged, morphology, rhythm
    labels = [item.label["value"] for legend in model.legend for item in legend.items]
    assert labels == ["N, not flagged (108)", "S, rhythm (6)", "V, morphology (6)"]
    assert all(
        [n for n, _ in t.tooltips][:6] == ["time", "beat", "class", "family", "reason", "score"] for t in hovers(model)
    )
    assert strips.CLASS_COLOURS is CLASS_COLOURS  # the strips draw the same colours


def test_lengths_count_the_intervals_past_the_range_in_an_overflow_bar():
    rr = np.array([0.8] * 50 + [1.0] * 30 + [2.4, 3.9, 7.5])
    counts, edges, over = rr_histogram(rr, upper_s=2.5, bins=10)
    assert over == 2 and counts.sum() == 81 and counts[-1] == 1  # 2.4 s in the last bin, 3.9 and 7.5 beyond
    model = bokeh_model(lengths_plot(rr, 0.25, 2.0, "r"))
    assert model.xaxis[0].axis_label == "RR interval (s)" and model.yaxis[0].axis_label == "beats (count)"
    assert "2 longer than 2.50 s" in model.title.text
    from bokeh.models import ColumnDataSource

    texts = [t for s in model.select(type=ColumnDataSource) for t in s.data.get("text", [])]
    assert texts == ["> 2.50 s: 2"]


def test_gallery_rows_leave_out_the_padding():
    L = 10
    rows = np.zeros((4, 2, L), np.float32)
    for k, n in enumerate([10, 6, 8, 3]):
        rows[k, 0, :n] = k + 1  # beat k reaches n samples, then zero padding
    kept = pd.DataFrame(
        {
            "beat": np.arange(4),
            "time_s": [1.0, 20.0, 40.0, 60.0],
            "score": [0.1, 3.0, 0.2, 2.0],
            "anomaly": [False, True, False, True],
            "reason": ["", "morphology", "", "morphology"],
            "family": [0, 1, 0, 1],
        }
    )
    top_rows, median, top = gallery_rows(rows, kept, lengths=[10, 6, 8, 3])
    assert top.beat.tolist() == [1, 3, 2, 0]  # the flagged by score, then the rest by score
    assert np.isnan(top_rows[0, 6:]).all() and (top_rows[0, :6] == 2).all()  # beat 1: 6 samples, then nothing
    assert np.isnan(top_rows[1, 3:]).all() and (top_rows[1, :3] == 4).all()
    # the median of the unflagged beats (0 and 2) over the samples each reaches: no zero from the padding
    np.testing.assert_allclose(median, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1])
    without, _, _ = gallery_rows(rows, kept)
    assert (without[0, 6:] == 0).all()  # without lengths, as stored


def test_gallery_takes_reasons_and_families_in_turn_apart_in_time():
    # ten high-scoring morphology beats of family 1 in one stretch, two rhythm beats, one beat of family 2
    t = [100.0 + k for k in range(10)] + [300.0, 500.0, 700.0, 900.0]
    kept = pd.DataFrame(
        {
            "beat": np.arange(14),
            "time_s": t,
            "score": [9.0 - 0.1 * k for k in range(10)] + [2.0, 1.5, 4.0, 0.1],
            "anomaly": [True] * 13 + [False],
            "reason": ["morphology"] * 10 + ["rhythm"] * 2 + ["morphology", ""],
            "family": [1] * 10 + [0, 0, 2, 0],
        }
    )
    picked = kept.loc[gallery_pick(kept, k=6, apart_s=5.0)].beat.tolist()
    assert picked[:3] == [0, 12, 10]  # the top of each group (morphology/1, morphology/2, rhythm/0), by score
    assert picked[3:5] == [11, 5]  # then their seconds: rhythm/0, then morphology/1 at least 5 s from beat 0
    assert picked[5] == 1  # then by score, the nearness rule spent


def test_gallery_labels_beside_the_traces_and_a_title_that_fits():
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    from beatflow.report.plots import gallery_plot

    L = 250
    rows = np.sin(np.linspace(0, 6, L))[None, :].repeat(3, axis=0) * [[1.0], [1.5], [0.5]]
    info = scores_rows().iloc[[3, 13, 23]].assign(rr_before_s=0.5, rr_after_s=1.1)
    info.loc[23, "family"] = -1  # unlike every family
    plot = gallery_plot(rows, rows[0], info, FS, "MLII", "record_with_a_long_name_208", 0.25, "2026-11-29T08:00:00")
    model = bokeh_model(plot)
    from bokeh.models import ColumnDataSource, MultiLine

    traces = [r for r in model.renderers if isinstance(r.glyph, MultiLine)]
    right = max(max(max(xs) for xs in r.data_source.data["xs"]) for r in traces)
    texts = [s for s in model.select(type=ColumnDataSource) if "beat" in s.data and len(s.data["beat"]) == 3]
    (labels,) = texts
    assert min(labels.data[list(labels.data)[0]]) > right  # every label starts right of every trace
    assert labels.data["beat"][0] == "beat 3 at 08:00:02, class V, family 1\nmorphology 2.02, RR 0.50 / 1.10 s"
    assert labels.data["beat"][2].startswith("beat 23 at 08:00:18, class V, no family\n")
    width, _, _ = TextToPath().get_text_width_height_descent(
        model.title.text, FontProperties(size=13, weight="bold"), ismath=False
    )
    assert width < model.width - 40  # bokeh's title does not wrap: it fits the figure (DejaVu is the wider font)


def regular(n: int, rr: float = 1.0) -> np.ndarray:
    return 0.5 + rr * np.arange(n)


def heart_rate_summary(start=None):
    """Ten minutes at 60 bpm with one V beat 0.4 s after the beat at 100.5 s (a compensatory pause after it), a
    4-beat V run at 150 bpm from 300 s (VT), an AF episode and an artefact episode."""
    from beatflow.holter.summary import summary_from_beats

    t = np.concatenate([[x for x in regular(600) if x != 301.5], [100.9, 300.9, 301.3, 301.7, 302.1]])
    c = np.array(["N"] * (len(t) - 5) + ["V"] * 5)
    order = np.argsort(t, kind="stable")
    t, c = t[order], c[order]
    s = summary_from_beats("hr", t, c, 600.0, af_episodes=[(400.0, 460.0)], start=start)
    s["artefact"] = {"episodes": [{"start_s": 500.0, "end_s": 530.0, "leads": {"MLII": "flat line"}}], "total_s": 30.0}
    return s, (t, c)


def test_heart_rate_band_leaves_out_premature_beats_intervals():
    from beatflow.holter.figure import sinus_band

    s, beats = heart_rate_summary()
    lo, hi = sinus_band(s, *beats)
    minute = s["heart_rate"]["minutes"][1]  # 60–120 s: the premature V beat at 100.9 s
    assert minute["max_bpm"] == pytest.approx(150.0)  # all intervals: the V beat's 0.4 s
    assert hi[1] == pytest.approx(60.0) and lo[1] == pytest.approx(60.0)  # N–N only: 60 bpm
    assert hi[5] == pytest.approx(60.0)  # the V run's minute: its intervals left out too


def test_heart_rate_axis_in_clock_times_when_the_start_is_known():
    from beatflow.holter.figure import heart_rate_plot

    s, beats = heart_rate_summary(start="2026-11-29T23:57:00")
    model = bokeh_model(heart_rate_plot(s, beats))
    axis = model.xaxis[0]
    assert axis.axis_label == "clock time from 2026-11-29 (hh:mm)"
    ticks = sorted(axis.major_label_overrides.items())
    assert [label for _, label in ticks] == ["00:00", "00:05"]  # round clock times, past midnight
    assert [x for x, _ in ticks] == pytest.approx([3 / 60, 8 / 60])  # hours from the start
    s, beats = heart_rate_summary()
    model = bokeh_model(heart_rate_plot(s, beats))
    assert model.xaxis[0].axis_label == "time from the start (hh:mm)"
    assert list(model.xaxis[0].major_label_overrides.values())[:2] == ["00:00", "00:05"]


def test_heart_rate_legend_outside_the_plot_each_entry_with_its_symbol():
    from bokeh.models import Legend

    from beatflow.holter.figure import heart_rate_plot

    s, beats = heart_rate_summary()
    plot = heart_rate_plot(s, beats)
    model = bokeh_model(plot)
    assert not [r for r in model.center if isinstance(r, Legend)]  # none over the data
    (legend,) = [r for r in model.below if isinstance(r, Legend)]
    entries = {item.label["value"]: item.renderers for item in legend.items}
    assert list(entries) == [
        "artefact (no lead readable)",
        "AF/flutter",
        "per minute: slowest–fastest sinus (N–N) beat",
        "per minute: mean rate",
        "VT (≥ 3 V at ≥ 100 bpm)",
        "fastest 8 sinus beats",
        "slowest 8 sinus beats",
    ]  # no S runs, no slower V runs: not listed
    for label, renderers in entries.items():
        data = renderers[0].data_source.data
        assert len(next(iter(data.values()))) > 0, label  # a glyph with data: a symbol in the legend
    png = load_holoviews().render(plot, backend="matplotlib")
    (legend,) = [a.get_legend() for a in png.axes if a.get_legend()]
    assert [t.get_text() for t in legend.get_texts()] == list(entries)
    assert len(legend.legend_handles) == len(entries)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(png).get_renderer()
    assert legend.get_window_extent(renderer).y1 < png.axes[0].get_window_extent(renderer).y0  # below the plot


def test_cohort_figure_axes_in_words_with_units():
    from beatflow.report.cohort import cohort_plot, summary_table
    from beatflow.report.colours import REASON_COLOURS

    rows = [
        {"record": r, "duration_s": 3600.0, "anomalies": a + b, "anomalies_morphology": a, "anomalies_rhythm": b}
        | {"mean_hr_bpm": hr}
        for r, a, b, hr in (("p01", 10, 5, 61.0), ("p02", 30, 2, 88.5))
    ]
    plot = cohort_plot(summary_table(rows))
    model = bokeh_model(plot)
    figures = [child[0] for child in model.children]
    assert [f.yaxis[0].axis_label for f in figures] == ["flagged beats per hour (1/h)", "mean heart rate (bpm)"]
    assert [f.xaxis[0].axis_label for f in figures] == ["record", "record"]
    png = load_holoviews().render(plot, backend="matplotlib")
    assert "mean_hr_bpm" not in {t.get_text() for ax in png.axes for t in (ax.yaxis.label, ax.xaxis.label, ax.title)}
    (legend,) = [ax.get_legend() for ax in png.axes if ax.get_legend()]
    colours = [tuple(np.round(h.get_facecolor()[:3], 3)) for h in legend.legend_handles]
    from matplotlib.colors import to_rgb

    assert colours == [tuple(np.round(to_rgb(REASON_COLOURS[r]), 3)) for r in ("morphology", "rhythm")]
