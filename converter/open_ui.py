"""``tracecvt open PATH``: the run's trace in the Perfetto UI, in one command.

As Perfetto's own ``open_trace_in_ui`` does: the trace is served, alone, on 127.0.0.1 with
the CORS header the UI needs (``Access-Control-Allow-Origin``: the UI's origin), and the
browser is opened at the UI's deep link ``<ui>/#!/?url=http://127.0.0.1:PORT/NAME``; the UI
fetches the file and opens it with its in-browser engine, and the command exits once the
whole file was sent (or on Ctrl-C, or after ``--timeout``).

PATH that is not already a trace is converted first; the trace is kept next to the run,
``<run>.pftrace`` as ``to-perfetto`` names it, and reused while it is newer than every input
file (``--no-cache``, ``--from`` or ``--clock-mhz``: a temporary file, removed on exit).

The in-browser engine has about 2 GB of memory (WebAssembly), and a trace takes 2-4 times
its file size there (Perfetto's "Visualising large traces"): a trace over ``--max-ui-size``
(default 1 GiB) is opened through a native ``trace_processor --httpd`` instead, which the UI
finds on 127.0.0.1:9001 (it asks whether to use it).  tracecvt starts it when the binary is
given (``--trace-processor``, ``TRACECVT_TRACE_PROCESSOR``) or on PATH
(``trace_processor_shell``, ``trace_processor``), and says how otherwise.
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .cliopts import (EXIT_ERROR, EXIT_INTERRUPTED, clock_mhz as clock_mhz_, fail,
                      size as size_option, warn_run)
from .errors import InputError, TracecvtError, error_message, one_line
from .open_at import at_args, one_run, parse_at, summary_for

if TYPE_CHECKING:
    from .readers import Source

DEFAULT_UI = "https://ui.perfetto.dev"
TRACE_SUFFIXES = (".pftrace", ".perfetto-trace", ".perfetto", ".pb")
CHROME_SUFFIXES = (".json", ".json.gz")
TP_NAMES = ("trace_processor_shell", "trace_processor")
TP_PORT = 9001                  # where the UI looks for trace_processor --httpd
# Where the trace is served by default: the Perfetto UI (v58, ui.perfetto.dev) fetches from
# 127.0.0.1 only at these (its Content-Security-Policy's connect-src: 'self', https:,
# http://localhost:8080, http://127.0.0.1:9001), the first free one, as Perfetto's own
# open_trace_in_ui does (port 9001).  The UI probes 9001 for a trace_processor --httpd
# (POST /status); this server answers that with an error, and the UI goes on.
CSP_PORTS = ((TP_PORT, "127.0.0.1"), (8080, "localhost"))


def _note(message: str) -> None:
    click.echo(f"tracecvt: {one_line(message)}", err=True)


def ui_origin(ui: str) -> str:
    """``scheme://host[:port]`` of the UI's address: what the CORS header allows."""
    parts = urllib.parse.urlsplit(ui)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(f"{ui!r} is not an http(s) address", param_hint="--ui")
    return f"{parts.scheme}://{parts.netloc}"


def deep_link(ui: str, trace_url: str | None, args: str = "") -> str:
    """The UI's address with ``#!/?url=trace_url`` (or ``#!/`` alone) and the route
    arguments ``args`` (``places.encode_params``: ``visStart=…&ts=…``), keeping its path and
    query (``https://host/perfetto/?testing=1`` stays as it is)."""
    parts = urllib.parse.urlsplit(ui)
    route = "&".join(x for x in (f"url={trace_url}" if trace_url else "", args) if x)
    fragment = "!/" + (f"?{route}" if route else "")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/",
                                    parts.query, fragment))


