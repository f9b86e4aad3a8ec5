"""Binding PyPTO's flow ends to task slices, a column at a time (numpy).

PyPTO puts a flow's start 0.0001 us before its source's end and its end at the
destination's start, on the same thread (format reference, section 5).  A start binds to the
first slice of its thread that ends at ``round(us * 1000 + 0.1)`` ns, else one ns earlier,
else one later; an end to the first slice that starts at ``round(us * 1000)`` ns, the same
way.  The slices are the ``X`` events of the main pass, in their order (``XSlices``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...distinct import distinct
from ...model import Flow


class XSlices:
    """The main pass's task slices as columns: thread number, start and end (ns), slice."""

    def __init__(self) -> None:
        self.thread: list[int] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.index: list[int] = []
        self._tables: tuple[_Table, _Table] | None = None

    def tables(self) -> tuple[_Table, _Table]:
        """The look-up tables of the slices' ends and of their starts, made once (the
        loader makes them while its helper still reads the flows); the slices are all
        added by then."""
        if self._tables is None:
            thread = np.array(self.thread, dtype=np.int64)
            index = np.array(self.index, dtype=np.int64)
            self._tables = (_Table(thread, np.array(self.end, dtype=np.int64), index),
                            _Table(thread, np.array(self.start, dtype=np.int64), index))
        return self._tables


class _Table:
    """The first slice (by index) at each (thread, time) of ``times``, for exact look-ups."""

    def __init__(self, thread: np.ndarray, times: np.ndarray, index: np.ndarray):
        order = np.lexsort((index, times, thread))
        thread, times, index = thread[order], times[order], index[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (thread[1:] != thread[:-1]) | (times[1:] != times[:-1])
        self.times = distinct(times)
        self.width = len(self.times) + 1
        # (thread, rank of the time) as one key: sorted, as the rows are
        self.keys = thread[first] * self.width + np.searchsorted(self.times, times[first])
        self.index = index[first]

    def find(self, thread: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The slice at each (thread, time), or -1 (thread -1: none)."""
        out = np.full(len(times), -1, dtype=np.int64)
        if not len(self.times):
            return out
        rank = np.searchsorted(self.times, times)
        ok = (thread >= 0) & (rank < len(self.times))
        ok[ok] = self.times[rank[ok]] == times[ok]
        keys = thread[ok] * self.width + rank[ok]
        at = np.searchsorted(self.keys, keys)
        hit = at < len(self.keys)
        hit[hit] = self.keys[at[hit]] == keys[hit]
        found = np.full(len(keys), -1, dtype=np.int64)
        found[hit] = self.index[at[hit]]
        out[ok] = found
        return out

    def find_near(self, thread: np.ndarray, times: np.ndarray) -> np.ndarray:
        """``find`` at the time, else one ns before, else one after."""
        out = self.find(thread, times)
        for step in (-1, 1):
            miss = out < 0
            if not miss.any():
                break
            out[miss] = self.find(thread[miss], times[miss] + step)
        return out


def _ns(values: Any, shift: float) -> np.ndarray | None:
    """``round(us * 1000 + shift)`` of each value as int64 (Python's rounding: half to
    even, on the same doubles), or None where a value is not a float."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    if set(map(type, values)) != {float}:
        return None
    return np.rint(np.array(values, dtype=np.float64) * 1000 + shift).astype(np.int64)


def bind_flows(xs: XSlices, flow_threads: list[int | None], columns: tuple,
               out: list) -> int | None:
    """Append to ``out`` a ``Flow`` per flow of ``columns`` (thread and us of each start,
    each end; a thread is a number into ``flow_threads``, which gives the main pass's
    thread number, None where it has no slices) whose both ends bind, in order; returns
    how many did not.  None, with nothing appended, where a time is not a float (the
    caller binds them one at a time)."""
    sthread, sts, dthread, dts = columns
    src_ns, dst_ns = _ns(sts, 0.1), _ns(dts, 0.0)
    if src_ns is None or dst_ns is None:
        return None
    thread_of = np.array([-1 if t is None else t for t in flow_threads] or [0],
                         dtype=np.int64)
    src_thread = thread_of[np.array(sthread, dtype=np.int64)]
    dst_thread = thread_of[np.array(dthread, dtype=np.int64)]
    ends, starts = xs.tables()
    src = ends.find_near(src_thread, src_ns)
    dst = starts.find_near(dst_thread, dst_ns)
    ok = (src >= 0) & (dst >= 0)
    out.extend(map(Flow, src[ok].tolist(), dst[ok].tolist()))
    return int(len(ok) - ok.sum())
