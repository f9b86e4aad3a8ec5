"""Packet fragments built a column at a time (issue 26): the varints of a whole array of
values, with the fixed fields around them, encoded by numpy and cut into one ``bytes`` per
value.  The bytes are those the per-value helpers (``protowire.varint``, ``wire._DTS``…)
give; the Perfetto writer takes them from a list instead of building each in the loop.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from .wire import _PACKET, _TS

_MAX = 10                                       # bytes of the longest (64-bit) varint
_SHIFTS = np.arange(_MAX, dtype=np.uint64) * np.uint64(7)
_MORE = np.arange(1, _MAX, dtype=np.uint64) * np.uint64(7)


def _varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n × 10 bytes, n lengths): the unsigned varints of ``values`` (uint64), one per row,
    left-aligned; bytes past a row's length are to be dropped."""
    v = values[:, None]
    lengths = 1 + np.count_nonzero(v >> _MORE[None, :], axis=1)
    groups = ((v >> _SHIFTS[None, :]) & np.uint64(0x7F)).astype(np.uint8)
    cont = np.arange(_MAX)[None, :] < (lengths - 1)[:, None]
    groups[cont] |= 0x80
    return groups, lengths


def _rows(parts: list[np.ndarray], keep: list[np.ndarray]) -> list[bytes]:
    """One ``bytes`` per row: the kept columns of ``parts`` (n × k uint8 each), left to right."""
    matrix = np.concatenate(parts, axis=1)
    mask = np.concatenate(keep, axis=1)
    data = matrix[mask].tobytes()                      # row by row: C order
    ends = np.cumsum(mask.sum(axis=1)).tolist()
    return [data[a:b] for a, b in pairwise([0, *ends])]


def _fixed(n: int, raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    col = np.frombuffer(raw, dtype=np.uint8)
    return np.broadcast_to(col, (n, len(raw))), np.ones((n, len(raw)), dtype=bool)


def _deltas(times: list[int], base: int) -> np.ndarray | None:
    """``times`` - ``base`` as uint64, or None where a time or a difference is outside
    [0, 2^63)."""
    if not -(1 << 63) <= base < (1 << 63):
        return None
    try:
        v = np.array(times, dtype=np.int64)
    except OverflowError:
        return None
    if int(v.min()) < base or int(v.max()) - base >= (1 << 63):
        return None
    return (v - np.int64(base)).astype(np.uint64)


def timestamps(times: list[int], base: int) -> list[bytes] | None:
    """``TracePacket.timestamp`` fields (``_TS`` + varint) of ``times`` - ``base`` (ns from
    the trace's time 0), or None where a difference is outside [0, 2^63) (the caller
    encodes those one by one, as before)."""
    if not times:
        return []
    v = _deltas(times, base)
    if v is None:
        return None
    n = len(times)
    groups, lengths = _varint_matrix(v)
    head, head_keep = _fixed(n, _TS)
    keep = np.arange(_MAX)[None, :] < lengths[:, None]
    return _rows([head, groups], [head_keep, keep])


def end_packets(times: list[int], base: int, tail: bytes) -> list[bytes] | None:
    """Whole framed END packets, one per value of ``times``: ``_PACKET``, the body's
    length, the body (the timestamp field of the time - ``base``, then ``tail``: sequence id
    and the END event).  None where a difference is outside [0, 2^63) or a body would need
    a length of two bytes."""
    if not times:
        return []
    if len(_TS) + _MAX + len(tail) >= 128:
        return None
    v = _deltas(times, base)
    if v is None:
        return None
    n = len(times)
    groups, lengths = _varint_matrix(v)
    frame = np.empty((n, 2), dtype=np.uint8)
    frame[:, 0] = _PACKET[0]
    frame[:, 1] = len(_TS) + lengths + len(tail)
    ts, ts_keep = _fixed(n, _TS)
    end, end_keep = _fixed(n, tail)
    keep = np.arange(_MAX)[None, :] < lengths[:, None]
    return _rows([frame, ts, groups, end],
                 [np.ones((n, 2), dtype=bool), ts_keep, keep, end_keep])
