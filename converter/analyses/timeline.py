"""What the analyses share: which lanes are timelines, the run window, the task graph.

Computed once per trace (``Timeline.build``) and used by bubbles, counters, the critical path
and the PyPTO check, so every figure is made from the same lanes, the same run start and the
same dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, count, repeat
from operator import attrgetter, eq
from typing import Any

from ..model import (INVENTED_TIMES, LANE, MARKER, NO_BUBBLES, PICKUP, RESOURCES, TASK_GRAPH,
                     UNTRUSTED_FLOW, Trace, task_arg)
from .. import slice_columns
from . import lane_columns

_COLUMNS_FROM = 256     # slices of a lane from which numpy orders them

_CAT, _ENDS = attrgetter("cat"), attrgetter("src", "dst")


def _end(s) -> int:
    return s.ts + s.dur


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
    # The starts and ends of ``slices`` (int64 arrays, in that order) where numpy ordered
    # them (``lane_columns.lane_order``), else None; the bubbles take them from here.
    times: Any = field(default=None, compare=False, repr=False)


class LaneIndex(Mapping):
    """Slice -> the index of its lane in ``lanes`` (the timeline's), for every slice of
    them, made at its first use: a run without a task graph may never read it (a 1 M-task
    database: 2 M slices, 0.1-0.2 s to make)."""

    __slots__ = ("_lanes", "_made")

    def __init__(self, lanes: list[Lane]) -> None:
        self._lanes: list[list[int]] | None = [list(lane.slices) for lane in lanes]
        self._made: dict[int, int] | None = None

    def made(self) -> dict[int, int]:
        """The mapping as a dict (made now if need be)."""
        if self._made is None:
            made: dict[int, int] = {}
            for k, ids in enumerate(self._lanes):
                made.update(dict.fromkeys(ids, k))
            self._made, self._lanes = made, None
        return self._made

    def __getitem__(self, i: int) -> int:
        return self.made()[i]

    def __contains__(self, i: object) -> bool:
        return i in self.made()

    def get(self, i: int, default: Any = None) -> Any:
        return self.made().get(i, default)

    def __iter__(self) -> Iterator[int]:
        return iter(self.made())

    def __len__(self) -> int:
        return len(self.made())


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
    lane_of: Mapping[int, int] = field(default_factory=dict)  # slice -> index in lanes
    lane_counts: dict[str, int] = field(default_factory=dict)  # kind -> lanes, idle included
    # Tasks of several slices (TASK_ID: MIX rows, SPMD blocks): slice -> the task's last-ending
    # slice on the analysed lanes (its *node*: the task's end); slices of one-slice tasks and
    # runs without TASK_ID are absent (their own node).  ``node_first``: node -> the task's
    # first-starting slice (absent: the node itself).
    node_of: dict[int, int] = field(default_factory=dict)
    node_first: dict[int, int] = field(default_factory=dict)
    has_pickup: bool = False      # some analysed slice says when it was dispatched (PICKUP)
    untrusted: set[int] = field(default_factory=set)   # slices an untrusted flow goes into
    fake_in_graph: int = 0        # slices with invented times that a flow starts or ends at

    def node(self, i: int) -> int:
        return self.node_of.get(i, i)

    def members(self) -> dict[int, list[int]]:
        """node -> every slice of its task (tasks of several slices only)."""
        out: dict[int, list[int]] = {}
        for i, n in self.node_of.items():
            out.setdefault(n, []).append(i)
        return out

    @property
    def makespan(self) -> int:
        return 0 if self.start is None else self.end - self.start

    @classmethod
    def build(cls, trace: Trace) -> "Timeline":
        extra = trace.meta.extra
        skipped = str(extra[NO_BUBBLES]) if extra.get(NO_BUBBLES) else None
        tracks = trace.tracks
        slices = trace.slices
        cols = slice_columns.kept_columns(slices, make=False)    # (the conversion's, if made)
        by_track = slice_columns.by_track(cols.track) if cols is not None \
            else trace.slices_by_track()
        main_of = _overlap_owners(trace)
        lanes: dict[int, Lane] = {}
        fake = 0
        lane_counts: dict[str, int] = {}
        ok = source_lanes(trace)    # (an overlap lane has its main lane's name and parent)
        # the slices with invented times (PyPTO's fake tasks): most runs have none (one pass
        # over the categories tells), and their lanes are then taken whole
        invented = set(compress(count(), map(eq, map(_CAT, slices), repeat(INVENTED_TIMES)))) \
            if INVENTED_TIMES in set(map(_CAT, slices)) else set()
        for t in _lanes_in_order(trace):
            if not ok[t]:
                continue
            track = tracks[t]
            main = main_of.get(t, t)
            ids = by_track.get(t)
            if not ids:
                if main == t:       # an idle lane (PyPTO SIM lists every core) still counts
                    parent = track.parent
                    kind = lane_kind(track.name, tracks[parent].name if parent is not None
                                     else "")
                    lane_counts[kind] = lane_counts.get(kind, 0) + 1
                continue
            real = [i for i in ids if i not in invented] if invented else ids
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
        for lane in ordered:
            nested = tracks[lane.track].nesting or len(lane.tracks) > 1
            got = lane_columns.lane_order(slices, lane.slices, nested, cols) \
                if len(lane.slices) >= _COLUMNS_FROM else None
            if got is not None:
                lane.slices, lane.virtual, first, last, lane.times = got
            else:
                lane.virtual = all(slices[i].cat == MARKER for i in lane.slices)
                if nested:
                    lane.slices.sort(key=lambda i: (slices[i].ts, -slices[i].dur))
                else:             # back-to-back work: no two slices start together
                    lane.slices.sort(key=lambda i: slices[i].ts)
                first = slices[lane.slices[0]].ts
                last = max(map(_end, map(slices.__getitem__, lane.slices)))
            start = first if start is None or first < start else start
            end = last if end is None or last > end else end
        preds: dict[int, list[int]] = {}
        tasks = _tasks(trace, ordered)
        # A graph of tasks with ids (TASK_ID) holds every task, with or without edges (a
        # run of independent tasks: each is ready from the run start).
        has_graph = extra.get(TASK_GRAPH) is True and (bool(trace.flows) or tasks is not None)
        lane_of = LaneIndex(ordered)
        if has_graph:
            lane_of = lane_of.made()    # (read per flow and per edge: a dict)
        node_of: dict[int, int] = {}
        node_first: dict[int, int] = {}
        if tasks is not None:
            node_of, node_first = _nodes(slices, tasks[1])
        has_pickup = any(PICKUP in slices[i].all_args for lane in ordered
                         for i in lane.slices[:1])
        untrusted: set[int] = set()
        fakes: set[int] | tuple = ()
        if has_graph and tasks is not None:
            preds = _task_preds(trace, lane_of, tasks[0], tasks[1], node_of, untrusted)
            for lane in ordered:  # every task is a node, with or without flows
                lane.graph = True
        elif has_graph:
            for f in trace.flows:
                if f.name == UNTRUSTED_FLOW:
                    untrusted.add(f.dst)
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
            if fake:                    # the slices with invented times a flow touches
                fakes = invented.intersection(chain.from_iterable(
                    map(_ENDS, trace.flows)))
        return cls(ordered, start, end, has_graph, preds, skipped, lane_of, lane_counts,
                   node_of=node_of, node_first=node_first, has_pickup=has_pickup,
                   untrusted=untrusted, fake_in_graph=len(fakes))


def task_count(trace: Trace, timeline: Timeline | None = None) -> int:
    """The run's tasks: the reader's count (``meta.extra["tasks"]``), else every slice, or
    where the reader declares its resources, the tasks on those lanes (slices of one task
    count once; ``timeline``: the run's, if built)."""
    extra = trace.meta.extra
    if "tasks" in extra:
        return extra["tasks"]
    if RESOURCES not in extra:
        return len(trace.slices)
    tl = timeline or Timeline.build(trace)
    return len({tl.node(i) for lane in tl.lanes for i in lane.slices})


def _tasks(trace: Trace, lanes: list[Lane]
           ) -> tuple[dict[int, object], dict[object, list[int]]] | None:
    """With the declared task arg (``model.task_arg``: TASK_ID) on the analysed slices:
    (slice -> task, task -> its analysed slices); None when the reader declares none or no
    analysed slice has one (PyPTO, msprof, NCU: every slice its own task)."""
    slices = trace.slices
    key_arg = task_arg(trace)
    if key_arg is None or not any(key_arg in slices[lane.slices[0]].all_args
                                  for lane in lanes):
        return None
    task_of: dict[int, object] = {}
    members: dict[object, list[int]] = {}
    for lane in lanes:
        for i in lane.slices:
            key = slices[i].arg(key_arg)
            if key is None:
                continue
            task_of[i] = key
            lst = members.get(key)
            if lst is None:
                members[key] = [i]
            else:
                lst.append(i)
    if not task_of:
        return None
    return task_of, members


def _nodes(slices, members: dict[object, list[int]]) -> tuple[dict[int, int], dict[int, int]]:
    node_of: dict[int, int] = {}
    node_first: dict[int, int] = {}
    for ids in members.values():
        if len(ids) < 2:
            continue
        node = max(ids, key=lambda i: (slices[i].ts + slices[i].dur, slices[i].ts, -i))
        for i in ids:
            node_of[i] = node
        node_first[node] = min(ids, key=lambda i: (slices[i].ts, i))
    return node_of, node_first


def _task_preds(trace: Trace, lane_of: dict[int, int], task_of: dict[int, object],
                members: dict[object, list[int]], node_of: dict[int, int],
                untrusted: set[int]) -> dict[int, list[int]]:
    """Predecessors per slice when slices of one task share the declared task arg
    (``model.task_arg``): a flow into any slice of a task is a dependency of every slice of
    it, on the predecessor task's node (its last-ending analysed slice; a task without
    analysed slices, such as a dummy task's marker, is its flow's source slice)."""
    slices = trace.slices
    key_arg = task_arg(trace)
    by_task: dict[object, list[int]] = {}      # task -> predecessor nodes, in flow order
    loose: dict[int, list[int]] = {}           # a destination outside the analysed lanes
    seen: set[tuple[object, int]] = set()
    for f in trace.flows:
        if f.name == UNTRUSTED_FLOW:
            untrusted.add(f.dst)
            continue
        src = f.src
        key = task_of.get(src)
        if key is None:
            key = slices[src].arg(key_arg) if src not in lane_of else None
            if key is not None and key in members:
                src = members[key][0]
        p = node_of.get(src, src)
        dkey = task_of.get(f.dst)
        if dkey is None:
            dkey = slices[f.dst].arg(key_arg)
            if dkey is None or dkey not in members:
                loose.setdefault(f.dst, []).append(p)
                continue
        if (dkey, p) in seen:
            continue
        seen.add((dkey, p))
        by_task.setdefault(dkey, []).append(p)
    preds: dict[int, list[int]] = dict(loose)
    for key, plist in by_task.items():
        for i in members[key]:
            preds[i] = plist
    return preds


def source_lanes(trace: Trace) -> bytearray:
    """1 at the index of every lane read from the source (not derived) and, when the reader
    declares its resources (RESOURCES), of one of those kinds; else 0."""
    ok = bytearray(len(trace.tracks))
    resources = trace.meta.extra.get(RESOURCES)
    resources = None if resources is None else set(resources)
    tracks = trace.tracks
    for t in tracks:
        if t.kind == LANE and not t.derived:
            if resources is not None and lane_kind(
                    t.name, tracks[t.parent].name if t.parent is not None else "") \
                    not in resources:
                continue
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
