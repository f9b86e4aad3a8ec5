"""The Chrome JSON writer with two processes (``chrome_events.write_events``): the file is
byte for byte the one a single process writes, whatever is cut where, and whatever goes
wrong in the second process."""

from __future__ import annotations

import gzip
import io
import json
import os

import pytest

from tracecvt.analyses import add_derived
from tracecvt.fileio import atomic_output
from tracecvt.model import GROUP, RunMeta, Trace
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.writers import chrome_events
from tracecvt.writers.chrome import write_chrome

from conftest import pypto_run_dir


def _write(trace: Trace, workers: int, progress=None) -> tuple[bytes, dict]:
    buf = io.BytesIO()
    counts = write_chrome(trace, buf, progress, workers)
    return buf.getvalue(), counts


@pytest.fixture
def forks(monkeypatch):
    """Every trace is split (no minimum cost); the forks made are counted."""
    made = []
    real = chrome_events.fork_pass
    monkeypatch.setattr(chrome_events, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(chrome_events, "fork_pass", lambda fn: made.append(1) or real(fn))
    return made


def _lanes(n: int, lanes: int = 6, bad_every: int = 0) -> Trace:
    """``n`` slices round-robin on ``lanes`` lanes (args, some needing the slow path),
    nested children, instants, flows between neighbours (some reversed: not drawn),
    counters."""
    tr = Trace(RunMeta("lanes", "test"))
    g = tr.add_track("g", kind=GROUP)
    ls = [tr.add_track(f"l{i}", g) for i in range(lanes)]
    for k in range(n):
        args = {"k": k, "s": f"v{k % 7}"}
        if bad_every and k % bad_every == 0:
            args["bad"] = 2 ** 64 + k             # (orjson refuses it: cleaned per event)
        tr.add_slice(ls[k % lanes], 1000 * k, 900, f"n{k % 50}", "c", args)
        if k % 5 == 0:
            tr.add_slice(ls[k % lanes], 1000 * k + 100, 300, "child", "c")
    n_slices = len(tr.slices)
    for k in range(1, n_slices, 3):
        tr.add_flow(k - 1, k)
    tr.add_flow(9, 2)                             # reversed: not drawn
    for k in range(0, n, 97):
        tr.add_instant(ls[k % lanes], 1000 * k + 450, "mark")
    c = tr.add_counter("busy", g, "lanes")
    for k in range(0, n, 2):
        c.add(1000 * k, k % 4)
    return tr


def _one_lane(n: int) -> Trace:
    """Every slice on one lane (the cut falls inside it), flows from each slice to the
    next and one across the whole lane, instants inside slices."""
    tr = Trace(RunMeta("one", "test"))
    g = tr.add_track("g", kind=GROUP)
    lane = tr.add_track("only", g)
    for k in range(n):
        tr.add_slice(lane, 100 * k, 90 if k % 3 else 100, f"t{k}", "", {"k": k})
    for k in range(1, n):
        tr.add_flow(k - 1, k)
    tr.add_flow(0, n - 1)
    for k in range(0, n, 11):
        tr.add_instant(lane, 100 * k + 5, "i")
    return tr


def _beyond_int64() -> Trace:
    """A slice past 2^62 ns (no columns: one slice at a time) and a flow to no slice."""
    tr = _lanes(300)
    tr.add_slice(0, 1 << 62, 10, "far")
    tr.add_flow(0, 10 ** 9)
    return tr


CASES = {"lanes": lambda: _lanes(3000, bad_every=37), "one lane": lambda: _one_lane(2000),
         "beyond int64": _beyond_int64, "empty": lambda: Trace(RunMeta("empty", "test"))}


@pytest.mark.parametrize("case", CASES)
def test_two_processes_write_the_same_file(case, forks):
    trace = CASES[case]()
    one, counts_one = _write(trace, 1)
    two, counts_two = _write(trace, 2)
    assert two == one
    assert counts_two == counts_one
    doc = json.loads(two)
    assert counts_two["events"] == len(doc["traceEvents"])
    assert counts_two["slices"] == sum(e["ph"] == "X" for e in doc["traceEvents"]) \
        == len(trace.slices)
    assert forks == ([1] if case != "empty" else [])


def test_a_real_run_with_its_derived_tracks(forks):
    (src,) = find_runs(pypto_run_dir("ffn_medium"))
    trace = src.read(ReadOptions(workers=1))
    add_derived(trace)
    one, counts_one = _write(trace, 1)
    two, counts_two = _write(trace, 2)
    assert two == one and counts_two == counts_one and forks == [1]


def test_large_traces_fork_without_help(monkeypatch):
    made = []
    real = chrome_events.fork_pass
    monkeypatch.setattr(chrome_events, "fork_pass", lambda fn: made.append(1) or real(fn))
    small = _lanes(200)
    _write(small, 2)
    assert made == []                               # below PARALLEL_MIN_COST
    large = _lanes(60000)
    one, _ = _write(large, 1)
    two, _ = _write(large, 2)
    assert made == [1] and two == one


def test_gzip_output(tmp_path, forks):
    trace = _lanes(2000)
    one, _ = _write(trace, 1)
    path = tmp_path / "t.json.gz"
    with atomic_output(path, gzip_level=6) as out:
        write_chrome(trace, out, None, 2)
    assert gzip.decompress(path.read_bytes()) == one


def test_the_second_process_failing_leaves_its_part_to_this_one(monkeypatch, forks):
    trace = _lanes(3000)
    one, counts_one = _write(trace, 1)
    parent = os.getpid()
    real = chrome_events.Events.lane

    def lane(self, part):
        if os.getpid() != parent:
            raise RuntimeError("the second process fails")
        return real(self, part)

    monkeypatch.setattr(chrome_events.Events, "lane", lane)
    two, counts_two = _write(trace, 2)
    assert two == one and counts_two == counts_one and forks == [1]


def test_without_fork_one_process_writes_it_all(monkeypatch):
    monkeypatch.setattr(chrome_events, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(chrome_events, "fork_pass", lambda fn: None)
    trace = _lanes(1000)
    assert _write(trace, 2)[0] == _write(trace, 1)[0]


def test_progress_reaches_every_slice(forks):
    trace = _lanes(25000)
    seen = []
    _write(trace, 2, seen.append)
    assert seen and seen[-1] == len(trace.slices) and seen == sorted(seen)


def test_halves_cut_inside_the_lane_that_crosses_the_middle():
    items = [("lane", (1, 0, 100), 100), ("lane", (2, 0, 300), 300),
             ("counter", "c", 200)]
    mine, theirs = chrome_events._halves(items, 600)
    # the middle (300) falls 200 into lane 2's 300: its first 200 of 300 slices here
    assert mine == [("lane", (1, 0, 100), 100), ("lane", (2, 0, 200), 0)]
    assert theirs == [("lane", (2, 200, 300), 0), ("counter", "c", 200)]
    # a counter across the middle goes to the side that holds most of it
    items = [("lane", (1, 0, 10), 200), ("counter", "a", 300), ("counter", "b", 400)]
    assert chrome_events._halves(items, 900) == (items[:2], items[2:])
    items = [("lane", (1, 0, 10), 200), ("counter", "a", 300), ("counter", "b", 100)]
    assert chrome_events._halves(items, 600) == (items[:1], items[1:])
    # everything in one lane: cut inside it; a lane of one slice stays whole
    assert chrome_events._halves([("lane", (5, 0, 10), 100)], 100) == (
        [("lane", (5, 0, 5), 0)], [("lane", (5, 5, 10), 0)])
    mine, theirs = chrome_events._halves([("lane", (5, 0, 1), 100)], 100)
    assert mine + theirs == [("lane", (5, 0, 1), 0)]


def test_plan_by_columns_is_plan_by_slice():
    trace = _lanes(2000)
    by_cols = chrome_events.Plan(trace, {}, {}, {}, [])
    assert by_cols.cols is not None
    slow = chrome_events.Plan.__new__(chrome_events.Plan)
    slow.trace, slow.slices = trace, trace.slices
    warned: list[str] = []
    slow._by_slice(trace, warned)
    assert warned == []
    assert by_cols.by_track == slow.by_track
    assert by_cols.flows == slow.flows and by_cols.not_drawn == slow.not_drawn == 1


def test_estimates_weigh_args_and_flow_ends():
    trace = _lanes(600, lanes=2)
    plan = chrome_events.Plan(trace, {}, {}, {}, [])
    items = {kind if kind != "lane" else key[0]: cost for kind, key, cost in plan.items()}
    per_slice = chrome_events._SLICE_COST + 2 * chrome_events._ARG_COST
    # (each lane: 300 slices with two args, 60 children; flow ends on both)
    for lane in (1, 2):
        ids = plan.by_track[lane]
        ends = sum(plan.out_start[i + 1] - plan.out_start[i] + plan.in_start[i + 1]
                   - plan.in_start[i] for i in ids)
        assert items[lane] == per_slice * len(ids) + chrome_events._FLOW_END_COST * ends
    assert items["counter"] == chrome_events._SAMPLE_COST * 300


def test_a_part_after_nothing_loses_its_leading_comma(tmp_path):
    written = []
    events = chrome_events.Events(None, written.append, False, None)
    part = tmp_path.joinpath("part").open("w+b")
    part.write(b',{"a":1},{"b":2}')
    chrome_events._append(events, part, {"events": 2, "slices": 0})
    assert b"".join(written) == b'{"a":1},{"b":2}' and events.started
    assert events.counts["events"] == 2
    events = chrome_events.Events(None, written.append, True, None)
    written.clear()
    chrome_events._append(events, part, {"events": 2})
    assert b"".join(written) == b',{"a":1},{"b":2}'


def _python_times(plan, track_id):
    """``Plan.lane_times`` one slice at a time (the writer's way without columns)."""
    slices, base = plan.slices, plan.base
    ids = sorted(plan.by_track[track_id], key=lambda i: (slices[i].ts, -slices[i].dur))
    return (ids, [(slices[i].ts - base) / 1000 for i in ids],
            [slices[i].dur / 1000 for i in ids])


@pytest.mark.parametrize("far", [0, (1 << 53) - 7, 1 << 53, 12_345_678_901_234_567])
def test_lane_times_by_numpy_are_pythons(far):
    """Ties of start and length keep their order; every start and length divides as
    Python divides ints, up to 2^53 ns and past it (one slice at a time there)."""
    tr = Trace(RunMeta("times", "test"))
    g = tr.add_track("g", kind=GROUP)
    lane = tr.add_track("l", g)
    rng = __import__("random").Random(7)
    for k in range(3000):
        ts = rng.choice([0, 1, 999, 1001, 123_456_789]) + rng.randrange(10 ** 6)
        tr.add_slice(lane, ts, rng.choice([0, 1, 3, 1000, 999_999]), f"s{k}")
    tr.add_slice(lane, far, 7, "far")
    tr.add_slice(lane, 5, far, "long")
    plan = chrome_events.Plan(tr, {}, {}, {}, [])
    plan.base = 0
    assert plan.cols is not None
    got = plan.lane_times(lane)
    assert got == _python_times(plan, lane)
    assert [type(x) for x in got[1][:3]] == [float] * 3
