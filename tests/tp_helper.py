"""Perfetto's own trace_processor (../shared/tools/trace_processor, v58.2) from tests.

Each trace gets its own trace_processor_shell, served on a port no other of this process's
shells holds.  The ``perfetto`` package's own start (``TraceProcessorConfig(unique_port=True)``)
asks the system for a free port, lets it go and starts the shell on it a moment later: two
shells started at once in threads can be handed the same port, and then one of them fails
to bind while its client, finding a server there, loads its trace into the other's shell
(seen in CI: "no such table: slice" in the middle of another trace's load).  Here the
ports are handed out under a lock and kept until their shell has ended.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from conftest import SHARED

TP_BIN = SHARED / "tools" / "trace_processor" / "trace_processor_shell"
LOAD_TIMEOUT_S = 60            # several may be starting at once on a busy machine

_lock = threading.Lock()
_held: set[int] = set()         # ports of this process's live shells


def _free_port() -> int:
    """A port the system calls free and none of this process's shells holds (kept held)."""
    with _lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _held:
                _held.add(port)
                return port


@contextmanager
def _shell() -> Iterator[str]:
    """A trace_processor_shell HTTP server of this call's own; yields its address."""
    port = _free_port()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([str(TP_BIN), "-D", "--http-port", str(port), "--no-ftrace-raw"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                err.seek(0)
                raise RuntimeError(f"trace_processor_shell on port {port} exited "
                                   f"({proc.returncode}): {err.read().decode(errors='replace')}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5).close()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"trace_processor_shell on port {port} did not answer "
                                       f"in {LOAD_TIMEOUT_S} s")
                time.sleep(0.05)
        if proc.poll() is not None:          # the answer came from another server
            raise RuntimeError(f"trace_processor_shell on port {port} exited ({proc.returncode})")
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()
        err.close()
        with _lock:
            _held.discard(port)


@contextmanager
def trace_processor(path: Path) -> Iterator[object]:
    """A TraceProcessor on ``path``, in a trace_processor_shell of its own (ended on exit)."""
    from perfetto.trace_processor import TraceProcessor
    with _shell() as addr:
        tp = TraceProcessor(trace=str(path), remote=addr)
        try:
            yield tp
        finally:
            tp.close()


def rows(tp, sql: str) -> list[dict]:
    return [dict(r.__dict__) for r in tp.query(sql)]


def problems(tp) -> list[dict]:
    """Import stats of severity error or data_loss with a non-zero value."""
    return rows(tp, "select name, idx, severity, value from stats "
                    "where severity in ('error', 'data_loss') and value > 0")
