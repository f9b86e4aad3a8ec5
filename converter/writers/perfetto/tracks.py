"""Track descriptors and the packets that open a track's sequence (Perfetto writer)."""

from __future__ import annotations

from ...model import COUNTER, Trace
from ..protowire import key_bytes, key_str, key_varint, varint
from .interning import _Sequence
from .wire import _SEQ, _TRACK_DESC, BOOTTIME, SEQ_CLEARED, SEQ_CLOCK, _packet


def _track_descriptor(trace: Trace, index: int) -> bytes:
    t = trace.tracks[index]
    body = [key_varint(1, index + 1), key_str(2, t.name)]
    if t.parent is not None:
        body.append(key_varint(5, t.parent + 1))
    if t.description:
        body.append(key_str(14, t.description))
    if t.kind == COUNTER:
        counter = b""
        if t.unit:
            counter += key_str(6, t.unit)
        body.append(key_bytes(8, counter))
    if t.children:
        body.append(key_varint(11, 3))                  # child_ordering = EXPLICIT
    body.append(key_varint(12, t.order))                # sibling_order_rank
    body.append(key_varint(15, 2))                      # sibling_merge_behavior = NONE
    data = b"".join(body)
    return _packet(_SEQ + _TRACK_DESC + varint(len(data)) + data)


def _sequence_start(seq: _Sequence, track_index: int) -> list[bytes]:
    """The two packets that open a track's sequence: state cleared + defaults, then the
    ClockSnapshot anchoring its incremental clock at BOOTTIME 0."""
    defaults = key_varint(58, SEQ_CLOCK) + key_bytes(11, key_varint(11, track_index + 1))
    first = _packet(seq.field + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)
                    + key_bytes(59, defaults))
    clocks = (key_bytes(1, key_varint(1, SEQ_CLOCK) + key_varint(2, 0) + key_varint(3, 1))
              + key_bytes(1, key_varint(1, BOOTTIME) + key_varint(2, 0)))
    snapshot = _packet(seq.field + key_bytes(6, clocks))
    return [first, snapshot]

