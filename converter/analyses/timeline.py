"""What the analyses share: which lanes are timelines, the run window, the task graph.

Computed once per trace (``Timeline.build``) and used by bubbles, counters, the critical path
and the PyPTO check, so every figure is made from the same lanes, the same run start and the
same dependencies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import (INVENTED_TIMES, LANE, MARKER, NO_BUBBLES, RESOURCES, SOURCE_BINDING,
                     TASK_GRAPH, UNTRUSTED_FLOW, Trace)

_KIND_RE = re.compile(r"^(.*?)[ _\-#:]*(\d+)$")


def lane_kind(name: str, group: str) -> str:
    """The kind of a lane: its name without the trailing number (AIC_12 -> AIC, Stream 7 ->
    Stream), or its group's name when the name has no number."""
    m = _KIND_RE.match(name)
    if m and m.group(1):
        return m.group(1)
    return group or name


@dataclass
class Lane:
    """One logical lane: a lane of the source and the overlap lanes split off it."""

    track: int                    # the main lane's track index
    tracks: list[int]             # main lane first, then its overlap lanes
    name: str
    path: str                     # "group / ... / name", unique enough for people
    kind: str
    group: int | None             # parent track
    slices: list[int] = field(default_factory=list)   # sorted by (ts, -dur); fake ones out
    graph: bool = False           # some slice of it is a node of the task graph
    virtual: bool = False         # only markers of a pseudo-core (PyPTO HUB tasks)


