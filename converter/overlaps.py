"""Whether a lane's slices need ``model.split_overlaps`` at all, a column at a time.

``split_overlaps`` walks a lane's slices in order of start (the longer first) with a stack
of open ends; this says, with numpy, whether that walk would move none of them, so that the
usual lane (nothing overlapping, or calls properly nested) skips it.
"""

from __future__ import annotations

import numpy as np

from .slice_columns import start_order

_HALF = 1 << 62         # times and durations within ±2^62: a start plus a duration fits int64


def lane_moves_none(cols, ids: list[int], nesting: bool) -> bool:
    """``moves_none`` of the lane of slices ``ids`` from the slices' columns
    (``slice_columns.SliceColumns``: times within ±2^62), with the usual lane's check
    first: each slice in ``ids``' order starts after the one before and after its end."""
    at = np.array(ids, dtype=np.int64)
    ts, end = cols.ts[at], cols.end[at]
    if (ts[1:] > ts[:-1]).all() and (end[:-1] <= ts[1:]).all():
        return True
    return bool(moves_none(ts, end - ts, nesting))


def moves_none(starts, durs, nesting: bool) -> bool | None:
    """Whether ``split_overlaps`` would leave every slice of a lane (``starts``, ``durs``:
    lists or int64 arrays) where it is; None where the times are past ±2^62 (the caller
    walks the lane).

    In the walk's order (start, the longer first, then as given):
    * without nesting, a slice moves when one before it ends after it starts;
    * with nesting, when it starts inside one and ends after it: the open ones must nest.
      Closing and opening them as a walk of brackets (at one time closes first, the one
      opened last first: touching slices do not overlap), every slice then closes at the
      depth it opened at.  Slices of no length close where they open: they never move, and
      nothing moves for them.
    """
    n = len(starts)
    if n < 2:
        return True
    try:
        ts = np.array(starts, dtype=np.int64)
        dur = np.array(durs, dtype=np.int64)
    except OverflowError:
        return None
    if not (-_HALF <= int(ts.min()) and int(ts.max()) < _HALF
            and -_HALF <= int(dur.min()) and int(dur.max()) < _HALF):
        return None
    order = start_order(ts, dur)
    ts, dur = ts[order], dur[order]
    end = ts + dur
    if not nesting:
        return not bool((np.maximum.accumulate(end)[:-1] > ts[1:]).any())
    keep = dur > 0
    ts, end = ts[keep], end[keep]
    m = len(ts)
    if m < 2:
        return True
    rank = np.arange(m)
    # events: (time, closes first, a close of the slice opened last first, an open in order)
    time = np.concatenate((ts, end))
    kind = np.concatenate((np.ones(m, np.int64), np.zeros(m, np.int64)))
    tie = np.concatenate((rank, -rank))
    walk = np.lexsort((tie, kind, time))
    step = np.where(kind[walk] == 1, 1, -1)
    depth = np.cumsum(step)
    at = np.empty(2 * m, dtype=np.int64)
    at[walk] = depth                      # depth after each event
    opened, closing = at[:m], at[m:] + 1  # (before a close: one more)
    return bool(np.array_equal(opened, closing))
