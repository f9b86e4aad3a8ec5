"""Errors that reach the user as one line."""

from __future__ import annotations

import os
from pathlib import Path


# Every character str.splitlines() breaks at, escaped as Python would print it.
_LINE_BREAKS = {c: repr(chr(c))[1:-1] for c in
                (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def one_line(message: str) -> str:
    """``message`` with line breaks escaped, so an error quoting input stays one line."""
    return message.translate(_LINE_BREAKS)


def internal_error(where: object, e: BaseException) -> str:
    """The line for an exception nobody foresaw (a bug, or an input no reader expected)."""
    return (f"{where}: could not convert ({type(e).__name__}: {e}); this is a tracecvt bug, "
            "set TRACECVT_DEBUG=1 for a traceback")


def error_message(where: object, e: Exception) -> str:
    """What to print for ``e``, raised while converting ``where``: a TracecvtError's own
    message, otherwise ``internal_error``.  Call it in the ``except`` clause: with
    TRACECVT_DEBUG set, an unforeseen exception is raised again instead (for its traceback)."""
    if isinstance(e, TracecvtError):
        return str(e)
    if os.environ.get("TRACECVT_DEBUG"):
        raise
    return internal_error(where, e)


class TracecvtError(Exception):
    """An error the CLI prints as one line and turns into exit code 2."""

    exit_code = 2


class InputError(TracecvtError):
    """Bad input: names the file and what is wrong with it."""

    def __init__(self, path: str | Path | None, message: str):
        self.path = str(path) if path is not None else None
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class OutputError(TracecvtError):
    """An output cannot be written (exists without --force, resolves to an input, ...)."""


class MissingDependency(TracecvtError, ImportError):
    """An optional package a feature needs is not installed (the message says which extra
    installs it)."""
