"""The Perfetto writer's bookkeeping from the slices' columns (``tracecvt.slice_columns``:
lanes, time 0, flow ids, samples riding on slice events, lane order) writes the trace the
per-slice paths write, byte for byte, in one process and in two."""

from __future__ import annotations

import io
import random
from array import array

import numpy as np
import pytest

from tracecvt.model import UNTRUSTED_FLOW, RunMeta, Trace, split_overlaps
from tracecvt.slice_columns import by_track, columns_of, kept_columns
from tracecvt.writers import perfetto
from tracecvt.writers.perfetto import events, write_perfetto


def test_lanes_from_the_track_column_are_the_traces_own():
    rng = random.Random(7)
    for n in (0, 1, 2, 50, 400):
        trace = Trace(RunMeta(name="t", format="test"))
        lanes = [trace.add_track(f"lane {k}") for k in range(9)]
        for _ in range(n):
            trace.add_slice(rng.choice(lanes), rng.randrange(100), 1, "s")
        got = by_track(columns_of(trace.slices).track)
        want = trace.slices_by_track()
        assert got == want and list(got) == list(want)
        packed = by_track(columns_of(trace.slices).track, 3, packed=True)
        assert {t: list(ids) for t, ids in packed.items()} == \
            {t: [i + 3 for i in ids] for t, ids in want.items()}
        assert list(packed) == list(want) and all(ids.typecode == "q"
                                                 for ids in packed.values())


def test_packed_lanes_write_what_lists_write(monkeypatch):
    """The writer's lanes as ``array("q")`` (``by_track(packed=True)``) and as lists give
    the same bytes, on the loop's path too (no columns: ids sorted in place), in one
    process and in two."""
    def make(columns: bool) -> Trace:
        rng = random.Random(3)
        trace = Trace(RunMeta(name="t", format="test"))
        lanes = [trace.add_track(f"lane {k}", nesting=k % 2 == 0) for k in range(6)]
        for n in range(900):        # (starts out of order: the lanes are sorted)
            trace.add_slice(rng.choice(lanes), rng.randrange(10_000), rng.randrange(5),
                            f"s {n % 7}", args={"n": n})
        if not columns:
            trace.add_slice(lanes[0], 1 << 62, 1, "late")   # (no columns: the loop's way)
        return trace

    real_by_track, real_lists = events.by_track, Trace.slices_by_track

    def written(packed: bool, columns: bool, workers: int) -> bytes:
        def lanes(track, first=0, **_):
            return real_by_track(track, first, packed=packed)

        def lists(trace):
            got = real_lists(trace)
            return {t: array("q", ids) for t, ids in got.items()} if packed else got
        monkeypatch.setattr(events, "by_track", lanes)
        monkeypatch.setattr(Trace, "slices_by_track", lists)
        out = io.BytesIO()
        write_perfetto(make(columns), out, workers=workers)
        return out.getvalue()
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    for columns in (True, False):
        for workers in (1, 2):
            assert written(True, columns, workers) == written(False, columns, workers)


def test_times_outside_int64_leave_the_columns_to_the_slices():
    trace = Trace(RunMeta(name="t", format="test"))
    lane = trace.add_track("lane")
    trace.add_slice(lane, 1 << 62, 5, "late")
    assert columns_of(trace.slices) is None
    trace.slices[0].ts = 5
    cols = columns_of(trace.slices)
    assert cols.ts.tolist() == [5] and cols.end.tolist() == [10] and cols.track.dtype == np.int64


