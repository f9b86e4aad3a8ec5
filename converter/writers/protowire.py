"""Protobuf wire-format helpers for the Perfetto writer.

Building one upb message per event costs several microseconds in Python; the writer instead
assembles packets from byte fragments.  Every field number used here is checked against the
perfetto package's compiled schema by the tests, which decode the written file with
``perfetto_trace_pb2``.
"""

from __future__ import annotations

import struct

from ..model import UINT64_END

_pack_double = struct.Struct("<d").pack
_pack_fixed64 = struct.Struct("<Q").pack

_SMALL = [bytes((i,)) for i in range(128)]


def varint(value: int) -> bytes:
    """Unsigned varint; negative values are encoded as 64-bit two's complement."""
    if 0 <= value < 128:
        return _SMALL[value]
    if 0 < value < 0x10000000:        # unrolled: most lengths, ids and ns offsets
        if value < 0x4000:
            return bytes((value & 0x7F | 0x80, value >> 7))
        if value < 0x200000:
            return bytes((value & 0x7F | 0x80, (value >> 7) & 0x7F | 0x80, value >> 14))
        return bytes((value & 0x7F | 0x80, (value >> 7) & 0x7F | 0x80,
                      (value >> 14) & 0x7F | 0x80, value >> 21))
    if 0 < value < 0x800000000:       # five bytes: ns offsets past 268 ms
        return bytes((value & 0x7F | 0x80, (value >> 7) & 0x7F | 0x80,
                      (value >> 14) & 0x7F | 0x80, (value >> 21) & 0x7F | 0x80, value >> 28))
    if value < 0:
        value += UINT64_END
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def key_varint(field: int, value: int) -> bytes:
    return tag(field, 0) + varint(value)


def key_bytes(field: int, payload: bytes) -> bytes:
    return tag(field, 2) + varint(len(payload)) + payload


def key_str(field: int, text: str) -> bytes:
    return key_bytes(field, text.encode("utf-8", "surrogatepass"))

