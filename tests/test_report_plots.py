"""The report figures' files: the HTML is bokeh's own page (BokehJS inlined, no CDN, no Panel); the gallery
draws no zero padding after a beat's end."""

import numpy as np
import pandas as pd

from beatflow.report.plots import gallery_rows, load_holoviews, save


def test_save_writes_an_offline_html_without_panel_and_a_png(tmp_path):
    hv = load_holoviews()
    save(hv.Curve(([0.0, 1.0, 2.0], [0.0, 1.0, 0.5]), "time (s)", "MLII (mV)"), tmp_path / "fig")
    html = (tmp_path / "fig.html").read_text()
    assert "<html" in html[:2000].lower() and "Bokeh" in html
    assert "cdn.holoviz.org" not in html and "cdn.bokeh.org" not in html  # offline: nothing fetched
    assert len(html) < 2_000_000  # BokehJS once, without Panel's scripts (about 2.9 MB through Panel)
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gallery_rows_leave_out_the_padding():
    L = 10
    rows = np.zeros((4, 2, L), np.float32)
    for k, n in enumerate([10, 6, 8, 3]):
        rows[k, 0, :n] = k + 1  # beat k reaches n samples, then zero padding
    kept = pd.DataFrame({"beat": np.arange(4), "score": [0.1, 3.0, 0.2, 2.0], "anomaly": [False, True, False, True]})
    top_rows, median, top = gallery_rows(rows, kept, lengths=[10, 6, 8, 3])
    assert top.beat.tolist() == [1, 3, 2, 0]  # by score
    assert np.isnan(top_rows[0, 6:]).all() and (top_rows[0, :6] == 2).all()  # beat 1: 6 samples, then nothing
    assert np.isnan(top_rows[1, 3:]).all() and (top_rows[1, :3] == 4).all()
    # the median of the unflagged beats (0 and 2) over the samples each reaches: no zero from the padding
    np.testing.assert_allclose(median, [2, 2, 2, 2, 2, 2, 2, 2, 1, 1])
    without, _, _ = gallery_rows(rows, kept)
    assert (without[0, 6:] == 0).all()  # without lengths, as stored
