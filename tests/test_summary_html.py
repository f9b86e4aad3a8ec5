"""The HTML summary renders in headless Chromium without script errors and shows its pictures.

Needs Debian's ``chromium`` (or ``chromium-browser`` / ``google-chrome``) on PATH; skipped
with that reason otherwise.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest
from click.testing import CliRunner

from tracecvt.cli import main

from test_cli import copy_run

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="headless Chromium not installed "
                                "(Debian package 'chromium')")

SECTIONS = ("bottleneck", "ratings", "opportunities", "baseline", "utilization", "bubbles",
            "timeline", "critical-path", "top-tasks", "labels", "pypto-check",
            "configuration")
PICTURES = ("util-bars", "bubble-breakdown", "timeline-strip", "critical-path-strip")


def chromium(tmp_path, *args, timeout=120):
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    current = copy_run("ffn_medium", tmp / "runs")
    baseline = copy_run("softmax_multiseq", tmp / "base")
    out = tmp / "report.html"
    r = CliRunner().invoke(main, ["summary", str(current), "--format", "html", "-o", str(out),
                                  "--baseline", str(baseline)])
    assert r.exit_code == 0, r.output
    return tmp, out


def test_html_is_self_contained(page):
    _, out = page
    html = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    for pid in PICTURES:
        assert f'id="{pid}"' in html


def test_html_renders_without_script_errors(page):
    tmp, out = page
    r = chromium(tmp, "--dump-dom", out.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l]
    assert not [l for l in console if "Uncaught" in l or "Error" in l], console
    dom = r.stdout
    assert 'data-rendered="ok"' in dom, dom[-2000:]
    assert 'id="render-status"' in dom and "rendered" in dom
    for sid in SECTIONS:
        assert f'<section id="{sid}"' in dom, sid
    for pid in PICTURES:
        assert f'id="{pid}"' in dom
    # the pictures hold what they show: one column per lane, segments of the critical path
    util = dom[dom.index('id="util-bars"'):]
    util = util[:util.index("</svg>")]
    assert util.count('class="lane-bar"') == 67
    cp = dom[dom.index('id="critical-path-strip"'):]
    cp = cp[:cp.index("</svg>")]
    assert 'class="cp-task"' in cp and 'class="cp-wait"' in cp


def test_html_screenshot(page):
    tmp, out = page
    png = tmp / "report.png"
    r = chromium(tmp, f"--screenshot={png}", "--window-size=1100,2200",
                 "--hide-scrollbars", out.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    assert png.is_file() and png.stat().st_size > 50_000
    assert png_size(png) == (1100, 2200)
