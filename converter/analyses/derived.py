"""Derived tracks: what the analyses found, put into the trace next to the data.

* under every lane with idle gaps, a lane "<lane> · bubbles" holding one slice per gap part,
  named by cause (wait predecessor / wait schedule / idle / wait start), placed right after
  the lane (and after its overlap lanes);
* simpler runs: under every AICPU scheduler thread lane (``Sched_<n>``), a lane "<lane> ·
  loop idle" with its scheduler-loop idle as the runtime defines it (analyses/simpler/loop.py);
* "busy lanes · <kind>" counters, first in each group of the run's own that holds lanes of
  that kind, counting that group's lanes ("AIC cores (cube)", each rank's "Ascend Hardware";
  writers draw a sub-group's first counter on the group's own row), or one in the analysis
  group when some lane of the kind is in no such group;
* a group "tracecvt analysis" last among the top-level tracks, when it has something to
  hold: the critical-path lane, the busy-lanes counters that have no group of their own
  and, with a task graph, the "ready but waiting · <kind>" counters;
* the tasks on the critical path get ``critical_path_step`` in their args, the dependencies
  between them ``critical_path: true`` in the flow's args and the flow name "critical path";
  each task's copy on the critical-path lane is recorded with every slice of the task it
  copies in ``meta.extra[model.COPIES]`` (one piece of work: one correlation_id in a
  .pftrace).

Every track made here has ``derived=True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from itertools import compress, repeat
from operator import attrgetter

from ..model import COPIES, GROUP, LANE, SEP, Slice, Trace
from .bubbles import CAUSES
from .critical_path import RUN_START
from .gaps import block_gaps

if TYPE_CHECKING:
    from . import TrackAnalysis

GROUP_NAME = "tracecvt analysis"
BUBBLE_CAT = "bubble"
CP_CAT = "critical path"
_DST = attrgetter("dst")


def add_derived_tracks(trace: Trace, a: "TrackAnalysis") -> dict[str, int]:
    counts = {"bubble_lanes": 0, "bubble_slices": 0, "counter_tracks": 0,
              "counter_samples": 0, "critical_path_segments": 0}
    b = a.bubbles
    tl = a.timeline
    if not b.computed:
        return counts
    slices = trace.slices
    tracks = trace.tracks
    # -- bubble lanes ------------------------------------------------------------------
    with_gaps = sorted(b.gaps.lanes())
    lane_track: dict[int, int] = {}
    after: dict[int, int] = {}            # last track of a logical lane -> its bubble lane
    for li in with_gaps:
        lane = tl.lanes[li]
        main = tracks[lane.track]
        what = ("wait predecessor / wait schedule" if lane.graph else "idle")
        if tl.has_pickup:
            what += " / wait start"
        t = trace.add_track(f"{main.name}{SEP}bubbles", main.parent, LANE, 0,
                            f"idle gaps of {main.name} by cause ({what}), from the run start "
                            "to its last task; made by tracecvt", nesting=False, derived=True)
        lane_track[li] = t
        last = max(lane.tracks, key=lambda x: tracks[x].order)
        after[last] = t
    loop_lanes: dict[int, int] = {}       # simpler: scheduler-loop idle per AICPU thread
    for lane in sorted(a.loop_idle):
        main = tracks[lane]
        t = trace.add_track(f"{main.name}{SEP}loop idle", main.parent, LANE, 0,
                            f"scheduler-loop idle of {main.name} as the runtime defines it: "
                            "gaps between its complete / async_poll / dispatch records after "
                            "the latest end so far; made by tracecvt", nesting=False,
                            derived=True)
        loop_lanes[lane] = t
        after[lane] = t
    _place_after(trace, after)
    counts["bubble_lanes"] = len(lane_track) + len(loop_lanes)
    new = []
    # Only "wait predecessor" parts carry an arg (the predecessor they wait for): the task a
    # bubble precedes is the next slice on the lane above.  The arg dict is shared by every
    # bubble waiting for the same task, so writers encode it once.
    waits: dict[int, dict] = {}
    for block in b.gaps.blocks:
        if block.__class__ is not list and block[5] < 0:    # (one lane's, as columns)
            li, starts, ends, cause = block[:4]
            new.extend(map(Slice, repeat(lane_track[li]), starts.tolist(),
                           (ends - starts).tolist(), repeat(CAUSES[cause]),
                           repeat(BUBBLE_CAT)))
            continue
        for li, start, end, cause, nxt, by in block_gaps(block):
            shared = None
            if by >= 0:
                shared = waits.get(by)
                if shared is None:
                    shared = waits[by] = {"waiting_for": slices[by].name}
            new.append(Slice(lane_track[li], start, end - start, CAUSES[cause], BUBBLE_CAT,
                             None, shared))
    for lane, gaps in a.loop_idle.items():
        t = loop_lanes[lane]
        new.extend(Slice(t, g0, g1 - g0, "loop idle", BUBBLE_CAT) for g0, g1 in gaps)
        counts["bubble_slices"] += len(gaps)
    # -- analysis group: critical path and counters -------------------------------------
    made: list[int] = []

    def analysis_group() -> int:
        """The analysis group, made when something first goes into it."""
        if not made:
            last = max((tracks[r].order for r in trace.roots), default=-1) + 1
            made.append(trace.add_track(
                GROUP_NAME, None, GROUP, last, "derived by tracecvt: critical path, busy "
                f"lanes, ready tasks (bubble causes: {b.cause_model})", derived=True))
        return made[0]

    cp = a.critical_path
    if cp.computed and cp.segments:
        lane = trace.add_track("critical path", analysis_group(), LANE, 0,
                               "the chain of tasks and waits that sets the run's length: "
                               "tasks are copies of the originals (see args.lane)",
                               nesting=False, derived=True)
        step = 0
        marked: dict[int, int] = {}
        copied: dict[int, int] = {}       # index the copy will have -> the task's node
        for seg in cp.segments:
            s = slices[seg.slice]
            if seg.kind == "task":
                step += 1
                marked[seg.slice] = step
                args = {"lane": seg.lane, "step": step}
                if seg.via:
                    args["next_depends_via"] = seg.via
                copied[len(slices) + len(new)] = seg.slice
                new.append(Slice(lane, seg.ts, seg.dur, s.name, CP_CAT, args, s.shared_args))
            else:
                args = {"before_task": s.name, "lane": seg.lane,
                        "since": "run start" if seg.via == RUN_START else
                        f"end of the previous task ({seg.via})"}
                new.append(Slice(lane, seg.ts, seg.dur, "wait schedule", CP_CAT, args))
        counts["critical_path_segments"] = len(cp.segments)
        members = tl.members()
        for n, k in marked.items():
            for i in members.get(n, (n,)):          # every slice of the task
                s = slices[i]
                s.args = {**s.args, "critical_path_step": k} if s.args else \
                    {"critical_path_step": k}
        if copied and isinstance(trace.meta.extra, dict):
            trace.meta.extra[COPIES] = {c: sorted(members.get(n, (n,)))
                                        for c, n in copied.items()}
        for f in _path_flows(trace.flows, set(cp.edges), tl.node, members):
            f.args = {**f.args, "critical_path": True} if f.args else {"critical_path": True}
            f.name = "critical path"
    order = 1

    def add_counter(name, parent, unit, rank, what, series):
        c = trace.add_counter(name, parent, unit, rank, what, derived=True)
        c.ts, c.values = series[0][:], series[1][:]     # copies: not the analysis' own
        counts["counter_tracks"] += 1
        counts["counter_samples"] += len(c.ts)

    for kind in dict.fromkeys(k for k, _ in b.busy_by_group):
        homes = _homes(trace, kind, b.busy_by_group)
        what = f"how many {kind} lanes are running a task"
        if homes:
            # First into each group of the kind's lanes (before the group's own tracks, whose
            # orders are not negative): a sub-group's row then draws its lanes' occupancy.
            for g in homes:
                add_counter(f"busy lanes{SEP}{kind}", g, "lanes", -1000 + order,
                            what + (f" in {tracks[g].name}" if len(homes) > 1 else ""),
                            b.busy_by_group[kind, g])
        else:
            add_counter(f"busy lanes{SEP}{kind}", analysis_group(), "lanes", order, what,
                        b.busy_series(kind))
        order += 1
    for kind, series in b.ready_series.items():
        add_counter(f"ready but waiting{SEP}{kind}", analysis_group(), "tasks", order,
                    f"{kind} tasks whose predecessors have all ended but that have not "
                    "started", series)
        order += 1
    counts["bubble_slices"] += len(b.gaps)
    trace.slices.extend(new)
    return counts


def _path_flows(flows: list, edges: set[tuple[int, int]], node, members: dict[int, list[int]]
                ) -> list:
    """The flows between the nodes of an edge of the critical path (``node``: a slice's
    node; ``members``: a node's slices, where it has several), in order.  The path has few
    edges and a run many flows: only the flows into a slice of an edge's destination are
    looked at (a test of membership each, not two calls)."""
    into = {i for _, n in edges for i in members.get(n, (n,))}
    return [f for f in compress(flows, map(into.__contains__, map(_DST, flows)))
            if (node(f.src), node(f.dst)) in edges]


def has_derived_tracks(trace: Trace) -> bool:
    """Whether ``add_derived_tracks`` has run on ``trace`` (its analysis group, busy-lanes
    counters or bubble lanes are there; tracks a reader marks derived, such as msprof's own
    overlap lanes, do not count)."""
    return any(t.derived and ((t.parent is None and t.name == GROUP_NAME)
                              or t.name.startswith(f"busy lanes{SEP}")
                              or t.name.endswith(f"{SEP}bubbles"))
               for t in trace.tracks)


def _homes(trace: Trace, kind: str, by_group: dict) -> list[int]:
    """The groups that hold the lanes of ``kind`` (PyPTO's "AIC cores (cube)", each rank's
    "Ascend Hardware"), when every such lane is in a group of the run's own (none at the top
    level of the trace): each gets the busy lanes of its own lanes; else none."""
    groups = [g for k, g in by_group if k == kind]          # in the order of their lanes
    if any(g is None or trace.tracks[g].derived for g in groups):
        return []
    return groups


def _place_after(trace: Trace, after: dict[int, int]) -> None:
    """Renumber siblings so each new lane follows the track it belongs to."""
    if not after:
        return
    placed = set(after.values())
    parents = {trace.tracks[t].parent for t in placed}
    for parent in parents:
        siblings = [c for c in trace.children(parent) if c not in placed]
        ordered = []
        for c in siblings:
            ordered.append(c)
            t = after.get(c)
            if t is not None:
                ordered.append(t)
        for rank, c in enumerate(ordered):
            trace.tracks[c].order = rank
