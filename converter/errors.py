"""Errors that reach the user as one line."""

from __future__ import annotations

from pathlib import Path


def one_line(message: str) -> str:
    """``message`` with line breaks escaped, so an error quoting input stays one line."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


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
