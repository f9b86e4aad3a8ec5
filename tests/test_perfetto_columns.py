"""The Perfetto writer's column encoders (issue 26) give the bytes of the per-value path."""

from __future__ import annotations

from tracecvt.writers.perfetto import columns
from tracecvt.writers.perfetto.events import _ts_field
from tracecvt.writers.perfetto.wire import _PACKET, _len
from tracecvt.writers.protowire import varint

# Every varint length (1..9 bytes for values below 2^63) at both of its edges.
EDGES = sorted({v for k in range(1, 10) for v in ((1 << (7 * k)) - 1, 1 << (7 * k))
                if v < 1 << 63} | {0, (1 << 63) - 1})


def test_timestamps_are_the_scalar_fields_at_every_varint_length():
    base = 1_700_000_000_000_000_000 % (1 << 40)
    times = [base + v for v in EDGES if base + v < 1 << 63]
    got = columns.timestamps(times, base)
    assert got == [_ts_field(t - base) for t in times]
    assert got[0] == b"\x40\x00" and got[-1][:1] == b"\x40"
    assert [len(b) - 1 for b in got] == [len(varint(t - base)) for t in times]


def test_end_packets_are_framed_as_the_scalar_ones():
    tail = b"\x50\x83\x01\x5a\x02\x48\x02"      # a two-byte sequence id, the END event
    got = columns.end_packets(EDGES, 0, tail)
    want = []
    for v in EDGES:
        body = _ts_field(v) + tail
        want.append(_PACKET + _len(len(body)) + body)
    assert got == want


def test_times_before_the_origin_or_past_int64_are_left_to_the_scalar_path():
    assert columns.timestamps([5, 3], 4) is None          # 3 is before time 0
    assert columns.timestamps([1 << 63], 0) is None       # not an int64
    assert columns.end_packets([2, 1 << 64], 0, b"") is None
    assert columns.timestamps([], 0) == [] and columns.end_packets([], 0, b"") == []


def test_the_writers_begin_times_take_the_column_path_where_it_gives_the_same_bytes():
    from tracecvt.writers.perfetto.events import _COLUMNS_FROM, _timestamps
    long = [1 << 62] + [(1 << 28) + k for k in range(_COLUMNS_FROM)]     # five bytes and more
    for times in (long, long[:3], [*long, 1 << 64], []):   # (past int64: one by one)
        assert _timestamps(times, 0) == [_ts_field(t) for t in times]
