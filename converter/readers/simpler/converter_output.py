"""simpler's own ``swimlane_converter`` output (``merged_swimlane*.json``: the runtime's
Chrome trace of one run, format reference section 5), read as drawn: every slice, every
counter sample and every flow, in both layouts the converter has written:

* older (up to simpler #1004, merged 2026-06-22): processes "AICore View" (pid 1, kernel
  start -> end per AICore row), "AICPU View" (pid 2, dispatch -> finish, an overlapping row on
  tid + 1), "AICPU Scheduler" (pid 3, ``Sched_N`` = 3000 + N) and "AICPU Orchestrator" (pid 4,
  ``Orch_N`` = 4000 + N);
* current: "Worker View" (pid 4), "Scheduler View" (3), "AICPU Scheduler" (2), "AICPU
  Orchestrator" / "Host Orchestrator" (1, with a first name "Host Prepare"), "Graph
  Execution" (5).

Flows are Chrome v1 ``s``/``f`` pairs of one ``id``; every end is placed on its own thread, a
start inside its source (the converter puts it 0.01 us before the source's end, or at a
dispatch inside a scheduler phase), an ``f`` with ``bp: "e"`` inside its destination (at its
start).  Each end is bound to the slice on its thread that contains its time: the slice whose
``id`` the event's ``bind_id`` names where it is one of them, else the innermost; an ``f``
without ``bp: "e"`` binds to the next slice starting on its thread (Chrome's rule).

The file is a drawing of ``chip_swimlane_records.json``: times are the converter's
microseconds (rebased to the run's first record), names its labels, and it carries no
dispatch/finish pairs, functions or task graph the analyses could join on.  Where the records
file is at hand it is the better source (the reader reads it instead); this module reads a
drawing handed over alone, and the summary says the records give the full analysis.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import load_json_records
from ...model import GROUP, LANE, MAX_NS, SAME_WORK, Clock, RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from .build import TOOL, device_name, platform_of
from .files import CONVERTER_EXTRA as EXTRA, FULL_ANALYSIS

CONVERTER = "swimlane_converter"
# The worker process of each layout: one slice per AICore row, args.taskId its task.
WORKER = {"older": "AICore View", "current": "Worker View"}
LAYOUTS = {"older": "(older layout, before 2026-06-22: AICore View, AICPU View)",
           "current": "(current layout, since 2026-06-22: Worker View, Scheduler View)",
           "unknown": "(layout not recognised: neither AICore View nor Worker View)"}
CONVERTER_US = Clock("simpler-converter-us", "us", Fraction(1000),
                     "microseconds as simpler's swimlane_converter writes them (rebased to the "
                     "run's first record), rounded to the ns")
_NUMBER = (int, float)


def layout_of(process_names: set[str]) -> str:
    if "AICore View" in process_names:
        return "older"
    if "Worker View" in process_names:
        return "current"
    return "unknown"


def _ns(v: Any) -> int | None:
    """Microseconds -> ns, or None where it is no time the converter writes."""
    if v.__class__ not in _NUMBER:
        return None
    ns = round(v * 1000)
    return ns if 0 <= ns < MAX_NS else None


class _Lanes:
    """Processes -> groups, threads -> lanes, in the converter's display order (sort index,
    then pid / tid), made on first use."""

    def __init__(self, trace: Trace, root: int, path: Path):
        self.trace = trace
        self.root = root
        self.path = path
        self.process_names: dict[Any, str] = {}
        self.process_order: dict[Any, Any] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.thread_order: dict[tuple[Any, Any], Any] = {}
        self.groups: dict[Any, int] = {}
        self.lanes: dict[tuple[Any, Any], int] = {}

    def metadata(self, e: dict) -> bool:
        name, args = e.get("name"), e.get("args")
        value = args.get("name") if type(args) is dict else None
        sort = args.get("sort_index") if type(args) is dict else None
        pid, tid = e.get("pid"), e.get("tid")
        if name == "process_name" and value is not None:
            self.process_names[pid] = str(value)    # a second name wins, as in Perfetto
        elif name == "thread_name" and value is not None:
            self.thread_names[(pid, tid)] = str(value)
        elif name == "process_sort_index" and sort.__class__ in _NUMBER:
            self.process_order[pid] = sort
        elif name == "thread_sort_index" and sort.__class__ in _NUMBER:
            self.thread_order[(pid, tid)] = sort
        else:
            return False
        return True

    def group(self, pid: Any) -> int:
        g = self.groups.get(pid)
        if g is None:
            title = self.process_names.get(pid) or f"Process {pid}"
            g = self.groups[pid] = self.trace.add_track(
                title, self.root, GROUP, 0, f"process {pid} of {self.path.name}")
        return g

    def lane(self, pid: Any, tid: Any) -> int:
        lane = self.lanes.get((pid, tid))
        if lane is None:
            name = self.thread_names.get((pid, tid)) or f"Thread {tid}"
            lane = self.lanes[(pid, tid)] = self.trace.add_track(
                name, self.group(pid), LANE, 0, f"thread {tid} of process {pid}")
        return lane

    def order(self) -> None:
        """Sibling order: processes by (sort index, pid), lanes by (sort index, tid), then
        the counters of the process in order of appearance."""
        tracks = self.trace.tracks

        def key(order: dict, k: Any, ident: Any) -> tuple:
            return (order.get(k, ident if ident.__class__ in _NUMBER else 0),
                    ident if ident.__class__ in _NUMBER else 0, str(ident))
        for rank, pid in enumerate(sorted(self.groups,
                                          key=lambda p: key(self.process_order, p, p))):
            tracks[self.groups[pid]].order = rank
        by_group: dict[int, list[tuple[Any, Any]]] = {}
        for pt in self.lanes:
            by_group.setdefault(self.groups[pt[0]], []).append(pt)
        for g, threads in by_group.items():
            threads.sort(key=lambda pt: key(self.thread_order, pt, pt[1]))
            for rank, pt in enumerate(threads):
                tracks[self.lanes[pt]].order = rank
            n = len(threads)
            for c in tracks[g].children:
                if tracks[c].kind != LANE:
                    tracks[c].order = n
                    n += 1


class _Thread:
    """One thread's slices, sorted by start, for binding flow ends."""

    __slots__ = ("starts", "ends", "ids", "reach")

    def __init__(self, items: list[tuple[int, int, int]]):
        items.sort()
        self.starts = [s for s, _, _ in items]
        self.ends = [e for _, e, _ in items]
        self.ids = [i for _, _, i in items]
        reach, top = [], -1
        for e in self.ends:             # the latest end so far: where the backward scan stops
            top = max(top, e)
            reach.append(top)
        self.reach = reach

    def containing(self, t: int) -> list[int]:
        """Positions of the slices with start <= t <= end."""
        out = []
        k = bisect_right(self.starts, t) - 1
        while k >= 0 and self.reach[k] >= t:
            if self.ends[k] >= t:
                out.append(k)
            k -= 1
        return out

    def bind(self, t: int, flow_start: bool, enclosing: bool, bound_id: Any,
             x_ids: dict[Any, int]) -> int | None:
        """The slice a flow end at ``t`` binds to: the enclosing one (``enclosing``), else the
        next one starting at or after ``t``.  Among enclosing slices: the one ``bound_id``
        names, else those the point lies properly in (a flow start: after the slice's start;
        a flow end: before the slice's end), innermost (latest start, then earliest end)
        first."""
        if not enclosing:
            k = bisect_left(self.starts, t)
            return self.ids[k] if k < len(self.ids) else None
        found = self.containing(t)
        if not found:
            return None
        if bound_id is not None:
            named = x_ids.get(bound_id)
            for k in found:
                if self.ids[k] == named:
                    return named
        starts, ends = self.starts, self.ends

        def rank(k: int) -> tuple:
            proper = starts[k] < t if flow_start else t < ends[k]
            return (not proper, -starts[k], ends[k])
        return self.ids[min(found, key=rank)]


