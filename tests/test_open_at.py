"""``tracecvt open RUN --at N | START:END`` and ``--report``: the Perfetto UI link carries the
finding's deep-link arguments (Perfetto UI v58: visStart/visEnd in trace ns, startupCommands
pinning and expanding its lanes and noting its slice); ``--report`` serves the
HTML summary whose finding links open the served trace at each finding."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request

import tracecvt
from tracecvt.analyses.places import findings, view_span

from test_open import Opened, copy_sample

UI = "http://ui.example:10000/"


def _route(link: str) -> dict[str, str]:
    """The UI route's arguments of a deep link (``#!/?a=b&c=d``), decoded as the UI's
    Router does."""
    frag = urllib.parse.urlsplit(link).fragment
    assert frag.startswith("!/?"), link
    return dict(urllib.parse.parse_qsl(frag[3:], keep_blank_values=True))


def test_open_at_a_finding_links_to_its_interval_lanes_and_slice(tmp_path):
    run = copy_sample(tmp_path)
    (r,) = tracecvt.read(run)
    at = findings(r.summary())[0][1]
    o = Opened(run, "--at", "1", "--no-browser", "--timeout", "60", "--ui", UI)
    args = _route(o.link)
    urllib.request.urlopen(args["url"], timeout=10).read()
    code, _, err = o.finish()
    assert code == 0, err
    assert "finding #1: Dispatch ready tasks sooner" in err
    assert args["url"].startswith("http://127.0.0.1:") and args["url"].endswith(".pftrace")
    # tiny_add's first finding: the critical path's waits, 0..10259 ns (trace time); its
    # interval in view (given shrunk by a tenth each side), no slice selected (the UI
    # would cancel the zoom), its longest wait (at 1 ns) marked by a note
    assert (at["start_ns"], at["end_ns"]) == (0, 10259)
    assert int(args["visStart"]) == 1026 and int(args["visEnd"]) == 9233
    assert "ts" not in args and "dur" not in args
    commands = json.loads(args["startupCommands"])
    assert commands == at["perfetto"]["startup_commands"]
    assert [c["id"] for c in commands] == ["dev.perfetto.PinTracksByRegex"] * 2 + \
        ["dev.perfetto.ExpandTracksByRegex", "dev.perfetto.AddNoteAtTimestamp"]
    assert all(c["args"][1] == "path" for c in commands[:3])  # the UI prompts without it
    assert commands[3]["args"] == ["1", "wait schedule on AIV_34"]
    # the regexes match the lanes' paths as the v58 UI names them (NAME PID > NAME TID)
    pin = [re.compile(c["args"][0]) for c in commands[:2]]
    assert pin[0].search("PyPTO Machine View 1 > AIV_34 36")
    assert pin[0].search("PyPTO Machine View 1 > AIV_34 · bubbles")
    assert not pin[0].search("PyPTO Machine View 1 > AIV_33 35")
    assert pin[1].search("PyPTO Machine View 1 > HUB_80 76")
    # without --at: the plain link, as before
    o = Opened(run, "--no-browser", "--timeout", "60", "--ui", UI)
    plain = _route(o.link)
    urllib.request.urlopen(plain["url"], timeout=10).read()
    assert o.finish()[0] == 0 and list(plain) == ["url"]


def test_open_at_an_interval_zooms_there(tmp_path):
    run = copy_sample(tmp_path)
    o = Opened(run, "--at", "2us:8us", "--no-browser", "--timeout", "60", "--ui", UI)
    args = _route(o.link)
    urllib.request.urlopen(args["url"], timeout=10).read()
    assert o.finish()[0] == 0
    assert (int(args["visStart"]), int(args["visEnd"])) == view_span(2000, 8000) == \
        (2600, 7400)
    assert "ts" not in args and "startupCommands" not in args


def test_open_at_says_what_is_wrong_in_one_line(tmp_path):
    run = copy_sample(tmp_path)
    for args, expect in (((run, "--at", "99"), "the summary has 18 findings"),
                         ((run, "--at", "8us:2us"), "END must be after START"),
                         ((run, "--at", "x"), "give N")):
        o = Opened(*args, "--no-browser", "--timeout", "5", "--ui", UI)
        code, _, err = o.finish()
        assert code == 2 and expect in err, (args, err)
        assert "Traceback" not in err
    trace = next(iter(run.glob("*.pftrace")), None) or tmp_path / "t.pftrace"
    if not trace.exists():
        (r,) = tracecvt.read(run)
        r.to_perfetto(trace)
    o = Opened(trace, "--at", "1", "--no-browser", "--timeout", "5", "--ui", UI)
    code, _, err = o.finish()
    assert code == 2 and "needs the run" in err and err.count("\n") == 1, err


def test_open_report_serves_the_summary_with_a_link_per_finding(tmp_path):
    run = copy_sample(tmp_path)
    o = Opened(run, "--report", "--no-browser", "--timeout", "15", "--ui", UI)
    page = o.link
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", page), page
    html = urllib.request.urlopen(page, timeout=10).read().decode("utf-8")
    links = re.findall(r'class="pf-open" data-finding="(\d+)" href="([^"]+)"', html)
    (r,) = tracecvt.read(run)
    found = findings(r.summary())
    # every finding of "In the trace" (and the opportunities' column) links to the UI
    assert sorted({int(n) for n, _ in links}) == list(range(1, len(found) + 1))
    n, href = links[0]
    href = href.replace("&amp;", "&")
    assert href.startswith(UI + "#!/?url=http://127.0.0.1:")
    args = _route(href)
    want = found[int(n) - 1][1]["perfetto"]
    assert (int(args["visStart"]), int(args["visEnd"]), json.loads(args["startupCommands"])) \
        == (want["vis_start_ns"], want["vis_end_ns"], want["startup_commands"])
    body = urllib.request.urlopen(args["url"], timeout=10).read()   # the trace, served
    assert body[:1] == b"\x0a"
    code, _, err = o.finish()
    assert code == 0, err


def test_open_serves_the_trace_where_the_v58_ui_may_fetch_it(tmp_path):
    """Perfetto UI v58's Content-Security-Policy lets it fetch from 127.0.0.1 only at
    http://127.0.0.1:9001 and http://localhost:8080: the trace is served at the first free."""
    run = copy_sample(tmp_path)
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", 9001))
            free = True
        except OSError:
            free = False
    if free:
        o = Opened(run, "--no-browser", "--timeout", "60", "--ui", UI)
        url = _route(o.link)["url"]
        urllib.request.urlopen(url, timeout=10).read()
        assert o.finish()[0] == 0
        assert url.startswith("http://127.0.0.1:9001/"), url
    with socket.socket() as busy:                  # 9001 taken: localhost:8080
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            busy.bind(("127.0.0.1", 9001))
            busy.listen()
        except OSError:
            pass                                   # taken by something else already
        o = Opened(run, "--no-browser", "--timeout", "60", "--ui", UI)
        url = _route(o.link)["url"]
        urllib.request.urlopen(url, timeout=10).read()
        assert o.finish()[0] == 0
        assert url.startswith("http://localhost:8080/"), url


