"""The lab's status page (the real Prometheus of conftest.py) in a real headless Chromium, Debian's
(scripts/test-packages.txt): the screenshot has the size asked, is not blank, and shows each state's
colour (the badges). UPDATE_SCREENSHOT=1 copies it to docs/status-page.png, the picture
docs/monitoring.md shows; otherwise it stays in the test's temporary directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from components.monitoring.status_data import DOWN, UNKNOWN, UP, WEDGED
from components.monitoring.status_html import STATE_COLOURS
from components.monitoring.status_page import write_status_page
from tests.tools import require
from tests.unit.monitoring import png
from tests.unit.monitoring.exposition import REPO, spec

WIDTH, HEIGHT = 1200, 700
COMMITTED = REPO / "docs" / "status-page.png"
# A badge is about 80 × 20 pixels, drawn in one flat colour; each state has two or three (the
# tally, a row, the legend), UNKNOWN the legend's alone.
BADGE_PIXELS = 1000


def screenshot(page: Path, out: Path, profile: Path) -> subprocess.CompletedProcess:
    """Chromium as root (hence --no-sandbox), with a profile of its own, and nothing that reaches
    the network: the page is a local file that fetches nothing."""
    return subprocess.run(
        [require("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={out}", page.as_uri()],
        capture_output=True, text=True, timeout=120)


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_the_lab_page_in_headless_chromium(lab_prometheus, tmp_path):
    page, shot = tmp_path / "lab.html", tmp_path / "status-page.png"
    write_status_page(page, lab_prometheus.url, "lab", spec("lab"), minutes=15, at=lab_prometheus.end)
    result = screenshot(page, shot, tmp_path / "profile")
    assert result.returncode == 0 and shot.is_file(), result.stdout + result.stderr[-3000:]

    image = png.read(shot)
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    colours = image.colours()
    _, share = colours.most_common(1)[0]
    assert share < 0.9 * WIDTH * HEIGHT and len(colours) > 200, "a blank page"
    drawn = {state: colours[rgb(STATE_COLOURS[state])] for state in (UP, WEDGED, DOWN, UNKNOWN)}
    assert all(n > BADGE_PIXELS for n in drawn.values()), f"state badges' pixels: {drawn}"

    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, COMMITTED)
    assert COMMITTED.is_file() and png.size(COMMITTED) == (WIDTH, HEIGHT), \
        f"{COMMITTED}: missing or of another size; fix: run this test with UPDATE_SCREENSHOT=1"
