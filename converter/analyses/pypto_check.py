"""PyPTO's own per-core figures (``bubble_analysis.log``) against the trace.

PyPTO's definitions (format reference 7.2), recomputed verbatim from the model: per core,
over its non-fake tasks in execution order, with ``T0`` = the first start of any recorded
task and ``prev_end`` starting at ``T0``:

* Core Total Work Time = last end - T0;
* Total Wait Time = Σ (start - prev_end);
* Wait Schedule Time = Σ (start - max(prev_end, ready)), ready = max(T0, predecessor ends),
  every predecessor counted (fake ones with their invented times, late ones too);
* Wait Predecessor Time = Total - Schedule.

Every figure is compared with the log.  The model holds integer ns (each timestamp rounded
once from PyPTO's float µs), so a sum over n tasks can differ from PyPTO's float sum by up to
0.5 ns per rounded timestamp; a figure *matches* when it is within 0.01 µs, or within that
rounding bound.  Differences that remain are explained when the cause is known:

* **missing executions**: PyPTO's task table keeps one record per task key, and the SIM
  HUB seqNo quirk gives the HUB tasks of every device task seqNo 0; the log counts every
  execution, merged_swimlane.json draws one per key (format reference 5.6);
* **origin**: when the first task PyPTO recorded is one of those undrawn executions, PyPTO's
  T0 lies before the first drawn task; the offset is read off the log (Work Time = last end -
  T0 on every core) and the figures are compared again from that origin;
* **negative waits**: PyPTO's figures go negative when a predecessor ends after its
  successor starts (the same quirk); tracecvt leaves such dependencies out of its bubbles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import SOURCE_BINDING, Trace
from .bubbles import Bubbles, LaneFigures
from .timeline import Timeline

TOLERANCE_US = 0.01
FIGURES = ("work_time_us", "total_wait_us", "wait_schedule_us", "wait_predecessor_us")
TITLES = {"work_time_us": "Core Total Work Time", "total_wait_us": "Total Wait Time",
          "wait_schedule_us": "Wait Schedule Time",
          "wait_predecessor_us": "Wait Predecessor Time"}


@dataclass
class CoreCheck:
    core: str
    status: str                   # "match", "match (rounding)", "differs"
    log: dict[str, float]
    pypto_formula: dict[str, float]   # PyPTO's definitions on the trace
    tracecvt: dict[str, float] | None  # tracecvt's own figures (bubbles), None: no tasks
    max_diff_us: float
    rounding_bound_us: float
    log_tasks: int
    trace_tasks: int
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"core": self.core, "status": self.status, "log": self.log,
                "pypto_formula": self.pypto_formula, "tracecvt": self.tracecvt,
                "max_diff_us": self.max_diff_us, "rounding_bound_us": self.rounding_bound_us,
                "log_tasks": self.log_tasks, "trace_tasks": self.trace_tasks,
                "reasons": self.reasons}


@dataclass
class PyptoCheck:
    cores: list[CoreCheck]
    origin_shift_us: float        # PyPTO's T0 lies this much before the trace's run start
    anomalies: list[str]          # one line each, for people

    @property
    def matched(self) -> int:
        return sum(1 for c in self.cores if c.status != "differs")

    def to_dict(self) -> dict[str, Any]:
        return {"cores_checked": len(self.cores), "cores_matching": self.matched,
                "tolerance_us": TOLERANCE_US, "origin_shift_us": self.origin_shift_us,
                "anomalies": self.anomalies, "cores": [c.to_dict() for c in self.cores]}


class _Core:
    """A core's tasks as plain lists, with PyPTO's predecessor-ready time (every
    predecessor, fake and late ones included; None without predecessors)."""

    __slots__ = ("starts", "ends", "ready")

    def __init__(self, trace: Trace, ids: list[int], preds: dict[int, list[int]]):
        slices = trace.slices
        self.starts = [slices[i].ts for i in ids]
        self.ends = [slices[i].ts + slices[i].dur for i in ids]
        self.ready = [max(slices[p].ts + slices[p].dur for p in preds[i]) if i in preds
                      else None for i in ids]

    def formula(self, t0: int) -> dict[str, float]:
        prev = t0
        total = sched = 0
        for ts, end, ready in zip(self.starts, self.ends, self.ready):
            if ready is None or ready < t0:
                ready = t0
            total += ts - prev
            sched += ts - (prev if prev > ready else ready)
            prev = end
        work = prev - t0 if self.starts else 0
        return {"work_time_us": work / 1000, "total_wait_us": total / 1000,
                "wait_schedule_us": sched / 1000,
                "wait_predecessor_us": (total - sched) / 1000}


def _own(fig: LaneFigures | None) -> dict[str, float] | None:
    if fig is None:
        return None
    return {"work_time_us": fig.span / 1000, "total_wait_us": fig.wait / 1000,
            "wait_schedule_us": fig.wait_schedule / 1000,
            "wait_predecessor_us": fig.wait_predecessor / 1000}


def check_pypto(trace: Trace, tl: Timeline, bubbles: Bubbles) -> PyptoCheck | None:
    log = trace.meta.extra.get("pypto_bubble_log")
    if not isinstance(log, dict) or not log.get("cores") or not bubbles.computed:
        return None
    slices = trace.slices
    by_name = {}
    figs = {}
    for lane, fig in zip(tl.lanes, bubbles.lanes):
        if lane.name not in by_name:
            by_name[lane.name] = lane
            figs[lane.name] = fig
    # Each core's tasks in execution order (start order; PyPTO's file order; the timeline
    # leaves fake tasks out of its lanes).
    tasks = {name: by_name[name].slices for name in log["cores"] if name in by_name}
    starts = [slices[ids[0]].ts for ids in tasks.values() if ids]
    if not starts:
        return None
    t0 = min(starts)
    empty: list[int] = []
    # PyPTO's own graph: its bindings (model.SOURCE_BINDING) and untrusted flows included.
    preds: dict[int, list[int]] = {}
    for f in trace.flows:
        a = f.args
        src, dst = a[SOURCE_BINDING] if a and SOURCE_BINDING in a else (f.src, f.dst)
        preds.setdefault(dst, []).append(src)
    data = {name: _Core(trace, tasks.get(name, empty), preds)
            for name in log["cores"]}

    def compare(origin: int) -> dict[str, tuple[dict, float]]:
        out = {}
        for name, core in log["cores"].items():
            mine = data[name].formula(origin)
            diff = max(abs(mine[k] - core[k]) for k in FIGURES)
            out[name] = (mine, diff)
        return out

    results = compare(t0)
    # Origin: Work Time = last end - T0 on every core with the same number of tasks.
    shifts = sorted(core["work_time_us"] - results[name][0]["work_time_us"]
                    for name, core in log["cores"].items()
                    if tasks.get(name) and len(tasks[name]) == core["tasks"])
    shift = shifts[len(shifts) // 2] if shifts else 0.0
    origin_shift = 0.0
    anomalies: list[str] = []
    if abs(shift) > TOLERANCE_US:
        shifted = compare(t0 - round(shift * 1000))
        if sum(d <= TOLERANCE_US for _, d in shifted.values()) > \
                sum(d <= TOLERANCE_US for _, d in results.values()):
            results = shifted
            origin_shift = round(shift, 6)
    short = {name: (core["tasks"], len(tasks.get(name, [])))
             for name, core in log["cores"].items()
             if core["tasks"] != len(tasks.get(name, []))}
    if origin_shift:
        lost = ", ".join(f"{n} ({a} in the log, {b} drawn)" for n, (a, b) in short.items())
        anomalies.append(
            f"PyPTO measures from {(t0 - round(origin_shift * 1000)) / 1000:.3f} µs, "
            f"{origin_shift:.3f} µs before the first task in the trace: its first recorded "
            "execution is not in merged_swimlane.json"
            + (f" (executions missing: {lost}; PyPTO keeps one per task key and the HUB "
               "seqNo quirk gives every device task's HUB tasks the same keys)" if lost
               else "")
            + f". tracecvt measures from the first task it has, so its Work, Total Wait and "
            f"Wait Predecessor Times are {origin_shift:.3f} µs lower on every core; the "
            "comparison below uses PyPTO's origin. Read the raw files (--from pypto-raw) to "
            "keep every execution.")
    cores: list[CoreCheck] = []
    for name, core in log["cores"].items():
        mine, diff = results[name]
        n = len(tasks.get(name, []))
        bound = 0.0005 * (2 * n + 1)
        status = "match" if diff <= TOLERANCE_US else (
            "match (rounding)" if diff <= bound else "differs")
        reasons = []
        if name in short:
            a, b = short[name]
            reasons.append(f"the log counts {a} executions, the trace has {b} (duplicate task "
                           "keys: PyPTO draws one execution per key)")
        elif name not in by_name and core["tasks"]:
            reasons.append("core not in the trace")
        negative = [TITLES[k] for k in FIGURES[1:] if core[k] < 0]
        if negative:
            fig = figs.get(name)
            ignored = fig.ignored_dependencies if fig else 0
            reasons.append(
                f"PyPTO reports negative {', '.join(negative).lower()}: its HUB seqNo quirk "
                "binds dependencies to another device task's HUB execution, which can end after "
                f"the task starts; tracecvt re-binds them to the execution they belong to or "
                f"marks them untrusted ({ignored} of this core's tasks) and leaves those out, so "
                "its waits are never negative")
        elif status == "differs" and figs.get(name) and figs[name].ignored_dependencies:
            reasons.append(f"{figs[name].ignored_dependencies} tasks have an untrusted "
                           "dependency (HUB seqNo quirk)")
        cores.append(CoreCheck(name, status, {k: core[k] for k in FIGURES},
                               {k: round(v, 6) for k, v in mine.items()},
                               _own(figs.get(name)), round(diff, 6), round(bound, 6),
                               core["tasks"], n, reasons))
    negative_cores = [c.core for c in cores if any(c.log[k] < 0 for k in FIGURES[1:])]
    if negative_cores:
        anomalies.append(
            f"bubble_analysis.log has negative wait times on {len(negative_cores)} cores "
            f"({', '.join(negative_cores[:4])}{', …' if len(negative_cores) > 4 else ''}): "
            "PyPTO's HUB seqNo quirk binds dependencies to HUB executions of other device "
            "tasks. tracecvt does not copy these numbers: it re-binds each dependency to the "
            "execution it belongs to where the records and the graph determine it, and leaves "
            f"the rest out of the ready time ({bubbles.ignored_dependencies} tasks have such an "
            "untrusted dependency), so every gap splits into non-negative wait predecessor / "
            "wait schedule parts.")
    differs = [c.core for c in cores if c.status == "differs" and not c.reasons]
    if differs:
        anomalies.append(f"{len(differs)} cores differ from bubble_analysis.log without a "
                         f"known cause: {', '.join(differs[:6])}")
    return PyptoCheck(cores, origin_shift, anomalies)
