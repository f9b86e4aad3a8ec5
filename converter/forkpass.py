"""Run one function in a forked process while this one goes on.

Used where a large conversion splits into two independent halves (the PyPTO reader's
counter and flow pass, the Perfetto writer's second half of the sequences).  The child
shares the parent's memory copy-on-write, so its input costs nothing to hand over; its
return value comes back pickled (or as msgpack, ``wire``) through a pipe (it is our own
data, never the input's).
A child that fails or dies is reported, and the caller decides: do the work itself, or
fail with a one-line error.
"""

from __future__ import annotations

import functools
import os
import pickle
import signal
import sys
from array import array
from typing import Any, Callable


def signal_name(sig: int) -> str:
    """``SIGKILL`` for 9, ``signal 99`` for a number with no name."""
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def how_it_ended(status: int | None) -> str:
    """A child's wait ``status`` in words: ``killed by SIGKILL``, ``exit code 3``."""
    if status is None:
        return "unknown"
    if os.WIFSIGNALED(status):
        return f"killed by {signal_name(os.WTERMSIG(status))}"
    return f"exit code {os.WEXITSTATUS(status)}"


class ForkedPass:
    """A forked process running one function; ``result()`` collects it (once)."""

    def __init__(self, pid: int, pipe: int, wire: Any = None):
        self.pid = pid
        self.pipe = pipe
        self.wire = wire            # the result's type where it comes as msgpack
        self.error = ""

    def result(self) -> Any:
        """The function's return value, or None when it failed (``error`` says why)."""
        with os.fdopen(self.pipe, "rb") as r:
            self.pipe = -1
            data = r.read()
        # A child that told its result is ending (a large process takes a while to be torn
        # down): ``abandon`` reaps it once the caller has used the result.
        try:
            ok, packed, value = pickle.loads(data)
        except Exception:                       # noqa: BLE001 - died before reporting
            status = reap(self.pid)
            self.pid = 0
            ok, packed, value = False, False, \
                f"it ended without a result ({how_it_ended(status)})"
        if packed:
            try:
                value = _decoder(self.wire).decode(value)
            except Exception as e:              # noqa: BLE001 - not what it said it sent
                ok, value = False, f"its result did not read back: {e}"
        if not ok:
            self.error = str(value)
            return None
        return value

    def abandon(self) -> None:
        """Stop the process if it still runs, reap it and release the pipe (idempotent;
        call it once done with the result too)."""
        if self.pid:
            reap(self.pid, kill=True)
            self.pid = 0
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1


def fork_pass(fn: Callable[[], Any], wire: Any = None) -> ForkedPass | None:
    """Start ``fn()`` in a forked process; None where processes cannot be forked.

    ``wire``: the type of what ``fn`` returns (built-in types, as msgspec reads them).  The
    result then comes back as msgpack, read as that type (tuples as tuples): on the readers'
    results 6x faster to make than a pickle and a quarter faster to read (docs/performance.md,
    twelfth session).  A result msgpack cannot carry (a Fraction, an int past 64 bits) is
    pickled instead."""
    def child(w: int) -> None:
        try:
            value, packed = fn(), False
            if wire is not None:
                try:
                    value, packed = _encoder().encode(value), True
                except (TypeError, OverflowError):
                    pass
            data = pickle.dumps((True, packed, value), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as e:                      # noqa: BLE001 - reported to the parent
            data = pickle.dumps((False, False, f"{type(e).__name__}: {e}"))
        view = memoryview(data)
        while view:
            view = view[os.write(w, view):]
        os.close(w)         # the parent reads the end now, not after this process is gone
    forked = fork_child(child)
    return ForkedPass(*forked, wire) if forked else None


@functools.lru_cache(maxsize=None)
def _encoder() -> Any:
    import msgspec                      # (only where a result travels as msgpack)
    return msgspec.msgpack.Encoder()


@functools.lru_cache(maxsize=None)
def _decoder(wire: Any) -> Any:
    import msgspec
    return msgspec.msgpack.Decoder(wire)


def fork_child(body: Callable[[int], None]) -> tuple[int, int] | None:
    """Fork a process that runs ``body(w)``, ``w`` the write end of a pipe; (its pid, the
    read end), or None where processes cannot be forked (no ``os.fork``, or it failed).

    The child leaves with ``os._exit`` (code 0 when ``body`` returns, 1 when it raises):
    nothing of the parent (open outputs and their buffers, atexit handlers, temporary files)
    is flushed or cleaned twice.  The caller reads the pipe, then ``reap``s the child.
    """
    if not hasattr(os, "fork"):
        return None
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:                     # no process to spare (EAGAIN, ENOMEM)
        os.close(r)
        os.close(w)
        return None
    if pid == 0:                                        # pragma: no cover - the child
        code = 1
        try:
            os.close(r)
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # not a live display's
            body(w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def reap(pid: int, kill: bool = False) -> int | None:
    """Wait for the child ``pid`` to end (killed first with ``kill``): its wait status, or
    None when it cannot be waited for (reaped elsewhere, as where SIGCHLD is ignored)."""
    try:
        if kill:
            os.kill(pid, signal.SIGKILL)
        return os.waitpid(pid, 0)[1]
    except OSError:
        return None


def pack_numbers(values: list) -> Any:
    """``values`` in a form that pickles fast: an array when the items are all ints of 64 bits
    or all floats (so their types come back exactly), else the list itself."""
    kinds = set(map(type, values))
    if kinds == _INT:
        try:
            return array("q", values)
        except OverflowError:
            return values
    if kinds == _FLOAT:
        return array("d", values)
    return values


_INT = {int}
_FLOAT = {float}