# ``tracecvt open`` with every Source.read counted: a line "read RUN" on stderr per read
_COUNTING = """
import sys
from tracecvt.readers import base
_read = base.Source.read
def _counted(self, options=None):
    print("read", self.name, file=sys.stderr, flush=True)
    return _read(self, options)
base.Source.read = _counted
from tracecvt.cli import main
main(prog_name="tracecvt")
"""


def _reads(err: str) -> int:
    return sum(line.startswith("read ") for line in err.splitlines())


def test_open_at_and_report_read_the_run_once(tmp_path, monkeypatch):
    """The summary (the finding to open at, the HTML report) and the trace written for the
    UI come from one read of the run; the trace is the one ``to-perfetto`` writes."""
    import test_open
    monkeypatch.setattr(test_open, "TRACECVT", [sys.executable, "-c", _COUNTING])
    run = copy_sample(tmp_path)
    o = Opened(run, "--at", "1", "--no-browser", "--timeout", "60", "--ui", UI)
    body = urllib.request.urlopen(_route(o.link)["url"], timeout=10).read()
    code, _, err = o.finish()
    assert code == 0, err
    assert _reads(err) == 1, err
    assert "finding #1: Dispatch ready tasks sooner" in err and "wrote " in err
    ref = tmp_path / "ref.pftrace"
    subprocess.run([sys.executable, "-m", "tracecvt.cli",
                    "to-perfetto", str(run), "-o", str(ref), "-q"], check=True)
    assert body == ref.read_bytes()
    # the trace is cached now: read once, for the summary only
    o = Opened(run, "--at", "1", "--no-browser", "--timeout", "60", "--ui", UI)
    assert urllib.request.urlopen(_route(o.link)["url"], timeout=10).read() == body
    code, _, err = o.finish()
    assert code == 0 and _reads(err) == 1 and "using " in err, err
    # with --from (or --clock-mhz) the cached conversion is not used: it may have been made
    # with other options
    o = Opened(run, "--at", "1", "--from", "pypto", "--no-browser", "--timeout", "60",
               "--ui", UI)
    assert urllib.request.urlopen(_route(o.link)["url"], timeout=10).read() == body
    code, _, err = o.finish()
    assert code == 0 and "using " not in err and "removed on exit" in err, err
    # --report, converting to a temporary file: one read; the page links to the trace
    o = Opened(run, "--report", "--no-cache", "--no-browser", "--timeout", "5", "--ui", UI)
    html = urllib.request.urlopen(o.link, timeout=10).read().decode("utf-8")
    (href, *_) = re.findall(r'class="pf-open" data-finding="1" href="([^"]+)"', html)
    url = _route(href.replace("&amp;", "&"))["url"]
    assert urllib.request.urlopen(url, timeout=10).read() == body
    code, _, err = o.finish()
    assert code == 0 and _reads(err) == 1 and "removed on exit" in err, err