def _is_trace(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(TRACE_SUFFIXES)


def run_at(path: Path, fmt) -> Source | None:
    """The one run at ``path``; None when ``path`` is a trace already (served as it is)."""
    from .convert import runs_under
    if fmt is None and _is_trace(path):
        return None
    try:
        runs = runs_under(path, fmt)
    except InputError:
        if fmt is None and path.is_file() and path.name.lower().endswith(CHROME_SUFFIXES):
            return None                     # a Chrome JSON trace no reader claims
        raise
    return one_run(path, runs)


def trace_for(path: Path, fmt, options, cache: bool, quiet: bool,
              summary: tuple | None = None) -> tuple[Path, bool]:
    """(the trace to serve, whether it is a temporary file) for ``path``: ``path`` itself
    when it is a trace, else the run converted (or its cached conversion).  ``summary``:
    ``(src, summary_for(src, options))``: the run is not read again, that model is
    written, its derived tracks made from that analysis (they are appended: the model's
    slice indexes, which the analysis and the HTML report use, stay as they were)."""
    from .batch.plan import input_files, up_to_date
    from .convert import convert_read, convert_source, default_output
    src = summary[0] if summary is not None else run_at(path, fmt)
    if src is None:
        return path, False
    target = default_output(src, "perfetto", None, False)
    if cache and up_to_date(input_files(src), [target]):
        _note(f"using {target} (newer than the run's files; --no-cache converts again)")
        return target, False
    temporary = not cache
    if cache and not os.access(target.parent, os.W_OK):
        _note(f"{target.parent} is not writable: converting to a temporary file")
        temporary = True
    if temporary:
        target = Path(tempfile.mkdtemp(prefix="tracecvt-open-")) / target.name
    from .progress import Reporter
    reporter = Reporter(enabled=not quiet)
    options.progress = reporter
    try:
        if summary is not None:
            model, analysis, _ = summary[1]
            result = convert_read(src, model, "perfetto", target, True, options, analysis)
        else:
            result = convert_source(src, "perfetto", target, True, options)
    except BaseException:
        if temporary:
            shutil.rmtree(target.parent, ignore_errors=True)
        raise
    finally:
        reporter.close()
    warn_run(result.warnings, result.causes, src.name, src.root)
    _note(f"wrote {target}" + (" (removed on exit)" if temporary else ""))
    return target, temporary


class _OneFile(http.server.BaseHTTPRequestHandler):
    """Serves exactly one file at ``/NAME``, with the CORS header, and the HTML report at
    ``/`` when there is one; 404 for anything else."""

    path_on_disk: Path
    route: str
    origin: str
    served: threading.Event
    report: bytes | None = None

    def log_message(self, *args) -> None:      # no request log on stderr
        pass

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", self.origin)
        self.send_header("Cache-Control", "no-cache")

    def do_OPTIONS(self) -> None:               # a preflight (Chrome's private network access)
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD")
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._send(body=False)

    def do_GET(self) -> None:
        self._send(body=True)

    def _send(self, body: bool) -> None:
        if self.report is not None and urllib.parse.urlsplit(self.path).path == "/":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.report)))
            self.end_headers()
            if body:
                self.wfile.write(self.report)
            return
        if urllib.parse.urlsplit(self.path).path != self.route:
            self.send_response(404)
            self._cors()
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = self.path_on_disk.stat().st_size
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if not body:
            return
        try:
            with open(self.path_on_disk, "rb") as f:
                shutil.copyfileobj(f, self.wfile, 1 << 20)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return                              # the browser went away: keep waiting
        self.served.set()


def serve(trace: Path, port: int, origin: str) -> tuple[http.server.ThreadingHTTPServer, str,
                                                        threading.Event]:
    """Start serving ``trace`` on 127.0.0.1:``port`` (0: any free port): (server, its URL,
    the event set once the whole file was sent).  ``httpd.RequestHandlerClass.report``
    set to HTML bytes serves them at ``/``."""
    route = "/" + urllib.parse.quote(trace.name)
    served = threading.Event()
    handler = type("Handler", (_OneFile,), {"path_on_disk": trace, "route": route,
                                            "origin": origin, "served": served,
                                            "report": None})
    httpd = None
    if port == 0:
        for p, host in CSP_PORTS:
            try:
                httpd = http.server.ThreadingHTTPServer(("127.0.0.1", p), handler)
                break
            except OSError:
                continue
        else:
            _note("127.0.0.1:9001 and localhost:8080 are in use: serving on another port, "
                  "which Perfetto UI v58 and later (ui.perfetto.dev) refuse to fetch from "
                  "(their Content-Security-Policy); free one of them or use --ui")
    if httpd is None:
        host = dict(CSP_PORTS).get(port, "127.0.0.1")
        try:
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError as e:
            raise TracecvtError(f"127.0.0.1:{port}: cannot serve the trace there "
                                f"({e.strerror or e}); try another --port") from None
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://{host}:{httpd.server_address[1]}{route}", served


