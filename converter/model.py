"""The intermediate model every reader produces and every writer consumes.

Times are integer nanoseconds in the run's clock domain (``Clock``); a reader converts its
source units once, exactly, when it builds the model.  Tracks form a tree (device/process ->
group -> lane) with explicit sibling order.  Slices, instants, counter samples and flows refer
to tracks and slices by index, so the model is plain data that writers walk without knowing
where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterator

import msgspec

from .arg_rows import as_dict

# Track kinds.
GROUP = "group"      # holds other tracks (a device, a process, a core group)
LANE = "lane"        # holds slices and instants
COUNTER = "counter"  # holds counter samples

# Integer limits (the only definitions: everything else imports them from here).
INT64_MIN = -(1 << 63)   # the smallest int64
INT64_END = 1 << 63      # ints in [INT64_MIN, INT64_END) fit int64
UINT64_END = 1 << 64     # ints in [0, UINT64_END) fit uint64
MAX_NS = 1 << 62         # readers' sanity bound on times, so ts + dur fits int64 (msprof keeps
                         # times up to int64: see its timefmt)

# meta.extra[LABEL_ARGS]: the slice args that label slices, as the reader declares them:
# {table key: arg name}, e.g. {"semantic_label": "semanticLabel"}.  The "time by label"
# analysis makes one table per entry (in this order, titled after the key: "semantic label")
# from the arg's value in a slice's own or shared args; the arg of key SEMANTIC_LABEL also
# labels the top tasks and the operand shapes of a summary.  Writers leave it out of traces:
# it says how to read the model, it is not a fact about the run.
LABEL_ARGS = "label_args"
# meta.extra[ARG_LINES]: {line name: [arg names]}, args that a .pftrace writes as one line of
# text under the line's name ("name=value name=value", in this order, at the place of the
# first) instead of one arg each, where a slice's shared args hold them (its own args, an
# instant's, stay as they are: the line is made once per shared dict): Trace Processor pays
# for every arg of every slice when it opens a trace, and a call's facts (PyPTO: its label,
# three hashes and execution statistics) read as well on one line.  The model, the analyses
# and the Chrome JSON keep them apart.  Writers leave the declaration out of traces.
ARG_LINES = "arg_lines"
# meta.extra[SAME_WORK]: {"args": [arg names], "flows": [flow names]}, as the reader declares
# them (an entry of "args" may be a list of names that carry one id: one value across them):
# slices with one value of such an arg (own or shared), or joined by a flow of such a
# name, are one piece of work shown in several places (simpler's task in its Worker, Scheduler
# and orchestrator views; msprof's host launch and the device task it launched).  Slices
# of one task (``SAME_TASK``) are one piece of work whatever is declared.  The .pftrace
# gives each such set on two or more tracks one correlation_id (``same_work.work_ids``).
SAME_WORK = "same_work"
# meta.extra[COPIES]: {copy: [originals]}, slice indexes: a slice an analysis draws again on a
# derived track (the critical-path lane's tasks, ``analyses.derived``) -> every slice of the
# run's own that it copies (all slices of the task).  Written by the analysis that makes the
# copy, never guessed from names or times: a copy is the same piece of work as its originals
# (``same_work.work_ids``: one correlation_id).  Only copies are listed (a critical-path
# "wait schedule" or a bubble copies nothing).
COPIES = "copies"
# meta.extra[SOURCE_IDLE]: [{"lane": L, "lanes": [l, ...]}], as the reader declares them: the
# slices of lane L are the source tool's own idle intervals of the lanes l (msprof's overlap
# analysis "Free" of a device's streams), which the summary compares with tracecvt's idle time
# of the same lanes (``analyses.source_idle``).
SOURCE_IDLE = "source_idle"
# The meta.extra keys that say how to read the model, not facts about the run: writers leave
# them out of traces.
READING_KEYS = frozenset({LABEL_ARGS, ARG_LINES, SAME_WORK, SOURCE_IDLE, COPIES})
# meta.extra[TASK_GRAPH] is True when the run's flows are its task graph (a task waits for
# every predecessor: PyPTO), so bubbles are classified by cause and the critical path
# follows the flows.
TASK_GRAPH = "task_graph"
SEMANTIC_LABEL = "semantic_label"
# Slice categories the analyses read: INVENTED_TIMES, a slice whose times the source made up
# (PyPTO's fake tasks: drawn, but no wait or busy time is measured from them); MARKER, a
# marker task on a pseudo-core that is no resource (PyPTO's 1-cycle HUB tasks: its lanes stay
# out of run totals, and its tasks out of ready counts and the critical path's lane order);
# KERNEL, a device kernel (Nsight Compute, msprof): the summaries' "kernel" time table.
INVENTED_TIMES = "fake"
MARKER = "hub"
KERNEL = "kernel"
# Slice args (own or shared) of these keys, where a reader records a call's operands: a list
# of operand dicts with "dtype" and "shape" (more keys allowed); the summaries show them per
# semantic label.
INPUTS, OUTPUTS = "inputs", "outputs"
# meta.extra[NO_BUBBLES]: the reader's reason why the run's lanes give no bubble figures (they
# are not a timeline, or have no idle time by construction); bubbles, utilization and the
# critical path are then not computed, and the summaries give the reason.
NO_BUBBLES = "no_bubbles"
# meta.extra[RESOURCES]: the lane kinds (``analyses.timeline.lane_kind``: a lane's name without
# its number, "AIC_3" -> "AIC") that are execution resources (cores, streams, queues).  Only
# those lanes get bubbles, utilization and a place on the critical path; other lanes (host
# threads, a scheduler's own loop) are drawn but not analysed.  Absent: every lane is one.
RESOURCES = "resources"
# Slice args (own or shared) the analyses read where a reader has them.  TASK_ID: the task a
# slice runs, where the reader declares it (meta.extra[SAME_TASK] = TASK_ID); slices with
# equal TASK_ID are one task (a MIX task's AIC and AIV rows, an SPMD kernel's blocks): the
# task graph, ready times, the critical path and the correlation ids join them.  An arg of
# that name from a reader that declares nothing is the source's own and joins nothing
# (msprof's "task_id" is a per-stream counter: every stream has a task 3).  PICKUP: ns from
# the task's dispatch to this slice's start (dispatched, not yet running); COMPLETION: ns
# from its end until the dispatcher saw it finish.
TASK_ID = "task_id"
SAME_TASK = "same_task"
PICKUP, COMPLETION = "pickup_ns", "completion_ns"
# Flow.name UNTRUSTED_FLOW: a dependency the reader keeps as its source drew it but cannot
# vouch for (bound to the wrong execution by the source's own quirk, or ending after its
# destination starts); its args say why.  Writers draw it under that name where they can; the
# analyses never follow it (no ready time, no critical-path step, no graph bound).
UNTRUSTED_FLOW = "untrusted dependency"
# Slice args[UNTRUSTED_PREDECESSORS]: the names of the predecessors whose dependencies on the
# slice are UNTRUSTED_FLOW (", "-joined), set by the reader that marks them: the writers that
# cannot draw such a flow, and the analyses that do not follow it, point there.
UNTRUSTED_PREDECESSORS = "untrustedPredecessors"
# Flow args[SOURCE_BINDING]: [src, dst] slice indexes where the source tool itself bound a
# dependency the reader re-bound to the executions it belongs to; checks that recompute the
# tool's own figures use that binding.  Writers leave it out of traces.
SOURCE_BINDING = "source_binding"

# RunMeta.extra[CLOCK_SKEW]: where a reader found successors starting before the predecessor
# that caused them across two clocks (a device task before the host call that launched it):
# one dict per device, {"device": number or None, "rank": number (where the run has ranks),
# "clock_skew_us": the largest such lead (the clocks differ by at least this much),
# "tasks_before_launch": how many, "dependencies": of how many host -> device dependencies}.
# Times stay as recorded; writers name the figure where they cannot draw such a dependency.
CLOCK_SKEW = "clock_skew"


def clock_skew_text(entry: dict) -> str:
    """One ``CLOCK_SKEW`` entry in words: "host and device clocks differ by at least
    12.214 µs on NPU 0 (5 of 11 device tasks start before the host call that launched them)"."""
    dev = entry.get("device")
    where = [f"rank {entry['rank']}"] if entry.get("rank") is not None else []
    if dev is not None or not where:
        where.append("NPU" if dev is None else f"NPU {dev}")
    return (f"host and device clocks differ by at least {entry['clock_skew_us']:g} µs on "
            f"{' '.join(where)} ({entry['tasks_before_launch']} of {entry['dependencies']} "
            "device tasks start before the host call that launched them)")

