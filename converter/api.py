"""The Python API: ``tracecvt.read(path)`` -> one ``Run`` per run found (docs/api.md).

A ``Run`` wraps what the command line uses for one run: its ``Source`` (readers), the
``Trace`` read from it (model), the ``Analysis`` computed once (analyses) and the writers,
with the command line's rules (outputs named after the run, next to it; never over an input
or an existing file without ``force``; written to a temporary file and renamed).  Errors
are the command line's typed exceptions (``tracecvt.errors``): ``InputError`` for bad input,
``OutputError`` for an output that cannot be written, a ``TracecvtError`` naming the run for
anything unforeseen (``TRACECVT_DEBUG=1`` raises the original instead).

Nothing here is imported by ``import tracecvt`` until first used.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .errors import MissingDependency, TracecvtError, error_message
from .readers import ReadOptions, Source

if TYPE_CHECKING:
    from .analyses.full import Analysis
    from .model import Trace

__all__ = ["Run", "read"]


def read(path: str | os.PathLike, fmt: str | None = None, *, clock_mhz: Any = None,
         all_metrics: bool = False) -> list["Run"]:
    """The runs under ``path`` (a file, a run directory, a folder of runs, a ``.tcmodel``,
    an archive), as the command line finds them.  ``fmt`` forces a format (``--from``),
    ``clock_mhz`` sets the rate of raw cycle counts (``--clock-mhz``), ``all_metrics`` keeps
    every Nsight Compute metric (``--all-metrics``).  Each run is read when first used.

    Raises ``InputError`` when ``path`` does not exist, has an unknown format or holds no
    run."""
    from fractions import Fraction
    clock = None if clock_mhz is None else Fraction(str(clock_mhz))
    options = ReadOptions(clock_mhz=clock, all_metrics=all_metrics)
    from .convert import runs_under
    runs = _typed(path, lambda: runs_under(path, fmt))
    return [Run(src, options) for src in runs]


def _typed(where: object, fn: Callable[[], Any]) -> Any:
    """``fn()``, with an unforeseen exception turned into a one-line ``TracecvtError``
    (the command line's message) unless TRACECVT_DEBUG is set."""
    try:
        return fn()
    except TracecvtError:
        raise
    except Exception as e:
        raise TracecvtError(error_message(where, e)) from e


def _pandas():
    try:
        import pandas
    except ImportError:
        raise MissingDependency("tables as DataFrames need pandas: pip install "
                                "'tracecvt[pandas]'") from None
    return pandas


class Run:
    """One run: ``trace`` (the model), ``analysis`` (computed once), writers, the summary
    and tables."""

    def __init__(self, source: Source, options: ReadOptions | None = None):
        self.source = source
        self._options = options or ReadOptions()
        self._trace: Trace | None = None
        self._analysis: Analysis | None = None
        self._written_warnings: list[str] = []      # what writing said (flows not drawn)

    def __repr__(self) -> str:
        return f"<tracecvt.Run {self.name!r} ({self.format}) at {str(self.source.root)!r}>"

    # -- what the run is ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The run's name: outputs are named after it."""
        return self.source.name

    @property
    def format(self) -> str:
        """The reader's format name ("pypto", "msprof", "ncu", "model", ...)."""
        return self.source.format

    @property
    def root(self) -> Path:
        return Path(self.source.root)

    @property
    def trace(self) -> "Trace":
        """The run in the model (tracecvt.model.Trace): the source data, read on first use.
        ``to_perfetto``/``to_chrome`` add the derived tracks to the Trace they write, which
        is then dropped: the next use reads the run again."""
        if self._trace is None:
            self._trace = self._read()
        return self._trace

    @property
    def warnings(self) -> list[str]:
        """What could not be converted, one line each (the command line's warnings): the
        run's, then what each file written so far could not draw."""
        return list(self.trace.meta.warnings) + self._written_warnings

    @property
    def analysis(self) -> "Analysis":
        """Every analysis of the run (tracecvt.analyses.full.Analysis): bubbles,
        critical_path, ratings, opportunities, bottleneck, labels, ncu, msprof_op...,
        computed once, the same objects the command line's summaries and derived tracks use."""
        if self._analysis is None:
            from .analyses import analyze
            trace = self.trace
            self._analysis = self._paused(lambda: analyze(trace))
        return self._analysis

    def _read(self) -> "Trace":
        return self._paused(lambda: self.source.read(self._options))

    def _paused(self, fn: Callable[[], Any]) -> Any:
        """``_typed(fn)`` with the cyclic garbage collector paused (``convert.gc_paused``)."""
        from .convert import gc_paused

        def run() -> Any:
            with gc_paused():
                return fn()
        return _typed(self.source.root, run)

    # -- writing ------------------------------------------------------------------------------
    def to_perfetto(self, path: str | os.PathLike | None = None, force: bool = False,
                    derived: bool = True) -> Path:
        """Write a Perfetto protobuf trace; returns its path.  ``path``: a file name, or a
        folder (existing, or ending in a separator), default ``<run>.pftrace`` next to the
        run.  ``derived=False`` leaves out the bubble lanes, counters and critical path."""
        return self._write("perfetto", path, force, derived)

    def to_chrome(self, path: str | os.PathLike | None = None, force: bool = False,
                  derived: bool = True) -> Path:
        """Write Chrome trace JSON (gzip when the name ends in ``.gz``); returns its path."""
        return self._write("chrome", path, force, derived)

    def to_model(self, path: str | os.PathLike | None = None, force: bool = False) -> Path:
        """Write the lossless model file (``.tcmodel``, the source data only); returns its
        path."""
        return self._write("model", path, force, False)

    def _write(self, writer: str, path, force: bool, derived: bool) -> Path:
        from .convert import WRITERS, default_output, write_run
        from .fileio import check_output
        out = default_output(self.source, writer, None if path is None else os.fspath(path),
                             False)
        check_output(out, force, self.source.paths())
        with_derived = derived and WRITERS[writer].derived
        analysis = self.analysis if with_derived else None   # before the tracks are added
        trace = self.trace

        def enrich(t: "Trace") -> None:
            from .analyses import add_derived
            add_derived(t, analysis)

        try:
            result = _typed(self.source.root, lambda: write_run(
                self.source, trace, writer, out, enrich=enrich if with_derived else None))
            self._written_warnings += [w for w in result.warnings
                                       if w not in trace.meta.warnings]
        finally:
            if with_derived:    # the derived tracks went into it: read the run again when
                self._trace = None      # next used (same slice indexes, so the analysis holds)
        return out

    # -- reports ------------------------------------------------------------------------------
    def summary(self, baseline: "Run | dict | None" = None) -> dict[str, Any]:
        """The JSON summary (``tracecvt summary --format json``) as a dict; ``baseline``
        (another Run, or its summary dict) adds the "vs baseline" rows.  Its schema:
        docs/summary.schema.json."""
        import orjson
        from .summary import summary_data
        from .summary.json_out import render_json
        base = baseline.summary() if isinstance(baseline, Run) else baseline
        data = summary_data(self.trace, self.analysis, base)
        return orjson.loads(render_json(data))

    def write_summary(self, path: str | os.PathLike | None = None, fmt: str = "md",
                      force: bool = False) -> Path:
        """Write the summary as "md", "json" or "html" (default
        ``<run>.summary.<fmt>`` next to the run); returns its path."""
        from .convert import output_path
        from .fileio import atomic_output, check_output
        from .summary import SUFFIXES, render, summary_data
        out = output_path(self.source, SUFFIXES[fmt], None if path is None else os.fspath(path),
                          False)
        check_output(out, force, self.source.paths())
        data = render(fmt, summary_data(self.trace, self.analysis), self.trace, self.analysis)
        with atomic_output(out) as f:
            f.write(data)
        return out

    # -- tables (pandas) ----------------------------------------------------------------------
    def slices_df(self, args: bool = False):
        """One row per slice read from the source: lane, track (its path), name, category,
        start_ns, duration_ns, end_ns; ``args=True`` adds one column per argument."""
        pd = _pandas()
        trace = self.trace
        tracks = trace.tracks
        paths: dict[int, str] = {}
        rows = []
        for s in trace.slices:
            t = tracks[s.track]
            if t.derived:
                continue
            path = paths.get(s.track)
            if path is None:
                path = paths[s.track] = trace.path(s.track)
            row = {"lane": t.name, "track": path, "name": s.name, "category": s.cat,
                   "start_ns": s.ts, "duration_ns": s.dur, "end_ns": s.ts + s.dur}
            if args:
                row.update(s.all_args)
            rows.append(row)
        columns = ["lane", "track", "name", "category", "start_ns", "duration_ns", "end_ns"]
        return pd.DataFrame(rows, columns=None if args and rows else columns)

    def bubbles_df(self):
        """One row per idle gap: lane, kind, start_ns, end_ns, duration_ns, cause
        ("wait predecessor", "wait schedule" or "idle"), next_task (the task the gap
        precedes), waiting_for (the predecessor it waits for, if any)."""
        pd = _pandas()
        from .analyses.bubbles import CAUSES
        a = self.analysis
        lanes = a.timeline.lanes
        slices = self.trace.slices
        rows = [{"lane": lanes[li].path, "kind": lanes[li].kind, "start_ns": start,
                 "end_ns": end, "duration_ns": end - start, "cause": CAUSES[cause],
                 "next_task": slices[nxt].name if nxt >= 0 else None,
                 "waiting_for": slices[by].name if by >= 0 else None}
                for li, start, end, cause, nxt, by in a.bubbles.gaps]
        return pd.DataFrame(rows, columns=["lane", "kind", "start_ns", "end_ns", "duration_ns",
                                           "cause", "next_task", "waiting_for"])

    def critical_path_df(self):
        """The critical path in order, one row per segment: step (tasks numbered from 1),
        kind ("task" or "wait"), name, task, lane, start_ns, duration_ns, via (how the next
        task depends on this one)."""
        pd = _pandas()
        from .analyses.bubbles import WAIT_SCHEDULE
        cp = self.analysis.critical_path
        slices = self.trace.slices
        rows = []
        step = 0
        for seg in cp.segments if cp.computed else ():
            task = slices[seg.slice].name
            if seg.kind == "task":
                step += 1
            rows.append({"step": step if seg.kind == "task" else None, "kind": seg.kind,
                         "name": task if seg.kind == "task" else WAIT_SCHEDULE,
                         "task": task, "lane": seg.lane, "start_ns": seg.ts,
                         "duration_ns": seg.dur, "via": seg.via})
        df = pd.DataFrame(rows, columns=["step", "kind", "name", "task", "lane", "start_ns",
                                         "duration_ns", "via"])
        return df.astype({"step": "Int64"})

    def time_by_label_df(self):
        """Task time per label, for every label table of the run (PyPTO's semantic labels,
        kernel names, ...): table, label, count, total_ns, mean_ns, max_ns, share_pct,
        critical_path_ns."""
        pd = _pandas()
        rows = []
        for t in self.analysis.labels:
            for r in t.rows:
                rows.append({"table": t.title, "label": r.label, "count": r.count,
                             "total_ns": r.total,
                             "mean_ns": r.total / r.count if r.count else None,
                             "max_ns": r.max,
                             "share_pct": 100.0 * r.total / t.total if t.total else None,
                             "critical_path_ns": r.critical})
        return pd.DataFrame(rows, columns=["table", "label", "count", "total_ns", "mean_ns",
                                           "max_ns", "share_pct", "critical_path_ns"])

