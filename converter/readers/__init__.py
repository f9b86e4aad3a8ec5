"""Reader registry: adding a format is one module and one line in READERS."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from .base import Reader, ReadOptions, Source
from . import pypto

READERS: list[Reader] = [
    pypto.READER,
]

# Directories that never hold runs but can be huge.
_SKIP_DIRS = {".git", "__pycache__", "node_modules", "kernel_aicpu", "kernel_aicore", "graphs"}


def format_names() -> list[str]:
    return [name for r in READERS for name in r.formats]


def _readers_for(fmt: str | None) -> list[Reader]:
    if fmt is None:
        return READERS
    for r in READERS:
        if fmt in r.formats:
            return [r]
    raise InputError(None, f"unknown format {fmt!r} (known: {', '.join(format_names())})")


def find_runs(path: str | Path, fmt: str | None = None) -> list[Source]:
    """Every run under ``path`` (a file, a run directory or a tree of runs)."""
    path = Path(path)
    readers = _readers_for(fmt)
    force = fmt is not None
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if path.is_file():
        for r in readers:
            src = r.find_file(path, force)
            if src is not None:
                if fmt:
                    src.variant = src.variant if fmt == r.formats[0] else fmt
                return [src]
        raise InputError(path, "unknown format (use --from FORMAT; known: "
                         + ", ".join(format_names()) + ")")
    runs: list[Source] = []
    claimed: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        directory = Path(dirpath)
        for r in readers:
            for src in r.find(directory, sorted(filenames), force):
                if src.root in claimed:
                    continue
                claimed.add(src.root)
                if fmt and fmt != r.formats[0]:
                    src.variant = fmt
                runs.append(src)
    _unique_names(runs)
    return runs


def _unique_names(runs: list[Source]) -> None:
    seen: dict[str, int] = {}
    for src in runs:
        n = seen.get(src.name, 0)
        seen[src.name] = n + 1
        if n:
            src.name = f"{src.name}-{n + 1}"


__all__ = ["READERS", "ReadOptions", "Source", "find_runs", "format_names"]