# Between the parts of a name made of others: "AIC_3 · bubbles", "Python · Thread 7".
SEP = " · "


@dataclass(frozen=True)
class Clock:
    """A clock domain: what the source counted in and how that maps to nanoseconds."""

    name: str                      # e.g. "pypto-sim-cycles", "npu-syscnt", "epoch-us"
    unit: str                      # the source's unit: "cycle", "tick", "us", "ns"
    ns_per_unit: Fraction          # exact factor source unit -> ns
    description: str = ""

    def to_ns(self, value: int) -> int:
        """Exact conversion of an integer source value, rounded half away from zero."""
        num = value * self.ns_per_unit.numerator
        den = self.ns_per_unit.denominator
        if den == 1:
            return num
        q, r = divmod(num, den)
        return q + 1 if 2 * r >= den else q

    def typed(self) -> dict[str, Any]:
        """The clock for machine-readable output: nanoseconds per unit as a JSON number,
        and exactly as the integers of the fraction it is (e.g. 5/9 ns per cycle of a
        1.8 GHz clock)."""
        ratio = Fraction(self.ns_per_unit)
        return {"name": self.name, "unit": self.unit,
                "ns_per_unit": int(ratio) if ratio.denominator == 1 else float(ratio),
                "ns_per_unit_numerator": ratio.numerator,
                "ns_per_unit_denominator": ratio.denominator}


