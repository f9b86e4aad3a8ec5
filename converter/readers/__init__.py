"""Reader registry: adding a format is one module and one line in READERS."""

from __future__ import annotations

from pathlib import Path

from .. import archive, fileio
from ..errors import InputError
from .base import Reader, ReadOptions, Source
from . import ascend_db, model, msprof, ncu, pypto, simpler

READERS: list[Reader] = [
    simpler.READER,
    pypto.READER,
    ascend_db.READER,      # before msprof: a PROF_* folder is claimed by one of them
    msprof.READER,
    ncu.READER,
    model.READER,
]

# Directories that never hold runs but can be huge.
_SKIP_DIRS = {".git", "__pycache__", "node_modules", "kernel_aicpu", "kernel_aicore", "graphs"}


def format_names() -> list[str]:
    return [name for r in READERS for name in r.formats]


def reader_for(fmt: str) -> Reader | None:
    """The reader of format ``fmt`` (a name ``--from`` accepts), or None."""
    return next((r for r in READERS if fmt in r.formats), None)


def _readers_for(fmt: str | None) -> list[Reader]:
    if fmt is None:
        return READERS
    r = reader_for(fmt)
    if r is None:
        raise InputError(None, f"unknown format {fmt!r} (known: {', '.join(format_names())})")
    return [r]


def find_runs(path: str | Path, fmt: str | None = None,
              max_entry: int | None = None) -> list[Source]:
    """Every run under ``path``: a file, a run directory, a tree of runs, or an archive
    (.zip, .tar, .tar.gz …) of any of these, read in place.  ``max_entry`` caps what one
    archive entry may expand to (default: ``archive.max_entry()``, 4 GiB)."""
    with fileio.heads_kept():           # several readers sniff the same files
        return _find_runs(Path(path), fmt, max_entry)


def _find_runs(path: Path, fmt: str | None, max_entry: int | None) -> list[Source]:
    if max_entry is None:
        max_entry = archive.max_entry()
    readers = _readers_for(fmt)
    force = fmt is not None
    if not fileio.exists(path):
        raise InputError(path, "no such file or directory")
    hit = archive.locate(path)
    if (hit is not None and hit[1] == "") or (hit is None and path.is_file()
                                              and archive.sniff(path)):
        return _find_in_archive(path, fmt, readers, max_entry)
    if fileio.is_file(path):
        for r in readers:
            src = r.find_file(path, force)
            if src is not None:
                if fmt:
                    src.variant = src.variant if fmt == r.formats[0] else fmt
                return [src]
        raise InputError(path, "unknown format (use --from FORMAT; known: "
                         + ", ".join(format_names()) + ")")
    runs = _walk(path, fmt, readers, max_entry)
    _unique_names(runs)
    return runs


def _find_in_archive(path: Path, fmt: str | None, readers: list[Reader],
                     max_entry: int) -> list[Source]:
    mounted = archive.mount(path, max_entry)
    runs = _walk(path, fmt, readers, max_entry)
    if not runs:
        # An archive holding a single file: let the readers sniff it.
        files = [(d / n) for d, _, names in fileio.walk(path) for n in names]
        if len(files) == 1:
            runs = find_runs(files[0], fmt, max_entry)
    for src in runs:
        src.archive, src.max_entry = path, max_entry
        src.refused = list(mounted.refused)
    _unique_names(runs)
    return runs


_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")


def _walk(path: Path, fmt: str | None, readers: list[Reader], max_entry: int) -> list[Source]:
    runs: list[Source] = []
    claimed: set[Path] = set()
    force = fmt is not None
    on_disk = archive.locate(path) is None
    for directory, dirnames, filenames in fileio.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        if on_disk:     # archives in a folder of runs are read too (not archives in archives)
            for n in sorted(filenames):
                if n.lower().endswith(_ARCHIVE_SUFFIXES) and archive.sniff(directory / n):
                    runs.extend(_find_in_archive(directory / n, fmt, readers, max_entry))
        # tracecvt's own Chrome JSON next to a run is an output, never an input.
        filenames = [n for n in filenames if not fileio.is_own_output(directory / n)]
        for r in readers:
            for src in r.find(directory, sorted(filenames), force):
                if src.root in claimed:
                    continue
                claimed.add(src.root)
                if fmt and fmt != r.formats[0]:
                    src.variant = fmt
                runs.append(src)
    # A companion (a drawing of a run) never wins over the file it stands for: it is listed
    # among that run's files not used; one that stands for none of the runs found is a run.
    primary = [s for s in runs if not s.companion]
    kept = []
    for s in runs:
        owner = None
        if s.companion and hasattr(s.reader, "companion_of"):
            owner = s.reader.companion_of(s, primary)
        if owner is None:
            kept.append(s)
        else:
            run, why = owner
            for p in s.files.values():
                run.add_not_used(p, why)
    return kept


def _unique_names(runs: list[Source]) -> None:
    seen: dict[str, int] = {}
    for src in runs:
        n = seen.get(src.name, 0)
        seen[src.name] = n + 1
        if n:
            src.name = f"{src.name}-{n + 1}"


__all__ = ["READERS", "ReadOptions", "Source", "find_runs", "format_names", "reader_for"]
