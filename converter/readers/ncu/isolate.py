"""Run NVIDIA's ``ncu_report`` in a forked child process, so that its crashes stay there.

``ncu_report`` is native code: a corrupt report (a few KB deleted from the middle is enough)
can make it abort the process from inside protobuf (``Check failed: count >= 0``, SIGABRT),
which no Python code can catch.  ``call`` therefore forks: the child (which inherits every
imported module, so it starts in about a millisecond) runs the function and sends back its
result, plain picklable records, through a pipe; progress callbacks travel the same way, so
the parent's progress bar keeps moving.  A child that dies from a signal (or exits without a
result) becomes a one-line ``InputError``; an ``InputError`` raised in the child is raised
again in the parent, and any other exception becomes ``ChildError`` (a tracecvt bug, with
the child's traceback as a note for TRACECVT_DEBUG=1).

What the native library prints on its way down (to file descriptor 2) is captured in a
temporary file, and its last line is quoted in the error instead of reaching the terminal as a
second line.  Where ``os.fork`` does not exist (Windows), the function runs in this process.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import tempfile
import threading
import traceback
from typing import Any, Callable

from ...errors import InputError
from ...forkpass import fork_child, reap, signal_name
from ..base import ReadOptions

CRASHED = "NVIDIA's ncu_report crashed reading this report"
_GLOG_PREFIX = re.compile(r"[FEWI]\d{4} \S+ +\d+ (\S.*)$")


class ChildError(Exception):
    """An unexpected exception in the child (a bug): its type and message, as one line."""


def call(fn: Callable[..., Any], path, options: ReadOptions, *args: Any) -> Any:
    """``fn(options, *args)`` in a forked child; its result must be picklable.  ``path`` is
    the file named in errors."""
    with tempfile.TemporaryFile(prefix="tracecvt-native-stderr-") as native:
        forked = fork_child(lambda w: _child(w, native.fileno(), fn, options, args))
        if forked is not None:
            return _parent(*forked, native, path, options)
    return fn(options, *args)           # no fork here (Windows), or no process to spare


def _child(w: int, native_fd: int, fn, options: ReadOptions, args) -> None:
    import faulthandler
    faulthandler.disable()              # a native crash is reported by the parent, once
    os.dup2(native_fd, 2)
    out = os.fdopen(w, "wb")

    def send(msg) -> None:
        data = pickle.dumps(msg, pickle.HIGHEST_PROTOCOL)   # whole, or not at all
        out.write(data)
        out.flush()

    def progress(stage: str, done: int, total: int) -> None:
        send(("progress", (stage, done, total)))

    relay = dataclasses.replace(options, progress=progress if options.progress else None)
    try:
        result = fn(relay, *args)
    except InputError as e:
        send(("input-error", (e.path, e.message)))
    except Exception as e:
        send(("bug", (type(e).__name__, str(e), traceback.format_exc())))
    else:
        try:
            send(("ok", result))
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            send(("bug", (type(e).__name__, f"the result cannot be sent: {e}",
                          traceback.format_exc())))
    out.close()


def _parent(pid: int, r: int, native, path, options: ReadOptions) -> Any:
    reply = status = None
    try:
        with os.fdopen(r, "rb") as f:
            while True:
                try:
                    kind, payload = pickle.load(f)
                except Exception:        # EOF, or a message cut off by the child's death
                    break
                if kind == "progress":
                    options.report(*payload)
                else:
                    reply = (kind, payload)
        if reply is not None:
            # The child has answered; unmapping its memory (the whole report, ~10x the file)
            # takes tens of ms, which nobody needs to wait for: reap it in the background.
            threading.Thread(target=reap, args=(pid,), daemon=True).start()
        else:
            status = reap(pid)
        pid = 0
    finally:
        if pid:                          # interrupted (Ctrl-C) or failing: end the child
            reap(pid, kill=True)
    if reply is not None:
        kind, payload = reply
        if kind == "ok":
            return payload
        if kind == "input-error":
            raise InputError(*payload)
        name, message, tb = payload
        e = ChildError(f"{name}: {message}")
        e.add_note(f"in the child process reading the report:\n{tb}")
        raise e
    how = _death(status)
    said = _last_native_line(native)
    raise InputError(path, f"{CRASHED} ({how}{': ' + said if said else ''}): the file is "
                     "corrupt or truncated")


def _death(status: int | None) -> str:
    if status is None:
        return "it ended without a result"
    if os.WIFSIGNALED(status):
        return signal_name(os.WTERMSIG(status))
    return f"exit code {os.WEXITSTATUS(status)} without a result"


def _last_native_line(native) -> str:
    """The most telling line the child's native code printed: a failed check, else the last."""
    try:
        native.seek(0, os.SEEK_END)
        size = native.tell()
        native.seek(max(0, size - 8192))
        text = native.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [" ".join(x.split()) for x in text.splitlines() if x.strip()]
    if not lines:
        return ""
    checks = [x for x in lines if "check failed" in x.lower() or "fatal" in x.lower()]
    line = (checks or lines)[-1]
    glog = _GLOG_PREFIX.match(line)          # "F0000 00:00:1732.5 12345 file.cc:240] ..."
    if glog:
        line = glog.group(1)
    return line if len(line) <= 200 else line[:199] + "…"
