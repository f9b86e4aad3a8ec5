"""The conversion pipeline: find runs, read each into the model, hand it to a writer."""

from __future__ import annotations

import dataclasses
import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import InputError, OutputError
from .fileio import atomic_output, check_output
from .model import UNTRUSTED_FLOW, Trace
from .readers import ReadOptions, Source, find_runs, format_names

__all__ = ["WRITERS", "Result", "add_derived_tracks", "convert_read", "convert_source",
           "default_output", "default_workers", "find_runs", "output_path", "read",
           "runs_under"]


def _perfetto(trace, out, progress, workers=1, enrich=None):
    from .writers.perfetto import write_perfetto
    return write_perfetto(trace, out, progress, workers, enrich)


def _chrome(trace, out, progress, workers=1, enrich=None):
    from .writers.chrome import write_chrome
    if enrich is not None:
        enrich(trace)
    return write_chrome(trace, out, progress, workers)


def _model(trace, out, progress, workers=1, enrich=None):
    from .writers.model import write_model
    return write_model(trace, out, progress)


@dataclass(frozen=True)
class WriterSpec:
    name: str
    suffix: str
    write: Callable
    derived: bool = True        # gets the derived tracks (False: the source data only)


WRITERS = {
    "perfetto": WriterSpec("perfetto", ".pftrace", _perfetto),
    "chrome": WriterSpec("chrome", ".json", _chrome),
    "model": WriterSpec("model", ".tcmodel", _model, derived=False),
}


@dataclass
class Result:
    source: Source
    output: Path
    counts: dict[str, int]
    size: int
    warnings: list[str] = field(default_factory=list)
    causes: dict[str, str] = field(default_factory=dict)     # warning -> its cause


def read(path: str | Path, fmt: str | None = None,
         options: ReadOptions | None = None) -> list[Trace]:
    """Read every run under ``path`` into the model (the Python API's entry point is
    ``tracecvt.read``, which returns a ``Run`` per run)."""
    return [src.read(options) for src in find_runs(path, fmt)]


def runs_under(path: str | Path, fmt: str | None = None) -> list[Source]:
    """``find_runs(path, fmt)``; an ``InputError`` when it finds no run, which names the
    run ``path`` is part of where one of its folders is one (a PROF folder's ``device_0``,
    a run's ``info.json``)."""
    try:
        runs = find_runs(path, fmt)
    except InputError as e:
        if e.path != str(path) or not e.message.startswith("unknown format"):
            raise
        raise InputError(path, e.message + _part_of(path, fmt)) from None
    if not runs:
        raise InputError(path, "no supported run found (formats: "
                         + ", ".join(format_names()) + ")" + _part_of(path, fmt))
    return runs


_UP = 3                 # folders up that may hold the run a path is part of
_UP_ENTRIES = 5000      # the most files and folders looked through above it


def _part_of(path: str | Path, fmt: str | None) -> str:
    """"; it is part of the msprof run at DIR: give that folder", where a folder up to
    ``_UP`` levels above ``path`` (on disk, holding at most ``_UP_ENTRIES`` entries) holds
    a run whose folder holds ``path``; else ""."""
    p = Path(path).absolute()
    for up in list(p.parents)[:_UP]:
        if not up.is_dir():                     # inside an archive: not looked for
            return ""
        seen = 0
        for _, dirs, files in os.walk(up):
            seen += len(dirs) + len(files)
            if seen > _UP_ENTRIES:
                return ""
        try:
            runs = find_runs(up, fmt)
        except Exception:                       # noqa: BLE001 - only a hint
            continue
        holding = [s for s in runs if s.root.is_dir() and p.is_relative_to(s.root.absolute())
                   and p != s.root.absolute()]
        if holding:
            src = max(holding, key=lambda s: len(s.root.parts))
            return f"; it is part of the {src.format} run at {src.root}: give that folder"
    return ""


