"""The times of the Perfetto writer's slice packets, a lane at a time: the timestamp field
of a time (``_ts_field``), of a lane's starts (``_timestamps``) and its plain END packets
(``_end_packets``) a column at a time where the lane is long enough (``columns``), the
lane's starts and ends in order from the slices' columns (``_lane_times``), and whether its
slices come one after another (``_one_after_another``)."""

from __future__ import annotations

import numpy as np

from ...slice_columns import SliceColumns, refill, start_order
from ..protowire import varint
from . import columns
from .wire import _DTS, _LEN, _PACKET, _TS, _TS3_LO, _TS4_MID, _len


# Below this many slices a track's times are encoded one by one (numpy's cost per call
# is more than the loop's there: measured, the loop is the faster up to about 400 times).
_COLUMNS_FROM = 512


def _ts_field(d: int) -> bytes:
    """The timestamp field of a packet ``d`` ns after the trace's time 0 (the same bytes as
    ``columns.timestamps``, ``columns.end_packets``)."""
    if d < 16384:
        return _DTS[d]
    if d < 2097152:
        return _TS3_LO[d & 127] + _LEN[d >> 7]
    if d < 268435456:
        return _TS3_LO[d & 127] + _TS4_MID[(d >> 7) & 127] + _LEN[d >> 14]
    mid = _TS4_MID
    if d < 34359738368:         # five bytes: past 268 ms
        return _TS3_LO[d & 127] + mid[(d >> 7) & 127] + mid[(d >> 14) & 127] + _LEN[d >> 21]
    if d < 4398046511104:       # six: past 34 s
        return (_TS3_LO[d & 127] + mid[(d >> 7) & 127] + mid[(d >> 14) & 127]
                + mid[(d >> 21) & 127] + _LEN[d >> 28])
    if d < 562949953421312:     # seven: past 73 min
        return (_TS3_LO[d & 127] + mid[(d >> 7) & 127] + mid[(d >> 14) & 127]
                + mid[(d >> 21) & 127] + mid[(d >> 28) & 127] + _LEN[d >> 35])
    return _TS + varint(d)


def _timestamps(times: list[int], base: int) -> list[bytes]:
    """The timestamp fields of ``times`` (``_ts_field`` of each time - ``base``), a column
    at a time where there are enough of them."""
    if len(times) >= _COLUMNS_FROM:
        made = columns.timestamps(times, base)
        if made is not None:
            return made
    return [_ts_field(t - base) for t in times]


def _one_after_another(ends: list[int], starts: list[int]) -> bool:
    """Whether each slice (in order: ``starts``, ``ends``) ends before the next begins."""
    return all(map(int.__le__, ends, starts[1:]))


def _lane_times(cols: SliceColumns, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The starts and ends (int64 arrays) of a lane's slices ``ids`` (from ``cols``), ``ids``
    sorted in place by start, the longest first at one start, where they are not in order
    of start."""
    at = np.array(ids, dtype=np.int64)
    starts = cols.ts[at]
    if not (starts[1:] > starts[:-1]).all():
        order = start_order(starts, cols.end[at] - starts)
        at, starts = at[order], starts[order]
        refill(ids, at)
    return starts, cols.end[at]


def _end_packets(ends: list[int], base: int, end_tail: bytes) -> list[bytes]:
    """Per end time of ``ends``: the END packet as written when it carries nothing else
    (``end_tail``: the sequence id and the END event)."""
    if len(ends) >= _COLUMNS_FROM:
        made = columns.end_packets(ends, base, end_tail)
        if made is not None:
            return made
    out = []
    for e in ends:
        body = _ts_field(e - base) + end_tail
        out.append(_PACKET + _len(len(body)) + body)
    return out
