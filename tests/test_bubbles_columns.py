"""``analyses.lane_columns`` (a lane's bubbles a column at a time) gives what
``compute_bubbles``' loop gives, slice by slice: the same gaps, lane figures, kind and run
totals, busy-lane and ready-task series and previous tasks on the lane, on pathological lanes
(nested, overlapping, touching, zero-length slices, a lane starting at the run start or after
it, one slice) without a task graph and with one (predecessors ending before, at and after a
task's start, several with the same end, untrusted ones, markers, tasks of several slices);
times past int64 take the loop."""

from __future__ import annotations

import random

import pytest

from tracecvt.analyses import lane_columns
from tracecvt.analyses.bubbles import compute_bubbles
from tracecvt.analyses.timeline import Timeline
from tracecvt.model import (LANE, MARKER, PICKUP, SAME_TASK, TASK_GRAPH, TASK_ID,
                            UNTRUSTED_FLOW, RunMeta, Trace)


def _lanes(rng: random.Random, graph: bool = False, tasks: bool = False,
           pickup: bool = False) -> Trace:
    trace = Trace(RunMeta("t", "test"))
    if graph:
        trace.meta.extra[TASK_GRAPH] = True
    if tasks:
        trace.meta.extra[SAME_TASK] = TASK_ID
    group = trace.add_track("Device", None, "group", 0)
    for n in range(8):
        lane = trace.add_track(f"core {n}", group, LANE, n)
        t = rng.choice([0, 0, 5, 1000])
        for _ in range(rng.choice([1, 2, 7, 60])):
            t += rng.choice([0, 0, 1, 3, 50, 400])
            dur = rng.choice([0, 1, 10, 200, 5000])
            cat = MARKER if graph and rng.random() < 0.1 else ""
            args = {TASK_ID: rng.randrange(40)} if tasks else None
            if pickup and (rng.random() < 0.9 or not trace.slices or
                           trace.slices[-1].track != lane):
                # dispatched before its start (in the gap, before it, before the ready
                # time), at it, or after it (clock skew); the first of a lane always
                args = {**(args or {}), PICKUP: rng.choice([0, 0, 1, 2, 20, 300, 6000, -4])}
            trace.add_slice(lane, t, dur, "task", cat, args)
            if rng.random() < 0.2:                     # one inside it, or across its end
                trace.add_slice(lane, t + rng.choice([0, 2, 9]), rng.choice([0, 3, 30, 900]),
                                "inner", "", {TASK_ID: rng.randrange(40)} if tasks else None)
    if graph:
        n = len(trace.slices)
        for _ in range(n * 2):
            a, b = rng.randrange(n), rng.randrange(n)
            if a != b:
                trace.add_flow(a, b, UNTRUSTED_FLOW if rng.random() < 0.05 else "")
    return trace


def _both(trace: Trace, monkeypatch) -> tuple:
    def figures(b):
        return (b.gaps, [vars(f) for f in b.lanes], dict(b.busy_by_group),
                dict(b.ready_series), [vars(k) for k in b.kinds], vars(b.run),
                b.ignored_dependencies, b.lane_prev)
    tl = Timeline.build(trace)
    columns = figures(compute_bubbles(trace, tl))
    with monkeypatch.context() as m:          # a graph's lanes one at a time
        m.setattr(lane_columns, "graph_lanes", lambda *a: None)
        assert figures(compute_bubbles(trace, tl)) == columns
    with monkeypatch.context() as m:
        m.setattr(lane_columns, "idle_lane", lambda *a: None)
        m.setattr(lane_columns, "graph_lane", lambda *a: None)
        m.setattr(lane_columns, "graph_lanes", lambda *a: None)
        loop = figures(compute_bubbles(trace, tl))
    return columns, loop


def _batched(monkeypatch) -> list:
    """What each call of ``graph_lanes`` returns, from here on."""
    got: list = []
    real = lane_columns.graph_lanes
    monkeypatch.setattr(lane_columns, "graph_lanes", lambda *a: got.append(real(*a)) or got[-1])
    return got


@pytest.mark.parametrize("seed", range(40))
def test_idle_lanes_a_column_at_a_time_are_the_loops(seed, monkeypatch):
    trace = _lanes(random.Random(seed))
    columns, loop = _both(trace, monkeypatch)
    assert loop[0], "no gaps: the case says nothing"
    assert columns == loop


@pytest.mark.parametrize("seed", range(40))
def test_task_graph_lanes_a_column_at_a_time_are_the_loops(seed, monkeypatch):
    trace = _lanes(random.Random(seed), graph=True, tasks=seed % 2 == 1)
    tl = Timeline.build(trace)
    assert tl.has_graph and any(lane.graph for lane in tl.lanes)
    batches = _batched(monkeypatch)
    columns, loop = _both(trace, monkeypatch)
    assert batches[0] is not None, "the lanes were not taken at once"
    assert {g[3] for g in loop[0]} >= {1}, "no wait schedule: the case says nothing"
    assert columns == loop