def default_output(source: Source, writer: str, out: str | Path | None, many: bool) -> Path:
    """Where a run's output of ``writer`` goes (``output_path`` with the writer's suffix)."""
    return output_path(source, WRITERS[writer].suffix, out, many)


def output_path(source: Source, suffix: str, out: str | Path | None, many: bool) -> Path:
    """Where a run's output named ``<run><suffix>`` goes (a trace, a model, a summary).

    Without ``-o``: next to the run (beside its directory, or beside the file), named after
    the run.  With ``-o`` naming a directory (existing, or ending in a separator, or several
    runs): inside it, named after the run.  Otherwise ``-o`` is the file name.  Pass ``-o``
    as the user typed it: a ``Path`` has already dropped the trailing separator.
    """
    name = source.name + suffix
    if out is None:
        # A run read from an archive gets its output next to the archive.
        return (source.archive or source.root).parent / name
    return Path(out) / name if many or names_folder(out) else Path(out)


def names_folder(out: str | Path) -> bool:
    """Whether ``-o`` (as the user typed it) names a folder: one that exists, or a name
    ending in a separator."""
    return str(out).endswith(("/", "\\")) or Path(out).is_dir()


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity: a container or ``taskset`` may allow
    fewer than the machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """Processes one conversion uses by default: 2 where it may use 2 CPUs or more."""
    return 2 if usable_cpus() >= 2 else 1


