"""The per-run job of a batch: a plain function of a plain dict, so any process pool or
cluster can run it (it is pickled by reference: workers need tracecvt installed).

The run is read once; every requested output is written from that same model.  The result is
a plain dict row (see ``tracecvt.batch.index`` for its keys); nothing raises out of
``run_job`` except KeyboardInterrupt.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from ..errors import TracecvtError, error_message

# Figures every row carries, null when unknown; the units are in the key names.
FIGURE_KEYS = ("tasks", "makespan_ns", "utilization_pct", "bubble_rate_pct", "bottleneck")


class RunContext:
    """One run being converted: its source, its model, and (computed once, on first use)
    its analysis, shared by the summary outputs, the derived tracks and the index figures."""

    def __init__(self, source, trace, workers: int = 1, derived: bool = True):
        self.source = source
        self.trace = trace
        self.workers = workers          # processes the trace writers may use
        self.derived = derived          # the trace writers add the derived tracks
        self._analysis = None
        self._analysis_error: Exception | None = None
        self._summary = None
        self._derived_done = False

    def analysis(self):
        """``tracecvt.analyses.analyze(trace)``; an exception of the analysis is raised
        again on every call."""
        if self._analysis is None and self._analysis_error is None:
            from ..analyses import analyze
            try:
                self._analysis = analyze(self.trace)
            except Exception as e:
                self._analysis_error = e
        if self._analysis_error is not None:
            raise self._analysis_error
        return self._analysis

    def summary_data(self) -> dict[str, Any]:
        """What every summary format renders, made once (summaries are written before the
        derived tracks are added)."""
        if self._summary is None:
            from ..summary import summary_data
            self._summary = summary_data(self.trace, self.analysis())
        return self._summary

    def add_derived(self) -> None:
        """Add the derived tracks once, from the shared analysis, as ``convert_source``
        does."""
        if self._derived_done:
            return
        self._derived_done = True
        from ..analyses import add_derived
        add_derived(self.trace, self.analysis())

    def derived_adder(self) -> Callable[[Any], None] | None:
        """``add_derived`` as a trace writer's ``enrich`` (the writer runs it, while a second
        process writes the source tracks if it uses one), unless the run is converted
        without derived tracks or they are in already; else None."""
        if not self.derived or self._derived_done:
            return None
        return lambda trace: self.add_derived()


# When an output is written: the plain model first (the "model" writer keeps the source data
# only), then the summaries (their analysis sees the model as read), then the derived tracks
# (bubble lanes, counters, critical path: as ``convert_source`` adds them) and the trace
# writers.
PLAIN, ANALYSED, DERIVED = 0, 1, 2


@dataclass(frozen=True)
class Target:
    """One output kind: ``write(run_context, stream)`` writes it to a binary stream."""

    name: str
    suffix: str
    write: Callable[[RunContext, Any], Any]
    stage: int = DERIVED


def _writer_target(name: str, spec) -> Target:
    def write(ctx, out):
        enrich = ctx.derived_adder() if spec.derived else None
        return spec.write(ctx.trace, out, None, ctx.workers, enrich)
    return Target(name, spec.suffix, write, DERIVED if spec.derived else PLAIN)


def targets() -> dict[str, Target]:
    """Every output kind, by ``--to`` name: each entry of ``tracecvt.convert.WRITERS``
    (perfetto, chrome, model, and any writer added there later), plus ``summary``
    (Markdown), ``summary-json`` and ``summary-html``."""
    from ..convert import WRITERS
    from ..summary import SUFFIXES, render
    table = {name: _writer_target(name, spec) for name, spec in WRITERS.items()}
    for fmt, name in (("md", "summary"), ("json", "summary-json"), ("html", "summary-html")):
        def write(ctx, stream, _fmt=fmt):
            data = render(_fmt, ctx.summary_data(), ctx.trace, ctx.analysis())
            stream.write(data)
            return {"bytes": len(data)}
        table[name] = Target(name, SUFFIXES[fmt], write, ANALYSED)
    return table


# -- figures for the index -------------------------------------------------------------
def figures(ctx: RunContext) -> dict[str, Any]:
    """Task count, makespan, utilization, bubble rate and bottleneck of one run, from its
    analysis; where the analysis has no figures (it failed, or the run is not a timeline)
    they are null, the makespan is the slices' span, and ``figures_note`` says why."""
    trace = ctx.trace
    out: dict[str, Any] = {"tasks": None, "makespan_ns": None, "utilization_pct": None,
                           "bubble_rate_pct": None, "bottleneck": None, "figures_note": None}
    out.update(_analysed(ctx))
    extra = trace.meta.extra
    slices = None if "tasks" in extra and out["makespan_ns"] is not None else \
        _source_slices(trace)
    tasks = extra["tasks"] if "tasks" in extra else len(slices)
    out["tasks"] = int(tasks) if tasks is not None else None
    if out["makespan_ns"] is None:
        if slices:
            makespan = max(s.ts + s.dur for s in slices) - min(s.ts for s in slices)
        else:
            span = trace.time_span()
            makespan = (span[1] - span[0]) if span else None
        out["makespan_ns"] = int(makespan) if makespan is not None else None
    return out


