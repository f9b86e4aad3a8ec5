"""Every analysis of a run: what the summaries are made from (``analyze``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import Trace
from . import TrackAnalysis, analyze_tracks
from .actions import annotate, bottlenecks
from .bubbles import pct, us
from .findings import bottleneck, configuration, kind_bottleneck, opportunities, top_tasks
from .key_figures import key_figures
from .labels import LabelTable, slice_groups, time_by_label
from .msprof_op import MsprofOpResult, analyze_msprof_op
from .ncu_bounds import NcuResult, analyze_ncu
from .opportunity import Opportunity
from .places import Place, at_dict, of_segments, largest_bubbles, number_findings
from .pypto_check import PyptoCheck, check_pypto
from .ratings import Rating, rate
from .source_idle import compare_source_idle

SCHEMA = "tracecvt-analysis/2"


@dataclass
class Analysis(TrackAnalysis):
    """The derived tracks' analyses (``TrackAnalysis``) and the summaries' own."""

    run: str = ""
    labels: list[LabelTable] = field(default_factory=list)
    ratings: list[Rating] = field(default_factory=list)
    ncu: NcuResult | None = None
    msprof_op: MsprofOpResult | None = None
    pypto_check: PyptoCheck | None = None
    simpler: Any = None           # analyses.simpler.SimplerCheck on simpler runs
    configuration: dict[str, Any] = field(default_factory=dict)
    top_tasks: list[dict[str, Any]] = field(default_factory=list)
    opportunities: list[Opportunity] = field(default_factory=list)
    bottleneck: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    critical_path_dict: dict[str, Any] = field(default_factory=dict)
    bottlenecks: list[dict[str, Any]] = field(default_factory=list)   # actions.bottlenecks
    # A format family's own figures, under its name (summary JSON "format_details")
    format_details: dict[str, Any] = field(default_factory=dict)
    largest_bubbles: list[dict[str, Any]] = field(default_factory=list)   # places.py
    kernel_at: list[dict[str, Any] | None] = field(default_factory=list)  # per NCU kernel
    source_idle: list[dict[str, Any]] = field(default_factory=list)   # source_idle.py

    def key_figures(self) -> dict[str, Any]:
        out = key_figures(self)
        if self.simpler is not None:
            out.update(self.simpler.key_figures(self.bubbles.run))
        return out

    def to_dict(self) -> dict[str, Any]:
        b = self.bubbles
        graph = b.cause_model == "task graph"
        kinds = []
        for k in b.kinds:
            d = k.to_dict()
            d["bottleneck"], d["key_issue"] = kind_bottleneck(k, graph)
            kinds.append(d)
        bubbles = b.to_dict()
        bubbles["kinds"] = kinds
        bubbles["largest"] = self.largest_bubbles
        ncu = self.ncu.to_dict() if self.ncu else None
        if ncu is not None:
            for k, at in zip(ncu["kernels"], self.kernel_at):
                k["at"] = at
        span = self.timeline
        out = {
            "schema": SCHEMA,
            "run": self.run,
            "configuration": self.configuration,
            "time_span": {"start_ns": span.start, "end_ns": span.end,
                          "makespan_us": us(span.makespan) if span.start is not None
                          else None},
            "bottleneck": self.bottleneck,
            "bottlenecks": self.bottlenecks,
            "opportunities": [o.to_dict() for o in self.opportunities[:3]],
            "more_opportunities": [o.to_dict() for o in self.opportunities[3:20]],
            "ratings": [r.to_dict() for r in self.ratings],
            "bubbles": bubbles,
            "critical_path": self.critical_path_dict,
            "time_by_label": [t.to_dict() for t in self.labels],
            "top_tasks": self.top_tasks,
            "ncu": ncu,
            "msprof_op": self.msprof_op.to_dict() if self.msprof_op else None,
            "pypto_check": self.pypto_check.to_dict() if self.pypto_check else None,
            **({"simpler": self.simpler.to_dict()} if self.simpler is not None else {}),
            "key_figures": self.key_figures(),
            "warnings": self.warnings,
            **({"format_details": self.format_details} if self.format_details else {}),
            **({"source_idle": self.source_idle} if self.source_idle else {}),
        }
        number_findings(out)
        return out


def analyze(trace: Trace) -> Analysis:
    """Every analysis of ``trace``, computed once (O(n log n) in slices and flows)."""
    core = analyze_tracks(trace)
    tl, bubbles, cp = core.timeline, core.bubbles, core.critical_path
    critical = set(cp.tasks) if cp.computed else set()
    groups = slice_groups(trace, critical)
    labels = time_by_label(trace, critical, groups)
    ncu = analyze_ncu(trace)
    mop = analyze_msprof_op(trace.meta.extra)
    check = check_pypto(trace, tl, bubbles)
    a = Analysis(tl, bubbles, cp, core.loop_idle, run=trace.meta.name, labels=labels, ncu=ncu,
                 msprof_op=mop, pypto_check=check)
    if "simpler" in trace.meta.extra:
        from .simpler import check_simpler
        r = bubbles.run
        a.simpler = check_simpler(trace, tl, r.wait_schedule + r.wait_start if r else None)
    a.ratings = _ratings(trace, a)
    a.configuration = configuration(trace, a, groups)
    a.top_tasks = top_tasks(trace, critical)
    origin = trace.time_start() or 0        # the trace's time 0 (both writers)
    a.critical_path_dict = _cp_dict(trace, a, origin)
    a.opportunities = opportunities(trace, a)
    for o in a.opportunities:
        o.at = at_dict(trace, o.place, origin)
    if bubbles.computed:
        a.largest_bubbles = largest_bubbles(trace, tl, bubbles.gaps, origin)
    if ncu is not None:
        a.kernel_at = [at_dict(trace, Place.of_slices(trace, [k.index]), origin)
                       for k in ncu.kernels]
    a.source_idle = compare_source_idle(trace)
    a.bottleneck = bottleneck(trace, a)
    a.bottlenecks = bottlenecks(trace, a)
    annotate(trace, a)
    a.warnings = list(trace.meta.warnings)
    if check is not None:
        a.warnings.extend(check.anomalies)
    return a


def _ratings(trace: Trace, a: Analysis) -> list[Rating]:
    b = a.bubbles
    run = b.run if b.computed else None
    why = b.reason or "no lanes with tasks"
    out = [
        rate("lane_utilization", run.utilization_pct if run else None,
             "busy time / (lanes that ran tasks x run makespan)", why),
        rate("bubble_rate", run.bubble_rate_pct if run else None,
             "total wait / Σ lane spans (run start to each lane's last end)", why),
    ]
    if a.ncu is not None and a.ncu.memory_efficiency_pct is not None:
        out.append(rate("memory_efficiency", a.ncu.memory_efficiency_pct,
                        "DRAM throughput, % of peak, weighted by kernel duration"))
    elif a.msprof_op is not None:
        out.append(rate("memory_efficiency", None, "achieved / peak memory bandwidth",
                        "msprof op gives pipe ratios per block, not achieved bandwidth "
                        "against the peak"))
    elif a.ncu is not None:
        out.append(rate("memory_efficiency", None, "achieved / peak memory bandwidth",
                        "the report has no DRAM or memory throughput metric"))
    else:
        out.append(rate("memory_efficiency", None, "achieved / peak memory bandwidth",
                        f"{trace.meta.tool or trace.meta.format} timelines carry no memory "
                        "throughput counters (PyPTO: operand sizes only, no bandwidth)"))
    if a.msprof_op is not None and a.msprof_op.scalar_share_pct is not None:
        out.append(rate("control_overhead", a.msprof_op.scalar_share_pct,
                        "scalar (control) pipe time / block time"))
    elif run is not None and b.cause_model == "task graph" and run.pickup:
        share = pct(run.wait_schedule + run.wait_start, run.wait)
        out.append(rate("control_overhead", share if share is not None else 0.0,
                        "(wait schedule + wait start) / total wait: bubble time with the "
                        "next task ready but not dispatched, or dispatched but not started"))
    elif run is not None and b.cause_model == "task graph":
        share = pct(run.wait_schedule, run.wait)
        out.append(rate("control_overhead", share if share is not None else 0.0,
                        "wait schedule / total wait: bubble time with the next task ready "
                        "but not dispatched"))
    else:
        out.append(rate("control_overhead", None, "control time / total",
                        "no task graph (cannot tell scheduling from idle) and no scalar "
                        "pipe figures" if a.ncu is None else
                        "Nsight Compute has no control-overhead figure"))
    return out


def _cp_dict(trace: Trace, a: Analysis, origin: int) -> dict[str, Any]:
    cp = a.critical_path
    if not cp.computed:
        return {"computed": False, "reason": cp.reason}
    by_kind, _ = cp.task_time_by(a.timeline)
    by_lane: dict[str, list[int]] = {}        # lane -> [tasks, task time, wait time]
    for seg in cp.segments:
        row = by_lane.setdefault(seg.lane, [0, 0, 0])
        if seg.kind == "task":
            row[0] += 1
            row[1] += seg.dur
        else:
            row[2] += seg.dur
    longest = sorted(cp.segments, key=lambda s: -s.dur)[:10]
    return {
        "computed": True, "reason": None, "start_ns": cp.start, "end_ns": cp.end,
        "length_us": us(cp.length), "task_time_us": us(cp.task_time),
        "wait_time_us": us(cp.wait_time), "lane_order_us": us(cp.lane_order_time),
        "graph_bound_us": us(cp.graph_bound), "caveat": cp.caveat, "tasks": len(cp.tasks),
        "segments": len(cp.segments),
        "dependency_edges": len(cp.edges),
        "time_by_kind": [{"kind": k, "time_us": us(v)} for k, v in by_kind.items()],
        "by_lane": [{"lane": name, "tasks": r[0], "task_time_us": us(r[1]),
                     "wait_time_us": us(r[2])}
                    for name, r in sorted(by_lane.items(), key=lambda kv: -kv[1][1] - kv[1][2])
                    ][:10],
        "longest_segments": [{**s.to_dict(trace),
                              "at": at_dict(trace, of_segments(trace, [s]), origin)}
                             for s in longest],
        "at": at_dict(trace, of_segments(trace, cp.segments, cp.start, cp.end), origin),
    }
