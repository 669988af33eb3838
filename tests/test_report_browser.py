"""The demo's report and HTML figures in a real browser: headless Chromium (Debian's ``chromium``; skipped where
it is absent), network off. Every result of the Snakemake report, shown as a click on it shows it, draws
something (a frame whose data URI is over Chromium's 2 MiB limit stays white: issue 26), without a console error;
every HTML file of a record opens on its own, draws, and asks for nothing on the network."""

from pathlib import Path

import pytest
from browser import CHROMIUM, console_errors, drawn, report_results, report_showing, screenshot
from conftest import snakemake
from contracts import REPORT_PAGES

pytestmark = pytest.mark.skipif(not CHROMIUM, reason="no chromium (Debian: apt-get install chromium)")

CONTENT = (360, 0, 1400, 1000)  # the report's content pane in a 1400 × 1000 window (the menu is on the left)


def test_drawn_tells_a_blank_frame(tmp_path):
    """The check itself: a white page is blank, a page with a table is not."""
    blank, table = tmp_path / "blank.html", tmp_path / "table.html"
    blank.write_text("<html><body></body></html>")
    table.write_text(
        "<html><body><h1>Holter report</h1><table border=1>"
        + "<tr><td>70 bpm</td></tr>" * 20
        + "</table></body></html>"
    )
    assert screenshot(blank.as_uri(), tmp_path / "blank.png") == ([], [])
    assert drawn(tmp_path / "blank.png")[0] == 0.0
    screenshot(table.as_uri(), tmp_path / "table.png")
    share, colours = drawn(tmp_path / "table.png")
    assert share > 0.005 and colours > 20


def test_report_shows_every_result_offline(demo_run, tmp_path):
    report = tmp_path / "report.html"
    snakemake(demo_run, "--report", str(report))
    html = report.read_text()
    results = report_results(html)
    assert {f"results/demo/{page}" for page in REPORT_PAGES} <= results.keys()
    for k, (path, entry) in enumerate(results.items()):
        page = tmp_path / f"show-{k}.html"
        page.write_text(report_showing(html, path))
        console, asked = screenshot(page.as_uri(), tmp_path / f"show-{k}.png")
        assert not console_errors(console), (path, console)
        assert not asked, (path, asked)
        share, colours = drawn(tmp_path / f"show-{k}.png", CONTENT)
        assert share > 0.005 and colours > 50, f"the report shows {path} ({entry['mime_type']}) blank"


@pytest.mark.parametrize(
    "name",
    [
        "report/summary.html",
        "plots/heart_rate.html",
        "plots/trace.html",
        "plots/latent.html",
        "plots/lengths.html",
        "plots/gallery.html",
    ],
)
def test_html_files_render_offline(demo_run, tmp_path, name):
    path = Path(demo_run) / "results" / "demo" / name
    console, asked = screenshot(path.as_uri(), tmp_path / "page.png", budget_ms=8000)
    assert not console_errors(console), console
    assert not asked, f"{name} asks the network for {asked}"
    share, colours = drawn(tmp_path / "page.png")
    assert share > 0.005 and colours > 50, f"{name} draws nothing"
