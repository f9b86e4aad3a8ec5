"""The Chrome JSON writer's events (``chrome``): slices lane by lane with their flow ends,
then instants, then counter samples, serialized in batches and joined by commas.

On a large trace with two processes to spare, a forked process serializes the last part of
them (by estimated cost) into a temporary file while this process serializes the first,
and its bytes are appended after this process's: each event is serialized alone of the
others, so the file is byte for byte the one a single process writes.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from bisect import bisect_left
from itertools import compress
from typing import IO, Any, Callable

import numpy as np

from ..forkpass import fork_pass
from ..model import SOURCE_BINDING, UNTRUSTED_FLOW, Trace
from ..slice_columns import SliceColumns, flow_ends, kept_columns, track_groups
from .flows import drawable, drawable_columns

BATCH_EVENTS = 10000
FLOW_CAT = "flow"
# Estimated costs, in 0.05 us (fitted to the large runs measured, docs/performance.md): a
# slice, and each of its args; a flow end; a counter sample.  Below PARALLEL_MIN_COST
# (0.25 s) a second process does not pay for its fork.
_SLICE_COST = 32
_ARG_COST = 13
_FLOW_END_COST = 20
_SAMPLE_COST = 12
PARALLEL_MIN_COST = 5_000_000
_EXACT = 1 << 53                # ns a float64 holds exactly
_COPY = 1 << 20                 # bytes of the second process's part copied at a time


def _flow_cat(name: str) -> str:
    """Untrusted dependencies get a category of their own (model.UNTRUSTED_FLOW)."""
    return "untrusted" if name == UNTRUSTED_FLOW else FLOW_CAT


def _flow_end(f, fid: int, ts_us: float, pid: int, tid: int) -> dict[str, Any]:
    name = f.name or FLOW_CAT
    return {"ph": "f", "bp": "e", "id": fid, "cat": _flow_cat(name), "name": name,
            "ts": ts_us, "pid": pid, "tid": tid}


def _by_track(track: np.ndarray) -> dict[int, array]:
    """Slice indexes per track (in index order), from the slices' track column."""
    keys, order, bounds = track_groups(track)
    return {t: array("q", order[a:b].tobytes()) for t, a, b in zip(keys, bounds, bounds[1:])}


def _group_flows(ends: Any, n_slices: int) -> tuple[array, array]:
    """Flow ids (1..N, in order) grouped by the slice each ends at (``ends``: a slice
    index per flow): ids of slice i are ``ids[start[i]:start[i + 1]]``."""
    at = np.array(ends, dtype=np.int64)
    start = np.zeros(n_slices + 1, dtype=np.int64)
    start[1:] = np.cumsum(np.bincount(at, minlength=n_slices))
    ids = np.argsort(at, kind="stable") + 1         # (stable: ids in order per slice)
    return array("q", start.tobytes()), array("q", ids.astype(np.int64).tobytes())


