"""``tracecvt open``: the trace served once on 127.0.0.1 with the CORS header, the UI's deep
link, the cache next to the run, large traces through trace_processor --httpd; and the real
Perfetto UI (the offline build of ../shared/tools/perfetto-ui) loading it."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import tracecvt

from conftest import (REPO, SHARED, checkout_copy, checkout_files, decode_pftrace,
                      pftrace_counts)

TRACECVT = [sys.executable, "-m", "tracecvt.cli"]
PFUI_HOME = Path(os.environ.get("PFUI_HOME") or Path.home() / ".cache" / "perfetto-ui")


def copy_sample(tmp_path: Path, name: str = "tiny_add") -> Path:
    return checkout_copy(REPO / "samples" / "pypto" / name, tmp_path / name)


class Opened:
    """``tracecvt open ARGS`` running: its link (first stdout line), then its exit."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([*TRACECVT, "open", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self.link = self.proc.stdout.readline().strip()

    @property
    def trace_url(self) -> str:
        return urllib.parse.unquote(urllib.parse.urlsplit(self.link).fragment.split("url=")[1])

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


def fetched_once(*args) -> tuple[int, str, bytes]:
    """``tracecvt open ARGS --no-browser`` with its trace fetched as the UI would: (exit
    code, stderr, the bytes sent)."""
    o = Opened(*args, "--no-browser", "--timeout", "60")
    body = urllib.request.urlopen(o.trace_url, timeout=10).read()
    code, _, err = o.finish()
    return code, err, body


def test_open_serves_the_trace_once_with_the_cors_header(tmp_path):
    run = copy_sample(tmp_path)
    o = Opened(run, "--no-browser", "--timeout", "60", "--ui", "http://ui.example:10000/perfetto")
    assert re.match(r"http://ui\.example:10000/perfetto#!/\?url=http://(127\.0\.0\.1|localhost):",
                    o.link), o.link
    url = o.trace_url
    with pytest.raises(urllib.error.HTTPError) as e:        # nothing else is served
        urllib.request.urlopen(url.rsplit("/", 1)[0] + "/other.pftrace", timeout=10)
    assert e.value.code == 404
    head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10)
    assert o.proc.poll() is None                            # a HEAD is not the fetch
    with urllib.request.urlopen(url, timeout=10) as r:
        body = r.read()
        cors = r.headers["Access-Control-Allow-Origin"]
    code, out, err = o.finish()
    assert code == 0, err
    assert out.strip() == ""                                # stdout: the link only
    assert "the UI fetched the trace" in err
    assert cors == "http://ui.example:10000"                # the UI's origin, as Perfetto asks
    assert int(head.headers["Content-Length"]) == len(body)
    # the trace is cached next to the run, named as to-perfetto names it, and is what was sent
    cached = run / (Path(urllib.parse.urlsplit(url).path).name)
    assert cached.read_bytes() == body
    assert pftrace_counts(decode_pftrace(body))["begin"] > 0


def test_open_reuses_the_cached_trace_while_it_is_newer_than_the_run(tmp_path):
    run = copy_sample(tmp_path)
    assert fetched_once(run)[0] == 0
    (cached,) = run.glob("*.pftrace")
    mtime = cached.stat().st_mtime_ns
    code, err, _ = fetched_once(run)
    assert code == 0 and "using " in err and "wrote" not in err
    assert cached.stat().st_mtime_ns == mtime
    src = next(run.rglob("merged_swimlane.json*"))          # an input changes: converted again
    os.utime(src, ns=(mtime + 10**9, mtime + 10**9))
    code, err, _ = fetched_once(run)
    assert code == 0 and "wrote " in err
    assert cached.stat().st_mtime_ns > mtime


def test_open_no_cache_leaves_nothing_behind(tmp_path):
    run = copy_sample(tmp_path)
    code, err, body = fetched_once(run, "--no-cache")
    assert code == 0, err
    assert not list(run.glob("*.pftrace"))
    temp = Path(err.split("wrote ", 1)[1].split(" (removed on exit)")[0])
    assert not temp.exists() and not temp.parent.exists()
    assert pftrace_counts(decode_pftrace(body))["begin"] > 0


def test_open_a_trace_serves_it_as_it_is(tmp_path):
    trace = tmp_path / "mine.pftrace"
    report = next(p for p in checkout_files(REPO / "samples") if p.suffix == ".ncu-rep")
    shutil.copy(report, tmp_path / "x.ncu-rep")
    subprocess.run([*TRACECVT, "to-perfetto", tmp_path / "x.ncu-rep", "-o", trace, "-q"],
                   check=True)
    o = Opened(trace, "--no-browser", "--timeout", "60")
    assert o.trace_url.endswith("/mine.pftrace")
    assert urllib.request.urlopen(o.trace_url, timeout=10).read() == trace.read_bytes()
    code, _, err = o.finish()
    assert code == 0 and "wrote" not in err


def test_open_gives_up_after_the_timeout(tmp_path):
    run = copy_sample(tmp_path)
    t0 = time.monotonic()
    o = Opened(run, "--no-browser", "--timeout", "1")
    code, _, err = o.finish()
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("tracecvt: error: the UI did not fetch")
    assert time.monotonic() - t0 < 20


