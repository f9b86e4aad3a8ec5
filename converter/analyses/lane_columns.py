"""The bubbles of a lane a column at a time (numpy), for ``bubbles.compute_bubbles``: a lane
without a task graph (every gap idle), without dispatch times; and one with a graph (gaps
split at the tasks' ready times, and where the run has them, at their dispatch times).
Each gives the gaps, figures, busy blocks and ready-task changes ``compute_bubbles``' loop
gives slice by slice (tests/test_bubbles_columns.py checks them against it); None where a
time is outside int64 (the loop then).
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter, eq
from typing import Any

import numpy as np

from ..model import MARKER, PICKUP
from ..slice_columns import SliceColumns, start_order, times_of
from .gaps import Gaps

_TS, _DUR, _CAT = attrgetter("ts"), attrgetter("dur"), attrgetter("cat")
_INTS = frozenset({int, bool})


def lane_order(slices: list, ids: list[int], nested: bool,
               cols: SliceColumns | None = None) -> tuple | None:
    """A lane's slices ``ids`` in the order the analyses walk them, a column at a time: by
    start, the longer first at one start where the lane nests (calls, or overlap lanes),
    else by start alone (stable: as given at one start).  Returns (the ids in that order,
    whether they are all markers, the first start, the last end, (starts, ends) in that
    order), or None where a time is outside ±2^62 (the caller sorts the slices).  ``cols``:
    every slice's columns, where kept (``slice_columns.kept_columns``)."""
    at = np.array(ids, dtype=np.int64)
    if cols is not None:
        ts, end = cols.ts[at], cols.end[at]
    else:
        times = times_of(list(map(slices.__getitem__, ids)))
        if times is None:
            return None
        ts, end = times
    # (all markers: the first tells, mostly, without reading the others: a database's
    # lanes hold 2 M slices)
    markers = slices[ids[0]].cat == MARKER and all(
        map(eq, map(_CAT, map(slices.__getitem__, ids)), repeat(MARKER)))
    order = start_order(ts, end - ts) if nested else np.argsort(ts, kind="stable")
    ts, end = ts[order], end[order]
    return at[order].tolist(), markers, int(ts[0]), int(end.max()), (ts, end)


def _union(slices: list, ids: list[int], t0: int, times: Any = None) -> tuple | None:
    """Of ``ids`` in order: (starts, ends, the union's end before each slice from ``t0``,
    the lane's last end, the places of the slices that start after that end (a gap before
    them), the lane's busy time), or None where a time or an end is outside int64.
    ``times``: their (starts, ends) where known (``lane_order``)."""
    n = len(ids)
    try:
        if times is not None:
            ts = times[0]
            dur = times[1] - ts
        else:
            at = slices.__getitem__
            ts = np.fromiter(map(_TS, map(at, ids)), dtype=np.int64, count=n)
            dur = np.fromiter(map(_DUR, map(at, ids)), dtype=np.int64, count=n)
        np.int64(t0)
    except (OverflowError, TypeError):
        return None
    if int(ts.max()) + int(dur.max()) >= 1 << 63 or int(dur.min()) < 0:
        return None
    end = ts + dur
    before = np.maximum.accumulate(np.concatenate(([t0], end[:-1])))
    busy = int(np.maximum(end - np.maximum(ts, before), 0).sum())
    return (ts, end, before, max(int(before[-1]), int(end[-1])), np.flatnonzero(ts > before),
            busy)


def _busy_blocks(ts, before, at_gap, last: int) -> tuple[Any, Any]:
    """The lane's busy blocks (starts, ends): from the first start and from each gap's end,
    to the next gap's start or the last end."""
    later = 1 if len(at_gap) and at_gap[0] == 0 else 0
    return (np.concatenate((ts[:1], ts[at_gap[later:]])),
            np.concatenate((before[at_gap[later:]], [last])))


def idle_lane(slices: list, ids: list[int], t0: int, li: int, gaps: Gaps,
              blocks: list, times: Any = None) -> tuple[int, ...] | None:
    """``bubbles.compute_bubbles``' loop for a lane without a task graph or dispatch times, a
    column at a time (numpy): every gap in the union of its slices (in ``ids``' order)
    from ``t0`` is idle.  Adds the gaps to ``gaps`` (as columns) and the busy blocks (starts, ends) to
    ``blocks``; returns the lane's figures as ``graph_lane`` does, or None where a time or
    an end is outside int64."""
    got = _union(slices, ids, t0, times)
    if got is None:
        return None
    ts, end, before, last, at_gap, busy = got
    a, b = before[at_gap], ts[at_gap]
    idle = int((b - a).sum())
    gaps.add_columns(li, a, b, 2, np.array(ids, dtype=np.int64)[at_gap], -1)
    blocks.append(_busy_blocks(ts, before, at_gap, last))
    return busy, idle, 0, 0, idle, len(at_gap), 0, last, 0


