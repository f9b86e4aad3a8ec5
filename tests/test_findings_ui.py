"""One click from a finding to its place in the trace, in the real Perfetto UI v58.2 (what
ui.perfetto.dev serves; the offline build in ../shared/tools/perfetto-ui, headless
Chromium, trace_processor_shell v58.2 --httpd as its engine): ``tracecvt open RUN --report``
serves the HTML report of a sample run; its first finding's link opens the trace with the
visible window inside the finding's interval, the finding's slice selected (and in view)
and its lanes pinned.

Perfetto UI v58.2 races its own deep link: the scroll to the selected slice, when it comes
within 300 ms of the zoom to visStart..visEnd, cancels the zoom's animation and the window
stays near the whole trace (timeline.ts animateToWindow).  The link is opened again then
(3 times at most, a fresh engine each time), as a person would; the test prints the windows
of its attempts.

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


ATTEMPTS = 3


def _zoom_cancelled(out, at) -> bool:
    """Whether the UI lost the link's zoom to its own race (the window is not the one the
    link asks for: visStart..visEnd padded by the UI's 'zoom' margin, 1/8 each side)."""
    if not out["loaded"] or not out["view"]:
        return False
    p = at["perfetto"]
    span = p["vis_end_ns"] - p["vis_start_ns"]
    w0, w1 = out["view"]["window"]
    return abs(w0 - (p["vis_start_ns"] - span / 8)) > 1 or abs(w1 - (p["vis_end_ns"] + span / 8)) > 1


def test_first_finding_link_opens_the_trace_at_its_interval_with_its_slice_selected(
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
        windows = []
        for _ in range(ATTEMPTS):
            engine.start()
            res = subprocess.run([str(PFUI_PY), str(DRIVER), report, "1", str(shot),
                                  "--timeout", "120"], capture_output=True, text=True,
                                 timeout=240)
            assert res.returncode == 0, res.stderr[-2000:]
            out = json.loads(res.stdout.strip().splitlines()[-1])
            windows.append(out["view"] and out["view"]["window"])
            if not _zoom_cancelled(out, at):
                break
    finally:
        opened.terminate()
        opened.communicate(timeout=30)
    assert out["loaded"], out
    print("windows, one per attempt:", windows)
    assert out["href"].startswith(ui.split("?")[0]), out["href"]
    view = out["view"]
    # the finding's slice is selected: the same name, start and duration (trace ns)
    sl = at["slice"]
    assert view["slice"]["name"] == sl["name"] and view["slice"]["ts"] == sl["ts_ns"] \
        and view["slice"]["dur"] == sl["dur_ns"], (view, sl)
    # the window: inside the finding's interval (1 ns of rounding), the window the link
    # asks for (the UI kept it: its scroll to the selection did not move it), the selected
    # slice in it
    w0, w1 = view["window"]
    assert at["start_ns"] - 1 <= w0 < w1 <= at["end_ns"] + 1, (view["window"], at)
    p = at["perfetto"]
    span = p["vis_end_ns"] - p["vis_start_ns"]
    assert abs(w0 - (p["vis_start_ns"] - span / 8)) <= 1 and abs(w1 - (p["vis_end_ns"] + span / 8)) \
        <= 1, (view["window"], p)
    assert w0 - 1 <= sl["ts_ns"] and sl["ts_ns"] + sl["dur_ns"] <= w1 + 1
    # its lanes are pinned: AIV_34 (its bubble lane too) and HUB_80, as the UI names them
    pinned = " | ".join(view["pinned"])
    for lane in ("AIV_34", "HUB_80"):
        assert lane in pinned, view["pinned"]
    assert not out["errors"], out["errors"]
    assert shot.exists() and shot.stat().st_size > 10000