@dataclass
class Timeline:
    """The lanes analysed, the run window and the task graph (predecessors per slice)."""

    lanes: list[Lane]
    start: int | None             # run start: first start over the analysed slices (ns)
    end: int | None               # run end: last end over them
    has_graph: bool
    preds: dict[int, list[int]]   # slice -> predecessor slices (flows), graph runs only;
                                  # untrusted flows (model.UNTRUSTED_FLOW) left out
    skipped: str | None = None    # why no bubbles are computed (not a timeline, serialized)
    fake_slices: int = 0          # slices left out because their times are invented
    lane_of: dict[int, int] = field(default_factory=dict)   # slice -> index in lanes
    lane_counts: dict[str, int] = field(default_factory=dict)  # kind -> lanes, idle included
    untrusted: dict[int, int] = field(default_factory=dict)   # slice -> untrusted flows into it
    fake_in_graph: int = 0        # slices with invented times that a flow starts or ends at
    # The graph as the source tool bound it (model.SOURCE_BINDING, untrusted flows included):
    # for checks that recompute the tool's own figures.  None: the same as ``preds`` plus
    # the untrusted flows.
    source_preds: dict[int, list[int]] | None = None

    @property
    def makespan(self) -> int:
        return 0 if self.start is None else self.end - self.start

    @classmethod
    def build(cls, trace: Trace) -> "Timeline":
        extra = trace.meta.extra
        skipped = str(extra[NO_BUBBLES]) if extra.get(NO_BUBBLES) else None
        tracks = trace.tracks
        by_track = trace.slices_by_track()
        slices = trace.slices
        main_of = _overlap_owners(trace)
        lanes: dict[int, Lane] = {}
        fake = 0
        lane_counts: dict[str, int] = {}
        resources = extra.get(RESOURCES)
        resources = None if resources is None else set(resources)
        for t in _lanes_in_order(trace):
            track = tracks[t]
            if track.derived:
                continue
            main = main_of.get(t, t)
            if resources is not None:
                m = tracks[main]
                kind = lane_kind(m.name, tracks[m.parent].name if m.parent is not None else "")
                if kind not in resources:
                    continue
            ids = by_track.get(t)
            if not ids:
                if main == t:       # an idle lane (PyPTO SIM lists every core) still counts
                    parent = track.parent
                    kind = lane_kind(track.name, tracks[parent].name if parent is not None
                                     else "")
                    lane_counts[kind] = lane_counts.get(kind, 0) + 1
                continue
            real = [i for i in ids if slices[i].cat != INVENTED_TIMES]
            fake += len(ids) - len(real)
            if not real:
                continue
            lane = lanes.get(main)
            if lane is None:
                m = tracks[main]
                parent = m.parent
                gname = tracks[parent].name if parent is not None else ""
                lane = lanes[main] = Lane(main, [main], m.name, trace.path(main),
                                          lane_kind(m.name, gname), parent)
                lane_counts[lane.kind] = lane_counts.get(lane.kind, 0) + 1
            if t != main:
                lane.tracks.append(t)
            lane.slices.extend(real)
        ordered = list(lanes.values())
        start = end = None
        lane_of: dict[int, int] = {}
        for k, lane in enumerate(ordered):
            lane.virtual = all(slices[i].cat == MARKER for i in lane.slices)
            if tracks[lane.track].nesting or len(lane.tracks) > 1:
                lane.slices.sort(key=lambda i: (slices[i].ts, -slices[i].dur))
            else:                 # back-to-back work: no two slices start together
                lane.slices.sort(key=lambda i: slices[i].ts)
            first = slices[lane.slices[0]].ts
            last = max(slices[i].ts + slices[i].dur for i in lane.slices)
            start = first if start is None or first < start else start
            end = last if end is None or last > end else end
            for i in lane.slices:
                lane_of[i] = k
        has_graph = bool(trace.flows) and extra.get(TASK_GRAPH) is True
        preds: dict[int, list[int]] = {}
        untrusted: dict[int, int] = {}
        source_preds = None
        if has_graph:
            for f in trace.flows:
                if f.name == UNTRUSTED_FLOW:
                    untrusted[f.dst] = untrusted.get(f.dst, 0) + 1
                    continue
                lst = preds.get(f.dst)
                if lst is None:
                    preds[f.dst] = [f.src]
                else:
                    lst.append(f.src)
                a = lane_of.get(f.src)
                b = lane_of.get(f.dst)
                if a is not None:
                    ordered[a].graph = True
                if b is not None:
                    ordered[b].graph = True
            fakes = {i for f in trace.flows for i in (f.src, f.dst)
                     if slices[i].cat == INVENTED_TIMES} if fake else ()
            if untrusted or any(f.args and SOURCE_BINDING in f.args for f in trace.flows):
                source_preds = {}
                for f in trace.flows:
                    a = f.args
                    src, dst = a[SOURCE_BINDING] if a and SOURCE_BINDING in a \
                        else (f.src, f.dst)
                    source_preds.setdefault(dst, []).append(src)
        return cls(ordered, start, end, has_graph, preds, skipped, fake, lane_of, lane_counts,
                   untrusted=untrusted, source_preds=source_preds,
                   fake_in_graph=len(fakes) if has_graph else 0)


def source_lanes(trace: Trace) -> bytearray:
    """1 at the index of every lane read from the source (not derived), else 0."""
    ok = bytearray(len(trace.tracks))
    for t in trace.tracks:
        if t.kind == LANE and not t.derived:
            ok[t.index] = 1
    return ok


def _lanes_in_order(trace: Trace) -> list[int]:
    return [i for i, _ in trace.walk() if trace.tracks[i].kind == LANE]


def _overlap_owners(trace: Trace) -> dict[int, int]:
    """Overlap lanes (made by ``split_overlaps``) -> the lane they were split from: the
    nearest earlier sibling with the same name that is not an overlap lane itself."""
    owners: dict[int, int] = {}
    tracks = trace.tracks
    parents = {t.parent for t in tracks if t.kind == LANE
               and t.description.startswith("overlap lane")}
    for parent in parents:
        last: dict[str, int] = {}
        for c in trace.children(parent):
            t = tracks[c]
            if t.kind != LANE:
                continue
            if t.description.startswith("overlap lane") and t.name in last:
                owners[c] = last[t.name]
            else:
                last[t.name] = c
    return owners