def test_open_several_runs_is_a_one_line_error(tmp_path):
    samples = checkout_copy(REPO / "samples", tmp_path / "samples")
    r = subprocess.run([*TRACECVT, "open", samples, "--no-browser"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "runs found; name one run" in r.stderr


def test_a_large_trace_goes_to_trace_processor_httpd(tmp_path):
    """Over --max-ui-size: trace_processor --httpd is started with the trace (here a stand-in
    that records its arguments) and the UI opened without a url (it finds :9001 itself);
    without a binary, one error line says how."""
    run = copy_sample(tmp_path)
    fake = tmp_path / "trace_processor_shell"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'args.txt'}\n")
    fake.chmod(0o755)
    o = Opened(run, "--no-browser", "--max-ui-size", "1K", "--trace-processor", fake,
               "--ui", "http://ui.example/")
    code, _, err = o.finish()
    assert code == 0, err
    assert o.link == "http://ui.example/#!/"
    (cached,) = run.glob("*.pftrace")
    assert (tmp_path / "args.txt").read_text().split() == ["--httpd", str(cached)]
    assert "too large for the UI's in-browser engine" in err
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    env.pop("TRACECVT_TRACE_PROCESSOR", None)
    r = subprocess.run([*TRACECVT, "open", run, "--no-browser", "--max-ui-size", "1K"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    (error,) = [line for line in r.stderr.splitlines() if "error" in line]
    assert error.startswith("tracecvt: error: ")
    assert f"trace_processor_shell --httpd {cached}" in error


# -- the real Perfetto UI ----------------------------------------------------------------------

def _ui_missing() -> str | None:
    if not (PFUI_HOME / "web_dist" / "index.html").is_file():
        return f"no Perfetto UI build in {PFUI_HOME / 'web_dist'} (run " \
               f"{SHARED / 'tools/perfetto-ui/setup.sh'})"
    if not (PFUI_HOME / "venv" / "bin" / "python").exists():
        return f"no playwright venv in {PFUI_HOME / 'venv'}"
    if not os.access("/usr/bin/chromium", os.X_OK):
        return "no /usr/bin/chromium"
    return None


@pytest.fixture
def ui_server():
    """The offline Perfetto UI build served on 127.0.0.1 (another origin than the trace's)."""
    reason = _ui_missing()
    if reason:
        pytest.skip(reason)
    handler = type("H", (http.server.SimpleHTTPRequestHandler,),
                   {"log_message": lambda *a: None})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        lambda *a: handler(*a, directory=str(PFUI_HOME / "web_dist")))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_open_in_the_perfetto_ui(tmp_path, ui_server):
    run = copy_sample(tmp_path, "matmul_add")
    o = Opened(run, "--ui", ui_server, "--no-browser", "--timeout", "120")
    assert re.match(re.escape(ui_server) + r"#!/\?url=http://(127\.0\.0\.1|localhost):", o.link)
    driver = subprocess.run([str(PFUI_HOME / "venv/bin/python"),
                             str(REPO / "tests" / "ui_driver.py"), o.link],
                            capture_output=True, text=True, timeout=180)
    assert driver.returncode == 0, driver.stderr[-2000:]
    ui = json.loads(driver.stdout.strip().splitlines()[-1])
    code, _, err = o.finish(timeout=10)        # open exited after the UI's fetch
    assert code == 0 and "the UI fetched the trace" in err
    assert ui["loaded"] and not ui["dialogs"], ui
    (cached,) = run.glob("*.pftrace")
    counts = pftrace_counts(decode_pftrace(cached))
    assert ui["slices"] == counts["begin"] + counts["instant"]
    # (the UI shows a process or thread row as "<name> <pid or tid>")
    shown = {re.sub(r" \d+$", "", r) for r in ui["track_rows"]}
    assert "PyPTO Machine View" in shown, ui["track_rows"]
    assert "tracecvt analysis" in shown, ui["track_rows"]
    (again,) = tracecvt.read(run)
    again.to_perfetto(tmp_path / "same.pftrace")            # the trace open served, again
    assert (tmp_path / "same.pftrace").read_bytes() == cached.read_bytes()
    t = again.trace                     # every track with events (empty lanes are not drawn)
    names = {t.tracks[s.track].name for s in t.slices} | {t.tracks[c.track].name
                                                           for c in t.counters if len(c)}
    # (a group's first counter is the group's row, "<group> · <counter>")
    missing = {n for n in names if n not in shown and not any(r.endswith(f" · {n}")
                                                                for r in shown)}
    assert len(names) > 30 and not missing, missing
    a = again.analysis                  # and the derived ones: bubble lanes, critical path
    bubbles = {f"{a.timeline.lanes[g[0]].name} · bubbles" for g in a.bubbles.gaps}
    assert bubbles and bubbles | {"critical path"} <= shown, bubbles - shown


def test_open_stops_on_ctrl_c_and_takes_a_port(tmp_path):
    import signal
    import socket
    run = copy_sample(tmp_path)
    with socket.socket() as s:                      # a free port, then one in use
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    o = Opened(run, "--no-browser", "--port", port)
    assert f"url=http://127.0.0.1:{port}/" in o.link
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        r = subprocess.run([*TRACECVT, "open", run, "--no-browser", "--port",
                            str(busy.getsockname()[1])], capture_output=True, text=True,
                           timeout=60)
    assert r.returncode == 2 and "try another --port" in r.stderr.splitlines()[-1]
    o.proc.send_signal(signal.SIGINT)
    code, _, err = o.finish()
    assert code == 130 and "stopped" in err
    assert "Traceback" not in err