def graph_lane(slices: list, ids: list[int], t0: int, li: int, gaps: list, blocks: list,
               ready_blocks: list, ends: Any, tl: Any, lane_prev: dict[int, int],
               times: Any = None, pickup: bool = False) -> tuple[int, ...] | None:
    """The loop's work for a lane of a task graph: a gap before a task splits at its ready
    time (the latest end of its predecessors that end by its start; ``ends``: every slice's
    end, an int64 array) into wait predecessor and wait schedule, and with ``pickup`` (the
    run's tasks say when they were dispatched: ``dispatched``) at its dispatch time into
    wait schedule and wait start.  Adds the gaps, the busy blocks, the ready-task changes
    (+1 at a task's ready time, -1 at its start: ``ready_blocks``) and each task's previous
    task on the lane (``lane_prev``); returns (busy, wait, wait schedule, wait predecessor,
    idle, gaps, ignored dependencies, last end, wait start), or None where a time is
    outside int64."""
    got = _union(slices, ids, t0, times)
    if got is None:
        return None
    ts, end, before, last, at_gap, busy = got
    sent = dispatched(slices, ids, ts) if pickup else None
    if pickup and sent is None:
        return None
    n = len(ids)
    pos = np.arange(n)
    who = np.array(ids, dtype=np.int64)
    # the slice that last pushed the union's end, before each slice
    made = np.concatenate(([-1], np.maximum.accumulate(np.where(end > before, pos, -1))[:-1]))
    follows = (before <= ts) & (made >= 0)
    lane_prev.update(zip(who[follows].tolist(), who[made[follows]].tolist()))
    ready, by, ignored, waits = _readiness(slices, ids, ts, t0, ends, tl)
    ready_blocks.append((ready[waits], ts[waits]))
    a, b, r, d, keep, columns = _split_gaps(before, ts, ready, by, who, at_gap, sent)
    gaps.extend(zip(repeat(li), *columns))
    blocks.append(_busy_blocks(ts, before, at_gap, last))
    return (busy, int((b - a).sum()), int((d - r).sum()), int((r - a).sum()), 0,
            len(at_gap), int(ignored.sum()), last, int((b - d).sum()))


def dispatched(slices: list, ids: list[int], ts: np.ndarray) -> np.ndarray | None:
    """When each task of ``ids`` (starting at ``ts``) was dispatched: its start less its
    ``PICKUP`` arg (0 where it has none); None where one is no int of int64 (the loop
    then: it keeps a float as a float)."""
    values = [slices[i].arg(PICKUP, 0) for i in ids]
    if not _INTS.issuperset(map(type, values)):
        return None
    try:
        pick = np.array(values, dtype=np.int64)
    except OverflowError:
        return None
    if len(ids) and (int(pick.min()) < -(1 << 62) or int(pick.max()) > 1 << 62):
        return None                 # (past what a difference of two times may be)
    return ts - pick


