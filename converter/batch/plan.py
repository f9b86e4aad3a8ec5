"""What a batch will do: every run below the archive, its outputs under OUT_DIR, and whether
those outputs are already up to date.

Outputs mirror the run's place in the archive: a run whose root is
``ARCHIVE_DIR/a/b/output_1`` gets ``OUT_DIR/a/b/output_1.pftrace`` (and ``.json`` …), so
same-named runs in different folders never collide.

A run is up to date when every requested output exists and is newer (mtime) than every input
file of the run (for a run read from a .zip/.tar, the archive file).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..readers import find_runs
from ..readers.base import Source

# Files the batch itself writes at the top of OUT_DIR: no run output may take these names.
RESERVED = ("index.json", "index.html")


@dataclass
class PlannedRun:
    source: Source
    rel: str                       # run root relative to ARCHIVE_DIR (POSIX; "." for itself)
    outputs: dict[str, Path]       # target -> output path
    inputs: list[Path]             # files whose mtimes decide up-to-dateness
    up_to_date: bool = False
    size: int = 0                  # bytes of input, to start the biggest runs first


def _relative(path: Path, base: Path) -> str:
    try:
        rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(base))
    except ValueError:
        return Path(path).name
    return rel.as_posix() or "."


def _inside(path: Path, directory: Path) -> bool:
    a, d = os.path.abspath(path), os.path.abspath(directory)
    return a == d or a.startswith(d.rstrip(os.sep) + os.sep)


def input_files(source: Source) -> list[Path]:
    """The files a run is read from (the archive file for a run inside an archive)."""
    if source.archive is not None:
        return [Path(source.archive)]
    files = list(source.files.values())
    if Path(source.root).is_file() and source.root not in files:
        files.append(source.root)
    return files


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def up_to_date(inputs: list[Path], outputs: list[Path]) -> bool:
    """Every output exists and is newer than every input."""
    if not outputs:
        return False
    out_times = [_mtime_ns(p) for p in outputs]
    if any(t is None for t in out_times):
        return False
    in_times = [t for t in (_mtime_ns(p) for p in inputs) if t is not None]
    return not in_times or min(out_times) > max(in_times)


def _base_names(runs: list[Source]) -> list[str]:
    """Run names without the ``-2``, ``-3`` … that ``find_runs`` appends to repeated names.

    Those suffixes depend on the walk order of the whole archive, so adding a run elsewhere
    could rename (and redo) an unrelated run; here collisions are settled per output folder
    instead (see ``plan``).
    """
    seen: set[str] = set()
    out = []
    for src in runs:
        m = re.fullmatch(r"(.+)-(\d+)", src.name)
        out.append(m.group(1) if m and int(m.group(2)) >= 2 and m.group(1) in seen
                   else src.name)
        seen.add(src.name)
    return out


def plan(archive_dir: Path, out_dir: Path, targets: dict, fmt: str | None = None,
         force: bool = False) -> list[PlannedRun]:
    """Find every run below ``archive_dir`` and decide its outputs.

    ``targets`` maps target name -> object with a ``suffix``.  Runs inside ``out_dir`` (when
    it lies within the archive) are ignored.  Raises ``TracecvtError`` when the archive cannot
    be scanned.
    """
    archive_dir = Path(archive_dir)
    out_dir = Path(out_dir)
    found = find_runs(archive_dir, fmt)
    # Outputs are never runs (a Chrome JSON output can look like a renamed PyPTO file): with
    # OUT_DIR inside the archive, nothing below it is taken for a run.
    nested = _inside(out_dir, archive_dir) and os.path.abspath(out_dir) != \
        os.path.abspath(archive_dir)
    keep = [i for i, s in enumerate(found) if not (nested and _inside(s.root, out_dir))]
    all_names = _base_names(found)
    runs = [found[i] for i in keep]
    names = [all_names[i] for i in keep]
    base = archive_dir if archive_dir.is_dir() else archive_dir.parent
    taken: set[str] = {os.path.normcase(str(out_dir / r)) for r in RESERVED}
    # Settle name collisions in a fixed order (by source path), whatever the walk order.
    order = sorted(range(len(runs)), key=lambda i: str(runs[i].root))
    chosen: dict[int, PlannedRun] = {}
    for i in order:
        src = runs[i]
        rel = _relative(src.root, base)
        parent = Path(rel).parent if rel != "." else Path(".")
        folder = out_dir / parent
        stem, n = names[i], 1
        while True:
            outputs = {t: folder / (stem + spec.suffix) for t, spec in targets.items()}
            keys = {os.path.normcase(str(p)) for p in outputs.values()}
            if not keys & taken:
                break
            n += 1
            stem = f"{names[i]}-{n}"
        taken |= keys
        src = dataclasses.replace(src, name=stem)
        inputs = input_files(src)
        size = 0
        for p in inputs:
            try:
                size += p.stat().st_size
            except OSError:
                pass
        run = PlannedRun(src, rel, outputs, inputs, size=size)
        run.up_to_date = not force and up_to_date(inputs, list(outputs.values()))
        chosen[i] = run
    return [chosen[i] for i in sorted(chosen, key=lambda i: chosen[i].rel)]