def _run(seed: int) -> Trace:
    """Lanes whose slices come out of order (equal starts, nested and zero-length ones),
    flows of every kind the .pftrace treats apart (drawn, untrusted, destination first,
    across one ns onto a zero-length or a lasting destination, several on one slice),
    counters sampled where slices begin and end, few or many."""
    rng = random.Random(seed)
    trace = Trace(RunMeta(name="cols", format="test"))
    ids = []
    for k in range(rng.randrange(1, 5)):
        lane = trace.add_track(f"lane {k}", nesting=rng.random() < 0.5)
        for _ in range(rng.randrange(0, 90)):
            ids.append(trace.add_slice(lane, rng.randrange(0, 400), rng.choice((0, 1, 7, 60)),
                                       rng.choice("abc"), "task", {"n": rng.randrange(4)}))
    for _ in range(rng.randrange(0, 60) if ids else 0):
        a, b = rng.choice(ids), rng.choice(ids)
        trace.add_flow(a, b, rng.choice(("", "", "dep", UNTRUSTED_FLOW)))
    times = sorted({trace.slices[i].ts + rng.choice((0, trace.slices[i].dur)) for i in ids})
    for k in range(rng.randrange(0, 4)):
        c = trace.add_counter(f"counter {k}")
        picked = times if rng.random() < 0.5 else times[:rng.randrange(0, 4)]
        for t in picked:
            c.add(t, rng.randrange(0, 5))
    return trace


def _enrich(trace: Trace) -> None:
    """As the analyses do: a derived lane copying the run's slices, a counter stepping
    where they begin and end, and new args for some of the run's slices."""
    n = len(trace.slices)
    lane = trace.add_track("derived", derived=True)
    c = trace.add_counter("derived counter")
    for i in range(0, n, 3):
        s = trace.slices[i]
        trace.add_slice(lane, s.ts, s.dur, "copy")
    for t in sorted({trace.slices[i].ts for i in range(n, len(trace.slices))}):
        c.add(t, 2)
    for i in range(0, n, 5):
        trace.slices[i].args = {**(trace.slices[i].args or {}), "marked": True}


def _written(seed: int, workers: int, enrich, without_columns: bool, monkeypatch) -> bytes:
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    if without_columns:
        monkeypatch.setattr(events, "kept_columns", lambda slices, make=True, first=None: None)
    else:
        monkeypatch.setattr(events, "kept_columns", kept_columns)
    out = io.BytesIO()
    write_perfetto(_run(seed), out, workers=workers, enrich=enrich)
    return out.getvalue()


@pytest.mark.parametrize("workers, enrich", [(1, None), (2, None), (2, _enrich)])
def test_the_columns_write_what_the_slices_write(workers, enrich, monkeypatch):
    for seed in range(25):
        fast = _written(seed, workers, enrich, False, monkeypatch)
        slow = _written(seed, workers, enrich, True, monkeypatch)
        assert fast == slow, seed


def _overlapping(seed: int) -> Trace:
    """Lanes of back-to-back work with some overlaps, and call stacks with some calls
    that end after the one they start in; long and short lanes."""
    rng = random.Random(seed)
    trace = Trace(RunMeta(name="overlaps", format="test"))
    for k in range(6):
        lane = trace.add_track(f"lane {k}", nesting=k % 2 == 1)
        t = 0
        for _ in range(rng.choice((5, 40, 300))):
            dur = rng.choice((0, 3, 10, 50))
            trace.add_slice(lane, t, dur, "s")
            t += rng.choice((dur, dur, dur + 2, 1, 0)) if k % 2 == 0 else rng.choice((1, 2, 60))
    return trace


def test_overlaps_are_split_alike_from_the_columns(monkeypatch):
    import tracecvt.model as model

    for seed in range(20):
        got = []
        for columns_from in (0, 1 << 40):
            monkeypatch.setattr(model, "_COLUMNS_FROM", columns_from)
            trace = _overlapping(seed)
            moved = model.split_overlaps(trace)
            got.append((moved, [s.track for s in trace.slices],
                        [(t.name, t.parent, t.order, t.nesting) for t in trace.tracks]))
        assert got[0] == got[1], seed
        assert seed > 0 or got[0][0] > 0