NS = Clock("ns", "ns", Fraction(1))


class Track:
    """A node of the track tree.  ``order`` ranks it among its siblings (lower first)."""

    __slots__ = ("index", "name", "kind", "parent", "order", "description", "unit",
                 "nesting", "derived", "children")

    def __init__(self, index: int, name: str, kind: str, parent: int | None, order: int,
                 description: str = "", unit: str = "", nesting: bool = True,
                 derived: bool = False):
        self.index = index
        self.name = name
        self.kind = kind
        self.parent = parent
        self.order = order
        self.description = description
        self.unit = unit              # counters: unit name ("tasks", "%", "MHz", "bytes")
        self.nesting = nesting        # lanes: may slices nest (call stacks) or not (task lanes)
        self.derived = derived        # made by an analysis, not read from the source
        self.children: list[int] = []

    def __repr__(self) -> str:
        return f"Track({self.index}, {self.name!r}, {self.kind})"


class Slice(msgspec.Struct, eq=False, gc=False):
    """A timed interval on a lane: ``Slice(track, ts, dur, name, cat="", args=None,
    shared_args=None)``.

    ``args`` maps names to str/int/float/bool, lists or dicts (a dict, or a row of a table
    of args: ``arg_rows.ArgRow``).  ``shared_args`` is an optional
    dict that many slices hold by reference (e.g. everything a task inherits from the call it
    runs); the slice's full args are ``shared_args`` updated with ``args``.  Treat both as
    read-only: writers cache the encoding of a shared dict by identity.

    A plain object with slots, made by msgspec's C constructor (0.1 us a slice against 0.5
    for a Python ``__init__``: a run makes one per task and per bubble, millions in a large
    database); equal only to itself, hashed by identity, as any object (``eq=False``).
    Nothing is checked or converted when one is made.  Not tracked by the garbage
    collector (``gc=False``: 16 bytes less each, and no collection walks them): a slice
    holds its args and names, never anything that holds it back.
    """

    track: int
    ts: int
    dur: int
    name: str
    cat: str = ""
    args: Any = None
    shared_args: Any = None

    @property
    def all_args(self) -> dict[str, Any]:
        args = as_dict(self.args)               # (a row of a table: ``arg_rows``)
        if self.shared_args is None:
            return args or {}
        if not args:
            return self.shared_args
        return {**self.shared_args, **args}

    def arg(self, name: str, default: Any = None) -> Any:
        """One arg's value as ``all_args`` holds it (its own before the shared), or
        ``default``: without making the dict of both."""
        args = self.args
        if args is not None and name in args:
            return args[name]
        shared = self.shared_args
        if shared is not None and name in shared:
            return shared[name]
        return default

    @property
    def end(self) -> int:
        return self.ts + self.dur

    def __repr__(self) -> str:
        return f"Slice({self.name!r}, track={self.track}, ts={self.ts}, dur={self.dur})"