@pytest.mark.parametrize("seed", range(40))
def test_task_graph_lanes_with_dispatch_times_a_column_at_a_time_are_the_loops(seed,
                                                                               monkeypatch):
    """A run whose tasks say when they were dispatched (simpler's PICKUP): a gap splits at
    the ready time and at the dispatch time, into wait predecessor, wait schedule and wait
    start."""
    trace = _lanes(random.Random(seed), graph=True, tasks=seed % 2 == 1, pickup=True)
    tl = Timeline.build(trace)
    assert tl.has_pickup and any(lane.graph for lane in tl.lanes)
    batches = _batched(monkeypatch)
    columns, loop = _both(trace, monkeypatch)
    assert batches[0] is not None, "the lanes were not taken at once"
    assert columns == loop
    assert {g[3] for g in loop[0]} >= {1, 3}, "no wait schedule or start: the case says nothing"


@pytest.mark.parametrize("odd", [1 << 63, 2.5])          # past int64; a float (kept so)
def test_a_dispatch_time_that_is_no_int_of_int64_takes_the_loop(odd, monkeypatch):
    trace = _lanes(random.Random(3), graph=True, pickup=True)
    trace.slices[-1].args = {PICKUP: odd}
    batches = _batched(monkeypatch)
    columns, loop = _both(trace, monkeypatch)
    assert batches[0] is None and columns == loop


def test_a_graph_with_every_kind_of_predecessor(monkeypatch):
    """A task's ready time is the latest end of its predecessors by its start: two end
    exactly at its start (the first is named), one ends after it (ignored and counted), one
    is untrusted (not a predecessor), the rest end earlier."""
    trace = Trace(RunMeta("t", "test"))
    trace.meta.extra[TASK_GRAPH] = True
    a, b = trace.add_track("core 0", None, LANE, 0), trace.add_track("core 1", None, LANE, 1)
    p = [trace.add_slice(a, ts, dur, f"p{k}") for k, (ts, dur) in
         enumerate([(0, 10), (0, 30), (5, 25), (40, 10), (0, 60), (0, 1), (45, 5), (45, 20)])]
    task = trace.add_slice(b, 50, 5, "task")
    for k in p:
        trace.add_flow(k, task, UNTRUSTED_FLOW if k == p[4] else "")
    columns, loop = _both(trace, monkeypatch)
    assert columns == loop
    assert [(g[1], g[2], g[3], g[5]) for g in loop[0] if g[4] == task] == [(0, 50, 0, p[3])]
    assert {f["name"]: f["ignored_dependencies"] for f in loop[1]} == {"core 0": 0,
                                                                       "core 1": 1}


def test_times_past_int64_take_the_loop(monkeypatch):
    trace = Trace(RunMeta("t", "test"))
    lane = trace.add_track("core", None, LANE, 0)
    for k in range(3):
        trace.add_slice(lane, (1 << 63) + 100 * k, 10, "task")
    calls = []
    real = lane_columns.idle_lane
    monkeypatch.setattr(lane_columns, "idle_lane", lambda *a: calls.append(1) or real(*a))
    b = compute_bubbles(trace, Timeline.build(trace))
    assert calls and b.computed
    assert [(g[1], g[2]) for g in b.gaps] == [((1 << 63) + 10, (1 << 63) + 100),
                                              ((1 << 63) + 110, (1 << 63) + 200)]


def test_lanes_too_far_apart_for_one_int64_are_taken_one_at_a_time(monkeypatch):
    """``graph_lanes`` moves each lane's times above the lane's before it in one int64: two
    lanes 2^61 ns apart do not fit, and each lane is then taken on its own, as before."""
    trace = Trace(RunMeta("t", "test"))
    trace.meta.extra[TASK_GRAPH] = True
    a, b = trace.add_track("core 0", None, LANE, 0), trace.add_track("core 1", None, LANE, 1)
    x = [trace.add_slice(a, ts, 10, "a") for ts in (0, 50, 100)]
    y = [trace.add_slice(b, ts, 10, "b") for ts in (1 << 61, (1 << 61) + 40)]
    trace.add_flow(x[1], y[0])
    trace.add_flow(x[2], y[1])
    batches = _batched(monkeypatch)
    columns, loop = _both(trace, monkeypatch)
    assert batches == [None]
    assert columns == loop
    assert [(g[1], g[2], g[3]) for g in loop[0] if g[4] == y[0]] == [(0, 60, 0),
                                                                     (60, 1 << 61, 1)]
