"""``machine_runtime_operator_trace*.json``: the AICPU view of an NPU run (section 6).

``{"traceEvents": [...]}`` with one process, pid 0 "AICPU View", and one thread per block of
``machine_trace_perf_data`` (``tid`` 0, 1, ... named ``"<coreType>-<blockIdx>"``, e.g.
``AICPU-CTRL-0``, ``SCHED1-AIV-30``).  Every phase mark is an X event whose ``ts``/``dur`` are
ticks divided by the event's ``freq`` (ticks per µs), so a slice named ``INIT_0`` is the
interval that *ended* with INIT.

The events are read with the merged-file loader (``ChromeEventLoader``), so they come out
exactly like the AICPU process that ``machine_perf_trace.py`` prepends to an NPU
``merged_swimlane.json`` (section 5.7): one group "AICPU View", one lane per thread in tid
order.  Two things are added here:

* Exact times.  An event with an integer ``freq`` has its ``ts`` and ``dur`` snapped to whole
  ticks and handed to the loader as exact fractions, so times are tick * 1000 / freq ns with no
  float error (at ~2.4e12 µs a double holds µs only to ~0.5 ns, and ``ts + dur`` in floats can
  miss the end by 1 ns at 1 GHz).
* No duplicates.  The same events may already be in the trace (an NPU directory holds both the
  AICPU file and a merged file with the AICPU view prepended, or several
  ``machine_runtime_operator_trace_<K>.json`` dumps overlap): slices are merged into an existing
  "AICPU View" group lane by lane, and a slice already there (same lane, name and start) is not
  added again (counted per file in ``meta.extra["aicpu_duplicate_slices_skipped"]``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...model import COUNTER, GROUP, Clock, RunMeta, Trace
from ..base import ReadOptions
from .common import MachineView
from .merged import MACHINE_VIEW, ChromeEventLoader, as_event, load_events

AICPU_VIEW = "AICPU View"

AICPU_US = Clock("pypto-aicpu-us", "us", Fraction(1000),
                 "microseconds as written by PyPTO's machine_perf_trace.py (ticks / freq)")


def add_aicpu_trace(trace: Trace, path: Path, options: ReadOptions) -> None:
    """Add the slices of the AICPU trace ``path`` to ``trace`` on an "AICPU View" group."""
    path = Path(path)
    options.report(f"reading {path.name}", 0, 1)
    events = load_events(path, trace.warn, typed=False)
    freqs = _exact_times(events)
    if any(isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"
           and (e.get("args") or {}).get("name") == MACHINE_VIEW for e in events):
        raise InputError(path, "holds a PyPTO 'Machine View' process: this is a "
                         "merged_swimlane.json with the AICPU view prepended (section 5.7), "
                         "not an AICPU trace; convert the file itself")
    was_empty = not trace.tracks
    # Load into a scratch trace, then merge: the loader always makes new groups.
    scratch = Trace(RunMeta(trace.meta.name, trace.meta.format))
    # Only events of an unnamed pid 1 would land in this view; it is dropped when empty.
    view = MachineView(scratch, MACHINE_VIEW, f"unnamed pid 1 of {path.name}")
    loader = ChromeEventLoader(scratch, path, view)
    loader.load([as_event(e) for e in events])
    del events
    view.finish()
    for w in scratch.meta.warnings:
        trace.warn(w)
    skip = set() if view.lanes or view.counter_group is not None else {view.device}
    _, dup = _merge(trace, scratch, skip)
    if dup:
        # Expected, not suspicious: merged_swimlane.json carries the AICPU view too (5.7).
        skipped = trace.meta.extra.setdefault("aicpu_duplicate_slices_skipped", {})
        skipped[str(path)] = dup
    if freqs:
        values = sorted(freqs)
        old = trace.meta.extra.get("aicpu_freq_mhz")
        if old is not None:
            values = sorted(set(values) | set(old if isinstance(old, list) else [old]))
        if len(values) > 1:
            trace.warn(f"{path}: AICPU blocks use different counter frequencies "
                       f"{', '.join(f'{v:g}' for v in values)} MHz")
        trace.meta.extra["aicpu_freq_mhz"] = values[0] if len(values) == 1 else values
    if was_empty:
        trace.meta.clock = AICPU_US
        trace.meta.extra.setdefault("tasks", 0)     # phase marks are not PyPTO tasks
        if not trace.meta.device:
            trace.meta.device = "Ascend NPU"
    options.report(f"reading {path.name}", 1, 1)


def _exact_times(events: list) -> set:
    """Replace ``ts``/``dur`` of X events that carry an integer ``freq`` by exact fractions
    of whole ticks.  Returns the set of frequencies seen (ints, or floats when fractional)."""
    freqs: set = set()
    for e in events:
        if not isinstance(e, dict) or "freq" not in e:
            continue
        f = e["freq"]
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0:
            continue
        if isinstance(f, float) and f.is_integer():
            f = int(f)
        freqs.add(f)
        if not isinstance(f, int) or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur", 0)
        if not _is_number(ts) or not _is_number(dur):
            continue          # left to the loader, which skips malformed events
        t_ticks = _ticks(ts, f)
        d_ticks = _ticks(dur, f)
        if t_ticks is None or d_ticks is None:
            continue
        e["ts"] = Fraction(t_ticks, f)
        e["dur"] = Fraction(d_ticks, f)
    return freqs


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v \
        and abs(v) != float("inf")


def _ticks(us: float, freq: int) -> int | None:
    """``us * freq`` as whole ticks, or None when it is clearly not on the tick grid."""
    x = us * freq
    if not math.isfinite(x):
        return None
    t = round(x)
    # A double holds ~16 significant digits: allow that much error, and 1e-3 tick.
    if abs(x - t) > max(1e-3, abs(x) * 1e-15):
        return None
    return t


def _merge(trace: Trace, scratch: Trace, skip: set[int]) -> tuple[int, int]:
    """Copy the tracks and events of ``scratch`` into ``trace``, reusing tracks with the same
    name and kind under the same parent.  Returns (slices added, duplicate slices skipped)."""
    mapping: dict[int, int] = {}
    reused: set[int] = set()

    def copy(src: int | None, dst: int | None) -> None:
        for child in scratch.children(src):
            if child in skip:
                continue
            t = scratch.tracks[child]
            siblings = trace.roots if dst is None else trace.tracks[dst].children
            same = [i for i in siblings
                    if trace.tracks[i].name == t.name and trace.tracks[i].kind == t.kind]
            if same:
                target = same[0]
                reused.add(target)
            else:
                order = t.order
                if dst is None:     # a new top-level group goes after everything there
                    order = max((trace.tracks[i].order for i in trace.roots), default=-1) + 1
                if t.kind == COUNTER:
                    target = trace.add_counter(t.name, dst, t.unit, order, t.description,
                                               t.derived).track
                else:
                    target = trace.add_track(t.name, dst, t.kind, order, t.description,
                                             t.unit, t.nesting, t.derived)
            mapping[child] = target
            if t.kind == GROUP:
                copy(child, target)

    copy(None, None)
    present = {(s.track, s.name, s.ts) for s in trace.slices if s.track in reused}
    slice_map: dict[int, int] = {}
    added = dup = 0
    for i, s in enumerate(scratch.slices):
        track = mapping.get(s.track)
        if track is None:
            continue
        key = (track, s.name, s.ts)
        if key in present:
            dup += 1
            continue
        present.add(key)
        slice_map[i] = trace.add_slice(track, s.ts, s.dur, s.name, s.cat, s.args)
        added += 1
    have = {(i.track, i.name, i.ts) for i in trace.instants if i.track in reused}
    for i in scratch.instants:
        track = mapping.get(i.track)
        if track is not None and (track, i.name, i.ts) not in have:
            trace.add_instant(track, i.ts, i.name, i.cat, i.args)
    counters = {c.track: c for c in trace.counters}
    for c in scratch.counters:
        target = counters.get(mapping.get(c.track, -1))
        if target is None:
            continue
        seen = set(zip(target.ts, target.values)) if target.track in reused else set()
        for ts, v in zip(c.ts, c.values):
            if (ts, v) not in seen:
                target.add(ts, v)
    for f in scratch.flows:
        src, dst = slice_map.get(f.src), slice_map.get(f.dst)
        if src is not None and dst is not None:
            trace.add_flow(src, dst, f.name, f.args)
    return added, dup