class Instant(msgspec.Struct, eq=False, gc=False):
    """A moment on a lane: ``Instant(track, ts, name, cat="", args=None)`` (made, held and
    compared as a ``Slice`` is)."""

    track: int
    ts: int
    name: str
    cat: str = ""
    args: Any = None


class Counter:
    """Samples of one counter track; a value holds until the next sample.  ``ts`` and
    ``values`` are lists, or ``array("q")`` columns (8 bytes a sample: the analyses' derived
    counters), read alike."""

    __slots__ = ("track", "ts", "values")

    def __init__(self, track: int):
        self.track = track
        self.ts: list[int] = []
        self.values: list[float] = []

    def add(self, ts: int, value: float) -> None:
        self.ts.append(ts)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.ts)


class Flow(msgspec.Struct, eq=False, gc=False):
    """A dependency arrow from the end of slice ``src`` to the start of slice ``dst``:
    ``Flow(src, dst, name="", args=None)`` (made, held and compared as a ``Slice`` is)."""

    src: int
    dst: int
    name: str = ""
    args: Any = None


@dataclass
class RunMeta:
    """What a run is and where it came from."""

    name: str                                  # used for default output names
    format: str                                # reader format name, e.g. "pypto"
    tool: str = ""                             # producing tool, e.g. "PyPTO"
    tool_version: str = ""
    device: str = ""                           # e.g. "Ascend A2/A3 (simulated)"
    clock: Clock = NS
    source_files: list[str] = field(default_factory=list)
    # Facts a summary can use: figures the tool printed itself, configuration, counts.
    extra: dict[str, Any] = field(default_factory=dict)
    # Anything the reader could not convert or found suspicious, one line each.
    warnings: list[str] = field(default_factory=list)
    # The cause of warnings that share one (``Trace.warn``): warning -> one line naming the
    # cause.  The command line prints one line per cause, the warnings in full are in `info`
    # and the summary.  Key UNTRUSTED_FLOW: the cause of the flows the reader marked so, for
    # warnings about them made later (a writer's dependencies not drawn).
    causes: dict[str, str] = field(default_factory=dict)


def warning_groups(warnings: list[str], causes: dict[str, str]) -> list[tuple[str, list[str]]]:
    """``warnings`` grouped by cause (``RunMeta.causes``), in order of first appearance:
    (cause, its warnings); a warning without a cause is a group of its own, keyed by
    itself."""
    groups: dict[str, list[str]] = {}
    for w in warnings:
        groups.setdefault(causes.get(w) or w, []).append(w)
    return list(groups.items())