@contextmanager
def gc_paused(freeze: bool = False):
    """Pause the cyclic garbage collector: readers build millions of acyclic objects, and
    every collection would walk all of them (15-30% of a large conversion).

    ``freeze``: what was made meanwhile and is still alive is moved out of the collector's
    reach (``gc.freeze``) before it runs again, where the caller keeps the model until the
    process ends without freeing it (the ``tracecvt`` command: ``entry.keep``); the first
    collection after the pause would otherwise walk every object of the model, once, for
    nothing (80 ms of a 30,000-task simpler run's 2.4 s).  Elsewhere (the API, tests,
    batch jobs, whose models are gone by then) nothing is frozen: cyclic garbage made
    during the pause is collected as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()


def convert_source(source: Source, writer: str, output: Path, force: bool,
                   options: ReadOptions, gzip_level: int | None = None,
                   derived: bool = True, workers: int | None = None,
                   keep: list | None = None) -> Result:
    """Read ``source``, add the derived tracks (unless ``derived`` is False, or the writer
    is "model", which keeps the source data only) and write it.

    ``workers``: processes the writer may use (None: 2 on a machine with 2 or more CPUs;
    batch conversion, which runs several conversions at once, passes 1).  ``keep``: a list
    the model is put into (in place of what it held), so that it outlives the call (the
    command ends its process without freeing it: ``entry``)."""
    from .slice_columns import columns_kept      # (numpy)
    if workers is None:
        workers = default_workers()
    with gc_paused(freeze=keep is not None), columns_kept():
        return _convert(source, writer, output, force, options, gzip_level, derived, workers,
                        keep)


def add_derived_tracks(trace: Trace) -> dict[str, int]:
    """Run the analyses once and put bubble lanes, counters and the critical path into
    ``trace`` (docs/analyses.md).  A trace that already has derived tracks is left alone."""
    from .analyses import add_derived
    return add_derived(trace)       # only the analyses the tracks need, and only if added


def _analysing(options: ReadOptions, analysis=None) -> Callable[[Trace], None]:
    """``add_derived_tracks`` (from ``analysis`` when given: ``analyze(trace)`` or
    ``analyze_tracks(trace)`` of the trace as read), with its progress stage."""
    def enrich(trace: Trace) -> None:
        from .analyses import add_derived
        options.report("analysing", 0, 1)
        add_derived(trace, analysis)
        options.report("analysing", 1, 1)
    return enrich


def write_output(trace: Trace, writer: str, output: Path, gzip_level: int | None = None,
                 workers: int = 1, enrich: Callable[[Trace], None] | None = None,
                 progress: Callable[[int], None] = lambda done: None) -> dict[str, int]:
    """Write ``trace`` with ``writer`` to ``output`` through a temporary file renamed at the
    end (gzip when the name ends in ``.gz``, unless ``gzip_level`` says); ``enrich(trace)``,
    when given, adds the derived tracks (the writer calls it).  Returns the writer's counts.
    The caller has checked ``output`` (``check_output``)."""
    if gzip_level is None and output.name.endswith(".gz"):
        gzip_level = 6
    with atomic_output(output, gzip_level) as f:
        return WRITERS[writer].write(trace, f, progress, workers, enrich)


def _convert(source: Source, writer: str, output: Path, force: bool,
             options: ReadOptions, gzip_level: int | None, derived: bool = True,
             workers: int = 1, keep: list | None = None) -> Result:
    spec = WRITERS[writer]
    check_output(output, force, source.paths())
    options = reading_options(options, workers)
    if keep:
        keep.clear()                # the previous run's model goes before this one is read
    trace = source.read(options)
    if keep is not None:
        keep.append(trace)
    return _write_read(source, trace, writer, output, options, gzip_level,
                       derived and spec.derived, workers)


def reading_options(options: ReadOptions, workers: int) -> ReadOptions:
    """``options`` with ``workers``: one count for the reader and the writer."""
    if options.workers != workers:
        options = dataclasses.replace(options, workers=workers)
    return options


def convert_read(source: Source, trace: Trace, writer: str, output: Path, force: bool,
                 options: ReadOptions, analysis=None, workers: int | None = None) -> Result:
    """``convert_source`` for a run already read (``trace``: ``source.read(options)``, as
    read: no derived tracks yet), so that a caller that needs the model too (``tracecvt open
    --at N``/``--report``: the summary) reads the run once.  ``analysis``: the run's
    ``analyze(trace)`` when the caller has it (the derived tracks are made from it, as
    ``tracecvt convert`` batches do)."""
    from .slice_columns import columns_kept      # (numpy)
    if workers is None:
        workers = default_workers()
    check_output(output, force, source.paths())
    with gc_paused(), columns_kept():
        return _write_read(source, trace, writer, output, options, None,
                           WRITERS[writer].derived, workers, analysis)


def _write_read(source: Source, trace: Trace, writer: str, output: Path,
                options: ReadOptions, gzip_level: int | None, derived: bool, workers: int,
                analysis=None) -> Result:
    # The writer calls it: it may write the source tracks meanwhile.
    enrich = _analysing(options, analysis) if derived else None

    def progress(done: int) -> None:
        options.report(f"writing {output.name}", done, len(trace.slices))

    return write_run(source, trace, writer, output, gzip_level, workers, enrich, progress)


def write_run(source: Source, trace: Trace, writer: str, output: Path,
              gzip_level: int | None = None, workers: int = 1,
              enrich: Callable[[Trace], None] | None = None,
              progress: Callable[[int], None] = lambda done: None) -> Result:
    """``write_output``, and what came of it: the file's size and every warning (the run's,
    and the flows the writer could not draw)."""
    counts = write_output(trace, writer, output, gzip_level, workers, enrich, progress)
    try:
        size = output.stat().st_size
    except OSError as e:  # pragma: no cover - the rename just succeeded
        raise OutputError(f"{output}: {e}") from None
    warnings = list(trace.meta.warnings)
    causes = {w: c for w, c in trace.meta.causes.items() if w != UNTRUSTED_FLOW}
    if counts.get("flows_not_drawn"):
        # the writer's count is not_drawn()'s: the same line and cause as the summary's
        from .writers.flows import not_drawn_lines
        counted = (counts["flows_not_drawn"], counts["flows_untrusted_not_drawn"]) \
            if "flows_untrusted_not_drawn" in counts else None
        line, cause = not_drawn_lines(trace, writer, output.name, counted)
        warnings.append(line)
        if cause:
            causes[line] = cause        # every flow left out is one the reader marked
    return Result(source, output, counts, size, warnings, causes)