def _readiness(slices: list, ids: list[int], ts: np.ndarray, t0: int, ends: Any,
               tl: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of the tasks ``ids`` (starting at ``ts``) of a task graph (``tl``; ``ends``: every
    slice's end): each one's ready time, the latest predecessor end by its start (t0 at
    least); the predecessor that made it (the first with that end; -1: none); whether it
    has a dependency not followed (a predecessor ending after its start, or untrusted);
    and whether it waits ready (not a marker; a task of several slices once, until its
    first start)."""
    n = len(ids)
    plists = list(map(tl.preds.get, ids, repeat(())))
    counts = np.fromiter(map(len, plists), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(plists), dtype=np.int64, count=int(counts.sum()))
    seg = np.repeat(np.arange(n), counts)
    pe = ends[flat]
    late = pe > ts[seg]
    ok = ~late
    ready = np.full(n, t0, dtype=np.int64)
    np.maximum.at(ready, seg[ok], pe[ok])
    first = np.flatnonzero(ok & (pe == ready[seg]) & (pe > t0))
    with_by, at = np.unique(seg[first], return_index=True)
    by = np.full(n, -1, dtype=np.int64)
    by[with_by] = flat[first[at]]
    ignored = np.zeros(n, dtype=bool)
    ignored[seg[late]] = True
    if tl.untrusted:
        ignored |= np.fromiter(map(tl.untrusted.__contains__, ids), dtype=bool, count=n)
    waits = ready < ts
    waits &= np.fromiter((slices[i].cat != MARKER for i in ids), dtype=bool, count=n)
    if tl.node_of:
        multi, firsts = tl.node_of, set(tl.node_first.values())
        waits &= np.fromiter((i not in multi or i in firsts for i in ids), dtype=bool,
                             count=n)
    return ready, by, ignored, waits


def _split_gaps(before: np.ndarray, ts: np.ndarray, ready: np.ndarray, by: np.ndarray,
                who: np.ndarray, at_gap: np.ndarray, sent: np.ndarray | None = None) -> tuple:
    """The gaps before the slices at ``at_gap``, each split at its task's ready time and
    its dispatch time (``sent``; None: none, the task's start): [end so far, ready) wait
    predecessor, [ready, dispatched) wait schedule, [dispatched, start) wait start (the
    dispatch time kept between the ready time and the start).  Returns the gaps' (ends so
    far, starts, ready times, dispatch times), which of the three parts each has, as one
    mask of the parts in order, and the parts' columns as lists (start, end, cause, task,
    predecessor)."""
    a, b = before[at_gap], ts[at_gap]
    r = np.maximum(ready[at_gap], a)
    d = b if sent is None else np.minimum(np.maximum(sent[at_gap], r), b)
    m = len(at_gap)
    keep = np.stack((r > a, d > r, b > d), axis=1).ravel()
    return a, b, r, d, keep, (
        np.stack((a, r, d), axis=1).ravel()[keep].tolist(),
        np.stack((r, d, b), axis=1).ravel()[keep].tolist(),
        np.tile([0, 1, 3], m)[keep].tolist(), np.repeat(who[at_gap], 3)[keep].tolist(),
        np.stack((by[at_gap], np.full(m, -1), np.full(m, -1)), axis=1).ravel()[keep].tolist())


class GraphLanes:
    """``graph_lane`` of several lanes at once (``graph_lanes``): per lane (by its index
    among them) its figures, its gaps (``rows[gap_at[k]:gap_at[k + 1]]``) and its previous
    tasks (``prev_keys``/``prev_values`` from ``prev_at[k]`` to ``prev_at[k + 1]``); the
    busy blocks of the lanes of each (kind, group) and the ready-task changes of each kind,
    one (starts, ends) pair each (``step_series`` adds them up in any order)."""

    __slots__ = ("figures", "rows", "gap_at", "prev_keys", "prev_values", "prev_at",
                 "blocks", "ready")


def graph_lanes(slices: list, at: list[int], t0: int, ends: Any, tl: Any,
                pickup: bool = False) -> GraphLanes | None:
    """What ``graph_lane`` gives for each lane of ``tl.lanes`` at ``at`` (lanes of one task
    graph; ``ends``: every slice's end; ``pickup``: whether its tasks say when they were
    dispatched), computed over all of them at once: numpy's cost per call paid once, not
    once per lane (a run of 10,000 tasks has about 70 such lanes).  None where a time is
    outside int64 or a lane's times could not be told apart from the next lane's in one
    int64 (each lane then on its own)."""
    lanes = [tl.lanes[li] for li in at]
    if not lanes:
        return None
    try:
        np.int64(t0)
    except OverflowError:
        return None
    sizes = np.fromiter((len(lane.slices) for lane in lanes), dtype=np.int64, count=len(lanes))
    off = np.concatenate(([0], np.cumsum(sizes)))
    first, stop = off[:-1], off[1:]
    try:
        times = [lane.times if lane.times is not None else _times(slices, lane.slices)
                 for lane in lanes]
    except (OverflowError, TypeError):
        return None
    ts = np.concatenate([t[0] for t in times])
    dur = np.concatenate([t[1] for t in times]) - ts
    del times
    if any(a + b >= 1 << 63 for a, b in zip(np.maximum.reduceat(ts, first).tolist(),
                                            np.maximum.reduceat(dur, first).tolist())) \
            or int(dur.min()) < 0:
        return None
    end = ts + dur
    n, nl = len(ts), len(lanes)
    lane_of = np.repeat(np.arange(nl, dtype=np.int64), sizes)
    # the union's end before each slice (t0 at a lane's first), a running maximum per lane:
    # each lane's values moved above every earlier lane's, so one running maximum serves
    prev = np.empty(n, dtype=np.int64)
    prev[1:] = end[:-1]
    prev[first] = t0
    lo = min(t0, int(prev.min()))
    span = max(int(prev.max()), int(end.max())) - lo + 1     # (every sum below fits too)
    if nl * span >= 1 << 62:
        return None
    shift = lane_of * span
    before = np.maximum.accumulate(prev - lo + shift) - shift + lo
    del prev, shift
    lane_busy = _sums(np.maximum(end - np.maximum(ts, before), 0), off)
    last = np.maximum(before[stop - 1], end[stop - 1])
    pos = np.arange(n, dtype=np.int64)
    ids = list(chain.from_iterable(lane.slices for lane in lanes))
    who = np.array(ids, dtype=np.int64)
    # the slice that last pushed the union's end, before each slice (none from a lane before)
    made = np.empty(n, dtype=np.int64)
    made[1:] = np.maximum.accumulate(np.where(end > before, pos, -1))[:-1]
    made[first] = -1
    made[made < off[lane_of]] = -1
    follows = np.flatnonzero((before <= ts) & (made >= 0))
    out = GraphLanes()
    out.prev_keys, out.prev_values = who[follows].tolist(), who[made[follows]].tolist()
    out.prev_at = np.searchsorted(follows, off).tolist()
    del made, follows
    sent = dispatched(slices, ids, ts) if pickup else None
    if pickup and sent is None:
        return None
    ready, by, ignored, waits = _readiness(slices, ids, ts, t0, ends, tl)
    at_gap = np.flatnonzero(ts > before)
    gap_off = np.searchsorted(at_gap, off)
    a, b, r, d, keep, columns = _split_gaps(before, ts, ready, by, who, at_gap, sent)
    li = np.array(at, dtype=np.int64)
    out.rows = list(zip(np.repeat(li[lane_of[at_gap]], 3)[keep].tolist(), *columns))
    out.gap_at = _sums(keep.reshape(-1, 3).sum(axis=1), gap_off, True).tolist()
    out.figures = list(zip(lane_busy.tolist(), _sums(b - a, gap_off).tolist(),
                           _sums(d - r, gap_off).tolist(), _sums(r - a, gap_off).tolist(),
                           repeat(0), np.diff(gap_off).tolist(), _sums(ignored, off).tolist(),
                           last.tolist(), _sums(b - d, gap_off).tolist()))
    # busy blocks (``_busy_blocks``: from each lane's first start and each later gap's end,
    # to the next gap's start or the lane's last end), and the ready-task changes
    later = at_gap[at_gap != first[lane_of[at_gap]]]
    block_lane = np.concatenate((np.arange(nl), lane_of[later]))
    block_start = np.concatenate((ts[first], ts[later]))
    block_end_lane = np.concatenate((lane_of[later], np.arange(nl)))
    block_end = np.concatenate((before[later], last))
    wait_at = np.flatnonzero(waits)
    out.blocks, out.ready = {}, {}
    for key, mine in _by_key([(lane.kind, lane.group) for lane in lanes], nl).items():
        out.blocks[key] = (block_start[mine[block_lane]], block_end[mine[block_end_lane]])
    for kind, mine in _by_key([lane.kind for lane in lanes], nl).items():
        at = wait_at[mine[lane_of[wait_at]]]
        out.ready[kind] = (ready[at], ts[at])
    return out


def _times(slices: list, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The starts and ends of the slices ``ids``, as ``_union`` reads them."""
    at = slices.__getitem__
    ts = np.fromiter(map(_TS, map(at, ids)), dtype=np.int64, count=len(ids))
    return ts, ts + np.fromiter(map(_DUR, map(at, ids)), dtype=np.int64, count=len(ids))


def _sums(values: Any, bounds: np.ndarray, cumulative: bool = False) -> np.ndarray:
    """The sums of ``values`` (int64 or bool) between consecutive ``bounds`` (empty: 0);
    ``cumulative``: the running sums at ``bounds`` instead."""
    total = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))[bounds]
    return total if cumulative else np.diff(total)


def _by_key(keys: list, n: int) -> dict[Any, np.ndarray]:
    """Per distinct key of ``keys`` (``n`` of them), which places hold it (a bool mask)."""
    out: dict[Any, np.ndarray] = {}
    for k, key in enumerate(keys):
        mask = out.get(key)
        if mask is None:
            mask = out[key] = np.zeros(n, dtype=bool)
        mask[k] = True
    return out