class Trace:
    """One run in the intermediate model."""

    def __init__(self, meta: RunMeta):
        self.meta = meta
        self.tracks: list[Track] = []
        self.slices: list[Slice] = []
        self.instants: list[Instant] = []
        self.counters: list[Counter] = []
        self.flows: list[Flow] = []
        self._roots: list[int] = []

    # -- building -------------------------------------------------------------------------
    def add_track(self, name: str, parent: int | None = None, kind: str = LANE,
                  order: int | None = None, description: str = "", unit: str = "",
                  nesting: bool = True, derived: bool = False) -> int:
        index = len(self.tracks)
        siblings = self._roots if parent is None else self.tracks[parent].children
        if order is None:
            order = len(siblings)
        self.tracks.append(Track(index, name, kind, parent, order, description, unit,
                                 nesting, derived))
        siblings.append(index)
        return index

    def add_slice(self, track: int, ts: int, dur: int, name: str, cat: str = "",
                  args: dict[str, Any] | None = None,
                  shared_args: dict[str, Any] | None = None) -> int:
        self.slices.append(Slice(track, ts, dur, name, cat, args, shared_args))
        return len(self.slices) - 1

    def add_instant(self, track: int, ts: int, name: str, cat: str = "",
                    args: dict[str, Any] | None = None) -> None:
        self.instants.append(Instant(track, ts, name, cat, args))

    def add_counter(self, name: str, parent: int | None = None, unit: str = "",
                    order: int | None = None, description: str = "",
                    derived: bool = False) -> Counter:
        index = self.add_track(name, parent, COUNTER, order, description, unit,
                               derived=derived)
        counter = Counter(index)
        self.counters.append(counter)
        return counter

    def add_flow(self, src: int, dst: int, name: str = "",
                 args: dict[str, Any] | None = None) -> None:
        self.flows.append(Flow(src, dst, name, args))

    def warn(self, message: str, cause: str | None = None) -> None:
        """Record a warning; ``cause``: one line naming its cause, where several warnings
        of a run can come from one (they are then printed as one line, RunMeta.causes)."""
        self.meta.warnings.append(message)
        if cause:
            self.meta.causes[message] = cause

    # -- reading --------------------------------------------------------------------------
    @property
    def roots(self) -> list[int]:
        return self._roots

    def children(self, track: int | None) -> list[int]:
        """Children of ``track`` (roots for None), in display order."""
        ids = self._roots if track is None else self.tracks[track].children
        return sorted(ids, key=lambda i: self.tracks[i].order)

    def walk(self, root: int | None = None) -> Iterator[tuple[int, int]]:
        """All tracks depth-first in display order, as (track index, depth); with ``root``,
        that track (depth 0) and the tracks below it."""
        stack = [(i, 0) for i in reversed(self.children(None))] if root is None else \
            [(root, 0)]
        while stack:
            index, depth = stack.pop()
            yield index, depth
            stack.extend((c, depth + 1) for c in reversed(self.children(index)))

    def path(self, track: int) -> str:
        names = []
        t: int | None = track
        while t is not None:
            names.append(self.tracks[t].name)
            t = self.tracks[t].parent
        return " / ".join(reversed(names))

    def slices_by_track(self) -> dict[int, list[int]]:
        """Slice indexes per track, in the order the slices were added (a fresh dict of
        fresh lists: callers may sort or consume them)."""
        by_track: dict[int, list[int]] = {}
        get = by_track.get
        for i, s in enumerate(self.slices):
            lst = get(s.track)
            if lst is None:
                by_track[s.track] = [i]
            else:
                lst.append(i)
        return by_track

    def time_start(self, first_slice: int | None = None) -> int | None:
        """The first timestamp over slices, instants and counter samples (None: no event):
        the time 0 of both writers' outputs.  ``first_slice``: the slices' first start
        where the caller knows it (their columns); None: found here."""
        firsts = [min(c.ts) for c in self.counters if c.ts]
        if first_slice is None:
            first_slice = min((s.ts for s in self.slices), default=None)
        firsts += [first_slice, min((i.ts for i in self.instants), default=None)]
        return min((t for t in firsts if t is not None), default=None)

    def time_span(self, slices: tuple[int, int] | None = None) -> tuple[int, int] | None:
        """(first, last) timestamp over slices, instants and counter samples (one pass over
        the slices: faster than ``time_start`` and a second pass for the last).
        ``slices``: the slices' first start and last end, where the caller knows them
        (their columns); None: found here."""
        lo, hi = slices if slices is not None else self._slice_span()
        for i in self.instants:
            lo = i.ts if lo is None or i.ts < lo else lo
            hi = i.ts if hi is None or i.ts > hi else hi
        for c in self.counters:
            if c.ts:
                a, b = min(c.ts), max(c.ts)
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
        return None if lo is None else (lo, hi)

    def _slice_span(self) -> tuple[int | None, int | None]:
        """The slices' first start and last end (None, None: no slice), in one pass."""
        lo = hi = None
        for s in self.slices:
            if lo is None or s.ts < lo:
                lo = s.ts
            e = s.ts + s.dur
            if hi is None or e > hi:
                hi = e
        return lo, hi

    def stats(self) -> dict[str, int]:
        return {
            "tracks": len(self.tracks),
            "lanes": sum(1 for t in self.tracks if t.kind == LANE),
            "slices": len(self.slices),
            "instants": len(self.instants),
            "counter_tracks": len(self.counters),
            "counter_samples": sum(len(c) for c in self.counters),
            "flows": len(self.flows),
        }


