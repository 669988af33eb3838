"""Headless Chromium (Debian's ``chromium`` package) with the network off: screenshots of HTML files and of a
Snakemake report showing one of its results, the page's console messages, and whether a screenshot shows
something (a blank frame is white). Helpers for tests/test_report_browser.py; no test functions here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# no network: every host name fails to resolve and every request goes to a closed local port
OFFLINE = [
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
]
CONSOLE = re.compile(r":CONSOLE(?::\d+)?\(?\d*\)?\] \"(.*)\", source: (.*)$", re.MULTILINE)
ERRORS = re.compile(r"Uncaught|Failed to load resource|net::ERR_|Not allowed to load|Refused to|blocked", re.I)


# Chromium's own requests (sign-in, time, component updates), which the net log also records
OWN_HOSTS = re.compile(r"^https?://([a-z0-9-]+\.)*(google|googleapis|gstatic|gvt1|chromium)\.(com|org)(:\d+)?/")


def screenshot(
    url: str, png: Path, size: tuple[int, int] = (1400, 1000), budget_ms: int = 6000, timeout_s: float = 90.0
) -> tuple[list[str], list[str]]:
    """Load ``url`` offline, let its scripts run ``budget_ms`` of virtual time, write a screenshot to ``png``;
    ``(the page's console messages, the http(s) addresses it asked for)``."""
    net = Path(png).with_suffix(".netlog.json")
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        *OFFLINE,
        "--enable-logging=stderr",
        "--v=0",
        f"--log-net-log={net}",
        f"--window-size={size[0]},{size[1]}",
        f"--virtual-time-budget={budget_ms}",
        f"--screenshot={png}",
        url,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if not Path(png).exists():
        raise AssertionError(f"chromium wrote no screenshot of {url[:200]}:\n{result.stderr[-3000:]}")
    asked = set(re.findall(r'"url":"(https?://[^"]*)"', net.read_text(errors="replace"))) if net.exists() else set()
    return [m.group(1) for m in CONSOLE.finditer(result.stderr)], sorted(u for u in asked if not OWN_HOSTS.match(u))


def console_errors(messages: list[str]) -> list[str]:
    return [m for m in messages if ERRORS.search(m)]


def drawn(png: Path, box: tuple[int, int, int, int] | None = None) -> tuple[float, int]:
    """``(share of pixels not white, number of distinct colours)`` in ``box`` (left, top, right, bottom)."""
    from PIL import Image

    image = Image.open(png).convert("RGB")
    if box:
        image = image.crop(box)
    pixels = np.asarray(image).reshape(-1, 3)
    return float((pixels.min(axis=1) < 235).mean()), len(np.unique(pixels @ np.array([65536, 256, 1])))


def report_results(html: str) -> dict[str, dict]:
    """The Snakemake report's ``results`` object: result path -> its entry (``mime_type``, ``data_uri``, …)."""
    start = html.index("var results = {") + len("var results = ")
    return json.JSONDecoder().raw_decode(html, start)[0]


def report_showing(report_html: str, path: str) -> str:
    """The report's HTML, made to show result ``path`` on load as a click on it would (the app's ``setView``:
    an image, or an HTML file in a frame whose address is its data URI)."""
    script = f"""<script>
window.addEventListener("load", () => setTimeout(() => {{
  const r = results[{json.dumps(path)}];
  app.setView({{content: r.mime_type.startsWith("image/") ? "img" : "html", contentPath: r.data_uri}});
}}, 50));
</script>"""
    i = report_html.rindex("</body>")
    return report_html[:i] + script + report_html[i:]
