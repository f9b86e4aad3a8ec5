"""The critical path: the chain of tasks and waits that explains the run's length.

Walk back from the task that ends last.  At each task, what let it start is whichever ended
later: its latest-ending predecessor in the task graph (a *dependency*) or the task before it
on its lane (the lane was busy: *lane order*).  The time between that end and the task's start
is a wait (the task was ready and its lane free, yet it had not started: PyPTO's wait
schedule).  The walk stops at a task with neither, whose wait is measured from the run start.
The segments therefore tile [run start, last end] exactly: their total is the makespan.
Slices of one task (TASK_ID: MIX rows, SPMD blocks) are one node: from the task's first
start to its end, its lane order taken where it started.

Dependencies the reader marks untrusted (``model.UNTRUSTED_FLOW``, e.g. PyPTO's HUB seqNo quirk;
``Timeline.preds`` holds none of them) and predecessors with invented times (fake tasks) are
not followed, and lane order is not
followed between PyPTO's HUB tasks (1-cycle markers on a pseudo-core, not a resource).

``graph_bound`` is the longest chain of task durations through the dependencies alone (no
lanes, no waits): no schedule of the same tasks can be shorter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from ..model import MARKER, UNTRUSTED_FLOW, UNTRUSTED_PREDECESSORS, Trace
from ..slice_columns import kept_columns
from .bubbles import WAIT_SCHEDULE, Bubbles, us
from .timeline import Timeline

DEPENDENCY = "dependency"
LANE_ORDER = "lane order"
RUN_START = "run start"


@dataclass
class Segment:
    kind: str                     # "task" or "wait"
    ts: int
    dur: int
    slice: int                    # the task (for a wait: the task it precedes)
    via: str = ""                 # tasks: how the next task depends on this one
    lane: str = ""

    def to_dict(self, trace: Trace) -> dict[str, Any]:
        s = trace.slices[self.slice]
        return {"kind": self.kind, "name": s.name if self.kind == "task" else WAIT_SCHEDULE,
                "task": s.name, "lane": self.lane, "start_ns": self.ts,
                "duration_us": us(self.dur), "via": self.via}


@dataclass
class CriticalPath:
    computed: bool
    reason: str | None
    segments: list[Segment] = field(default_factory=list)
    start: int = 0
    end: int = 0
    task_time: int = 0
    wait_time: int = 0
    edges: list[tuple[int, int]] = field(default_factory=list)   # (src, dst) dependencies
    graph_bound: int = 0          # longest chain of task durations through dependencies only
    lane_order_time: int = 0      # task time on the path whose successor waited for the lane
    caveat: str | None = None     # why the path may be incomplete

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def tasks(self) -> list[int]:
        return [seg.slice for seg in self.segments if seg.kind == "task"]

    def task_time_by(self, tl: Timeline) -> tuple[dict[str, int], dict[str, int]]:
        """Task time on the path (ns) by lane kind and by lane name, in path order."""
        kinds: dict[str, int] = {}
        lanes: dict[str, int] = {}
        for seg in self.segments:
            if seg.kind == "task":
                lane = tl.lanes[tl.lane_of[seg.slice]]
                kinds[lane.kind] = kinds.get(lane.kind, 0) + seg.dur
                lanes[lane.name] = lanes.get(lane.name, 0) + seg.dur
        return kinds, lanes


def compute_critical_path(trace: Trace, tl: Timeline, bubbles: Bubbles) -> CriticalPath:
    if not bubbles.computed:
        return CriticalPath(False, bubbles.reason)
    if not tl.has_graph:
        return CriticalPath(False, "no task graph (no dependencies between tasks)")
    slices = trace.slices
    lanes = tl.lanes
    lane_of = tl.lane_of
    node_of = tl.node_of
    first_of = tl.node_first
    # the task that ends last (then, that starts last; the first in the lanes' order)
    last = -1
    nodes = _slice_nodes(trace, tl)
    if nodes is not None:       # (each slice its own task)
        flat, ts, end = nodes
        if len(flat):
            at = np.flatnonzero(end == end.max())
            last = int(flat[at[int(np.argmax(ts[at]))]])
    else:
        last = max((node_of.get(i, i) for lane in lanes if lane.graph for i in lane.slices),
                   key=lambda i: (slices[i].ts + slices[i].dur, slices[first_of.get(i, i)].ts),
                   default=-1)
    if last < 0:
        return CriticalPath(False, "no task graph lanes")
    preds = tl.preds
    lane_prev = bubbles.lane_prev
    t0 = tl.start
    out: list[Segment] = []
    edges: list[tuple[int, int]] = []
    seen: set[int] = set()
    i = last
    via = ""
    while True:
        # A node: a task (its slices joined by TASK_ID: from its first start to its end, on
        # the lane where it started) or a slice of its own.
        seen.add(i)
        s = slices[i]
        first = first_of.get(i, i)
        ts = slices[first].ts
        lane_name = lanes[lane_of[first]].name
        out.append(Segment("task", ts, s.ts + s.dur - ts, i, via, lane_name))
        best = -1
        best_end = None
        for p in preds.get(i, ()):      # lane_of: no fake tasks (the timeline leaves them out)
            ps = slices[p]
            pe = ps.ts + ps.dur
            if pe <= ts and p not in seen and p in lane_of \
                    and (best_end is None or pe > best_end):
                best, best_end = p, pe
        how = DEPENDENCY
        q = lane_prev.get(first, -1) if s.cat != MARKER else -1
        q = node_of.get(q, q)
        if q >= 0 and q not in seen:
            qs = slices[q]
            qe = qs.ts + qs.dur
            if best_end is None or qe > best_end:
                best, best_end, how = q, qe, LANE_ORDER
        if best < 0:
            if ts > t0:
                out.append(Segment("wait", t0, ts - t0, i, RUN_START, lane_name))
            break
        if best_end < ts:
            out.append(Segment("wait", best_end, ts - best_end, i, how, lane_name))
        if how == DEPENDENCY:
            edges.append((best, i))
        via = how
        i = best
    out.reverse()             # "via" on a task: how the next task on the path depends on it
    cp = CriticalPath(True, None, out, t0, slices[last].ts + slices[last].dur)
    cp.task_time = sum(seg.dur for seg in out if seg.kind == "task")
    cp.wait_time = sum(seg.dur for seg in out if seg.kind == "wait")
    cp.lane_order_time = sum(seg.dur for seg in out
                             if seg.kind == "task" and seg.via == LANE_ORDER)
    cp.edges = edges[::-1]
    cp.graph_bound = graph_bound(trace, tl, nodes)
    fake = tl.fake_in_graph
    ignored = bubbles.ignored_dependencies
    if ignored or fake:
        parts = []
        if ignored:
            parts.append(f"{ignored} tasks have a dependency the reader marked untrusted "
                         f"(\"{UNTRUSTED_FLOW}\" in the trace, with its reason in the "
                         f"flow's args; named in each task's args.{UNTRUSTED_PREDECESSORS}; "
                         "not followed)")
        if fake:
            parts.append(f"{fake} tasks of the graph have invented times (fake)")
        cp.caveat = ("this run's task graph is incomplete: " + " and ".join(parts)
                     + ", so a long wait on the path may be a dependency the source did "
                     "not record")
    return cp


def _slice_nodes(trace: Trace, tl: Timeline) -> tuple | None:
    """Where every slice is its own task (no ``node_of``) and the slices' columns are kept
    (a conversion's): the slices of the graph's lanes in the lanes' order, with their
    starts and ends (int64 arrays); else None."""
    if tl.node_of or tl.node_first:
        return None
    cols = kept_columns(trace.slices, make=False)
    if cols is None:
        return None
    flat = np.fromiter(chain.from_iterable(lane.slices for lane in tl.lanes if lane.graph),
                       dtype=np.int64)
    return flat, cols.ts[flat], cols.end[flat]


def graph_bound(trace: Trace, tl: Timeline, nodes: tuple | None = None) -> int:
    """Longest path through the dependencies weighted by task durations (O(n log n + e)):
    causal edges only, so start order is a topological order.  ``nodes``: the graph's
    slices, each its own task, with their times (``_slice_nodes``), where known."""
    slices = trace.slices
    if nodes is not None:
        flat, ts, end = nodes
        order = np.argsort(ts, kind="stable")
        ids, starts, ends = flat[order].tolist(), ts[order].tolist(), end[order].tolist()
    else:
        node_of = tl.node_of
        first_of = tl.node_first
        ids = list(dict.fromkeys(node_of.get(i, i) for lane in tl.lanes if lane.graph
                                 for i in lane.slices))
        start = {i: slices[first_of.get(i, i)].ts for i in ids}
        ids.sort(key=lambda i: start[i])
        starts = [start[i] for i in ids]
        ends = [slices[i].ts + slices[i].dur for i in ids]
    preds = tl.preds
    longest: dict[int, int] = {}
    best = 0
    for i, ts, end in zip(ids, starts, ends):
        length = 0
        for p in preds.get(i, ()):
            c = longest.get(p)
            if c is not None and c > length:
                ps = slices[p]
                if ps.ts + ps.dur <= ts:
                    length = c
        length += end - ts
        longest[i] = length
        if length > best:
            best = length
    return best
