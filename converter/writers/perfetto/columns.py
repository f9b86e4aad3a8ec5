"""Packet fragments built a column at a time (issue 26): the varints of a whole array of
values, with the fixed fields around them, encoded by numpy and cut into one ``bytes`` per
value.  The bytes are those the per-value helpers (``protowire.varint``, ``wire._DTS``…)
give; the Perfetto writer takes them from a list instead of building each in the loop.
"""

from __future__ import annotations

from itertools import count
from typing import Any, Iterable

import numpy as np

from .wire import _PACKET, _TS

_MAX = 10                                       # bytes of the longest (64-bit) varint
_SHIFTS = np.arange(_MAX, dtype=np.uint64) * np.uint64(7)
_LONGER = np.uint64(1) << _SHIFTS[1:]           # the least value of each length past one


def varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n × w bytes, n lengths): the unsigned varints of ``values`` (uint64), one per row,
    left-aligned, w the longest; bytes past a row's length are to be dropped."""
    lengths = np.searchsorted(_LONGER, values, side="right") + 1
    width = int(lengths.max()) if len(values) else 1
    groups = np.empty((len(values), width), dtype=np.uint8)
    for k in range(width):
        col = (values >> _SHIFTS[k]).astype(np.uint8)      # (the low byte)
        col &= np.uint8(0x7F)
        if k < width - 1:                                   # more bytes follow
            col |= (lengths > k + 1).view(np.uint8) << np.uint8(7)
        groups[:, k] = col
    return groups, lengths


def flat_rows(varints: tuple[np.ndarray, np.ndarray], head: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``head`` then each varint of ``varints`` (``varint_matrix``'s result), the rows laid
    end to end in one uint8 array; and each row's length."""
    groups, lengths = varints
    n, width = groups.shape
    h = len(head)
    matrix = np.empty((n, h + width), dtype=np.uint8)
    matrix[:, :h] = np.frombuffer(head, dtype=np.uint8)
    matrix[:, h:] = groups
    lengths = lengths + h
    return matrix[np.arange(h + width) < lengths[:, None]], lengths


def gather(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
           at: np.ndarray) -> bytes:
    """Rows ``at`` of ``source`` (uint8; row k is ``lengths[k]`` bytes from ``starts[k]``),
    in that order, laid end to end: one numpy gather (``gather_rows``)."""
    return gather_rows(source, starts[at][:, None], lengths[at][:, None])[0]


def factor(values: Iterable) -> tuple[list[int], np.ndarray]:
    """The places of the first of each distinct value of ``values`` (in order), and each
    value's number among them."""
    first_of: dict[Any, int] = {}
    first = list(map(first_of.setdefault, values, count()))
    firsts = list(first_of.values())            # (inserted in order of place)
    return firsts, np.searchsorted(np.array(firsts, dtype=np.int64),
                                   np.array(first, dtype=np.int64))


def gather_rows(source: np.ndarray, at: np.ndarray, lengths: np.ndarray
                ) -> tuple[bytes, np.ndarray]:
    """Per row of ``at`` and ``lengths`` (n × s: row k is its s pieces of ``source``,
    uint8, each ``lengths[k, j]`` bytes from ``at[k, j]``), its pieces end to end, the
    rows end to end: one numpy gather; and each row's length."""
    sizes = lengths.reshape(-1)
    kind = np.int32 if len(source) < 1 << 31 and int(sizes.sum()) < 1 << 31 else np.int64
    placed = np.cumsum(sizes) - sizes
    index = np.repeat((at.reshape(-1) - placed).astype(kind), sizes)
    index += np.arange(len(index), dtype=kind)
    return source[index].tobytes(), lengths.sum(axis=1)


def _rows(matrix: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """One ``bytes`` per row of ``matrix`` (n × w uint8): its first ``lengths`` bytes."""
    n, width = matrix.shape
    data = np.ascontiguousarray(matrix).tobytes()
    return [data[o:o + m] for o, m in zip(range(0, n * width, width), lengths.tolist())]


def _framed(values: np.ndarray, head: bytes, tail: bytes, length_byte: bool) -> list[bytes]:
    """Per value: [``_PACKET``, the length of the rest (one byte),] ``head``, its varint,
    ``tail``."""
    groups, lengths = varint_matrix(values)
    n, w = groups.shape
    lead = 2 if length_byte else 0
    at = lead + len(head)
    matrix = np.empty((n, at + w + len(tail)), dtype=np.uint8)
    if length_byte:
        matrix[:, 0] = _PACKET[0]
        matrix[:, 1] = len(head) + lengths + len(tail)
    matrix[:, lead:at] = np.frombuffer(head, dtype=np.uint8)
    matrix[:, at:at + w] = groups
    rows = np.arange(n)
    for j, byte in enumerate(tail):           # right after each row's varint
        matrix[rows, at + lengths + j] = byte
    return _rows(matrix, at + lengths + len(tail))


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
    return _framed(v, _TS, b"", False)


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
    return _framed(v, _TS, tail, True)