class Plan:
    """What the events are made of, worked out before any is written (and before a fork,
    so that both processes share it): each lane's slices, the flows that can be drawn
    grouped by their source and destination slices, the instants' times per lane."""

    def __init__(self, trace: Trace, pid_of: dict[int, int], tid_of: dict[int, int],
                 counter_name: dict[int, str], warnings: list[str]):
        self.trace = trace
        self.pid_of, self.tid_of, self.counter_name = pid_of, tid_of, counter_name
        self.base = 0                       # (the trace's time 0: the writer sets it)
        slices = self.slices = trace.slices
        # the slices' columns, where every time fits int64 (else None: one at a time)
        self.cols = cols = kept_columns(slices)
        if cols is None or not self._flows_by_columns(trace, cols):
            self._by_slice(trace, warnings)
            ends = ([f.src for f in self.flows], [f.dst for f in self.flows])
        else:
            self.by_track = _by_track(cols.track)
            ends = self._ends
        flows = self.flows
        n_slices = len(slices)
        self.out_start, self.out_ids = _group_flows(ends[0], n_slices)
        self.in_start, self.in_ids = _group_flows(ends[1], n_slices)
        instant_ts: dict[int, list[int]] = {}
        if flows:
            for inst in trace.instants:
                instant_ts.setdefault(inst.track, []).append(inst.ts)
            for v in instant_ts.values():
                v.sort()
        self.instant_ts = instant_ts

    def _by_slice(self, trace: Trace, warnings: list[str]) -> None:
        """``by_track`` and the flows drawn, one slice and one flow at a time."""
        slices = self.slices
        n_slices = len(slices)
        # Compact indexes (arrays of machine ints, not lists of int objects): the writer's
        # own memory stays a small fraction of the model's.
        by_track: dict[int, array] = {}
        for i, s in enumerate(slices):
            a = by_track.get(s.track)
            if a is None:
                a = by_track[s.track] = array("q")
            a.append(i)
        self.by_track = by_track
        # Flows, attached to the slices they start from / end at: flow ids (1..N, model
        # order) grouped by source and by destination slice, CSR style.
        flows = self.flows = []
        not_drawn = 0
        for flow in trace.flows:
            if 0 <= flow.src < n_slices and 0 <= flow.dst < n_slices:
                if drawable(slices[flow.src], slices[flow.dst], "chrome"):
                    flows.append(flow)
                else:
                    not_drawn += 1
            else:
                warnings.append(f"chrome json: flow {flow.src} -> {flow.dst} refers to a "
                                "missing slice; not written")
        self.not_drawn = not_drawn

    def _flows_by_columns(self, trace: Trace, cols: SliceColumns) -> bool:
        """The flows drawn (``flows.drawable_columns``) from the slices' columns; False,
        with nothing set, where an end is not a slice's index (``_by_slice`` then says
        which)."""
        ends = flow_ends(trace.flows, len(self.slices))
        if ends is None:
            return False
        src, dst = ends
        ok = drawable_columns(cols.ts[src], cols.ts[dst], cols.end[dst], "chrome")
        self.flows = list(compress(trace.flows, ok.tolist()))
        self.not_drawn = len(ok) - len(self.flows)
        self._ends = (src[ok], dst[ok])
        return True

    def lane_times(self, track_id: int) -> tuple[list[int], list[float], list[float]]:
        """A lane's slices in (ts, -dur) order (a stable sort), and each one's start
        (from the trace's time 0) and length in us: ``(ns - base) / 1000`` and
        ``dur / 1000``, by numpy where every value is below 2^53 ns (a float64 holds them
        exactly, and one division rounds as Python's does), else one slice at a time."""
        slices, base, cols = self.slices, self.base, self.cols
        if cols is not None:
            at = np.frombuffer(self.by_track[track_id], dtype=np.int64)
            start, dur = cols.ts[at] - base, cols.end[at] - cols.ts[at]
            order = np.lexsort((-dur, start))
            start, dur = start[order], dur[order]
            ids = at[order].tolist()
            if not len(at) or max(int(np.abs(start).max()), int(np.abs(dur).max())) < _EXACT:
                return ids, (start / 1000).tolist(), (dur / 1000).tolist()
        else:
            ids = sorted(self.by_track[track_id],
                         key=lambda i: (slices[i].ts, -slices[i].dur))
        return (ids, [(slices[i].ts - base) / 1000 for i in ids],
                [slices[i].dur / 1000 for i in ids])

    def items(self) -> list[tuple[str, Any, int]]:
        """What is written, in the file's order, each with its estimated cost: every lane's
        slices (tracks in walk order) with their flow ends, the instants, each counter's
        samples."""
        ends = np.diff(np.frombuffer(self.out_start, dtype=np.int64)) + \
            np.diff(np.frombuffer(self.in_start, dtype=np.int64))
        out: list[tuple[str, Any, int]] = []
        slices = self.slices
        for track_id, _depth in self.trace.walk():
            ids = self.by_track.get(track_id)
            if ids:
                at = np.frombuffer(ids, dtype=np.int64)
                first = slices[ids[0]]      # (its args: a lane's slices' are alike)
                each = _SLICE_COST + _ARG_COST * (len(first.args or ()) +
                                                  len(first.shared_args or ()))
                out.append(("lane", (track_id, 0, len(ids)),
                            each * len(ids) + _FLOW_END_COST * int(ends[at].sum())))
        if self.trace.instants:
            out.append(("instants", None, _SLICE_COST * len(self.trace.instants)))
        out.extend(("counter", c, _SAMPLE_COST * len(c.ts)) for c in self.trace.counters)
        return out


