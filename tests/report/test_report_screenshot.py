"""The report in a headless browser (Chromium, where installed): the page built from the
fixture results renders at 1400 and 800 px wide, and nothing on it is wider than the window
(the navigation wraps between its links, wide tables scroll inside themselves)."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import RESULT_FIXTURES

from warplab.lab.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium on this machine")


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("runs")
    for f in RESULT_FIXTURES.glob("*.json"):
        shutil.copy(f, src / f.name)
    return Path(build_report(src, None))


@pytest.mark.parametrize("width", [1400, 800])
def test_the_page_fits_the_window(page: Path, width: int, tmp_path: Path) -> None:
    # the page's own layout: the page no wider than the window, and no table wider than the
    # box it sits in (a wide table scrolls inside itself instead of being cut off)
    probe = page.parent / f"probe-{width}.html"
    probe.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>document.title = 'W=' + Math.max(document.documentElement."
        "scrollWidth, ...[...document.querySelectorAll('table')].map(t => t.getBoundingClientRect()"
        ".right - t.parentElement.getBoundingClientRect().right + " + str(width) + "));"
        "</script></body>"), encoding="utf-8")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          f"--window-size={width},900", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    title = dom.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title.startswith("W="), title
    assert float(title[2:]) <= width + 1, \
        f"the page or a table reaches {title[2:]} px in a {width} px window"
    shot = tmp_path / f"report-{width}.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={width},1100", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert _png_size(shot) == (width, 1100)