def find_trace_processor(given: str | None) -> str | None:
    if given:
        return given
    for name in TP_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _show(link: str, browser: bool) -> None:
    click.echo(link)                            # stdout: the link, alone
    if browser:
        import webbrowser
        if not webbrowser.open(link):
            _note("no browser could be started: open the link above")


def _large(trace: Path, size: int, ui: str, tp: str | None, browser: bool,
           timeout: float | None) -> int:
    gb = size / 1e9
    if tp is None:
        fail(f"{trace}: {gb:.1f} GB is too large for the Perfetto UI's in-browser engine "
             "(about 2 GB of memory, 2-4x the file size); open it with a native trace "
             f"processor: trace_processor_shell --httpd {trace} (from perfetto.dev), then "
             f"{ui} (it offers to use it); or give the binary: --trace-processor PATH")
        return EXIT_ERROR
    _note(f"{trace}: {gb:.1f} GB is too large for the UI's in-browser engine: starting "
          f"{tp} --httpd on 127.0.0.1:{TP_PORT}; the UI offers to use it (Ctrl-C stops it)")
    try:
        proc = subprocess.Popen([tp, "--httpd", str(trace)])
    except OSError as e:
        fail(f"{tp}: cannot start it ({e.strerror or e})")
        return EXIT_ERROR
    try:
        _show(deep_link(ui, None), browser)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _note(f"stopping {tp} after --timeout {timeout:g} s")
        return 0 if proc.returncode in (None, 0) else EXIT_ERROR
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _serve_report(httpd, summary, ui: str, url: str, args: str, browser: bool,
                  timeout: float | None) -> None:
    """Serve the HTML summary at ``/`` (each finding's link: the UI's deep link to the
    served trace at the finding's place) until Ctrl-C or ``timeout``."""
    import time

    from .analyses.places import encode_params
    from .summary.html import render_html
    trace, analysis, data = summary

    def link(at: dict) -> str:
        return deep_link(ui, url, encode_params(at["perfetto"]))
    httpd.RequestHandlerClass.report = render_html(data, trace, analysis, link).encode("utf-8")
    page = f"http://127.0.0.1:{httpd.server_address[1]}/"
    _note(f"serving the report at {page} and the trace at {url} (Ctrl-C stops)")
    _show(page, browser)
    if args:
        _note("--at: " + deep_link(ui, url, args))
    if timeout:
        time.sleep(timeout)
    else:
        threading.Event().wait()


@click.command("open")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--ui", default=DEFAULT_UI, show_default=True, metavar="URL",
              help="Perfetto UI to open (a self-hosted one, e.g. http://host:10000/).")
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="Port on 127.0.0.1 to serve the trace on (default: 9001, else 8080 as "
                   "localhost: the only ones the Perfetto UI v58 fetches from; else any).")
@click.option("--no-browser", is_flag=True, help="Print the link instead of opening a browser.")
@click.option("--no-cache", is_flag=True,
              help="Convert to a temporary file instead of keeping <run>.pftrace next to "
                   "the run (also with --from or --clock-mhz: a kept conversion may have "
                   "been made with other options).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Stop waiting for the UI after this many seconds.")
@click.option("--max-ui-size", default="1GiB", show_default=True, metavar="SIZE",
              help="Larger traces are opened through a native trace_processor --httpd.")
