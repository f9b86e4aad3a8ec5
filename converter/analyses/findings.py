"""What a reader of the summary should act on: bottleneck and root cause, ranked
opportunities with the metric behind each, configuration."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from ..model import CLOCK_SKEW, INPUTS, INVENTED_TIMES, OUTPUTS, Trace
from .actions import COMPUTE, DEPENDENCY, DISPATCH, MSPROF_PIPE_LABEL, msprof_advice_actions
from .bubbles import Totals, pct, us
from .labels import semantic_label_arg
from .ncu_findings import ncu_opportunities
from .opportunity import Opportunity, percent as _f, us_text as _us
from .places import Place, of_gaps, of_label, of_segments
from .timeline import source_lanes, task_count

if TYPE_CHECKING:
    from .full import Analysis


def kind_bottleneck(k: Totals, graph: bool) -> tuple[str, str]:
    """(bottleneck, key issue) of a lane kind for the lanes table."""
    rate = k.bubble_rate_pct or 0.0
    if not graph:
        bott = "busy" if rate < 5 else "idle gaps"
    elif rate < 5:
        bott = "busy (compute)"
    elif k.wait_predecessor >= k.wait_schedule:
        bott = "waiting for predecessors"
    else:
        bott = "waiting to be scheduled"
    issues = []
    if k.lanes > k.lanes_used:
        issues.append(f"{k.lanes - k.lanes_used} of {k.lanes} lanes never ran a task")
    if rate >= 10:
        share = (pct(k.wait_predecessor, k.wait) if k.wait_predecessor >= k.wait_schedule
                 else pct(k.wait_schedule, k.wait)) if graph else None
        cause = ("predecessors" if k.wait_predecessor >= k.wait_schedule else "dispatch") \
            if graph else "idle"
        issues.append(f"bubble rate {rate:.1f} %" + (f" ({share:.0f} % {cause})" if share
                                                      is not None else ""))
    util = k.utilization_pct
    if util is not None and util < 50 and not issues:
        issues.append(f"busy {util:.1f} % of the run")
    return bott, "; ".join(issues) or "—"


def configuration(trace: Trace, a: "Analysis", groups=()) -> dict[str, Any]:
    meta = trace.meta
    conf: dict[str, Any] = {
        "run": meta.name, "format": meta.format, "tool": meta.tool,
        "tool_version": meta.tool_version, "device": meta.device,
        "clock": meta.clock.name, "source_files": list(meta.source_files),
        "tasks": task_count(trace, a.timeline),
        "lanes": [{"kind": k.name, "lanes": k.lanes, "used": k.lanes_used}
                  for k in a.bubbles.kinds],
    }
    shapes = _shapes(groups, semantic_label_arg(trace))
    if shapes:
        conf["shapes"] = shapes
    if a.msprof_op is not None:
        conf["op_name"] = a.msprof_op.op_name
        conf["block_dim"] = a.msprof_op.block_dim
        conf["core_count"] = a.msprof_op.core_count
    for key in ("device_name", "compute_capability", "chip", "soc"):
        if key in meta.extra:
            conf[key] = meta.extra[key]
    if meta.extra.get(CLOCK_SKEW):
        conf["clock_skew"] = [dict(e) for e in meta.extra[CLOCK_SKEW]]
    return conf


def _shapes(groups, label_arg: str | None, limit: int = 8) -> list[dict[str, Any]]:
    """The operand shapes of each semantic label (from its first group's args): the
    model.INPUTS / OUTPUTS lists of operand dicts (``dtype``, ``shape``) a reader records
    for a call."""
    if label_arg is None:
        return []
    seen: dict[Any, dict[str, Any]] = {}
    for g in groups:
        sh = g.args
        label = sh.get(label_arg)
        if not label or label in seen:
            continue
        entry = {"label": label}
        for side in (INPUTS, OUTPUTS):
            ops = sh.get(side)
            if isinstance(ops, list):
                entry[side] = [f"{o.get('dtype', '?')}{list(o.get('shape', []))}"
                               for o in ops if isinstance(o, dict)]
        seen[label] = entry
        if len(seen) >= limit:
            break
    return list(seen.values())


def top_tasks(trace: Trace, critical: set[int], n: int = 10) -> list[dict[str, Any]]:
    tracks = trace.tracks
    ok = source_lanes(trace)
    slices = trace.slices
    durs = [s.dur if ok[s.track] and s.cat != INVENTED_TIMES else -1 for s in slices]
    best = [i for i in heapq.nlargest(n, range(len(durs)), key=durs.__getitem__)
            if durs[i] >= 0]
    arg = semantic_label_arg(trace)
    out = []
    for i in best:
        s = slices[i]
        label = (s.all_args.get(arg) or "") if arg is not None else ""
        out.append({"name": s.name, "lane": tracks[s.track].name, "label": label,
                    "start_ns": s.ts, "duration_us": us(s.dur),
                    "on_critical_path": i in critical})
    return out


def _cp_kind(a: "Analysis") -> tuple[str, str]:
    """(kind, lane) holding most task time on the critical path."""
    by, lanes = a.critical_path.task_time_by(a.timeline)
    kind = max(by.items(), key=lambda kv: kv[1])[0] if by else ""
    lane = max(lanes.items(), key=lambda kv: kv[1])[0] if lanes else ""
    return kind, lane


def _top_critical_label(a: "Analysis"):
    for t in a.labels:
        if t.rows and any(r.critical for r in t.rows):
            return t, max(t.rows, key=lambda r: r.critical)
    return None, None


def opportunities(trace: Trace, a: "Analysis") -> list[Opportunity]:
    out: list[Opportunity] = []
    b = a.bubbles
    cp = a.critical_path
    if b.computed and b.run is not None and b.run.makespan:
        run = b.run
        makespan = run.makespan
        if cp.computed:
            waits = sum(1 for seg in cp.segments if seg.kind == "wait")
            if cp.wait_time > 0:
                out.append(Opportunity(
                    "Dispatch ready tasks sooner: the critical path waits for scheduling",
                    f"critical-path wait {_us(cp.wait_time)} = "
                    f"{_f(pct(cp.wait_time, cp.length))} of {_us(cp.length)}, "
                    f"{waits} waits of {_us(cp.wait_time / max(waits, 1))} on average",
                    cp.wait_time, "the critical path's wait time (upper bound: another path "
                    "may become critical)", "critical path", DISPATCH,
                    place=of_segments(trace, [s for s in cp.segments if s.kind == "wait"],
                                      cp.start, cp.end)))
            work_bound = max([k.busy / k.lanes for k in b.kinds if k.lanes] or [0])
            floor = max(cp.graph_bound, work_bound)
            gain = cp.task_time - floor
            kind, lane = _cp_kind(a)
            kinds = {t: ln.kind for ln in a.timeline.lanes for t in ln.tracks}
            if gain > 0 and cp.lane_order_time > 0:
                k = next((k for k in b.kinds if k.name == kind), None)
                idle = f"; {k.lanes - k.lanes_used} of {k.lanes} {kind} lanes never ran a " \
                    "task" if k is not None and k.lanes > k.lanes_used else ""
                out.append(Opportunity(
                    f"Spread the {kind} work: the critical path queues on {kind} lanes",
                    f"{_us(cp.lane_order_time)} of the critical path is tasks waiting for "
                    f"their lane ({lane}) to free up; dependency chain alone "
                    f"{_us(cp.graph_bound)}, {kind} work over all {kind} lanes "
                    f"{_us(k.busy / k.lanes if k else 0)}{idle}",
                    gain, "the critical path's task time minus the larger of the longest "
                    "dependency chain and each kind's work spread over all its lanes",
                    "critical path", COMPUTE, place=of_segments(trace, [
                        s for s in cp.segments if s.kind == "task"
                        and kinds.get(trace.slices[s.slice].track) == kind])))
            table, row = _top_critical_label(a)
            if row is not None:
                out.append(Opportunity(
                    f"Speed up {table.title} '{row.label}': the largest share of the "
                    "critical path",
                    f"{table.title} '{row.label}': {_us(row.critical)} = "
                    f"{_f(pct(row.critical, cp.length))} of the critical path, "
                    f"{_f(pct(row.total, table.total))} of all task time, "
                    f"{row.count} tasks of {_us(row.total / row.count)} on average",
                    row.critical / 2, "what halving its tasks' time would save on the "
                    "critical path", "critical path", COMPUTE,
                    place=of_label(trace, cp, table, row.label)))
            if b.cause_model == "task graph" and run.wait and \
                    run.wait_predecessor >= run.wait_schedule and \
                    (run.bubble_rate_pct or 0) >= 20:
                out.append(Opportunity(
                    "Overlap more work: lanes idle waiting for predecessors",
                    f"bubble rate {_f(run.bubble_rate_pct)}, "
                    f"{_f(pct(run.wait_predecessor, run.wait))} of it waiting for "
                    f"predecessors; utilization {_f(run.utilization_pct)}",
                    None, "off the critical path: frees lanes, does not shorten the run by "
                    "itself", "bubbles", DEPENDENCY,
                    place=of_gaps(trace, a.timeline, [g for g in b.gaps if g[3] == 0],
                                  a.timeline.start, a.timeline.end)))
        else:
            busiest = max(b.lanes, key=lambda f: f.busy)
            gain = makespan - busiest.busy
            if gain > 0 and (run.bubble_rate_pct or 0) >= 2:
                out.append(Opportunity(
                    "Fill the idle gaps between tasks (launch or host overhead)",
                    f"bubble rate {_f(run.bubble_rate_pct)}; busiest lane {busiest.name} "
                    f"busy {_f(busiest.utilization_pct)} of the run", gain,
                    "makespan minus the busiest lane's busy time", "bubbles", DISPATCH,
                    place=of_gaps(trace, a.timeline, b.gaps, a.timeline.start,
                                  a.timeline.end)))
    if a.ncu is not None:
        out.extend(ncu_opportunities(trace, a.ncu))
    m = a.msprof_op
    if m is not None:
        # msprof op's findings are about the operator's blocks: every task of the timeline
        ops = Place.of_slices(trace, [i for ln in a.timeline.lanes for i in ln.slices])
        durs = [b_.get("duration_us") or 0.0 for b_ in m.blocks]
        dur = max(durs) if durs else 0.0
        if m.fill_note and m.block_dim and m.core_count:
            bd, cc = m.block_dim, m.core_count
            waves = -(-bd // cc)
            frac = 1 - bd / (waves * cc)
            out.append(Opportunity("Fill every core: change the block count", m.fill_note,
                                   dur * 1000 * frac if dur else None,
                                   "the longest block's duration x the share of core slots "
                                   "left empty (if the work divides evenly)", "msprof op",
                                   DISPATCH, place=ops))
        pipe_label = MSPROF_PIPE_LABEL.get(m.dominant_bound or "", COMPUTE)
        if m.dominant_bound:
            ratio = max((b_["bound_ratio"] or 0.0) for b_ in m.blocks) if m.blocks else 0.0
            out.append(Opportunity(
                f"Relieve the {m.dominant_bound} pipe",
                f"{m.bound_counts.get(m.dominant_bound, 0)} of {len(m.blocks)} blocks bound "
                f"by {m.dominant_bound} (ratio up to {ratio:.2f})", None,
                "no estimate from pipe ratios alone", "msprof op", pipe_label, place=ops))
        for adv in m.advice[:3]:
            out.append(Opportunity("msprof advice", adv[:200], None,
                                   "advice from visualize_data.bin", "msprof op", pipe_label,
                                   msprof_advice_actions(adv[:200]), place=ops))
    out.sort(key=lambda o: (o.gain_ns is None, -(o.gain_ns or 0.0)))
    return out


def bottleneck(trace: Trace, a: "Analysis") -> dict[str, str]:
    """At most two sentences: what bounds the run, and why."""
    b = a.bubbles
    cp = a.critical_path
    if a.ncu is not None and a.ncu.kernels:
        ks = a.ncu.kernels
        total = sum(k.duration for k in ks) or 1
        bound, t = max(a.ncu.bound_time().items(), key=lambda kv: kv[1])
        longest = max(ks, key=lambda k: k.duration)
        if bound == "unknown":
            return {"summary": f"{len(ks)} kernels ({_us(total)} of kernel time) are not "
                               "classified: the export has no compute or memory throughput "
                               "metric (Speed Of Light: SM, tensor, memory or DRAM % of peak).",
                    "root_cause": f"The longest kernel, {longest.name} "
                                  f"({_us(longest.duration)}), takes "
                                  f"{100 * longest.duration / total:.0f} % of kernel time; "
                                  "profile with the SpeedOfLight section to classify it."}
        failed = ", ".join(c["text"] for c in longest.failed) or "no failed health check"
        return {"summary": f"{sum(1 for k in ks if k.bound == bound)} of {len(ks)} kernels "
                           f"({100 * t / total:.0f} % of kernel time) are {bound}.",
                "root_cause": f"The longest kernel, {longest.name} ({_us(longest.duration)}), "
                              f"is {longest.bound}: {failed}."}
    if a.msprof_op is not None and a.msprof_op.dominant_bound:
        m = a.msprof_op
        verdict = next((str(r.get("bound")) for r in m.roofline if r.get("bound")), "")
        return {"summary": f"{m.op_name or 'The operator'} is bound by the "
                           f"{m.dominant_bound} pipe on {m.bound_counts[m.dominant_bound]} of "
                           f"{len(m.blocks)} blocks" + (f" (roofline: {verdict})" if verdict
                                                        else "") + ".",
                "root_cause": (m.fill_note + "." if m.fill_note else
                               (m.advice[0] if m.advice else
                                "No block-count or advice finding."))}
    if not b.computed or b.run is None:
        return {"summary": "No timeline figures: " + (b.reason or "nothing to analyse") + ".",
                "root_cause": ""}
    run = b.run
    if cp.computed:
        table, row = _top_critical_label(a)
        kind, lane = _cp_kind(a)
        s1 = (f"The run takes {_us(cp.length)}, set by a critical path of {len(cp.tasks)} "
              f"tasks: {_f(pct(cp.task_time, cp.length), digits=0)} computing"
              + (f" (mostly {table.title} '{row.label}' on {kind} lanes)" if row is not None
                 else "")
              + f", {_f(pct(cp.wait_time, cp.length), digits=0)} waiting for dispatch.")
        lane_share = pct(cp.lane_order_time, cp.length) or 0.0
        if lane_share >= 40:
            others = [k for k in b.kinds if k.name != kind and k.wait and not k.virtual]
            tail = (f"; {', '.join(k.name for k in others)} lanes wait for its results "
                    f"({_f(max(k.bubble_rate_pct or 0 for k in others), digits=0)} bubbles)"
                    if others else "")
            s2 = (f"{kind} lanes are saturated: {_f(lane_share, digits=0)} of the path is "
                  f"tasks that were ready but waited for their lane ({lane}) to free up, "
                  f"so {kind} throughput bounds the run{tail}.")
        elif (pct(cp.wait_time, cp.length) or 0) >= 30:
            waits = sum(1 for seg in cp.segments if seg.kind == "wait") or 1
            s2 = (f"Scheduling overhead: tasks on the path wait {_us(cp.wait_time / waits)} "
                  f"on average between becoming ready and starting.")
        elif run.wait_predecessor >= run.wait_schedule and (run.bubble_rate_pct or 0) >= 20:
            s2 = (f"Lanes spend {_f(run.bubble_rate_pct)} of their span in bubbles, "
                  f"{_f(pct(run.wait_predecessor, run.wait), digits=0)} of it waiting for "
                  "predecessors: the task graph does not expose enough parallel work.")
        else:
            s2 = (f"Lanes are busy {_f(run.utilization_pct)} of the run; the tasks on the "
                  "critical path are the cost.")
        if cp.caveat:
            s2 += " Caveat: " + cp.caveat + "."
        return {"summary": s1, "root_cause": s2}
    busiest = max(b.lanes, key=lambda f: f.busy)
    return {"summary": f"The run takes {_us(run.makespan)}; the busiest lane, {busiest.name}, "
                       f"works {_f(busiest.utilization_pct)} of it.",
            "root_cause": f"Lanes are idle {_f(run.bubble_rate_pct)} of their span between "
                          f"tasks (utilization {_f(run.utilization_pct)})."}
