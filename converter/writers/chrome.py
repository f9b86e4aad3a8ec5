"""Chrome trace-event JSON writer (the fallback format; see docs/perfetto.md section 6).

Layout of the written file (compact, one line)::

    {"traceEvents":[...],"displayTimeUnit":"ns","metadata":{...}}

* **Time.** ``ts``/``dur`` are numbers in microseconds *relative to the trace start*
  (``metadata.base_time_ns``, the smallest timestamp in the model), written as
  ``(ns - base) / 1000``.  The literal orjson prints is the exact decimal ``ns / 1000`` (at
  most three fraction digits), so ``round(ts * 1000)`` gives back the integer ns.  This holds
  for every offset below ``EXACT_SPAN_NS`` = 2**51 ns (about 26 days), with a correctly
  rounding parser and with Perfetto's own, not correctly rounding ``StringToDouble`` (integer
  part + fraction / 10**k) followed by ``llround(ts * 1000.0)``: the parsed x < 2**42 us is off
  by at most half an ulp (2**-12 us) plus 2**-54, i.e. < 0.245 ns after scaling, and scaling
  adds at most 0.125 ns (1000 x < 2**51), so the total stays below 0.5 ns.  Past 2**51 ns some
  values start to come back 1 ns off, and past 2**43 us (~8.8e15 ns, ~102 days) float64 cannot
  hold every ns value whatever is written; the writer then says so in ``metadata.warnings``.
* **Tracks.** Each top-level group is a process (pid 1, 2, ... in display order) with
  ``process_name`` / ``process_sort_index``; every lane below it, at any depth, is a thread
  with ``thread_name`` / ``thread_sort_index`` in depth-first display order (``Trace.walk``).
  Lanes keep their own names; lanes with equal names (overlap lanes) still get distinct tids.
  tids are unique over the whole file and never equal a pid: Perfetto's importer gives every
  pid a main thread with tid == pid, and one tid seen in two processes is treated as tid
  reuse.  Top-level lanes and counters go to one synthetic process named after the run.
  Counter tracks become ``C`` events in the process of their top-level group.
* **Slices** are ``X`` events, written per lane in (ts, -dur) order; instants are ``i`` events
  with thread scope.  ``ts`` comes before ``args`` in every event (older Perfetto tokenizers
  scanned the keys in order to find ``ts``).
* **Flows** are v1 ``s``/``f`` pairs with ids 1..N and the same ``cat``/``name`` on both ends
  (Perfetto binds v1 flows by (id, cat, name)).  Both ends bind to "the slice on top of the
  (pid, tid) slice stack when the flow event is processed" (``FlowTracker::Begin``/``End``
  with ``bp: e``), after Perfetto has sorted the events by (ts, X before other phases, longer X
  first, file order).  Hence:

  - ``f`` sits at the destination's start, right after the destination's ``X`` in the file:
    the destination is then the shortest ``X`` starting at that ts on its thread, i.e. the top
    of the stack (a child starting at the very same ns would win; JSON cannot say otherwise).
  - ``s`` sits at the source's *end minus 1 ns* when the source is a leaf (nothing else on its
    thread starts inside it), so viewers that draw from the flow event's ts (chrome://tracing)
    start the arrow near the end, where the dependency starts.  A sub-ns epsilon (PyPTO uses
    0.0001 us) would be rounded back onto the end by Perfetto's ``llround`` and bind to the
    next slice.  When the source has children or instants inside, the last of them stays on the
    stack as a stale top until another slice starts on the thread, so ``s`` goes to the
    source's start instead, where the source is the top once its ``X`` has been processed.
  - A flow whose destination starts before that point but not before the source gets its
    ``s`` at the source's start; one whose destination starts at the source's start gets its
    ``f`` right after the ``s`` in the file (events at one ts keep the file order).
  - A flow whose destination starts before its source cannot be drawn from source to
    destination (Perfetto would meet its ``f`` first: ``flow_end_without_start``); it is not
    written (``writers.flows``), counted (``flows_not_drawn``) and reported in
    ``metadata.warnings``.  Untrusted dependencies (``model.UNTRUSTED_FLOW``) get the
    category "untrusted".
* Output is streamed: events are serialized in batches of ``BATCH_EVENTS`` and written joined
  by commas, so the output is never held in memory.  Values orjson refuses (integers outside
  [-2**63, 2**64), lone surrogates, non-string keys, unknown types) are cleaned up in the
  events that need it only: such integers become decimal strings, surrogate pairs are joined
  into their character, lone surrogates are written as ``\\udXXX`` text, other keys and
  objects as ``str()``.  Integers in [2**63, 2**64) stay numbers (Perfetto's parser reads them
  as doubles, yajl/ijson reject them; see docs/perfetto.md section 6, item 6).
"""

