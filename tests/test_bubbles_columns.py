"""``bubbles._idle_lane`` (a lane without a task graph or dispatch times, a column at a time)
gives what ``compute_bubbles``' loop gives, slice by slice: the same gaps, lane figures and
busy-lane series, on pathological lanes (nested, overlapping, touching, zero-length slices,
a lane starting at the run start or after it, one slice), and falls back to the loop for
times past int64."""

from __future__ import annotations

import random

import pytest

from tracecvt.analyses import bubbles
from tracecvt.analyses.bubbles import compute_bubbles
from tracecvt.analyses.timeline import Timeline
from tracecvt.model import LANE, RunMeta, Trace


def _lanes(rng: random.Random) -> Trace:
    trace = Trace(RunMeta("t", "test"))
    group = trace.add_track("Device", None, "group", 0)
    for n in range(8):
        lane = trace.add_track(f"core {n}", group, LANE, n)
        t = rng.choice([0, 0, 5, 1000])
        for _ in range(rng.choice([1, 2, 7, 60])):
            t += rng.choice([0, 0, 1, 3, 50, 400])
            dur = rng.choice([0, 1, 10, 200, 5000])
            trace.add_slice(lane, t, dur, "task")
            if rng.random() < 0.2:                     # one inside it, or across its end
                trace.add_slice(lane, t + rng.choice([0, 2, 9]), rng.choice([0, 3, 30, 900]),
                                "inner")
    return trace


def _both(trace: Trace, monkeypatch) -> tuple:
    def figures(b):
        return (b.gaps, [vars(f) for f in b.lanes], dict(b.busy_by_group),
                [vars(k) for k in b.kinds], vars(b.run))
    tl = Timeline.build(trace)
    columns = figures(compute_bubbles(trace, tl))
    with monkeypatch.context() as m:
        m.setattr(bubbles, "_idle_lane", lambda *a: None)
        loop = figures(compute_bubbles(trace, tl))
    return columns, loop


@pytest.mark.parametrize("seed", range(40))
def test_idle_lanes_a_column_at_a_time_are_the_loops(seed, monkeypatch):
    trace = _lanes(random.Random(seed))
    columns, loop = _both(trace, monkeypatch)
    assert loop[0], "no gaps: the case says nothing"
    assert columns == loop


def test_times_past_int64_take_the_loop(monkeypatch):
    trace = Trace(RunMeta("t", "test"))
    lane = trace.add_track("core", None, LANE, 0)
    for k in range(3):
        trace.add_slice(lane, (1 << 63) + 100 * k, 10, "task")
    calls = []
    real = bubbles._idle_lane
    monkeypatch.setattr(bubbles, "_idle_lane", lambda *a: calls.append(1) or real(*a))
    b = compute_bubbles(trace, Timeline.build(trace))
    assert calls and b.computed
    assert [(g[1], g[2]) for g in b.gaps] == [((1 << 63) + 10, (1 << 63) + 100),
                                              ((1 << 63) + 110, (1 << 63) + 200)]
