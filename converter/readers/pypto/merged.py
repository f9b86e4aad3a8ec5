"""``merged_swimlane.json``: PyPTO's Chrome trace of tasks, flows and counters (section 5).

The same loader reads ``machine_runtime_operator_trace*.json`` and the AICPU process that
``machine_perf_trace.py`` prepends to NPU merged files: any process other than "Machine View"
becomes a group with one lane per thread.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Union

import msgspec

from ...errors import InputError
from ...forkpass import ForkedPass, fork_pass
from ...fileio import UTF8_BOM, is_utf8, load_json_records, read_bytes
from ...model import GROUP, INT64_END, INT64_MIN, LANE, MAX_NS, Flow, Slice, Trace
from .common import HintParser, MachineView, SharedTaskArgs, task_category
from .flow_binding import XSlices, bind_flows

_EVENT_HINT_RE = re.compile(
    r"rootHash:\s*(\d+).*?callOpMagic:\s*(-?\d+).*?leafHash:\s*(\d+)")

MACHINE_VIEW = "Machine View"

# Times are written as int64 nanoseconds: anything outside [0, MAX_NS = 2^62) ns (about 146
# years, with room for durations) is not a time PyPTO wrote, and is skipped rather than wrapped
# around.
_NUMBER = {int, float, Fraction}      # not bool; Fraction: exact AICPU times (aicpu.py)
_INT64 = range(INT64_MIN, INT64_END)


class _BadTime(ValueError):
    pass


UNSET = msgspec.UNSET


# An event's keys but "ph" (which ``Event`` puts first), and the default each holds when the
# event lacks it (UNSET: the keys an event of its phase must have).
_FIELDS = [("ts", Any, UNSET), ("dur", Any, 0), ("pid", Any, None), ("tid", Any, None),
           ("name", Any, ""), ("cat", Any, ""), ("id", Any, UNSET), ("args", Any, None)]

Event = msgspec.defstruct("Event", [("ph", Any, UNSET), *_FIELDS], gc=False,
                          module=__name__, namespace={"__doc__": "One Chrome trace event."})


class _TraceDoc(msgspec.Struct, gc=False):
    traceEvents: list[Event]


# Typed decoding makes no dict per event: 2x faster than orjson.loads and half the memory.
_DECODER = msgspec.json.Decoder(_TraceDoc | list[Event])


_UNREAD = ("dur", "cat", "args")
# What ``series_pass`` reads of an event (not its "dur" or "cat": the helper's decoding of
# the 90,112-task run 0.46 -> 0.42 s), its args undecoded (``msgspec.Raw``) until a counter
# needs them.
_LightEvent = msgspec.defstruct(
    "_LightEvent", [("ph", Any, UNSET)] + [f for f in _FIELDS if f[0] not in _UNREAD]
    + [("args", msgspec.Raw, msgspec.Raw(b"null"))], gc=False, module=__name__,
    namespace={"__doc__": "An event as series_pass reads it."})


class _LightDoc(msgspec.Struct, gc=False):
    traceEvents: list[_LightEvent]


_LIGHT_DECODER = msgspec.json.Decoder(_LightDoc | list[_LightEvent])


# Skimming: events typed by phase, counters and flows left empty, for a process whose helper
# reads those (``fork_series_pass``): 15-20 % less decoding.  A phase not listed here makes
# the decode fail, and the file is decoded whole.  The phase is each class's ``ph``.
_Tagged = msgspec.defstruct("_Tagged", [], tag_field="ph", gc=False, module=__name__)
_READ_PHASES = {ph: msgspec.defstruct(f"_Event{ph}", _FIELDS, bases=(_Tagged,), tag=ph,
                                      module=__name__, namespace={"ph": ph})
                for ph in ("X", "M", "B", "E", "i", "I", "n")}
_SKIMMED_PHASES = [msgspec.defstruct(f"_Skipped{ph}", [], bases=(_Tagged,), tag=ph,
                                     module=__name__, namespace={"ph": ph})
                   for ph in ("C", "s", "f", "t")]
_SKIMMED = Union[tuple(_READ_PHASES.values()) + tuple(_SKIMMED_PHASES)]


class _SkimDoc(msgspec.Struct, gc=False):
    traceEvents: list[_SKIMMED]


_SKIM_DECODER = msgspec.json.Decoder(_SkimDoc | list[_SKIMMED])
# The classes whose objects are events the loader reads (not skimmed ones, nor the
# helper's ``_LightEvent``).
_EVENTS = frozenset((Event, *_READ_PHASES.values()))
_RAW = msgspec.Raw
_decode_any = msgspec.json.decode


MALFORMED = "malformed"


def _typed_events(decoder: msgspec.json.Decoder, data: bytes) -> list | str | None:
    """The events of a file's bytes ``data`` (object or bare-array form) as ``decoder``
    types them; None for an event it cannot type (another decoder may), MALFORMED where no
    decoder can: malformed, cut short, bad UTF-8 (the general path, ``load_json_records``,
    then says which)."""
    if not is_utf8(data):
        return MALFORMED
    try:
        doc = decoder.decode(data[3:] if data[:3] == UTF8_BOM else data)
    except msgspec.ValidationError:
        return None
    except (msgspec.DecodeError, ValueError, RecursionError):
        return MALFORMED
    return doc if doc.__class__ is list else doc.traceEvents


def fork_series_pass(data: bytes) -> ForkedPass | None:
    """Start ``series_pass`` over the events of ``data`` (a file's bytes) in a forked process:
    it decodes them itself, without the args of anything but counters, while this process
    decodes the rest.  None where it cannot fork.  A file it cannot decode typed (this
    process then reads it the general way) gets ``_UNTYPED`` back, and the loader runs the
    pass itself."""
    def run():
        events = _typed_events(_LIGHT_DECODER, data)
        if events.__class__ is not list:
            return _UNTYPED
        return series_pass(events, False)
    return fork_pass(run, _SERIES | str)


_UNTYPED = "untyped"
# ``series_pass``'s result, as the helper sends it back (``fork_pass``: msgpack, read back
# in these types, tuples as tuples; 0.06 s less than a pickle on the 90,112-task run)
_SERIES = tuple[dict[tuple[Any, str], list],
                tuple[list[tuple[Any, Any]], tuple[list, list, list, list]], dict[str, int]]


def as_event(e: Any) -> Any:
    """A parsed event object as an ``Event``; anything else is returned as it is."""
    if e.__class__ is not dict:
        return e
    return Event(e.get("ph", UNSET), e.get("ts", UNSET), e.get("dur", 0), e.get("pid"),
                 e.get("tid"), e.get("name", ""), e.get("cat", ""), e.get("id", UNSET),
                 e.get("args"))


def _ns(us: Any) -> int:
    """Microseconds -> integer ns, checked (TypeError / ValueError / _BadTime otherwise)."""
    if us.__class__ not in _NUMBER:
        raise TypeError
    ns = round(us * 1000)
    if not 0 <= ns < MAX_NS:
        raise _BadTime
    return ns


def _text(v: Any) -> str:
    """A name or category: PyPTO writes strings; anything else is shown as text."""
    if v.__class__ is str:
        return v
    return "" if v is None else str(v)


def _args(a: Any) -> dict | None:
    """Chrome args are an object; another value is kept under "args"."""
    if a is None or a.__class__ is dict:
        return a or None
    return {"args": a}


def _counter_value(v: Any) -> Any:
    """Integers beyond int64 (orjson reads up to 2^64-1) become floats."""
    return v if v.__class__ is not int or v in _INT64 else float(v)


class ChromeEventLoader:
    """Turns PyPTO's trace events into model objects on ``trace``."""

    def __init__(self, trace: Trace, path: Path, view: MachineView, group_order: int = 1):
        self.trace = trace
        self.path = path
        self.view = view
        self.hints = HintParser()
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.other_groups: dict[Any, int] = {}
        self.other_lanes: dict[tuple[Any, str], int] = {}
        self.group_order = group_order
        self.skipped: dict[str, int] = {}
        self.tasks = 0
        # (pid, tid) -> its number (flows bind to slices of their thread)
        self.thread_numbers: dict[tuple[Any, Any], int] = {}

    # -- tracks -----------------------------------------------------------------------
    def _is_machine(self, pid: Any) -> bool:
        name = self.process_names.get(pid)
        return name == MACHINE_VIEW or (name is None and pid == 1)

    def lane(self, pid: Any, tid: Any) -> int:
        name = self.thread_names.get((pid, tid))
        if self._is_machine(pid):
            return self.view.lane(name if name is not None else f"tid_{tid}")
        key = (pid, name if name is not None else f"tid {tid}")
        lane = self.other_lanes.get(key)
        if lane is None:
            group = self.other_groups.get(pid)
            if group is None:
                title = self.process_names.get(pid) or f"process {pid}"
                group = self.other_groups[pid] = self.trace.add_track(
                    title, None, GROUP, self.group_order + len(self.other_groups),
                    f"{title} from {self.path.name}")
            order = tid if isinstance(tid, int) else len(self.trace.tracks[group].children)
            lane = self.other_lanes[key] = self.trace.add_track(
                key[1], group, LANE, order, nesting=True)
        return lane

    def ensure_thread_lanes(self) -> None:
        """Idle cores are kept as empty lanes."""
        for (pid, tid) in list(self.thread_names):
            self.lane(pid, tid)

    # -- events -----------------------------------------------------------------------
    def load(self, events: list, helper: ForkedPass | None = None) -> None:
        """Load ``Event`` objects (``load_events``); other items are skipped as malformed.

        Three passes: metadata (names before lanes); counter samples and flow ends
        (``series_pass``, which only collects); then slices, instants and the rest
        (``_main_pass``).  Counter tracks are then made in order of first appearance and
        flows bound to slices.  ``helper`` (``fork_series_pass``) is a process already
        running the second pass over the same file: its result is used instead, and when
        it fails the pass runs here.  The result is the same either way.
        """
        for e in events:
            if e.__class__ in _EVENTS and e.ph == "M":
                self._metadata(e)
        self.ensure_thread_lanes()
        # Skimmed events (``decode_events(skim=True)``) hold no counters or flows; events
        # decoded whole still hold them after the main pass, should the helper fail.
        # (The caller abandons ``helper`` should this raise.)
        skimmed = bool(events) and isinstance(events[0], _Tagged)
        collected = None if helper is not None else series_pass(events, True)
        xs = self._main_pass(events)
        if skimmed:
            del events[:]                       # (while the helper finishes)
        if helper is not None:
            xs.tables()                         # (while it finishes too: 30 ms on 90k tasks)
            collected = helper.result()
            if collected is None or collected == _UNTYPED:
                # the helper could not do its pass: do it here
                if collected is None:
                    self.trace.warn(f"{self.path}: the second process reading counters and "
                                    f"flows failed ({helper.error}); read them here instead")
                # (decoded whole: not the way that failed there)
                collected = series_pass(load_events(self.path) if skimmed else events, True)
        del events[:]
        series, flows, skipped = collected
        for what, count in skipped.items():
            self._skip(what, count)
        self._make_counters(series)
        self._bind_flows(flows, xs)
        trace = self.trace
        if self.hints.bad:
            trace.warn(f"{self.path}: {self.hints.bad} operand hints could not be parsed "
                       "(kept as text)")
        for what, count in self.skipped.items():
            trace.warn(f"{self.path}: {count} events skipped: {what}")

    def _main_pass(self, events: list) -> XSlices:
        """Slices, instants and everything but counters and flows (left to
        ``series_pass``); returns the X events' slices, for binding flows."""
        trace = self.trace
        slices = trace.slices
        lane_cache: dict[tuple[Any, Any], tuple[int, int]] = {}   # -> lane, thread number
        numbers = self.thread_numbers
        xs = XSlices()
        x_thread, x_start, x_end, x_index = (xs.thread.append, xs.start.append,
                                             xs.end.append, xs.index.append)
        open_b: dict[tuple[Any, Any], list] = {}
        shared_args = SharedTaskArgs()
        task_cache: dict[Any, tuple[dict, str]] = {}   # per CALL: (shared args, category)
        bad_dur = 0
        done = _DONE
        for i in range(len(events)):
            e = events[i]
            if e is done:
                continue
            try:
                ph = e.ph
                if ph == "X":
                    pid = e.pid
                    tid = e.tid
                    cached = lane_cache.get((pid, tid))
                    if cached is None:
                        number = numbers.setdefault((pid, tid), len(numbers))
                        cached = lane_cache[(pid, tid)] = (self.lane(pid, tid), number)
                    lane, number = cached
                    ts_us = e.ts
                    dur_us = e.dur
                    if ts_us.__class__ not in _NUMBER or dur_us.__class__ not in _NUMBER:
                        raise TypeError             # (inlined _ns: the hot path)
                    ts = round(ts_us * 1000)
                    end = round((ts_us + dur_us) * 1000)
                    if end < ts:
                        bad_dur += 1
                        end = ts
                    if ts < 0 or end >= MAX_NS:
                        raise _BadTime
                    name = e.name
                    if name.__class__ is not str:
                        name = _text(name)
                    a = e.args
                    if a is not None and a.__class__ is not dict:
                        a = _args(a)
                    hint = a.get("event-hint") if a else None
                    if hint is not None and hint.__class__ is not str:
                        hint = None
                    if hint is not None:
                        key = (a.get("ioperand-hint"), a.get("ooperand-hint"),
                               a.get("execution-hint"), a.get("color"),
                               hint[hint.find("rootHash"):hint.rfind(", TaskId")], lane)
                        cached = task_cache.get(key)
                        if cached is None:
                            cached = task_cache[key] = self._task(
                                key, a, shared_args, trace.tracks[lane].name)
                        shared, cat = cached
                        args = {"seqNo": a.get("seqNo"), "taskId": a.get("taskId")}
                        self.tasks += 1
                        slices.append(Slice(lane, ts, end - ts, name, cat, args, shared))
                    else:
                        slices.append(Slice(lane, ts, end - ts, name, _text(e.cat), a or None))
                    x_thread(number)
                    x_start(ts)
                    x_end(end)
                    x_index(len(slices) - 1)
                elif ph == "C" or ph == "s" or ph == "f" or ph == "t":
                    continue                    # counters and flows: series_pass
                elif ph == "M":
                    pass
                elif ph in ("i", "I", "n"):
                    lane = self.lane(e.pid, e.tid)
                    trace.add_instant(lane, _ns(e.ts), _text(e.name), _text(e.cat),
                                      _args(e.args))
                elif ph == "B":
                    open_b.setdefault((e.pid, e.tid), []).append(e)
                elif ph == "E":
                    stack = open_b.get((e.pid, e.tid))
                    if not stack:
                        self._skip("E event without B")
                    else:
                        b = stack.pop()
                        lane = self.lane(b.pid, b.tid)
                        ts = _ns(b.ts)
                        end = max(ts, _ns(e.ts))
                        trace.add_slice(lane, ts, end - ts, _text(b.name), _text(b.cat),
                                        _args(b.args))
                elif ph is UNSET:
                    raise KeyError
                else:
                    self._skip(f"event phase {ph!r}")
            except _BadTime:
                self._skip(f"{_phase(e)!r} event with a time out of range (negative, or past "
                           "2^62 ns)")
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
                if e.__class__ not in _EVENTS:
                    self._skip("not an object")
                else:
                    self._skip(f"malformed {_phase(e)!r} event")
            events[i] = done          # free the parsed event as we go
        for stack in open_b.values():
            if stack:
                self._skip("B event without E", len(stack))
        if bad_dur:
            trace.warn(f"{self.path}: {bad_dur} slices with negative duration set to 0")
        return xs

    def _make_counters(self, series: dict[tuple[Any, str], list]) -> None:
        """Counter tracks, in order of first appearance: machine-view counters in the view,
        others under their process's group (at the top level when it has no slices)."""
        for (pid, name), (unit, ts, values) in series.items():
            if self._is_machine(pid):
                counter = self.view.counter(name, unit)
            else:
                counter = self.trace.add_counter(name, self.other_groups.get(pid), unit)
            counter.ts.extend(ts)
            counter.values.extend(values)

    def _skip(self, what: str, count: int = 1) -> None:
        _count(self.skipped, what, count)

    def _metadata(self, e: Event) -> None:
        name = e.name
        args = e.args
        value = args.get("name") if args.__class__ is dict else None
        try:
            if name == "process_name" and value is not None:
                self.process_names[e.pid] = str(value)
            elif name == "thread_name" and value is not None:
                self.thread_names[(e.pid, e.tid)] = str(value)
        except TypeError:                       # an unhashable pid or tid
            self._skip("malformed 'M' event")

    def _task(self, key, a: dict, shared_args: SharedTaskArgs, lane_name: str):
        color = a.get("color") or ""
        fake = color.startswith("fake") or lane_name.startswith("Fake Core")
        label = color[4:] if fake and color.startswith("fake") else color
        m = _EVENT_HINT_RE.search(a.get("event-hint", ""))
        hints = self.hints
        shared = shared_args.get(
            key, int(m.group(1)) if m else None, int(m.group(3)) if m else None,
            int(m.group(2)) if m else None, label,
            hints.parse_operands(a.get("ioperand-hint") or ""),
            hints.parse_operands(a.get("ooperand-hint") or ""),
            hints.parse_exec(a.get("execution-hint") or ""))
        return shared, task_category(lane_name, fake)

    def _bind_flows(self, flows, xs: XSlices) -> None:
        """PyPTO puts a flow start 0.0001 us before its source's end, the end at the
        destination's start; bind both to slices on the same thread (``flow_binding``).
        ``flows``: the threads and columns ``series_pass`` collects."""
        threads, columns = flows
        numbers = [self.thread_numbers.get(t) for t in threads]   # None: no slices there
        unbound = bind_flows(xs, numbers, columns, self.trace.flows)
        if unbound is None:                 # (a time not a float: one flow at a time)
            unbound = self._bind_each(columns, numbers, xs)
        if unbound:
            self.trace.warn(f"{self.path}: {unbound} flows could not be bound to a task "
                            "slice and were dropped")

    def _bind_each(self, columns, numbers: list[int | None], xs: XSlices) -> int:
        """``_bind_flows`` one flow at a time; returns the flows not bound."""
        sthread, sts, dthread, dts = columns
        starts: dict[int, int] = {}         # thread number << THREAD_SHIFT + ns -> slice
        ends: dict[int, int] = {}
        for number, ts, end, idx in zip(xs.thread, xs.start, xs.end, xs.index):
            starts.setdefault((number << THREAD_SHIFT) + ts, idx)
            ends.setdefault((number << THREAD_SHIFT) + end, idx)
        offsets = [None if n is None else n << THREAD_SHIFT for n in numbers]
        out = self.trace.flows
        get_end = ends.get
        get_start = starts.get
        unbound = 0
        for st, s_us, dt, d_us in zip(sthread, sts, dthread, dts):
            so = offsets[st]
            do = offsets[dt]
            if so is None or do is None:
                unbound += 1
                continue
            key = so + round(s_us * 1000 + 0.1)
            src = get_end(key)
            if src is None:
                src = get_end(key - 1)
                if src is None:
                    src = get_end(key + 1)
            key = do + round(d_us * 1000)
            dst = get_start(key)
            if dst is None:
                dst = get_start(key - 1)
                if dst is None:
                    dst = get_start(key + 1)
            if src is None or dst is None:
                unbound += 1
                continue
            out.append(Flow(src, dst))
        return unbound


# Below this size a second process does not pay for its fork (measured: docs/performance.md,
# tenth session: 32 MB until then).
PARALLEL_MIN_BYTES = 8 << 20
THREAD_SHIFT = 63               # ns < 2^62 (MAX_NS): a thread's keys, and +-1, stay its own
_DONE = object()                # an event slot already handled (and freed)


def _count(skipped: dict[str, int], what: str, count: int = 1) -> None:
    skipped[what] = skipped.get(what, 0) + count


def _counter_samples(e: Event, args: Any, ts: int, series: dict,
                     skipped: dict) -> list | None:
    """Add the numeric values of counter event ``e`` (its ``args``) to ``series`` (one
    series per value; named "<name> <key>" when the event has several); returns the last
    series touched."""
    pid = e.pid
    name = _text(e.name)
    args = args or {}
    if args.__class__ is not dict:
        raise TypeError
    numeric = [(k, v) for k, v in args.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numeric:
        _count(skipped, "counter without a numeric value")
        return None
    one = None
    for k, v in numeric:
        key = (pid, name if len(numeric) == 1 else f"{name} {k}")
        one = series.get(key)
        if one is None:
            unit = "MHz" if "MHz" in key[1] else ("tasks" if "Count" in key[1] else "")
            one = series[key] = [unit, [], []]
        one[1].append(ts)
        one[2].append(_counter_value(v))
    return one


def series_pass(events: list, free: bool):
    """Counter samples and flow ends, collected without touching the trace: returns
    ({(pid, series): [unit, ts, values]} in order of first appearance, the flows: the
    (pid, tid) threads they touch and four columns, thread number and ts of each start and
    each end; skipped).  ``free`` drops each handled event from ``events``."""
    series: dict[tuple[Any, str], list] = {}
    fast: dict[tuple[Any, Any], tuple[Any, Any]] = {}     # single-value counters
    flow_src: dict[Any, tuple[int, Any]] = {}
    threads: dict[tuple[Any, Any], int] = {}    # (pid, tid) -> its number in the columns
    columns: tuple[list, ...] = ([], [], [], [])   # thread and ts of each start, each end
    sthread, sts, dthread, dts = (c.append for c in columns)
    skipped: dict[str, int] = {}
    done = _DONE
    for i in range(len(events)):
        e = events[i]
        if e.__class__ is not Event and e.__class__ is not _LightEvent:
            continue                        # the main pass reports it
        ph = e.ph
        try:
            if ph == "C":
                a = e.args
                if a.__class__ is _RAW:
                    a = _decode_any(a)
                ts = e.ts
                if ts.__class__ not in _NUMBER:
                    raise TypeError
                ts = round(ts * 1000)
                if not 0 <= ts < MAX_NS:
                    raise _BadTime
                if a.__class__ is dict and len(a) == 1:
                    add = fast.get((e.pid, e.name))
                    if add is not None:
                        (v,) = a.values()
                        if v.__class__ is float or (v.__class__ is int and v in _INT64):
                            add[0](ts)
                            add[1](v)
                            if free:
                                events[i] = done
                            continue
                one = _counter_samples(e, a, ts, series, skipped)
                if one is not None and a.__class__ is dict and len(a) == 1:
                    fast[(e.pid, e.name)] = (one[1].append, one[2].append)
            elif ph == "s" or ph == "f" or ph == "t":
                ts = e.ts
                if ts.__class__ not in _NUMBER:
                    raise TypeError
                if not 0 <= round(ts * 1000) < MAX_NS:      # (inlined _ns: 266k flow ends)
                    raise _BadTime
                if e.id is UNSET:
                    raise KeyError
                src = None if ph == "s" else flow_src.pop(e.id, None)
                if ph != "s" and src is None:
                    _count(skipped, "flow end without start")
                elif src is None and e.id in flow_src:
                    # Perfetto keeps a flow's first start and ignores another with its id
                    # while it is open (stat flow_duplicate_id): so does this reader
                    _count(skipped, "flow start repeating the id of an open flow (the "
                           "first is kept, as Perfetto keeps it)")
                else:
                    pair = (e.pid, e.tid)   # TypeError: an unhashable pid or tid
                    thread = threads.get(pair)
                    if thread is None:
                        thread = threads[pair] = len(threads)
                    if src is None:
                        flow_src[e.id] = (thread, ts)
                    else:
                        sthread(src[0])
                        sts(src[1])
                        dthread(thread)
                        dts(ts)
            else:
                continue
        except _BadTime:
            _count(skipped, f"{ph!r} event with a time out of range (negative, or past "
                   "2^62 ns)")
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
            _count(skipped, f"malformed {ph!r} event")
        if free:
            events[i] = done
    if flow_src:
        _count(skipped, "flow start without end", len(flow_src))
    return series, (list(threads), columns), skipped


def _phase(e: Event) -> Any:
    return None if e.ph is UNSET else e.ph


def load_events(path: Path, warn=None, typed: bool = True) -> list:
    """Parse a Chrome trace file and return its events as ``Event`` objects (``typed``) or
    as parsed JSON (dicts).

    A file cut short gives the events before the cut (``warn`` is told what was lost), as
    Perfetto reads a JSON trace without its closing brackets.
    """
    return decode_events(path, read_bytes(path), warn, typed)


def decode_events(path: Path, data: bytes, warn=None, typed: bool = True,
                  skim: bool = False) -> list:
    """``load_events`` of a file's bytes ``data``.  ``skim``: counters and flows come back
    empty (a helper reads them), when the file decodes that way."""
    for decoder in ((_SKIM_DECODER,) if skim else ()) + ((_DECODER,) if typed else ()):
        events = _typed_events(decoder, data)
        if events.__class__ is list:
            return events
        if events is MALFORMED:         # no decoder reads it: the general path says why
            break
    doc, cut = load_json_records(path, data, (1, 2))
    del data
    events = events_of(doc, path)
    del doc
    if cut is not None and warn is not None:
        warn(f"{path}: {cut.describe(f'{len(events):,} events')}")
    if typed:
        for i, e in enumerate(events):
            events[i] = as_event(e)
    return events


def events_of(doc: Any, path: Path) -> list:
    """The event list of a Chrome trace document (object form or bare array)."""
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if isinstance(events, list):
            return events
        raise InputError(path, "JSON object without a 'traceEvents' list")
    if isinstance(doc, list):
        return doc
    raise InputError(path, "not a Chrome trace (expected an object or an array)")
