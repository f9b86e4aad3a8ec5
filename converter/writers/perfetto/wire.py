"""Wire fragments of the Perfetto writer: field keys, packet framing, small varints.

Every packet is assembled from these byte fragments (see ``protowire``); the field numbers are
those of the perfetto package's compiled schema, which the tests decode the output with.
"""

from __future__ import annotations

import sys
from typing import Any

from ..protowire import key_varint, tag, varint

SEQ_ID = 1                        # the descriptor (and instant) sequence
SEQ_CLEARED = 1
SEQ_NEEDS = 2

_PACKET = b"\x0a"                 # Trace.packet (1), length-delimited
_TS = b"\x40"                     # TracePacket.timestamp (8)
_SEQ = key_varint(10, SEQ_ID)     # TracePacket.trusted_packet_sequence_id (10)
_FLAGS_NEEDS = key_varint(13, SEQ_NEEDS)
_INTERNED = tag(12, 2)            # TracePacket.interned_data (12)
_TRACK_EVENT = tag(11, 2)         # TracePacket.track_event (11)
_TRACK_DESC = tag(60, 2)          # TracePacket.track_descriptor (60)
_BEGIN = key_varint(9, 1)         # TrackEvent.type
_END = key_varint(9, 2)
_INSTANT = key_varint(9, 3)
_COUNTER = key_varint(9, 4)
_TE_TRACK = tag(11, 0)            # TrackEvent.track_uuid
_TE_NAME_IID = tag(10, 0)         # TrackEvent.name_iid
_TE_NAME = tag(23, 2)             # TrackEvent.name (inline)
_TE_CAT_IID = tag(3, 0)           # TrackEvent.category_iids
_TE_DEBUG = tag(4, 2)             # TrackEvent.debug_annotations
_TE_FLOW = tag(47, 1)             # TrackEvent.flow_ids (fixed64)
_TE_TERM_FLOW = tag(48, 1)        # TrackEvent.terminating_flow_ids (fixed64)
_TE_CORRELATION = tag(52, 0)      # TrackEvent.correlation_id (uint64)
_TE_INT = tag(30, 0)              # TrackEvent.counter_value
_TE_DOUBLE = tag(44, 1)           # TrackEvent.double_counter_value
_TE_XC_TRACK = tag(31, 0)         # TrackEvent.extra_counter_track_uuids (one per value)
_TE_XC_INT = tag(12, 0)           # TrackEvent.extra_counter_values

_INT_VALUE = tag(4, 0)            # DebugAnnotation.int_value
_DOUBLE_VALUE = tag(5, 1)         # DebugAnnotation.double_value
_STRING_VALUE = tag(6, 2)         # DebugAnnotation.string_value
_STRING_IID = tag(17, 0)          # DebugAnnotation.string_value_iid

# InternedData fields
_I_CATEGORY, _I_NAME, _I_ARG_NAME, _I_STRING = 1, 2, 3, 29

def _packet(body: bytes) -> bytes:
    return _PACKET + varint(len(body)) + body



_EXACT = 1 << 53                 # ints of at most this magnitude are exact as doubles


def _as_double(value: Any) -> float:
    """A counter value as a double (an int too large for one: the largest double, with its
    sign; Trace Processor takes no infinite counter values)."""
    try:
        return float(value)
    except OverflowError:
        return sys.float_info.max if value > 0 else -sys.float_info.max


_LEN = ([bytes((i,)) for i in range(128)]                  # varint(i) for i < 2^14
        + [bytes((i & 0x7F | 0x80, i >> 7)) for i in range(128, 1 << 14)])
_DTS = [_TS + v for v in _LEN]     # timestamp field of the times below 2^14 ns
# The timestamp field of a time t in [2^14, 2^21) ns (three varint bytes, most times of a
# run) is _TS3_LO[t & 127] + _LEN[t >> 7]: two lookups instead of a varint call.  A time in
# [2^21, 2^28) ns (four bytes: runs longer than 2.1 ms, times being absolute) is
# _TS3_LO[t & 127] + _TS4_MID[(t >> 7) & 127] + _LEN[t >> 14].  (t >> 7, t >> 14 are at least
# 128 there: _LEN's two-byte varints are the last two bytes.)
_TS4_MID = [bytes((i | 0x80,)) for i in range(128)]     # 7 bits of a varint, more to come
_TS3_LO = [_TS + b for b in _TS4_MID]
# The same for an int arg's int_value field (``interning._ArgEncoder.encode``): a value in
# [2^14, 2^21) is _INT3_LO[v & 127] + _LEN[v >> 7], one in [2^21, 2^28)
# _INT3_LO[v & 127] + _TS4_MID[(v >> 7) & 127] + _LEN[v >> 14] (ids, counts and ns figures).
_INT3_LO = [_INT_VALUE + b for b in _TS4_MID]


def _len(n: int) -> bytes:
    return _LEN[n] if n < 16384 else varint(n)