def _lanes_run(seed: int) -> Trace:
    """Lanes of cores and call stacks under groups, with slices of invented times, markers
    (lanes of them only, and among tasks), equal starts and overlaps (split onto overlap
    lanes), idle lanes, and flows between tasks."""
    from tracecvt.model import INVENTED_TIMES, MARKER, TASK_GRAPH

    rng = random.Random(seed)
    trace = Trace(RunMeta(name="lanes", format="test"))
    trace.meta.extra[TASK_GRAPH] = rng.random() < 0.5
    ids = []
    for g in range(2):
        group = trace.add_track(f"group {g}", kind="group")
        for k in range(rng.randrange(1, 5)):
            lane = trace.add_track(f"AIC_{k}", parent=group, nesting=rng.random() < 0.3)
            markers = rng.choice((0, 0, 1, 2))     # none, only markers, some
            for _ in range(rng.randrange(0, 60)):
                cat = MARKER if markers == 1 or markers == 2 and rng.random() < 0.3 \
                    else rng.choice(("task", "task", INVENTED_TIMES))
                ids.append(trace.add_slice(lane, rng.randrange(0, 300),
                                           rng.choice((0, 2, 9, 40)), "t", cat))
    for _ in range(rng.randrange(0, 30) if ids else 0):
        a, b = rng.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
        trace.add_flow(a, b)
    split_overlaps(trace)
    return trace


def test_the_timeline_is_built_alike_from_the_columns(monkeypatch):
    from tracecvt.analyses import timeline
    from tracecvt.analyses import add_derived
    from tracecvt.modelfile.compare import model_differences

    for seed in range(40):
        built, derived = [], []
        for columns_from in (0, 1 << 40):
            monkeypatch.setattr(timeline, "_COLUMNS_FROM", columns_from)
            trace = _lanes_run(seed)
            t = timeline.Timeline.build(trace)
            built.append(([(l.track, l.tracks, l.slices, l.virtual, l.kind) for l in t.lanes],
                          t.start, t.end, t.lane_of, t.preds, t.lane_counts))
            add_derived(trace)
            derived.append(trace)
        assert built[0] == built[1], seed
        assert model_differences(derived[0], derived[1]) == [], seed


@pytest.mark.parametrize("workers, enrich", [(1, None), (2, None), (2, _enrich)])
def test_packets_spilled_to_a_file_are_written_as_those_held(workers, enrich, monkeypatch):
    """A writing process lays the packets it built before each progress step in a file
    (``SequenceWriter.spill``) rather than holding them; the trace is byte for byte the
    one written holding them all, with a step of a few packets (many spills)."""
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "CHUNK_PACKETS", 7)
    spilled = []
    real_report, real_init = events.SequenceWriter.report, events.SequenceWriter.__init__

    def report(self):
        spilled.append(len(self.spilled))
        real_report(self)

    def holding(self, *args, **kw):
        real_init(self, *args, **kw)
        self.spilling = False

    monkeypatch.setattr(events.SequenceWriter, "report", report)
    for seed in range(25):
        out = []
        for init in (real_init, holding):
            monkeypatch.setattr(events.SequenceWriter, "__init__", init)
            buf = io.BytesIO()
            write_perfetto(_run(seed), buf, workers=workers, enrich=enrich)
            out.append(buf.getvalue())
        assert out[0] == out[1], seed
    assert max(spilled) > 20


def test_the_lane_of_each_slice_is_made_where_first_read():
    """``Timeline.lane_of``: for a run without a task graph, made at its first read (a
    database's 2 M slices need not make a dict nobody reads), then every slice of the
    lanes to its lane's index, none else; for a run with one, a dict at once (read per flow
    and per edge).  Either way it is equal to the mapping made from the lanes."""
    from tracecvt.analyses.timeline import LaneIndex, Timeline

    seen = set()
    for seed in range(40):
        trace = _lanes_run(seed)
        t = Timeline.build(trace)
        want = {i: k for k, lane in enumerate(t.lanes) for i in lane.slices}
        lazy = isinstance(t.lane_of, LaneIndex)
        assert lazy != t.has_graph, seed
        seen.add(lazy)
        if lazy:
            assert t.lane_of._made is None, seed             # (not made by the build)
            assert t.lane_of.get(-1) is None and t.lane_of._made is not None, seed
            assert all(i not in t.lane_of and t.lane_of.get(i, -1) == -1
                       for i in range(len(trace.slices)) if i not in want), seed
        assert len(t.lane_of) == len(want), seed
        assert all(t.lane_of[i] == k and t.lane_of.get(i) == k for i, k in want.items()), seed
        assert t.lane_of == want and dict(t.lane_of) == want, seed
    assert seen == {True, False}