_CHECKED_FROM = 32      # slices of a lane from which numpy says whether any moves
_COLUMNS_FROM = 4096    # slices of a trace from which its lanes are taken from columns


def split_overlaps(trace: Trace) -> int:
    """Move slices that would break nesting on their lane onto extra lanes.

    A lane with ``nesting=False`` holds back-to-back work (a core, a stream): any overlap
    goes to an extra lane.  A lane with ``nesting=True`` (a call stack) only loses slices that
    partially overlap an enclosing one.  Extra lanes are siblings named like the lane, placed
    right after it, so nothing is dropped.  Returns the number of slices moved.
    """
    slices = trace.slices
    cols = None
    if len(slices) >= _COLUMNS_FROM:
        from .slice_columns import by_track, kept_columns  # (numpy, for a large trace)
        cols = kept_columns(slices)
    lanes_of = by_track(cols.track) if cols is not None else trace.slices_by_track()
    moved = 0
    for track_id, ids in lanes_of.items():
        track = trace.tracks[track_id]
        if track.kind != LANE:
            continue
        if cols is not None and len(ids) >= _CHECKED_FROM:
            from .overlaps import lane_moves_none
            if lane_moves_none(cols, ids, track.nesting):
                continue    # one after the other, or calls properly nested
        else:
            lane = list(map(slices.__getitem__, ids))
            starts = [s.ts for s in lane]
            if all(map(int.__lt__, starts, starts[1:])) and \
                    all(map(int.__le__, [s.ts + s.dur for s in lane], starts[1:])):
                continue        # one after the other (the usual lane): nothing overlaps
            if len(ids) >= _CHECKED_FROM:
                from .overlaps import moves_none        # (numpy, only where a lane needs it)
                if moves_none(starts, [s.dur for s in lane], track.nesting):
                    continue    # calls properly nested (or a lane walked below)
        ids.sort(key=lambda i: (slices[i].ts, -slices[i].dur))
        lanes: list[tuple[int, list[int]]] = [(track_id, [])]   # (track, open-end stack)
        extra = 0
        for i in ids:
            s = trace.slices[i]
            end = s.ts + s.dur
            for lane_id, stack in lanes:
                while stack and stack[-1] <= s.ts:
                    stack.pop()
                if not stack or (track.nesting and end <= stack[-1]):
                    break
            else:
                extra += 1
                lane_id = trace.add_track(track.name, track.parent, LANE,
                                          track.order, f"overlap lane {extra} of {track.name}",
                                          nesting=track.nesting, derived=track.derived)
                stack = []
                lanes.append((lane_id, stack))
            stack.append(end)
            if lane_id != track_id:
                s.track = lane_id
                if cols is not None:
                    cols.track[i] = lane_id     # (the columns kept stay true)
                moved += 1
        if extra:
            _reorder_after(trace, track_id, [l for l, _ in lanes[1:]])
    return moved


def _reorder_after(trace: Trace, track_id: int, extras: list[int]) -> None:
    """Renumber sibling order so ``extras`` follow ``track_id`` directly."""
    parent = trace.tracks[track_id].parent
    siblings = trace.children(parent)
    siblings = [s for s in siblings if s not in extras]
    pos = siblings.index(track_id) + 1
    siblings[pos:pos] = extras
    for rank, s in enumerate(siblings):
        trace.tracks[s].order = rank


def task_arg(trace: Trace) -> str | None:
    """The arg whose equal values make a run's slices one task (``SAME_TASK``, as its
    reader declares it), or None: then every slice is a task of its own."""
    extra = trace.meta.extra
    name = extra.get(SAME_TASK) if isinstance(extra, dict) else None
    return name if isinstance(name, str) and name else None
