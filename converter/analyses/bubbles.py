"""Bubbles: the idle gaps of every lane, by cause, with per-lane and per-run figures.

Definitions (docs/analyses.md):

* the run start ``T0`` is the first start over the analysed slices (slices with invented
  times, PyPTO's fake tasks, are left out);
* a lane's busy time is the union of its slices; its bubbles are the gaps in that union from
  ``T0`` to the lane's last end (nothing after the last end: that is the lane's tail);
* with a task graph, a task's *ready time* is the latest end of its predecessors, and at
  least ``T0``.  A gap ``[a, b)`` before task ``t`` splits at ``r = max(a, ready(t))``:
  ``[a, r)`` is **wait predecessor** (inputs not ready), ``[r, b)`` **wait schedule** (ready,
  not yet dispatched).  Without a graph every gap is **idle**;
* where the reader knows when a task was dispatched (PICKUP: dispatch = start - pickup), the
  part of a gap after ``d = max(r, dispatch)`` is **wait start** (dispatched, not yet
  started): ``[r, d)`` stays wait schedule (idle without a graph);
* a dependency the reader marks untrusted (``model.UNTRUSTED_FLOW``: bound to the wrong
  execution by PyPTO's HUB seqNo quirk, or ending after its destination starts) is left out
  of the ready time (``Timeline.preds`` holds none), and so is one ending after its
  destination starts that no reader marked (it cannot have held the destination back); both
  are counted (``ignored_dependencies``: tasks with such a dependency), so no wait is ever
  negative.

These are PyPTO's own ``bubble_analysis.log`` definitions (format reference 7.2) with that
one exception; ``pypto_check`` recomputes PyPTO's figures verbatim and compares them.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import slice_columns
from ..model import MARKER, PICKUP, Trace
from . import lane_columns
from .gaps import Gaps
from .timeline import Timeline

# a step function's samples as columns (timestamps, values): ``step_series``'s (a list
# or an ``array("q")`` each)
Series = tuple[Sequence[int], Sequence[int]]

WAIT_PREDECESSOR = "wait predecessor"
WAIT_SCHEDULE = "wait schedule"
IDLE = "idle"
WAIT_START = "wait start"       # dispatched, not yet started (PICKUP)
CAUSES = (WAIT_PREDECESSOR, WAIT_SCHEDULE, IDLE, WAIT_START)   # by a gap's cause code 0..3


def us(ns: int | float | None) -> float | None:
    return None if ns is None else round(ns / 1000, 3)


def pct(num: float, den: float) -> float | None:
    return None if not den else round(100.0 * num / den, 3)


@dataclass
class LaneFigures:
    name: str
    path: str
    kind: str
    tasks: int
    first_start: int
    last_end: int
    busy: int = 0
    wait: int = 0                 # every gap from T0 to the last end
    wait_schedule: int = 0
    wait_predecessor: int = 0
    idle: int = 0                 # gaps of lanes without a task graph
    wait_start: int = 0           # dispatched, not yet started (PICKUP)
    gaps: int = 0
    ignored_dependencies: int = 0  # tasks with a dependency ending after they start
    makespan: int = 0             # the run's, for utilization
    virtual: bool = False         # a pseudo-core of markers (PyPTO HUB): not in run totals
    pickup: bool = False          # the run has PICKUP: wait start is a figure

    @property
    def span(self) -> int:        # PyPTO's "Core Total Work Time"
        return self.busy + self.wait

    @property
    def utilization_pct(self) -> float | None:
        return pct(self.busy, self.makespan)

    @property
    def bubble_rate_pct(self) -> float | None:
        return pct(self.wait, self.span)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": self.path, "kind": self.kind, "tasks": self.tasks,
            "first_start_ns": self.first_start, "last_end_ns": self.last_end,
            "span_us": us(self.span), "busy_us": us(self.busy), "total_wait_us": us(self.wait),
            "wait_schedule_us": us(self.wait_schedule),
            "wait_predecessor_us": us(self.wait_predecessor), "idle_us": us(self.idle),
            "tail_us": us(self.makespan - self.span), "gaps": self.gaps,
            "utilization_pct": self.utilization_pct, "bubble_rate_pct": self.bubble_rate_pct,
            "ignored_dependencies": self.ignored_dependencies, "pseudo_core": self.virtual,
            **({"wait_start_us": us(self.wait_start)} if self.pickup else {}),
        }


@dataclass
class Totals:
    """Figures summed over a set of lanes (a kind, or the whole run)."""

    name: str
    lanes: int                    # lanes of this kind in the trace, idle ones included
    lanes_used: int = 0
    tasks: int = 0
    busy: int = 0
    wait: int = 0
    wait_schedule: int = 0
    wait_predecessor: int = 0
    idle: int = 0
    wait_start: int = 0
    span: int = 0                 # Σ lane spans
    makespan: int = 0
    first_start: int | None = None
    last_end: int | None = None
    virtual: bool = False
    pickup: bool = False

    def add(self, f: LaneFigures) -> None:
        self.lanes_used += 1
        self.tasks += f.tasks
        self.busy += f.busy
        self.wait += f.wait
        self.wait_schedule += f.wait_schedule
        self.wait_predecessor += f.wait_predecessor
        self.idle += f.idle
        self.wait_start += f.wait_start
        self.pickup = self.pickup or f.pickup
        self.span += f.span
        if self.first_start is None or f.first_start < self.first_start:
            self.first_start = f.first_start
        if self.last_end is None or f.last_end > self.last_end:
            self.last_end = f.last_end

    @property
    def utilization_pct(self) -> float | None:
        """Busy time over (lanes that ran tasks x run makespan)."""
        return pct(self.busy, self.lanes_used * self.makespan)

    @property
    def utilization_all_lanes_pct(self) -> float | None:
        """Busy time over (every lane of the kind, idle ones too, x run makespan)."""
        return pct(self.busy, self.lanes * self.makespan)

    @property
    def bubble_rate_pct(self) -> float | None:
        return pct(self.wait, self.span)

    @property
    def duration(self) -> int:
        return 0 if self.first_start is None else self.last_end - self.first_start

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "lanes": self.lanes, "lanes_used": self.lanes_used,
            "tasks": self.tasks, "duration_us": us(self.duration),
            "busy_us": us(self.busy), "total_wait_us": us(self.wait),
            "wait_schedule_us": us(self.wait_schedule),
            "wait_predecessor_us": us(self.wait_predecessor), "idle_us": us(self.idle),
            "utilization_pct": self.utilization_pct,
            "utilization_all_lanes_pct": self.utilization_all_lanes_pct,
            "bubble_rate_pct": self.bubble_rate_pct,
            "wait_schedule_share_pct": pct(self.wait_schedule, self.wait),
            "wait_predecessor_share_pct": pct(self.wait_predecessor, self.wait),
            "pseudo_core": self.virtual,
            **({"wait_start_us": us(self.wait_start),
                "wait_start_share_pct": pct(self.wait_start, self.wait)} if self.pickup else {}),
        }


@dataclass
class Bubbles:
    """Everything the bubble analysis found; ``gaps`` and the series feed the derived tracks."""

    computed: bool
    reason: str | None
    cause_model: str              # "task graph" or "idle"
    lanes: list[LaneFigures] = field(default_factory=list)
    kinds: list[Totals] = field(default_factory=list)
    run: Totals | None = None
    ignored_dependencies: int = 0
    # (lane index, start, end, cause code 0..3, next slice, waited-for slice or -1)
    # (``gaps.Gaps``: a sequence of those tuples, some held as columns)
    gaps: Gaps = field(default_factory=Gaps)
    # (kind, group of the lanes) -> (timestamps, values) of the busy-lanes step function of
    # that group's lanes (``busy_series``: a kind's over all its groups)
    busy_by_group: dict[tuple[str, int | None], Series] = field(
        default_factory=dict)
    # kind -> (timestamps, values) of the ready-tasks step function
    ready_series: dict[str, Series] = field(default_factory=dict)
    lane_prev: dict[int, int] = field(default_factory=dict)   # slice -> previous on its lane

    def busy_series(self, kind: str) -> Series:
        """The busy-lanes step function of every lane of ``kind``: its groups' added up."""
        parts = [s for (k, _), s in self.busy_by_group.items() if k == kind]
        if len(parts) == 1:
            return parts[0]
        delta: dict[int, int] = {}
        for times, values in parts:
            prev = 0
            for t, v in zip(times, values):
                delta[t] = delta.get(t, 0) + v - prev
                prev = v
        return step_series(delta, parts[0][0][0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "computed": self.computed, "reason": self.reason, "cause_model": self.cause_model,
            "run": self.run.to_dict() if self.run else None,
            "kinds": [k.to_dict() for k in self.kinds],
            "lanes": [lane.to_dict() for lane in self.lanes],
            "ignored_dependencies": self.ignored_dependencies,
        }


def compute_bubbles(trace: Trace, tl: Timeline) -> Bubbles:
    if tl.skipped is not None:
        return Bubbles(False, tl.skipped, "none")
    if not tl.lanes:
        return Bubbles(False, "no slices on any lane", "none")
    slices = trace.slices
    t0 = tl.start
    makespan = tl.makespan
    preds = tl.preds
    untrusted = tl.untrusted
    result = Bubbles(True, None, "task graph" if tl.has_graph else IDLE)
    gaps = result.gaps
    lane_prev = result.lane_prev
    busy_delta: dict[tuple, dict[int, int]] = {}   # (kind, group) -> ts -> change of busy lanes
    ready_delta: dict[str, dict[int, int]] = {}    # kind -> ts -> change of ready tasks
    busy_blocks: dict[tuple, list] = {}            # (kind, group) -> busy blocks (lane_columns)
    ignored_total = 0
    pickup = tl.has_pickup
    ready_blocks: dict[str, list] = {}             # kind -> ready changes (graph_lane)
    # every slice's end, for graph_lane (the conversion's columns, where kept), and as a
    # list for the loop (made when a lane needs it)
    ends: list[int] | None = None
    cols = slice_columns.kept_columns(slices, make=False) if tl.has_graph else None
    end_column = cols.end if cols is not None else None
    if tl.has_graph and end_column is None:
        ends = [s.ts + s.dur for s in slices]
        try:
            end_column = np.array(ends, dtype=np.int64)
        except OverflowError:
            pass
    multi = tl.node_of                      # slices of tasks of several slices
    firsts = set(tl.node_first.values())
    # the lanes of a graph, all at once
    batched = [li for li, lane in enumerate(tl.lanes) if lane.graph] \
        if end_column is not None else []
    batch = lane_columns.graph_lanes(slices, batched, t0, end_column, tl, pickup)
    in_batch = {li: k for k, li in enumerate(batched)} if batch is not None else {}
    for li, lane in enumerate(tl.lanes):
        ids = lane.slices
        graph = lane.graph
        bd = busy_delta.setdefault((lane.kind, lane.group), {})
        bget = bd.get
        rd = ready_delta.setdefault(lane.kind, {}) if graph else {}
        # a column at a time where there are no dispatch times (None: times past int64,
        # one at a time below)
        got = None
        blocks = busy_blocks.setdefault((lane.kind, lane.group), [])
        k = in_batch.get(li)
        if k is not None:
            gaps.extend(batch.rows[batch.gap_at[k]:batch.gap_at[k + 1]])
            p0, p1 = batch.prev_at[k], batch.prev_at[k + 1]
            lane_prev.update(zip(batch.prev_keys[p0:p1], batch.prev_values[p0:p1]))
            ready_blocks.setdefault(lane.kind, [])
            got = batch.figures[k]
        elif not graph and not pickup:
            got = lane_columns.idle_lane(slices, ids, t0, li, gaps, blocks, lane.times)
        elif graph and end_column is not None:
            got = lane_columns.graph_lane(slices, ids, t0, li, gaps, blocks,
                                          ready_blocks.setdefault(lane.kind, []), end_column,
                                          tl, lane_prev, lane.times, pickup)
        if got is not None:
            busy, wait, ws, wp, idle, ngaps, ignored, cur, ws0 = got
            result.lanes.append(LaneFigures(
                lane.name, lane.path, lane.kind, len(ids), slices[ids[0]].ts, cur,
                busy=busy, wait=wait, wait_schedule=ws, wait_predecessor=wp, idle=idle,
                wait_start=ws0, gaps=ngaps, ignored_dependencies=ignored, makespan=makespan,
                virtual=lane.virtual, pickup=pickup))
            ignored_total += ignored
            continue
        rget = rd.get
        if graph and ends is None:
            ends = end_column.tolist()
        cur = t0                  # end of the busy union so far
        cur_slice = -1            # the slice that ends there
        block = -1                # start of the current busy block
        busy = wait = wp = ws = idle = ngaps = ignored = 0
        ready = t0
        by = -1
        ws0 = 0
        for i in ids:
            s = slices[i]
            ts = s.ts
            end = ts + s.dur
            sent = ts - s.arg(PICKUP, 0) if pickup else ts    # dispatched
            if graph:
                ready = t0
                by = -1
                plist = preds.get(i)
                late = False
                if plist:
                    for p in plist:
                        pe = ends[p]
                        if pe > ts:             # a late edge the reader did not mark: it
                            late = True         # cannot have held the task back
                        elif pe > ready:
                            ready = pe
                            by = p
                if late or i in untrusted:
                    ignored += 1
                if cur <= ts and cur_slice >= 0:
                    lane_prev[i] = cur_slice
                if ready < ts and s.cat != MARKER and (i not in multi or i in firsts):
                    # (markers never queue, as in PyPTO's ReadyCount; a task of several
                    # slices counts once, until its first start)
                    rd[ready] = rget(ready, 0) + 1
                    rd[ts] = rget(ts, 0) - 1
            if ts > cur:
                if block >= 0:
                    bd[block] = bget(block, 0) + 1
                    bd[cur] = bget(cur, 0) - 1
                block = ts
                ngaps += 1
                if graph:
                    r = ready if ready > cur else cur
                    if r > cur:
                        gaps.append((li, cur, r, 0, i, by))
                        wp += r - cur
                    cause = 1
                else:
                    r = cur
                    cause = 2
                d = sent if sent > r else r
                if d > ts:          # a negative pickup (clock skew): not dispatched-waiting
                    d = ts
                if d > r:
                    gaps.append((li, r, d, cause, i, -1))
                    if graph:
                        ws += d - r
                    else:
                        idle += d - r
                if ts > d:
                    gaps.append((li, d, ts, 3, i, -1))
                    ws0 += ts - d
                wait += ts - cur
            elif block < 0:
                block = ts        # the lane starts at T0 exactly
            if end > cur:
                busy += end - (ts if ts > cur else cur)
                cur = end
                cur_slice = i
        bd[block] = bget(block, 0) + 1
        bd[cur] = bget(cur, 0) - 1
        result.lanes.append(LaneFigures(
            lane.name, lane.path, lane.kind, len(ids), slices[ids[0]].ts, cur, busy=busy,
            wait=wait, wait_schedule=ws, wait_predecessor=wp, idle=idle, wait_start=ws0,
            gaps=ngaps, ignored_dependencies=ignored, makespan=makespan, virtual=lane.virtual,
            pickup=pickup))
        ignored_total += ignored
    result.ignored_dependencies = ignored_total
    if batch is not None:
        for key, pair in batch.blocks.items():
            busy_blocks[key].append(pair)
        for kind, pair in batch.ready.items():
            ready_blocks[kind].append(pair)
    kinds: dict[str, Totals] = {}
    for fig in result.lanes:
        k = kinds.get(fig.kind)
        if k is None:
            k = kinds[fig.kind] = Totals(fig.kind, tl.lane_counts.get(fig.kind, 0),
                                         makespan=makespan)
        k.virtual = k.virtual and fig.virtual if k.tasks else fig.virtual
        k.add(fig)
    # Run totals leave pseudo-cores out (as PyPTO's AICore Utilization leaves HUB out).
    real = [k for k in kinds.values() if not k.virtual] or list(kinds.values())
    run = Totals("all lanes", sum(k.lanes for k in real), makespan=makespan, pickup=pickup)
    counted = {k.name for k in real}
    for fig in result.lanes:
        if fig.kind in counted:
            run.add(fig)
    result.kinds = list(kinds.values())
    result.run = run
    for key, delta in busy_delta.items():
        result.busy_by_group[key] = step_series(delta, t0, busy_blocks.get(key))
    for kind, delta in ready_delta.items():
        changes = ready_blocks.get(kind)
        if delta or changes and any(len(starts) for starts, _ in changes):
            result.ready_series[kind] = step_series(delta, t0, changes)
    return result


def step_series(delta: dict[int, int], t0: int,
                blocks: list | None = None) -> Series:
    """Samples of a step function from its changes ``delta`` (ts -> change; and +1 at each
    start, -1 at each end of ``blocks``, (starts, ends) int64 arrays), starting at ``t0``
    with 0, as columns (timestamps, values): one sample per timestamp where the value
    changes.  With numpy, the columns ``array("q")``s (8 bytes a sample, where a list
    holds an int object for each time: a 1 M-task database has 1.6 M samples); ints
    outside int64 one change at a time, the columns lists."""
    if delta and set(map(type, delta.values())) != {int}:
        return _step_series_each(_add_blocks(delta, blocks), t0)
    try:
        times = np.fromiter(delta.keys(), dtype=np.int64, count=len(delta))
        changes = np.fromiter(delta.values(), dtype=np.int64, count=len(delta))
        np.int64(t0)
    except (OverflowError, TypeError):
        return _step_series_each(_add_blocks(delta, blocks), t0)
    if blocks:
        times = np.concatenate([times, *(x for pair in blocks for x in pair)])
        changes = np.concatenate([changes, *(np.full(len(x), 1 - 2 * k, dtype=np.int64)
                                             for pair in blocks for k, x in enumerate(pair))])
    if not len(times):
        return array("q", [t0]), array("q", [0])
    if int(changes.min()) * len(changes) <= -(1 << 62) or \
            int(changes.max()) * len(changes) >= 1 << 62:    # a sum could pass int64
        return _step_series_each(_add_blocks(delta, blocks), t0)
    order = np.argsort(times, kind="stable")
    times = times[order]
    value = np.cumsum(changes[order])
    if blocks:                      # one change per time: the last of equal times
        last_of = np.append(times[1:] != times[:-1], True)
        times, value = times[last_of], value[last_of]
    last = np.concatenate(([0], value[:-1]))
    at_t0 = times == t0
    keep = ~at_t0 & (value != last)
    first = int(value[at_t0][0]) if at_t0.any() else 0
    ts, values = array("q", [t0]), array("q", [first])
    ts.frombytes(times[keep].tobytes())
    values.frombytes(value[keep].tobytes())
    return ts, values


def _add_blocks(delta: dict[int, int], blocks: list | None) -> dict[int, int]:
    """``delta`` with +1 at each start and -1 at each end of ``blocks`` (in place)."""
    get = delta.get
    for starts, ends in blocks or ():
        for start, stop in zip(starts.tolist(), ends.tolist()):
            delta[start] = get(start, 0) + 1
            delta[stop] = get(stop, 0) - 1
    return delta


def _step_series_each(delta: dict[int, int], t0: int) -> Series:
    """``step_series`` one change at a time."""
    times = [t0]
    values = [0]
    value = last = 0
    for t, change in sorted(delta.items()):
        value += change
        if t == t0:
            values[0] = value
        elif value != last:
            times.append(t)
            values.append(value)
        last = value
    return times, values
