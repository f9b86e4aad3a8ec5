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


def test_varint_matrix_rows_are_the_scalar_varints_up_to_ten_bytes():
    import numpy as np
    values = [*EDGES, 1 << 63, (1 << 64) - 1]               # (ten bytes: past int64)
    groups, lengths = columns.varint_matrix(np.array(values, dtype=np.uint64))
    assert groups.shape == (len(values), 10)
    assert [bytes(row[:n]) for row, n in zip(groups, lengths.tolist())] == \
        [varint(v) for v in values]


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


def _back_to_back_run(seed: int):
    """Lanes of back-to-back slices (zero-length ones among them, where the one before
    ends), flows between them (some across one ns: they end on the destination's END),
    counters sampled where slices begin and end (samples riding on BEGINs and ENDs), and a
    lane of nested calls."""
    import random

    from tracecvt.model import RunMeta, Trace

    rng = random.Random(seed)
    trace = Trace(RunMeta(name="flat", format="test"))
    ids = []
    for k in range(3):
        lane = trace.add_track(f"core {k}", nesting=False)
        t = rng.randrange(0, 50)
        for _ in range(rng.randrange(40, 120)):
            dur = rng.choice((0, 0, 1, 5, 17, 300))
            ids.append(trace.add_slice(lane, t, dur, rng.choice("abc"), "task",
                                       {"n": rng.randrange(3)}))
            t += dur + rng.choice((0, 0, 1, 9) if dur else (1, 9))
    calls = trace.add_track("calls", nesting=True)
    for k in range(30):
        trace.add_slice(calls, 100 * k, 80, "outer")
        trace.add_slice(calls, 100 * k + 10, 20, "inner")
    for _ in range(40):
        a, b = rng.sample(ids, 2)
        if trace.slices[a].ts < trace.slices[b].ts:
            trace.add_flow(a, b)
    at: dict[int, list[int]] = {}
    for i in ids:
        at.setdefault(trace.slices[i].ts, []).append(i)
    for same in at.values():                    # across one ns: on the destination's END
        dst = [i for i in same if trace.slices[i].dur > 0]
        src = [i for i in same if dst and trace.slices[i].track != trace.slices[dst[0]].track]
        if src:
            trace.add_flow(src[0], dst[0])
    for k in range(4):
        c = trace.add_counter(f"counter {k}")
        for t in sorted({trace.slices[i].ts + rng.choice((0, trace.slices[i].dur))
                         for i in rng.sample(ids, 60)}):
            c.add(t, rng.randrange(1, 9))
    return trace


def test_back_to_back_lanes_write_what_the_stack_writes(monkeypatch):
    """A lane whose slices each end before the next begins writes each plain END right
    after its BEGIN; the trace is byte for byte the one written with every END through the
    stack, on runs with ENDs that carry flows and riding samples."""
    import io

    from tracecvt.writers.perfetto import events, write_perfetto

    taken = []
    real = events._one_after_another

    def seen(ends, starts):
        taken.append(real(ends, starts))
        return taken[-1]

    for seed in range(30):
        trace = _back_to_back_run(seed)
        fast, slow = io.BytesIO(), io.BytesIO()
        monkeypatch.setattr(events, "_one_after_another", seen)
        write_perfetto(trace, fast)
        monkeypatch.setattr(events, "_one_after_another", lambda ends, starts: False)
        write_perfetto(trace, slow)
        assert fast.getvalue() == slow.getvalue(), seed
    assert any(taken) and not all(taken)
