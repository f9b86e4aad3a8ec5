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
from typing import IO, Any, Callable

import orjson

from .. import __version__
from ..fileio import PRODUCER
from ..model import (CLOCK_SKEW, COUNTER, GROUP, INT64_MIN, LANE, READING_KEYS, UINT64_END,
                     Trace)
from .chrome_events import Events, Plan, write_events
from .flows import not_drawn_warning
from .names import thread_names

EXACT_SPAN_NS = 1 << 51          # offsets below this keep exact ns through any JSON parser


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
                 progress: Callable[[int], None] | None = None,
                 workers: int = 1) -> dict[str, int]:
    """Write ``trace`` as compact Chrome trace-event JSON to the binary stream ``out``
    (``workers`` > 1: a large trace's last events are serialized by a second process,
    ``chrome_events.write_events``; the file is the same)."""
    layout = _Layout(trace)
    warnings: list[str] = []
    plan = Plan(trace, layout.pid_of, layout.tid_of, layout.counter_name, warnings)
    cols = plan.cols
    span = trace.time_span((int(cols.ts.min()), int(cols.end.max()))
                           if cols is not None and len(cols.ts) else None)
    base = plan.base = span[0] if span else 0
    if span and span[1] - base >= EXACT_SPAN_NS:
        warnings.insert(0, (
            f"chrome json: the trace spans {span[1] - base} ns; timestamps later than "
            f"{EXACT_SPAN_NS} ns after base_time_ns cannot keep exact ns in float64 "
            "microseconds (use the Perfetto protobuf output for exact times)"))
    counts = {"events": 0, "slices": 0, "instants": 0, "flows": len(plan.flows),
              "flows_not_drawn": plan.not_drawn, "counter_samples": 0,
              "tracks": len(trace.tracks), "processes": len(layout.processes),
              "threads": len(layout.threads), "bytes": 0}

    def write(data: bytes) -> None:
        out.write(data)
        counts["bytes"] += len(data)

    write(b'{"traceEvents":[')
    events = Events(plan, write, False, _dumps_batch, progress)
    # Metadata events: names and sort order of processes and threads.
    batch = events.batch
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
    write_events(plan, events, workers)
    for key in ("events", "slices", "instants", "counter_samples"):
        counts[key] = events.counts[key]
    if plan.not_drawn:
        warnings.append(not_drawn_warning(plan.not_drawn, len(trace.flows), "chrome json",
                                          skew=trace.meta.extra.get(CLOCK_SKEW)))
    if progress:
        progress(counts["slices"])

    write(b'],"displayTimeUnit":"ns","metadata":')
    write(_dumps_one(_metadata(trace, base, warnings)))
    write(b"}")
    return counts
