"""The simpler runtime's own analyses, recomputed from the model and compared with what its
tools printed: ``critical_path`` (cpm.py) and ``sched_overhead_analysis`` (overhead.py, Parts
1-4, 6; loop.py, Part 5).  Like ``pypto_check``, this reads what the simpler reader
declares (``meta.extra["simpler"]``, the row args of runs.py); the tools' definitions are
quoted in each module and in docs/analyses.md.

The tools' printed reports are not part of a run's capture; when a reader or a caller puts
their text into ``meta.extra["simpler"]["tool_reports"]`` (``critical_path_report`` and/or
``sched_overhead_analysis``), every figure is compared with the printed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ...model import Trace
from ..timeline import Timeline
from .cpm import CpmResult, compute_cpm
from .figures import Figure, compare, cpm_figures, loop_figures, overhead_figures
from .loop import ThreadLoop, compute_loops
from .overhead import Overhead, compute_overhead
from .questions import answer, function_table
from .reports import parse_critical_path_report, parse_sched_overhead
from .runs import Run, read_run

__all__ = ["SimplerCheck", "check_simpler", "read_run", "parse_critical_path_report",
           "parse_sched_overhead"]


@dataclass
class SimplerCheck:
    run: Run
    cpm: CpmResult | None
    overhead: Overhead | None
    loops: list[ThreadLoop]
    notes: list[str] = field(default_factory=list)     # definitions that differ, and why
    comparisons: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    questions: list[dict[str, Any]] = field(default_factory=list)

    def figures(self) -> dict[str, list[Figure]]:
        tail = None
        if self.overhead is not None and self.overhead.tail is not None \
                and self.overhead.tail.n:
            tail = Fraction(self.overhead.tail.total, self.overhead.tail.n)
        return {"critical_path": cpm_figures(self.cpm) if self.cpm else [],
                "sched_overhead": overhead_figures(self.overhead) if self.overhead else [],
                "sched_loop": loop_figures(self.loops, tail)}

    def compare_with(self, reports: dict[str, str]) -> None:
        figs = self.figures()
        cp = reports.get("critical_path_report")
        if cp:
            self.comparisons["critical_path"] = compare(figs["critical_path"],
                                                        parse_critical_path_report(cp))
        so = reports.get("sched_overhead_analysis")
        if so:
            oh, loop = parse_sched_overhead(so)
            if self.overhead is not None:
                self.comparisons["sched_overhead"] = compare(figs["sched_overhead"], oh)
            if self.loops:
                self.comparisons["sched_loop"] = compare(figs["sched_loop"], loop)

    def to_dict(self) -> dict[str, Any]:
        figs = self.figures()
        out: dict[str, Any] = {
            "level": self.run.level, "clock_freq_hz": self.run.freq,
            "questions": self.questions,
            "functions": function_table(self.run)[:50],
            "figures": {tool: [f.row() for f in lst] for tool, lst in figs.items()},
            "exact_ns": self._exact(),
            "notes": self.notes,
        }
        if self.comparisons:
            out["comparisons"] = {
                tool: {"compared": sum(r["agrees"] is not None for r in rows),
                       "agree": sum(r["agrees"] is True for r in rows), "rows": rows}
                for tool, rows in self.comparisons.items()}
        return out


    def key_figures(self, run=None) -> dict[str, Any]:
        """The key figures of a simpler run (``key_figures.SIMPLER``): wait start, the
        scheduler's figures."""
        out: dict[str, Any] = {}
        if run is not None and run.pickup:
            out["wait_start_us"] = round(run.wait_start / 1000, 3)
        o = self.overhead
        if o is not None:
            out["has_overhead_pct"] = round(o.pct(o.has_overhead), 3)
            picks = sorted(r.start - r.dispatch for r in self.run.rows)
            out["pickup_latency_median_us"] = round(picks[len(picks) // 2] / 1000, 3)
            if o.tail is not None and o.tail.n:
                out["tail_oh_mean_us"] = round(o.tail.total / o.tail.n / 1000, 3)
        if self.cpm is not None and self.cpm.makespan:
            out["static_cpm_share_pct"] = round(100 * self.cpm.cpm_len / self.cpm.makespan, 3)
        if self.loops:
            total = sum(t.total for t in self.loops)
            loops = sum(t.loops for t in self.loops)
            if loops:
                out["scheduler_loop_ns"] = round(total / loops, 1)
        return out

    def _exact(self) -> dict[str, Any]:
        """The figures behind the printed ones, in integer ns (ticks where the tool counts)."""
        out: dict[str, Any] = {}
        c = self.cpm
        if c is not None:
            out["critical_path"] = {
                "makespan_ns": c.makespan, "cpm_ns": c.cpm_len, "compute_ns": c.compute,
                "stall_ns": c.stall,
                "stall_by_kind": [{"kind": k, "stall_ns": v}
                                  for k, v in c.stall_by_kind.items()],
                "cpm_path": [_token(t) for t in c.cpm_path],
                "observed_path": [_token(t.task) for t in c.path]}
        o = self.overhead
        if o is not None:
            out["sched_overhead"] = {
                "window_ns": o.window, "overhead_by_engine_ns": dict(o.engines),
                "cores_by_engine": dict(o.cores), "all_overhead_ns": o.all_overhead,
                "has_overhead_ns": o.has_overhead,
                "switch_by_core": [{"engine": ty, "core": k, "switch_ns": v}
                                   for ty, d in o.switch_cores.items() for k, v in d.items()],
                "head_total_ns": o.head.total if o.head else None,
                "tail_total_ns": o.tail.total if o.tail else None, "path_ns": o.path}
        if self.loops:
            out["sched_loop"] = [
                {"thread": t.thread, "loops": t.loops, "tasks": t.completed,
                 "finishes": t.finishes, "work_ns": dict(t.work), "idle_ns": t.idle,
                 "total_ns": t.total, "pop_hit": t.pop_hit, "pop_miss": t.pop_miss,
                 "fanout_edges": t.fanout_edges, "fanin_edges": t.fanin_edges}
                for t in self.loops]
        return out


def _token(task: int) -> str:
    """simpler's display of a task id: t<local> on ring 0, else r<ring>t<local>."""
    ring, local = (task >> 32) & 0xFF, task & 0xFFFFFFFF
    return f"t{local}" if ring == 0 else f"r{ring}t{local}"


def check_simpler(trace: Trace, tl: Timeline, gaps_ns: int | None = None
                  ) -> SimplerCheck | None:
    """The runtime tools' figures for a simpler run (None for any other run); ``gaps_ns``:
    the bubbles of the core lanes, for the questions at level 1."""
    run = read_run(trace, tl)
    if run is None:
        return None
    notes = []
    cpm = compute_cpm(run)
    overhead = compute_overhead(run)
    if overhead is None:
        notes.append(
            "sched_overhead_analysis Parts 1-4 and 6 are not computed: this level-"
            f"{run.level} capture has no dispatch/finish times (aicpu_tasks is empty below "
            "level 2); the runtime's tool prints figures made from zero times instead")
    loops = compute_loops(run)
    if not loops:
        notes.append("sched_overhead_analysis Part 5 (scheduler loop) needs the scheduler "
                     "phase records of level 3 or more; this run has none")
    if not run.edges and trace.meta.extra.get("task_graph") is not True:
        notes.append("no deps.json: critical_path and sched_overhead_analysis refuse to run "
                     "without it; tracecvt's figures here treat every task as independent")
    check = SimplerCheck(run, cpm, overhead, loops, notes)
    check.questions = answer(run, cpm, overhead, tl.makespan, gaps_ns)
    info = trace.meta.extra.get("simpler") or {}
    reports = info.get("tool_reports")
    if isinstance(reports, dict):
        check.compare_with(reports)
    return check
