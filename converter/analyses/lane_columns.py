"""The bubbles of a lane a column at a time (numpy), for ``bubbles.compute_bubbles``: a lane
without a task graph (every gap idle) and one with a graph (gaps split at the tasks' ready
times), both without dispatch times.  Each gives the gaps, figures, busy blocks and
ready-task changes ``compute_bubbles``' loop gives slice by slice (tests/test_bubbles_columns.py
checks them against it); None where a time is outside int64 (the loop then).
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter, eq
from typing import Any

import numpy as np

from ..model import MARKER
from ..slice_columns import SliceColumns, start_order, times_of

_TS, _DUR, _CAT = attrgetter("ts"), attrgetter("dur"), attrgetter("cat")


def lane_order(slices: list, ids: list[int], nested: bool,
               cols: SliceColumns | None = None) -> tuple | None:
    """A lane's slices ``ids`` in the order the analyses walk them, a column at a time: by
    start, the longer first at one start where the lane nests (calls, or overlap lanes),
    else by start alone (stable: as given at one start).  Returns (the ids in that order,
    whether they are all markers, the first start, the last end, (starts, ends) in that
    order), or None where a time is outside ±2^62 (the caller sorts the slices).  ``cols``:
    every slice's columns, where kept (``slice_columns.kept_columns``)."""
    lane = list(map(slices.__getitem__, ids))
    if cols is not None:
        at = np.array(ids, dtype=np.int64)
        ts, end = cols.ts[at], cols.end[at]
    else:
        times = times_of(lane)
        if times is None:
            return None
        ts, end = times
    marker = np.fromiter(map(eq, map(_CAT, lane), repeat(MARKER)), dtype=bool,
                         count=len(lane))
    order = start_order(ts, end - ts) if nested else np.argsort(ts, kind="stable")
    ts, end = ts[order], end[order]
    return (np.array(ids, dtype=np.int64)[order].tolist(), bool(marker.all()), int(ts[0]),
            int(end.max()), (ts, end))


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


def idle_lane(slices: list, ids: list[int], t0: int, li: int, gaps: list,
              blocks: list, times: Any = None) -> tuple[int, ...] | None:
    """``bubbles.compute_bubbles``' loop for a lane without a task graph or dispatch times, a
    column at a time (numpy): every gap in the union of its slices (in ``ids``' order)
    from ``t0`` is idle.  Adds the gaps to ``gaps`` and the busy blocks (starts, ends) to
    ``blocks``; returns the lane's figures as ``graph_lane`` does, or None where a time or
    an end is outside int64."""
    got = _union(slices, ids, t0, times)
    if got is None:
        return None
    ts, end, before, last, at_gap, busy = got
    a, b = before[at_gap], ts[at_gap]
    idle = int((b - a).sum())
    gaps.extend(zip(repeat(li), a.tolist(), b.tolist(), repeat(2),
                    map(ids.__getitem__, at_gap.tolist()), repeat(-1)))
    blocks.append(_busy_blocks(ts, before, at_gap, last))
    return busy, idle, 0, 0, idle, len(at_gap), 0, last


def graph_lane(slices: list, ids: list[int], t0: int, li: int, gaps: list, blocks: list,
               ready_blocks: list, ends: Any, tl: Any, lane_prev: dict[int, int],
               times: Any = None) -> tuple[int, ...] | None:
    """The loop's work for a lane of a task graph without dispatch times: a gap before a
    task splits at its ready time (the latest end of its predecessors that end by its start;
    ``ends``: every slice's end, an int64 array) into wait predecessor and wait schedule.
    Adds the gaps, the busy blocks, the ready-task changes (+1 at a task's ready time, -1
    at its start: ``ready_blocks``) and each task's previous task on the lane
    (``lane_prev``); returns (busy, wait, wait schedule, wait predecessor, idle, gaps,
    ignored dependencies, last end), or None where a time is outside int64."""
    got = _union(slices, ids, t0, times)
    if got is None:
        return None
    ts, end, before, last, at_gap, busy = got
    n = len(ids)
    pos = np.arange(n)
    who = np.array(ids, dtype=np.int64)
    # the slice that last pushed the union's end, before each slice
    made = np.concatenate(([-1], np.maximum.accumulate(np.where(end > before, pos, -1))[:-1]))
    follows = (before <= ts) & (made >= 0)
    lane_prev.update(zip(who[follows].tolist(), who[made[follows]].tolist()))
    # ready times: the latest predecessor end by the task's start (t0 at least); the
    # predecessor is the first one with that end; a predecessor ending later is ignored
    plists = list(map(tl.preds.get, ids, repeat(())))
    counts = np.fromiter(map(len, plists), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(plists), dtype=np.int64, count=int(counts.sum()))
    seg = np.repeat(pos, counts)
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
    # ready but waiting: tasks (not markers; a task of several slices once, until its first
    # start) ready before they start
    waits = ready < ts
    waits &= np.fromiter((slices[i].cat != MARKER for i in ids), dtype=bool, count=n)
    if tl.node_of:
        multi, firsts = tl.node_of, set(tl.node_first.values())
        waits &= np.fromiter((i not in multi or i in firsts for i in ids), dtype=bool,
                             count=n)
    ready_blocks.append((ready[waits], ts[waits]))
    # gaps: [end so far, ready) wait predecessor, [ready, start) wait schedule
    a, b = before[at_gap], ts[at_gap]
    r = np.maximum(ready[at_gap], a)
    pred, sched = r > a, b > r
    m = len(at_gap)
    keep = np.stack((pred, sched), axis=1).ravel()
    gaps.extend(zip(repeat(li), np.stack((a, r), axis=1).ravel()[keep].tolist(),
                    np.stack((r, b), axis=1).ravel()[keep].tolist(),
                    np.tile([0, 1], m)[keep].tolist(), np.repeat(who[at_gap], 2)[keep].tolist(),
                    np.stack((by[at_gap], np.full(m, -1)), axis=1).ravel()[keep].tolist()))
    blocks.append(_busy_blocks(ts, before, at_gap, last))
    return (busy, int((b - a).sum()), int((b - r)[sched].sum()), int((r - a)[pred].sum()), 0,
            m, int(ignored.sum()), last)