@click.option("--trace-processor", "tp", metavar="PATH",
              envvar="TRACECVT_TRACE_PROCESSOR",
              help="trace_processor binary for large traces (default: trace_processor_shell "
                   "or trace_processor on PATH; env TRACECVT_TRACE_PROCESSOR).")
@click.option("--from", "fmt", metavar="FORMAT", help="Input format instead of detecting it.")
@click.option("--clock-mhz", metavar="MHZ", help="Clock of raw cycle/tick counts.")
@click.option("--at", "at", metavar="N|START:END",
              help="Open at the N-th finding of the run's summary (#N there): its interval "
                   "in view, its lanes pinned, a note at its slice; or at START:END (trace "
                   "time: ns from the trace's time 0, or with a unit: 2.5us:40us).")
@click.option("--report", is_flag=True,
              help="Serve the run's HTML summary too and open it: each finding's link opens "
                   "the trace at its place; serves until Ctrl-C or --timeout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def open_command(path, ui, port, no_browser, no_cache, timeout, max_ui_size, tp, fmt,
                 clock_mhz, at, report, quiet):
    """Open PATH in the Perfetto UI: convert it (unless it is a trace already), serve the
    trace on 127.0.0.1 and open the browser at the UI's link; exits once the UI has
    fetched it."""
    from .readers import ReadOptions
    origin = ui_origin(ui)
    limit = size_option(max_ui_size, "--max-ui-size", "1GiB or 512M")
    where = parse_at(at) if at is not None else None
    options = ReadOptions(clock_mhz=clock_mhz_(clock_mhz))    # (convert_source sets workers)
    summary = None
    try:
        if report or isinstance(where, int):
            why = "--report" if report else f"--at {at}"
            if fmt is None and (_is_trace(path) or path.name.lower().endswith(CHROME_SUFFIXES)):
                raise InputError(path, f"{why} needs the run (its directory, file or "
                                       ".tcmodel), not a trace: a trace holds no findings")
            src = run_at(path, fmt)
            from .progress import Reporter
            reporter = Reporter(enabled=not quiet)
            options.progress = reporter
            try:
                summary = summary_for(src, options)     # read once: it is written too
            finally:
                reporter.close()
        args, what = at_args(where, summary[2] if summary else None)
        if what:
            _note(what)
        # The cached conversion (the run's default .pftrace) says nothing of the options it
        # was made with: with --from or --clock-mhz the run is converted again, to a
        # temporary file, so that the trace is read as asked (and agrees with the findings).
        cache = not no_cache and fmt is None and clock_mhz is None
        if not no_cache and not cache and not (fmt is None and _is_trace(path)):
            _note("--from / --clock-mhz: converting again (a cached conversion may have been "
                  "made with other options)")
        trace, temporary = trace_for(path, fmt, options, cache, quiet,
                                     (src, summary) if summary else None)
    except KeyboardInterrupt:
        fail("interrupted; no partial output was left behind")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:
        fail(error_message(path, e))
        sys.exit(EXIT_ERROR)
    try:
        size = trace.stat().st_size
        if size > limit:
            sys.exit(_large(trace, size, ui, find_trace_processor(tp), not no_browser,
                            timeout))
        try:
            httpd, url, served = serve(trace, port, origin)
        except TracecvtError as e:
            fail(str(e))
            sys.exit(EXIT_ERROR)
        try:
            if summary is not None and report:
                return _serve_report(httpd, summary, ui, url, args, not no_browser, timeout)
            _note(f"serving {trace} at {url} until the UI has fetched it (Ctrl-C stops)")
            _show(deep_link(ui, url, args), not no_browser)
            if not served.wait(timeout):
                fail(f"the UI did not fetch {url} within {timeout:g} s")
                sys.exit(EXIT_ERROR)
            _note("the UI fetched the trace")
        except KeyboardInterrupt:
            _note("stopped")
            sys.exit(EXIT_INTERRUPTED)
        finally:
            httpd.shutdown()
            httpd.server_close()
    finally:
        if temporary:
            shutil.rmtree(trace.parent, ignore_errors=True)