def read_converter_output(source: Source, options: ReadOptions) -> Trace:
    path = source.files["converter_output"]
    meta = RunMeta(source.name, "simpler", tool=f"{TOOL} {CONVERTER}", clock=CONVERTER_US,
                   source_files=[str(path)])
    trace = Trace(meta)
    options.report(f"reading {path.name}", 0, 1)
    doc, cut = load_json_records(path, depths=(1, 2))
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
    elif isinstance(doc, list):
        events = doc
    else:
        raise InputError(path, "not a Chrome trace (no 'traceEvents' list)")
    if cut is not None:
        trace.warn(f"{path}: {cut.describe(f'{len(events):,} events')}")
    meta.device = device_name(platform_of(path), None)
    root = trace.add_track(meta.device, None, GROUP, 0, f"{CONVERTER} output {path.name}")
    lanes = _Lanes(trace, root, path)
    skipped: dict[str, int] = {}

    def skip(what: str) -> None:
        skipped[what] = skipped.get(what, 0) + 1

    for e in events:
        if type(e) is dict and e.get("ph") == "M" and not lanes.metadata(e):
            skip("metadata other than process/thread names and sort indexes")
    layout = layout_of(set(lanes.process_names.values()))
    meta.tool_version = LAYOUTS[layout]
    x_ids: dict[Any, int] = {}                  # X event id -> slice
    per_thread: dict[tuple[Any, Any], list[tuple[int, int, int]]] = {}
    flow_events: list[dict] = []
    series: dict[tuple[Any, str], Any] = {}
    counts = {"X": 0, "s": 0, "f": 0, "C": 0}
    for e in events:
        if type(e) is not dict:
            skip("not an object")
            continue
        ph = e.get("ph")
        try:
            if ph == "X":
                ts, dur = _ns(e.get("ts")), e.get("dur", 0)
                end = _ns(e["ts"] + dur) if ts is not None and dur.__class__ in _NUMBER \
                    else None
                if ts is None or end is None or end < ts:
                    skip("'X' event without a time the converter writes (ts >= 0, dur >= 0)")
                    continue
                pt = (e.get("pid"), e.get("tid"))
                args = e.get("args")
                args = (args or None) if type(args) is dict else \
                    (None if args is None else {"args": args})
                i = trace.add_slice(lanes.lane(*pt), ts, end - ts, str(e.get("name", "")),
                                    str(e.get("cat", "")), args)
                counts["X"] += 1
                per_thread.setdefault(pt, []).append((ts, end, i))
                if "id" in e:
                    x_ids.setdefault(e["id"], i)
            elif ph in ("s", "f"):
                counts[ph] += 1
                flow_events.append(e)
            elif ph == "C":
                ts = _ns(e.get("ts"))
                values = e.get("args")
                if ts is None or type(values) is not dict:
                    skip("malformed 'C' event")
                    continue
                counts["C"] += 1
                numeric = [(k, v) for k, v in values.items()
                           if v.__class__ in _NUMBER and -(1 << 63) <= v < 1 << 63]
                if not numeric:
                    skip("'C' event without a numeric value")
                for k, v in numeric:
                    name = str(e.get("name", ""))
                    name = name if len(numeric) == 1 else f"{name} {k}"
                    c = series.get((e.get("pid"), name))
                    if c is None:
                        c = series[(e.get("pid"), name)] = trace.add_counter(
                            name, lanes.group(e.get("pid")))
                    c.add(ts, v)
            elif ph in ("i", "I"):
                ts = _ns(e.get("ts"))
                if ts is None:
                    skip("malformed 'i' event")
                    continue
                args = e.get("args")
                trace.add_instant(lanes.lane(e.get("pid"), e.get("tid")), ts,
                                  str(e.get("name", "")), str(e.get("cat", "")),
                                  args if type(args) is dict and args else None)
            elif ph != "M":
                skip(f"event phase {ph!r} (the converter writes M, X, C, s and f)")
        except TypeError:                       # an unhashable pid / tid / id
            skip(f"malformed {ph!r} event")
    threads = {pt: _Thread(items) for pt, items in per_thread.items()}
    dropped = _bind_flows(trace, flow_events, threads, x_ids, skip)
    lanes.order()
    worker = WORKER.get(layout)
    tasks = {s.args["taskId"] for s in trace.slices
             if s.args and type(s.args.get("taskId")) is int
             and trace.tracks[trace.tracks[s.track].parent].name == worker}
    meta.extra["tasks"] = len(tasks) if tasks else len(trace.slices)
    # One task in several views: its AICore / Worker rows and its AICPU / Scheduler row carry
    # its id as taskId, its submit in the orchestrator view as task_id.
    meta.extra[SAME_WORK] = {"args": [["taskId", "task_id"]]}
    meta.extra[EXTRA] = {"layout": layout, "processes": sorted(set(lanes.process_names.values())),
                         "events": counts, "flows_dropped": sum(dropped.values())}
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
        meta.extra[EXTRA]["metadata"] = doc["metadata"]
    if dropped:
        by_name = ", ".join(f"{n or 'unnamed'} {k}" for n, k in sorted(dropped.items()))
        trace.warn(f"{path}: {sum(dropped.values())} of {counts['s']} flows have an end "
                   f"outside every slice of its thread, or no other end ({by_name}): dropped")
    for what, n in skipped.items():
        trace.warn(f"{path}: {n} events skipped: {what}")
    trace.warn(f"{path}: {FULL_ANALYSIS} (bubbles, critical path, scheduler overhead, the "
               "runtime tools' own figures); this one is read as drawn (its lanes repeat each "
               "row in several views; no functions, dispatch/finish pairs or task graph to "
               "join on)")
    split_overlaps(trace)
    options.report(f"reading {path.name}", 1, 1)
    return trace


