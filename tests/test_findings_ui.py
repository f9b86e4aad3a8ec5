"""One click from a finding to its place in the trace, in the real Perfetto UI v58.2 (what
ui.perfetto.dev serves; the offline build in ../shared/tools/perfetto-ui, headless
Chromium, trace_processor_shell v58.2 --httpd as its engine): ``tracecvt open RUN --report``
serves the HTML report of a sample run; its first finding's link opens the trace with the
visible window on the finding's interval, a note at the start of the finding's slice (in
view) and its lanes pinned.

The link selects nothing: Perfetto UI v58.2's scroll to a selected slice, when it comes
within 300 ms of the zoom to visStart..visEnd, cancels the zoom's animation and the window
stays near the whole trace (timeline.ts animateToWindow).  One attempt, no retries: the
window must be the link's.

The screenshot goes to $TRACECVT_SHOTS (default: the test's tmp folder).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import tracecvt
from tracecvt.analyses.places import findings

from conftest import REPO, SHARED

pytestmark = pytest.mark.ui

UI_TOOL = SHARED / "tools" / "perfetto-ui"
WEB_V58 = UI_TOOL / "web_dist_v58"
TP = SHARED / "tools" / "trace_processor" / "trace_processor_shell"
PFUI_HOME = Path(os.environ.get("PFUI_HOME") or Path.home() / ".cache" / "perfetto-ui")
PFUI_PY = PFUI_HOME / "venv" / "bin" / "python"
DRIVER = Path(__file__).with_name("findings_ui_driver.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready() -> str | None:
    """Why the UI test cannot run here, or None."""
    if not os.access("/usr/bin/chromium", os.X_OK) or not PFUI_PY.exists():
        r = subprocess.run([str(UI_TOOL / "setup.sh")], capture_output=True, text=True)
        if r.returncode != 0 or not PFUI_PY.exists():
            return "Chromium / Playwright not installed and setup.sh failed: " + \
                (r.stderr or r.stdout)[-300:]
    if not (WEB_V58 / "index.html").exists() or not os.access(TP, os.X_OK):
        return f"no Perfetto UI v58 build at {WEB_V58} or trace_processor_shell at {TP}"
    return None


@pytest.fixture
def ui_server():
    """The v58 UI's static files on 127.0.0.1 (any port)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(WEB_V58))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class Engine:
    """trace_processor_shell --httpd on a free port (not 9001: other tests may hold it),
    accepting the UI's origin; the UI is told the port (rpc_port) and allowed it.  Started
    afresh for each page that loads a trace (it keeps the trace it was given)."""

    def __init__(self, origin: str, log: Path):
        self.origin, self.log = origin, log
        self.port = _free_port()
        self.proc = None

    def start(self) -> None:
        self.stop()
        self.proc = subprocess.Popen([str(TP), "--httpd", "--http-port", str(self.port),
                                      "--http-additional-cors-origins", self.origin],
                                     stdout=open(self.log, "a"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        t0 = time.time()
        while time.time() - t0 < 30:
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{self.port}/status", method="POST"), timeout=2)
                return
            except Exception:
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


@pytest.fixture
def engine(ui_server, tmp_path):
    e = Engine(ui_server, tmp_path / "tp.log")
    yield e
    e.stop()


def test_first_finding_link_opens_the_trace_at_its_interval_with_its_slice_noted(
        ui_server, engine, tmp_path):
    why = _ready()
    if why:
        pytest.skip(why)
    run = tmp_path / "tiny_add"
    shutil.copytree(REPO / "samples" / "pypto" / "tiny_add", run)
    (r,) = tracecvt.read(run)
    what, at = findings(r.summary())[0]
    ui = f"{ui_server}/?testing=1&rpc_port={engine.port}"
    # the trace on localhost:8080: besides 127.0.0.1:9001 (which the UI stops allowing once
    # told of an engine on another port), the one 127.0.0.1 address the v58 UI fetches from
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as http.server does
        try:
            s.bind(("127.0.0.1", 8080))
        except OSError:
            pytest.skip("127.0.0.1:8080 is in use")
    opened = subprocess.Popen([sys.executable, "-m", "tracecvt.cli", "open", str(run),
                               "--report", "--ui", ui, "--no-browser", "--timeout", "150",
                               "--port", "8080"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = opened.stdout.readline().strip()
        assert report.startswith("http://127.0.0.1:"), opened.stderr.read()
        shots = Path(os.environ.get("TRACECVT_SHOTS") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        shot = shots / "first_finding_v58.png"
        engine.start()
        res = subprocess.run([str(PFUI_PY), str(DRIVER), report, "1", str(shot),
                              "--timeout", "120"], capture_output=True, text=True,
                             timeout=240)
        assert res.returncode == 0, res.stderr[-2000:]
        out = json.loads(res.stdout.strip().splitlines()[-1])
    finally:
        opened.terminate()
        opened.communicate(timeout=30)
    assert out["loaded"], out
    assert out["href"].startswith(ui.split("?")[0]), out["href"]
    view = out["view"]
    # the window: the one the link asks for (visStart..visEnd padded back by the UI's
    # 'zoom' margin, 1/8 of the span each side: the finding's interval, to 1 ns of
    # rounding); nothing selected that could have scrolled it
    w0, w1 = view["window"]
    assert at["start_ns"] - 1 <= w0 < w1 <= at["end_ns"] + 1, (view["window"], at)
    p = at["perfetto"]
    span = p["vis_end_ns"] - p["vis_start_ns"]
    assert abs(w0 - (p["vis_start_ns"] - span / 8)) <= 1 and abs(w1 - (p["vis_end_ns"] + span / 8)) \
        <= 1, (view["window"], p)
    assert view["selection"] in (None, "empty"), view
    # the finding's slice is marked: a note at its start (trace ns), named for it, in view
    sl = at["slice"]
    assert view["notes"] == [{"ts": sl["ts_ns"], "text": f"{sl['name']} on {sl['lane']}"}], \
        view["notes"]
    assert w0 <= sl["ts_ns"] <= w1
    # its lanes are pinned: AIV_34 (its bubble lane too) and HUB_80, as the UI names them
    pinned = " | ".join(view["pinned"])
    for lane in ("AIV_34", "HUB_80"):
        assert lane in pinned, view["pinned"]
    assert not out["errors"], out["errors"]
    assert shot.exists() and shot.stat().st_size > 10000
