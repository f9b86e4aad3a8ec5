"""Counter samples riding on slice events (writers/perfetto/riders.py): the columnar
``ride`` and the one-sample-at-a-time ``_ride_each`` (taken for times outside int64) give
the same riders on runs made to hit every rule — slices beginning together, ends only,
times a counter repeats, more than 8 values on one event, zeros, negatives, floats, bools
and ints outside int64 — and a trace written with riders reads back every sample."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from tracecvt.model import Counter, RunMeta, Slice, Trace
from tracecvt.writers.perfetto import time_origin, write_perfetto
from tracecvt.writers.perfetto.riders import Riders, _ride_each, ride

from test_keyed import as_dict
from test_perfetto_roundtrip import read_back


def _pathological_run(seed: int) -> tuple[list[Slice], list, list[Counter]]:
    rng = random.Random(seed)
    slices: list[Slice] = []
    units = []
    for track in range(4):
        ids = []
        for _ in range(rng.randrange(5, 40)):
            ts = rng.randrange(0, 200)          # few times: many begin or end together
            ids.append(len(slices))
            slices.append(Slice(track, ts, rng.randrange(0, 30), "s"))
        units.append((track, ids))
    counters = []
    for k in range(16):                         # more than 8 counters on the same times
        c = Counter(10 + k)
        # 12 counters: 20 of the first 24 ns once each (events there get more than 8)
        times = rng.sample(range(24), 20) if k % 4 else \
            [rng.randrange(0, 240) for _ in range(rng.randrange(0, 60))]
        values = [1, 2, -3, 7, 1 << 62, -(1 << 63)] if k % 4 else \
            [0, 1, 2, -3, 7, 1 << 62, -(1 << 63), 1 << 63, 1 << 70, 2.5, True, 5]
        for ts in times:
            c.add(ts, rng.choice(values))
        counters.append(c)
    return slices, units, counters


def _as_dicts(riders: Riders) -> tuple[dict, dict]:
    """``riders`` as slice id -> BEGIN fields, track -> end time -> END fields."""
    return as_dict(riders.begins), {t: riders.end_dict(t) for t in list(riders.ends)}


def _ride(fn, slices, units, counters):
    riders, rides = Riders(), {}
    fn(slices, units, counters, riders, rides)
    return (*_as_dicts(riders), {counters.index(next(c for c in counters if id(c) == k)):
                                 v.tolist() for k, v in rides.items()})


@pytest.mark.parametrize("seed", range(40))
def test_columns_and_one_at_a_time_ride_alike(seed):
    slices, units, counters = _pathological_run(seed)
    columnar = _ride(ride, slices, units, counters)
    each = _ride(_ride_each, slices, units, counters)
    assert columnar == each
    riders, end_riders, rides = columnar
    assert rides, "the run has riding samples"
    # the rules: at most 8 values per event, no 0, only ints, none at a repeated time
    held = [f.count(b"\xf8\x01")          # extra_counter_track_uuids (31, 0)
            for f in [*riders.values(), *(b for at in end_riders.values() for b in at.values())]]
    assert 0 < min(held) and max(held) == 8     # the cap is reached, never passed
    for n, rode in rides.items():
        c = counters[n]
        for ts, v, r in zip(c.ts, c.values, rode):
            if r:
                assert v.__class__ is int and v != 0 and -(1 << 63) <= v < (1 << 63)
                assert c.ts.count(ts) == 1


@pytest.mark.parametrize("seed", range(40))
def test_few_samples_ride_on_the_same_slices_as_one_at_a_time(seed):
    # fewer samples than a quarter of the slices: ``ride`` keeps only the slices at their
    # times (an msprof database's own counters), with the same result
    from tracecvt.writers.perfetto.riders import _FEW
    rng = random.Random(seed)
    slices, units, _ = _pathological_run(seed)
    counters = []
    for k in range(3):
        c = Counter(10 + k)
        for ts in sorted(rng.sample(range(0, 240), rng.randrange(1, len(slices) // 15 + 2))):
            c.add(ts, rng.choice([1, 2, 0, 5]))
        counters.append(c)
    assert _FEW * sum(len(c.ts) for c in counters) < len(slices)
    assert _ride(ride, slices, units, counters) == _ride(_ride_each, slices, units, counters)


def test_times_outside_int64_ride_one_at_a_time():
    """A slice ending past int64 sends the whole ride to ``_ride_each``: same result."""
    slices = [Slice(0, 5, 10, "a"), Slice(0, 20, (1 << 63), "b")]
    units = [(0, [0, 1])]
    c = Counter(1)
    for ts, v in ((5, 3), (15, 4), (20, 6), (21, 9)):
        c.add(ts, v)
    riders, end_riders, rides = _ride(ride, slices, units, [c])
    assert riders == {0: b"\xf8\x01\x02\x60\x03", 1: b"\xf8\x01\x02\x60\x06"}
    assert end_riders == {0: {15: b"\xf8\x01\x02\x60\x04"}}
    assert rides == {0: [True, True, True, False]}


@pytest.mark.parametrize("seed", range(5))
def test_written_trace_reads_back_every_sample(seed):
    """Written, the run's samples read back (riding or not) at their times with their
    values, and some of them rode."""
    slices, units, counters = _pathological_run(seed)
    trace = Trace(RunMeta(name="riders", format="test"))
    lanes = [trace.add_track(f"lane {t}", nesting=False) for t, _ in units]
    for t, ids in units:
        for i in ids:
            s = slices[i]
            trace.add_slice(lanes[t], s.ts, s.dur, s.name)
    made = []
    for k, c in enumerate(counters):
        m = trace.add_counter(f"counter {k}")
        for ts, v in zip(c.ts, c.values):
            m.add(ts, v)
        made.append(m)
    assert _ride(ride, trace.slices, list(trace.slices_by_track().items()), made)[2]
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    _, _, got = read_back(buf.getvalue(), time_origin(trace))
    by_name = {}
    for m in made:
        by_name[m.track] = sorted((ts, float(v)) for ts, v in zip(m.ts, m.values))
    have = {uuid: sorted((ts, float(v)) for ts, v in rows) for uuid, rows in got.items()}
    assert sorted(have.values()) == sorted(v for v in by_name.values() if v)


def _pieces(fields: dict[int, bytes]):
    keys = np.array(list(fields), dtype=object if any(k >> 63 for k in fields) else np.int64)
    lengths = np.array(list(map(len, fields.values())), dtype=np.int64)
    return keys, b"".join(fields.values()), np.cumsum(lengths) - lengths, lengths


@pytest.mark.parametrize("seed", range(30))
def test_end_lookups_are_those_of_the_dict(seed):
    """``Riders``' END fields are what the dict they stand for gives: each taken once, by
    the first END written at its time, across calls, in the order given; end times added
    again on a track replace theirs; a track with an end time past int64 (its times held
    as objects) alike."""
    rng = random.Random(seed)
    riders = Riders()
    reference: dict[int, bytes] = {}
    for n in range(rng.randrange(0, 3)):
        times = rng.sample(range(1000), rng.randrange(1, 40)) + [1 << 64] * (seed % 3 == 0)
        part = {ts: bytes([1 + k % 250, n + 7]) for k, ts in enumerate(times)}
        riders.add_ends(3, *_pieces(part))
        reference.update(part)
    for _ in range(3):                  # three parts of one lane, each in its own order
        end = np.array([rng.randrange(1000) for _ in range(rng.randrange(0, 50))],
                       dtype=np.int64)
        want = [reference.pop(t, b"") for t in end.tolist()]
        got = riders.end_column(3, end)
        assert got is None if not any(want) else (
            got[0] == b"".join(want) and got[1].tolist() == list(map(len, want)))
    assert (riders.end_dict(3) or {}) == reference          # what no END took
    assert riders.end_dict(3) is None                       # (the writer's from then on)