def _bind_flows(trace: Trace, events: list[dict], threads: dict, x_ids: dict,
                skip) -> dict[str, int]:
    """Flows from ``s``/``f`` pairs of one (cat, id), each end bound on its own thread;
    returns the flows dropped per name (an end outside every slice, or a pair without its
    other end)."""
    open_: dict[tuple[Any, Any], tuple[int, dict]] = {}
    dropped: dict[str, int] = {}

    def drop(e: dict) -> None:
        name = str(e.get("name", ""))
        dropped[name] = dropped.get(name, 0) + 1
    for e in events:
        try:
            key = (e.get("cat"), e["id"])
            t = _ns(e.get("ts"))
            th = threads.get((e.get("pid"), e.get("tid")))
        except (KeyError, TypeError):
            skip(f"malformed {e.get('ph')!r} event (no id, or an unhashable one)")
            continue
        start = e.get("ph") == "s"
        bound = None
        if th is not None and t is not None:
            bound = th.bind(t, start, start or e.get("bp") == "e", e.get("bind_id"), x_ids)
        if start:
            if key in open_:
                drop(open_[key][1])             # a start without its end
            open_[key] = (bound, e)
            continue
        begun = open_.pop(key, None)
        if begun is None or begun[0] is None or bound is None:
            drop(e)
            continue
        args = {**(begun[1].get("args") or {}), **(e.get("args") or {})} \
            if type(begun[1].get("args") or {}) is dict and type(e.get("args") or {}) is dict \
            else None
        trace.add_flow(begun[0], bound, str(e.get("name", begun[1].get("name", ""))),
                       args or None)
    for _, e in open_.values():
        drop(e)
    return dropped