def _source_slices(trace) -> list:
    """The slices not on derived tracks (only when a figure needs them: a pass over every
    slice)."""
    derived = {i for i, t in enumerate(trace.tracks) if t.derived}
    return [s for s in trace.slices if s.track not in derived] if derived else trace.slices


def _analysed(ctx: RunContext) -> dict[str, Any]:
    try:
        a = ctx.analysis()
    except Exception as e:  # the outputs are written: here it only costs the figures
        if os.environ.get("TRACECVT_DEBUG"):
            raise
        return {"figures_note": f"analysis failed ({type(e).__name__}: {e}); this is a "
                                "tracecvt bug"}
    out: dict[str, Any] = {}
    b = a.bubbles
    run = b.run if b.computed else None
    if run is not None:
        out["utilization_pct"] = run.utilization_pct
        out["bubble_rate_pct"] = run.bubble_rate_pct
        if run.makespan:
            out["makespan_ns"] = int(run.makespan)
    else:
        out["figures_note"] = f"no utilization or bubble rate: {b.reason or 'no lanes with tasks'}"
    verdict = " ".join(x for x in (a.bottleneck.get("summary", ""),
                                   a.bottleneck.get("root_cause", "")) if x).strip()
    out["bottleneck"] = verdict or None
    return out


# -- the job ---------------------------------------------------------------------------
def make_spec(run, options: dict[str, Any]) -> dict[str, Any]:
    """The picklable description of one planned run (``plan.PlannedRun``)."""
    src = run.source
    fields = {f.name: getattr(src, f.name) for f in dataclasses.fields(src)
              if f.name != "reader"}
    return {"source_fields": fields, "rel": run.rel,
            "outputs": {t: str(p) for t, p in run.outputs.items()},
            "inputs": [str(p) for p in run.inputs], **options}


def _source(spec: dict[str, Any]):
    from ..readers import reader_for
    from ..readers.base import Source
    fields = dict(spec["source_fields"])
    fmt = fields["format"]
    reader = reader_for(fmt)
    if reader is None:
        raise TracecvtError(f"{fields['root']}: no reader for format {fmt!r} on this machine")
    return Source(reader=reader, **fields)


def empty_row(spec: dict[str, Any], status: str) -> dict[str, Any]:
    f = spec["source_fields"]
    row = {"run": f["name"], "source": spec["rel"], "format": f["format"],
           "variant": f.get("variant", ""), "status": status, "outputs": {}}
    row.update({k: None for k in FIGURE_KEYS})
    row.update({"figures_note": None, "warnings": [], "error": None, "seconds": 0.0})
    return row


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Read one run and write all its outputs; always returns a row."""
    from ..convert import gc_paused
    started = time.perf_counter()
    row = empty_row(spec, "converted")
    try:
        with gc_paused():
            _run(spec, row)
    except Exception as e:  # TracecvtError, or a bug or an unforeseen input
        row["status"] = "failed"
        row["error"] = error_message(spec["source_fields"]["root"], e)
    row["seconds"] = round(time.perf_counter() - started, 4)
    return row


def _run(spec: dict[str, Any], row: dict[str, Any]) -> None:
    from ..fileio import atomic_output, check_output
    from ..readers.base import ReadOptions
    table = targets()
    wanted = spec["outputs"]
    for t in wanted:
        if t not in table:
            raise TracecvtError(f"output kind {t!r} is not available on this machine")
    source = _source(spec)
    outputs = {t: Path(p) for t, p in wanted.items()}
    inputs = source.paths()
    for p in outputs.values():
        check_output(p, True, inputs)
    clock = spec.get("clock_mhz")
    workers = int(spec.get("workers") or 1)
    options = ReadOptions(clock_mhz=Fraction(clock) if clock else None,
                          all_metrics=bool(spec.get("all_metrics")), workers=workers)
    ctx = RunContext(source, source.read(options), workers, spec.get("derived", True))
    for t in sorted(outputs, key=lambda t: table[t].stage):
        path = outputs[t]
        with atomic_output(path) as f:
            table[t].write(ctx, f)
        row["outputs"][t] = str(path)
    row["outputs"] = {t: row["outputs"][t] for t in outputs}          # in --to order
    row.update(figures(ctx))
    row["warnings"] = list(ctx.trace.meta.warnings)