from __future__ import annotations

import dataclasses
import numbers
from array import array
from bisect import bisect_left
from itertools import accumulate
from typing import IO, Any, Callable

import orjson

from .. import __version__
from ..fileio import PRODUCER
from ..model import (CLOCK_SKEW, COUNTER, GROUP, INT64_MIN, LANE, READING_KEYS, SOURCE_BINDING,
                     UINT64_END, UNTRUSTED_FLOW, Trace)
from .flows import drawable, not_drawn_warning
from .names import thread_names

BATCH_EVENTS = 10000
EXACT_SPAN_NS = 1 << 51          # offsets below this keep exact ns through any JSON parser
FLOW_CAT = "flow"


# -- safe serialization -------------------------------------------------------------------

def _default(obj: Any) -> Any:
    """orjson ``default``: types it does not know."""
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "backslashreplace")
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj)
    return str(obj)


def _clean_str(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:    # surrogate pairs (UTF-16 halves kept as two code points) become the real character
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _clean(v: Any) -> Any:
    """A copy of ``v`` that orjson can always serialize."""
    if v is None or v.__class__ in (bool, float):
        return v
    if isinstance(v, str):
        return _clean_str(v)
    if isinstance(v, int):
        return v if INT64_MIN <= v < UINT64_END else str(v)  # orjson writes these; others as text
    if isinstance(v, float):
        return float(v)
    if isinstance(v, dict):
        return {(_clean_str(k) if isinstance(k, str) else _clean_str(str(k))): _clean(x)
                for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_clean(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _clean(dataclasses.asdict(v))
    return _clean(_default(v))


def _dumps_one(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, default=_default)
    except TypeError:                       # orjson.JSONEncodeError is a TypeError
        pass
    try:
        return orjson.dumps(_clean(obj), default=_default)
    except (TypeError, RecursionError) as e:
        # Nesting deeper than orjson's limit: keep the event, say what was lost.
        if isinstance(obj, dict) and "args" in obj:
            shallow = dict(obj)
            shallow["args"] = {"unserializable_args": _clean_str(f"{e}")}
            return orjson.dumps(_clean(shallow), default=_default)
        raise


def _dumps_batch(events: list[dict]) -> bytes:
    """Events serialized and joined by commas (no brackets)."""
    try:
        return orjson.dumps(events, default=_default)[1:-1]
    except TypeError:
        return b",".join(_dumps_one(e) for e in events)


# -- layout: tracks -> pid / tid ----------------------------------------------------------

class _Layout:
    def __init__(self, trace: Trace):
        tracks = trace.tracks
        event_tracks = {s.track for s in trace.slices}
        event_tracks.update(i.track for i in trace.instants)

        # Processes: top-level groups in display order, plus one synthetic process for
        # top-level lanes and counters (numbered where it first appears).
        self.processes: list[str] = []          # pid - 1 -> name
        root_pid: dict[int, int] = {}
        synthetic = 0
        for r in trace.children(None):
            if tracks[r].kind == GROUP:
                self.processes.append(tracks[r].name)
                root_pid[r] = len(self.processes)
            else:
                if not synthetic:
                    self.processes.append(trace.meta.name or "tracks")
                    synthetic = len(self.processes)
                root_pid[r] = synthetic

        # Threads: lanes (and any other track holding slices or instants) in walk order.
        self.pid_of: dict[int, int] = {}
        self.tid_of: dict[int, int] = {}
        lanes: list[tuple[int, int, int, int]] = []     # (pid, tid, track, sort index)
        self.counter_name: dict[int, str] = {}
        per_pid_threads: dict[int, int] = {}
        counter_names: dict[int, set[str]] = {}
        next_tid = len(self.processes) + 1                    # never equal to a pid
        root = None
        for index, depth in trace.walk():
            t = tracks[index]
            if depth == 0:
                root = index
            pid = root_pid[root]
            self.pid_of[index] = pid
            if t.kind == LANE or index in event_tracks:
                rank = per_pid_threads.get(pid, 0)
                per_pid_threads[pid] = rank + 1
                self.tid_of[index] = next_tid
                lanes.append((pid, next_tid, index, rank))
                next_tid += 1
            if t.kind == COUNTER:
                used = counter_names.setdefault(pid, set())
                name = t.name
                if name in used:
                    # Same name twice in one process would merge the tracks: qualify it.
                    path = trace.path(index).split(" / ")
                    name = " / ".join(path[1:] if tracks[root].kind == GROUP else path)
                    base, n = name, 2
                    while name in used:
                        name, n = f"{base} #{n}", n + 1
                used.add(name)
                self.counter_name[index] = name
        # Thread names that tell apart the threads of a process (Perfetto lists them side by
        # side): the same names as the Perfetto writer's.
        names = thread_names(trace, {index: pid for pid, _, index, _ in lanes})
        self.threads = [(pid, tid, names.get(index, tracks[index].name), rank)   # name: shown
                        for pid, tid, index, rank in lanes]


# -- writer -------------------------------------------------------------------------------

def _flow_cat(name: str) -> str:
    """Untrusted dependencies get a category of their own (model.UNTRUSTED_FLOW)."""
    return "untrusted" if name == UNTRUSTED_FLOW else FLOW_CAT


def _flow_end(f, fid: int, ts_us: float, pid: int, tid: int) -> dict[str, Any]:
    name = f.name or FLOW_CAT
    return {"ph": "f", "bp": "e", "id": fid, "cat": _flow_cat(name), "name": name,
            "ts": ts_us, "pid": pid, "tid": tid}


def _group_flows(flows: list, n_slices: int, end: str) -> tuple[array, array]:
    """Flow ids grouped by slice: ids of slice i are ``ids[start[i]:start[i + 1]]``."""
    if not flows:
        return array("q", bytes(8 * (n_slices + 1))), array("q")
    counts = array("q", bytes(8 * (n_slices + 1)))
    for f in flows:
        counts[getattr(f, end) + 1] += 1
    start = array("q", accumulate(counts))
    fill = array("q", start)
    ids = array("q", bytes(8 * len(flows)))
    for fid, f in enumerate(flows, 1):
        i = getattr(f, end)
        ids[fill[i]] = fid
        fill[i] += 1
    return start, ids


def _metadata(trace: Trace, base: int, warnings: list[str]) -> dict[str, Any]:
    m = trace.meta
    clock = m.clock
    extra = m.extra
    if type(extra) is dict and not READING_KEYS.isdisjoint(extra):
        extra = {k: v for k, v in extra.items() if k not in READING_KEYS}
    return {
        "name": m.name,
        "format": m.format,
        "tool": m.tool,
        "tool_version": m.tool_version,
        "device": m.device,
        "clock": {**clock.typed(), "description": clock.description},
        "source_files": list(m.source_files),
        "warnings": list(m.warnings) + warnings,
        "base_time_ns": base,
        "time_unit": "ts and dur are microseconds relative to base_time_ns",
        "extra": extra,
    }


def write_chrome(trace: Trace, out: IO[bytes],
                 progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write ``trace`` as compact Chrome trace-event JSON to the binary stream ``out``."""
    layout = _Layout(trace)
    span = trace.time_span()
    base = span[0] if span else 0
    warnings: list[str] = []
    if span and span[1] - base >= EXACT_SPAN_NS:
        warnings.append(
            f"chrome json: the trace spans {span[1] - base} ns; timestamps later than "
            f"{EXACT_SPAN_NS} ns after base_time_ns cannot keep exact ns in float64 "
            "microseconds (use the Perfetto protobuf output for exact times)")

    counts = {"events": 0, "slices": 0, "instants": 0, "flows": 0, "flows_not_drawn": 0,
              "counter_samples": 0,
              "tracks": len(trace.tracks), "processes": len(layout.processes),
              "threads": len(layout.threads), "bytes": 0}
    batch: list[dict] = []
    started = False

    def write(data: bytes) -> None:
        out.write(data)
        counts["bytes"] += len(data)

    def flush() -> None:
        nonlocal started
        if not batch:
            return
        data = _dumps_batch(batch)
        write(b"," + data if started else data)
        started = True
        counts["events"] += len(batch)
        batch.clear()

    write(b'{"traceEvents":[')

    # Metadata events: names and sort order of processes and threads.
    for rank, name in enumerate(layout.processes):
        pid = rank + 1
        args = {"name": name}
        if rank == 0:       # marks the file as tracecvt's output (fileio.is_own_output)
            args["producer"] = f"{PRODUCER} {__version__}"
        batch.append({"ph": "M", "name": "process_name", "pid": pid, "args": args})
        batch.append({"ph": "M", "name": "process_sort_index", "pid": pid,
                      "args": {"sort_index": rank}})
    for pid, tid, name, rank in layout.threads:
        batch.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                      "args": {"name": name}})
        batch.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                      "args": {"sort_index": rank}})

    slices = trace.slices
    n_slices = len(slices)
    # Compact indexes (arrays of machine ints, not lists of int objects): the writer's own
    # memory stays a small fraction of the model's.
    by_track: dict[int, array] = {}
    for i, s in enumerate(slices):
        a = by_track.get(s.track)
        if a is None:
            a = by_track[s.track] = array("q")
        a.append(i)

    # Flows, attached to the slices they start from / end at: flow ids (1..N, model order)
    # grouped by source and by destination slice, CSR style.
    flows = []
    not_drawn = 0
    for flow in trace.flows:
        if 0 <= flow.src < n_slices and 0 <= flow.dst < n_slices:
            if drawable(slices[flow.src], slices[flow.dst], "chrome"):
                flows.append(flow)
            else:
                not_drawn += 1
        else:
            warnings.append(f"chrome json: flow {flow.src} -> {flow.dst} refers to a missing "
                            "slice; not written")
    out_start, out_ids = _group_flows(flows, n_slices, "src")
    in_start, in_ids = _group_flows(flows, n_slices, "dst")
    instant_ts: dict[int, list[int]] = {}
    if flows:
        for inst in trace.instants:
            instant_ts.setdefault(inst.track, []).append(inst.ts)
        for v in instant_ts.values():
            v.sort()

    tid_of = layout.tid_of
    pid_of = layout.pid_of
    done = 0
    for track_id, _depth in trace.walk():
        ids = by_track.pop(track_id, None)
        if not ids:
            continue
        ids = sorted(ids, key=lambda i: (slices[i].ts, -slices[i].dur))
        pid = pid_of[track_id]
        tid = tid_of[track_id]
        inst = instant_ts.get(track_id, ())
        last = len(ids) - 1
        for k, i in enumerate(ids):
            s = slices[i]
            ts = s.ts
            ev = {"ph": "X", "name": s.name}
            if s.cat:
                ev["cat"] = s.cat
            ev["ts"] = (ts - base) / 1000
            ev["dur"] = s.dur / 1000
            ev["pid"] = pid
            ev["tid"] = tid
            if s.shared_args is not None or s.args:
                ev["args"] = s.all_args
            batch.append(ev)
            lo, hi = in_start[i], in_start[i + 1]
            if lo != hi:
                for fid in in_ids[lo:hi]:
                    f = flows[fid - 1]
                    if slices[f.src].ts != ts:     # (one start: written after its "s")
                        batch.append(_flow_end(f, fid, ev["ts"], pid, tid))
            lo, hi = out_start[i], out_start[i + 1]
            if lo != hi:
                end = ts + s.dur
                bind = ts
                if s.dur > 1:
                    leaf = k == last or slices[ids[k + 1]].ts >= end
                    if leaf and inst:
                        j = bisect_left(inst, ts)
                        leaf = j == len(inst) or inst[j] >= end
                    if leaf:
                        bind = end - 1
                bind_us = (bind - base) / 1000
                start_us = ev["ts"]
                for fid in out_ids[lo:hi]:
                    f = flows[fid - 1]
                    d = slices[f.dst]
                    # A destination starting before the end point: "s" at the source's start.
                    name = f.name or FLOW_CAT
                    fe = {"ph": "s", "id": fid, "cat": _flow_cat(name), "name": name,
                          "ts": bind_us if d.ts >= bind else start_us, "pid": pid, "tid": tid}
                    args = f.args
                    if args and SOURCE_BINDING in args:    # the reader's, not a fact to show
                        args = {k: v for k, v in args.items() if k != SOURCE_BINDING}
                    if args:
                        fe["args"] = args
                    batch.append(fe)
                    if d.ts == ts:          # "f" right after "s": Perfetto keeps that order
                        batch.append(_flow_end(f, fid, start_us, pid_of[d.track],
                                               tid_of[d.track]))
            done += 1
            if len(batch) >= BATCH_EVENTS:
                flush()
                if progress:
                    progress(done)
    counts["slices"] = done
    counts["flows"] = len(flows)
    counts["flows_not_drawn"] = not_drawn
    if not_drawn:
        warnings.append(not_drawn_warning(not_drawn, len(trace.flows), "chrome json",
                                          skew=trace.meta.extra.get(CLOCK_SKEW)))

    for inst in trace.instants:
        ev = {"ph": "i", "s": "t", "name": inst.name}
        if inst.cat:
            ev["cat"] = inst.cat
        ev["ts"] = (inst.ts - base) / 1000
        ev["pid"] = pid_of[inst.track]
        ev["tid"] = tid_of[inst.track]
        if inst.args:
            ev["args"] = inst.args
        batch.append(ev)
        counts["instants"] += 1
        if len(batch) >= BATCH_EVENTS:
            flush()

    for counter in trace.counters:
        name = layout.counter_name[counter.track]
        pid = pid_of[counter.track]
        for ts, value in zip(counter.ts, counter.values):
            batch.append({"ph": "C", "name": name, "ts": (ts - base) / 1000, "pid": pid,
                          "args": {"value": value}})
            if len(batch) >= BATCH_EVENTS:
                flush()
        counts["counter_samples"] += len(counter.ts)
    flush()
    if progress:
        progress(done)

    write(b'],"displayTimeUnit":"ns","metadata":')
    write(_dumps_one(_metadata(trace, base, warnings)))
    write(b"}")
    return counts