class Events:
    """Serializes events in batches through ``write`` (``started``: something is written
    before them, so the first batch starts with a comma); counts them."""

    def __init__(self, plan: Plan, write: Callable[[bytes], Any], started: bool,
                 dumps: Callable[[list], bytes],
                 progress: Callable[[int], None] | None = None):
        self.plan = plan
        self.write = write
        self.started = started
        self.dumps = dumps
        self.progress = progress
        self.batch: list[dict] = []
        self.counts = {"events": 0, "slices": 0, "instants": 0, "counter_samples": 0}

    def flush(self) -> None:
        batch = self.batch
        if not batch:
            return
        data = self.dumps(batch)
        self.write(b"," + data if self.started else data)
        self.started = True
        self.counts["events"] += len(batch)
        batch.clear()

    def run(self, items: list[tuple[str, Any, int]]) -> None:
        for kind, key, _ in items:
            if kind == "lane":
                self.lane(key)
            elif kind == "instants":
                self.instants()
            else:
                self.counter(key)
        self.flush()

    def lane(self, part: tuple[int, int, int]) -> None:
        """The slices of a lane (``part``: the track, and the first and the end of those
        written here in (ts, -dur) order) in that order, each with the flow ends that belong
        after it (``chrome``'s module docstring says where each goes)."""
        track_id, first, stop = part
        plan = self.plan
        slices, flows, base, batch = plan.slices, plan.flows, plan.base, self.batch
        in_start, in_ids = plan.in_start, plan.in_ids
        out_start, out_ids = plan.out_start, plan.out_ids
        pid_of, tid_of = plan.pid_of, plan.tid_of
        ids, ts_us, dur_us = plan.lane_times(track_id)
        pid = pid_of[track_id]
        tid = tid_of[track_id]
        inst = plan.instant_ts.get(track_id, ())
        last = len(ids) - 1
        for k in range(first, stop):
            i = ids[k]
            s = slices[i]
            ts = s.ts
            ev = {"ph": "X", "name": s.name}
            if s.cat:
                ev["cat"] = s.cat
            ev["ts"] = ts_us[k]
            ev["dur"] = dur_us[k]
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
            self.counts["slices"] += 1
            if len(batch) >= BATCH_EVENTS:
                self.flush()
                if self.progress:
                    self.progress(self.counts["slices"])

    def instants(self) -> None:
        plan = self.plan
        base, batch = plan.base, self.batch
        for inst in plan.trace.instants:
            ev = {"ph": "i", "s": "t", "name": inst.name}
            if inst.cat:
                ev["cat"] = inst.cat
            ev["ts"] = (inst.ts - base) / 1000
            ev["pid"] = plan.pid_of[inst.track]
            ev["tid"] = plan.tid_of[inst.track]
            if inst.args:
                ev["args"] = inst.args
            batch.append(ev)
            self.counts["instants"] += 1
            if len(batch) >= BATCH_EVENTS:
                self.flush()

    def counter(self, counter) -> None:
        plan = self.plan
        base, batch = plan.base, self.batch
        name = plan.counter_name[counter.track]
        pid = plan.pid_of[counter.track]
        for ts, value in zip(counter.ts, counter.values):
            batch.append({"ph": "C", "name": name, "ts": (ts - base) / 1000, "pid": pid,
                          "args": {"value": value}})
            if len(batch) >= BATCH_EVENTS:
                self.flush()
        self.counts["counter_samples"] += len(counter.ts)


def write_events(plan: Plan, events: Events, workers: int) -> None:
    """Every event of ``plan`` through ``events``: the last part (about half the estimated
    cost) in a forked process where ``workers`` > 1 and the trace is large, appended
    after this process's part; else (or where it cannot fork, or its part fails) here."""
    items = plan.items()
    total = sum(cost for *_, cost in items)
    mine, theirs = (_halves(items, total) if workers > 1 and total >= PARALLEL_MIN_COST
                    and hasattr(os, "fork") else (items, []))
    if not mine or not theirs:
        events.run(items)
        return
    with tempfile.TemporaryFile() as part:
        def second() -> dict[str, int]:
            there = Events(plan, part.write, True, events.dumps)
            there.run(theirs)
            part.flush()
            return there.counts

        helper = fork_pass(second)
        if helper is None:
            events.run(items)
            return
        try:
            events.run(mine)
            counts = helper.result()
        finally:
            helper.abandon()
        if counts is None:                  # its part failed: written here instead
            events.run(theirs)
            return
        _append(events, part, counts)


def _halves(items: list[tuple[str, Any, int]], total: int) -> tuple[list, list]:
    """``items`` cut where the estimated cost reaches half of ``total``: inside the lane
    that crosses it (its slices in their order, in proportion), else after the item."""
    acc = 0
    for k, (kind, key, cost) in enumerate(items):
        if 2 * (acc + cost) <= total:
            acc += cost
            continue
        if kind != "lane":
            cut = k + (2 * acc + cost <= total)     # (the larger half decides its side)
            return items[:cut], items[cut:]
        track_id, first, stop = key
        at = first + round((stop - first) * (total / 2 - acc) / cost)
        head = [("lane", (track_id, first, at), 0)] if at > first else []
        tail = [("lane", (track_id, at, stop), 0)] if at < stop else []
        return items[:k] + head, tail + items[k + 1:]
    return items, []


def _append(events: Events, part: IO[bytes], counts: dict[str, int]) -> None:
    """The forked process's part (``part``: its batches, each after a comma) after this
    process's events, and its counts added."""
    part.seek(0)
    first = True
    while True:
        data = part.read(_COPY)
        if not data:
            break
        if first and not events.started:
            data = data[1:]                 # (nothing before it: no comma)
        first = False
        events.write(data)
    if not first:
        events.started = True
    for key, n in counts.items():
        events.counts[key] += n
    if events.progress:
        events.progress(events.counts["slices"])
