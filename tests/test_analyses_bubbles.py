"""Bubbles: PyPTO's own figures reproduced, derived slices tiling every lane, counters."""

from __future__ import annotations

import pytest

from tracecvt.analyses import add_derived, analyze
from tracecvt.analyses.bubbles import CAUSES
from tracecvt.analyses.pypto_check import TOLERANCE_US
from tracecvt.convert import read
from tracecvt.model import (GROUP, LANE, NO_BUBBLES, UNTRUSTED_FLOW, RunMeta, Trace,
                            split_overlaps)
from tracecvt.readers.msprof.opprof import NOT_A_TIMELINE
from tracecvt.readers.ncu.layout import NO_IDLE_REASON

from conftest import PYPTO_MERGED_RUNS, pypto_run_dir

FIGURES = ("work_time_us", "total_wait_us", "wait_schedule_us", "wait_predecessor_us")


@pytest.fixture(scope="module", params=PYPTO_MERGED_RUNS)
def pypto_run(request):
    (trace,) = read(pypto_run_dir(request.param))
    return request.param, trace, analyze(trace)


def multi_seq(trace) -> bool:
    """PyPTO runs with several device tasks: the HUB seqNo quirk applies (5.6)."""
    return any(s.cat == "fake" for s in trace.slices)


def rounding_bound_us(tasks: int) -> float:
    """Integer-ns model: each timestamp is rounded once from PyPTO's float µs, so a sum over
    a core's tasks can differ from PyPTO's float sum by 0.5 ns per timestamp."""
    return 0.0005 * (2 * tasks + 1)


def test_every_shared_run_with_a_log_is_checked():
    runs = [r for r in PYPTO_MERGED_RUNS
            if list((pypto_run_dir(r) / "CostModelSimulationOutput").glob("bubble_analysis*"))]
    assert len(runs) == 6


def test_figures_equal_bubble_analysis_log(pypto_run):
    """tracecvt's per-lane figures equal PyPTO's on every core of every single-device-task
    run; on multi-device-task runs, PyPTO's formula on the trace equals the log once PyPTO's
    origin is used, except on cores whose executions PyPTO's task table dropped."""
    name, trace, a = pypto_run
    log = trace.meta.extra["pypto_bubble_log"]["cores"]
    check = a.pypto_check
    assert check is not None and len(check.cores) == len(log)
    lanes = {f.name: f for f in a.bubbles.lanes}
    beyond = 0
    for c in check.cores:
        core = log[c.core]
        if not multi_seq(trace):
            assert c.status in ("match", "match (rounding)"), (c.core, c.max_diff_us)
            assert not c.reasons
            # the figures tracecvt puts into the trace and the summaries, independently
            fig = lanes.get(c.core)
            mine = {"work_time_us": fig.span / 1000, "total_wait_us": fig.wait / 1000,
                    "wait_schedule_us": fig.wait_schedule / 1000,
                    "wait_predecessor_us": fig.wait_predecessor / 1000} if fig else \
                dict.fromkeys(FIGURES, 0.0)
            tasks = fig.tasks if fig else 0
            assert tasks == core["tasks"]
            for k in FIGURES:
                diff = abs(mine[k] - core[k])
                assert diff <= max(TOLERANCE_US, rounding_bound_us(tasks)), (c.core, k, diff)
                beyond += diff > TOLERANCE_US
        elif c.status == "differs":
            assert c.core.startswith("HUB") and "duplicate task keys" in c.reasons[0]
            assert c.log_tasks > c.trace_tasks
    # Past 0.01 µs only where ns rounding adds up (ffn_large HUB_80: 512 tasks, 0.0102 µs).
    assert beyond <= 1
    if multi_seq(trace):
        assert check.origin_shift_us == pytest.approx(3.313, abs=0.001)
        assert sum(c.status == "differs" for c in check.cores) == 1
        assert any("negative wait" in x for x in check.anomalies)
    else:
        assert check.origin_shift_us == 0 and not check.anomalies


@pytest.mark.parametrize("name", ["softmax_multiseq", "ffn_medium"])
def test_raw_path_keeps_every_execution_and_matches_every_core(name):
    """Read from the raw files, every execution is there: PyPTO's formula on the trace
    equals the log on every core, negative values included, with no origin shift."""
    (trace,) = read(pypto_run_dir(name), "pypto-raw")
    check = analyze(trace).pypto_check
    assert check.origin_shift_us == 0
    assert [c.core for c in check.cores if c.status == "differs"] == []
    assert any(c.log["wait_schedule_us"] < 0 for c in check.cores)


def test_negative_pypto_waits_never_reach_the_trace(pypto_run):
    name, trace, a = pypto_run
    for f in a.bubbles.lanes:
        assert min(f.wait, f.wait_schedule, f.wait_predecessor, f.idle) >= 0
    add_derived(trace, a)
    assert all(s.dur >= 0 for s in trace.slices)
    if multi_seq(trace):
        assert a.bubbles.ignored_dependencies > 0
        assert any("does not copy these numbers" in w for w in a.warnings)


def lane_intervals(trace, lanes):
    out = []
    for t in lanes:
        out += [(s.ts, s.ts + s.dur) for s in trace.slices if s.track == t and s.cat != "fake"]
    return sorted(out)


def union(intervals):
    merged = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def check_tiling(trace, a):
    """Busy union + bubble slices = [run start, lane's last end], nothing overlapping."""
    tracks = trace.tracks
    t0 = a.timeline.start
    by_name = {}
    for t in tracks:
        if t.kind == LANE and t.derived and t.name.endswith(" · bubbles"):
            by_name[(t.parent, t.name[:-len(" · bubbles")])] = t.index
    checked = 0
    for lane, fig in zip(a.timeline.lanes, a.bubbles.lanes):
        busy = union(lane_intervals(trace, lane.tracks))
        bl = by_name.get((lane.group, lane.name))
        bubbles = sorted((s.ts, s.ts + s.dur, s.name) for s in trace.slices if s.track == bl)
        assert all(name in CAUSES for _, _, name in bubbles)
        pieces = sorted([(x, y) for x, y in busy] + [(x, y) for x, y, _ in bubbles])
        assert pieces[0][0] == t0, lane.name
        for (a0, a1), (b0, b1) in zip(pieces, pieces[1:]):
            assert a1 == b0, (lane.name, a1, b0)          # contiguous: no gap, no overlap
        assert pieces[-1][1] == fig.last_end
        busy_ns = sum(y - x for x, y in busy)
        bubble_ns = sum(y - x for x, y, _ in bubbles)
        assert busy_ns == fig.busy and bubble_ns == fig.wait
        assert busy_ns + bubble_ns == fig.last_end - t0 == fig.span
        checked += 1
    return checked


def test_bubbles_tile_every_lane(pypto_run):
    name, _, _ = pypto_run
    (trace,) = read(pypto_run_dir(name))
    a = analyze(trace)
    add_derived(trace, a)
    assert check_tiling(trace, a) == len(a.bubbles.lanes) > 0


def test_bubble_lanes_sit_right_under_their_lane(pypto_run):
    name, _, _ = pypto_run
    (trace,) = read(pypto_run_dir(name))
    a = analyze(trace)
    add_derived(trace, a)
    for parent in {t.parent for t in trace.tracks if t.kind == LANE and t.derived
                   and t.name.endswith(" · bubbles")}:
        names = [trace.tracks[c].name for c in trace.children(parent)]
        for k, n in enumerate(names):
            if n.endswith(" · bubbles"):
                assert names[k - 1] == n[:-len(" · bubbles")], names[k - 1:k + 1]
    analysis = [t for t in trace.tracks if t.name == "tracecvt analysis"]
    assert len(analysis) == 1 and analysis[0].kind == GROUP
    assert trace.children(None)[-1] == trace.tracks.index(analysis[0])    # last, as drawn
    assert all(trace.tracks[c].derived for c in analysis[0].children)


# -- small in-memory traces -----------------------------------------------------------------

def make_trace(fmt="msprof", **extra) -> Trace:
    tr = Trace(RunMeta("mem", fmt, tool="test"))
    tr.meta.extra.update(extra)
    return tr


def test_without_a_graph_every_gap_is_idle():
    tr = make_trace()
    dev = tr.add_track("NPU 0", None, GROUP)
    s1 = tr.add_track("Stream 1", dev, nesting=False)
    s2 = tr.add_track("Stream 2", dev, nesting=False)
    for ts, dur in ((100, 50), (200, 30), (400, 100)):
        tr.add_slice(s1, ts, dur, "k")
    tr.add_slice(s2, 130, 40, "k")
    a = analyze(tr)
    assert a.bubbles.cause_model == "idle"
    f1, f2 = a.bubbles.lanes
    assert (f1.busy, f1.wait, f1.idle, f1.span) == (180, 220, 220, 400)
    assert (f2.busy, f2.wait, f2.span) == (40, 30, 70)    # from the run start (100)
    assert f1.wait_schedule == f1.wait_predecessor == 0
    assert not a.critical_path.computed and "no task graph" in a.critical_path.reason
    counts = add_derived(tr, a)
    assert counts["bubble_slices"] == 3 and counts["bubble_lanes"] == 2
    assert {s.name for s in tr.slices if s.cat == "bubble"} == {"idle"}
    assert check_tiling(tr, a) == 2
    times, busy = a.bubbles.busy_series("Stream")
    assert (times[0], busy[0]) == (100, 1) and (times[-1], busy[-1]) == (500, 0)
    assert max(busy) == 2 and min(busy) >= 0
    assert a.bubbles.ready_series == {}



def _at(series, t):
    """The value of a step series (timestamps, values) at time t."""
    times, values = series
    v = 0
    for ts, x in zip(times, values):
        if ts > t:
            break
        v = x
    return v


def test_busy_lanes_go_into_each_group_of_their_lanes_and_add_up_to_the_kind():
    """Two ranks' streams: each rank's group gets the busy lanes of its own streams, and
    the two series add up to the kind's series over the run at every time."""
    tr = make_trace()
    groups = []
    for rank, spans in ((0, ((0, 100), (50, 100))), (1, ((80, 40), (300, 10)))):
        g = tr.add_track(f"Rank {rank}", None, GROUP)
        hw = tr.add_track("Ascend Hardware", g, GROUP)
        groups.append(hw)
        for n, (ts, dur) in enumerate(spans):
            lane = tr.add_track(f"Stream {n}", hw, nesting=False)
            tr.add_slice(lane, ts, dur, "k")
    a = analyze(tr)
    b = a.bubbles
    assert set(b.busy_by_group) == {("Stream", g) for g in groups}
    total = b.busy_series("Stream")
    cuts = sorted(set(total[0]) | {t for g in groups for t in b.busy_by_group["Stream", g][0]})
    for t in cuts:
        assert _at(total, t) == sum(_at(b.busy_by_group["Stream", g], t) for g in groups)
    assert [_at(b.busy_by_group["Stream", groups[0]], t) for t in (0, 50, 100, 150)] == \
        [1, 2, 1, 0]
    assert [_at(b.busy_by_group["Stream", groups[1]], t) for t in (0, 80, 120, 300, 310)] == \
        [0, 1, 0, 1, 0]
    add_derived(tr, a)
    counters = {tr.tracks[c.track].parent: c for c in tr.counters}
    assert set(counters) == set(groups)       # no analysis group: nothing left for it
    for g in groups:
        c = counters[g]
        assert tr.children(g)[0] == c.track        # first in its group
        assert (list(c.ts), list(c.values)) == tuple(map(list, b.busy_by_group["Stream", g]))
        assert c.ts is not b.busy_by_group["Stream", g][0]     # (a copy of its own)


def test_busy_lanes_of_a_kind_with_a_top_level_lane_go_to_the_analysis_group():
    tr = make_trace()
    hw = tr.add_track("Ascend Hardware", None, GROUP)
    tr.add_slice(tr.add_track("Stream 0", hw, nesting=False), 0, 10, "k")
    tr.add_slice(tr.add_track("Stream 1", None, nesting=False), 5, 10, "k")
    a = analyze(tr)
    add_derived(tr, a)
    (c,) = tr.counters
    assert tr.path(c.track) == "tracecvt analysis / busy lanes · Stream"
    assert (list(c.ts), list(c.values)) == tuple(map(list, a.bubbles.busy_series("Stream")))
    assert list(c.values) == [1, 2, 1, 0] and all(v.__class__ is int for v in c.values)

def test_nested_slices_count_once_and_overlap_lanes_join_their_lane():
    tr = make_trace()
    dev = tr.add_track("host", None, GROUP)
    th = tr.add_track("thread 7", dev, nesting=True)
    tr.add_slice(th, 0, 100, "outer")
    tr.add_slice(th, 10, 20, "inner")
    tr.add_slice(th, 300, 10, "later")
    core = tr.add_track("core 1", dev, nesting=False)
    tr.add_slice(core, 0, 50, "a")
    tr.add_slice(core, 40, 50, "b")      # overlaps a: goes to an overlap lane
    tr.add_slice(core, 200, 10, "c")
    assert split_overlaps(tr) == 1
    a = analyze(tr)
    figs = {f.name: f for f in a.bubbles.lanes}
    assert len(a.bubbles.lanes) == 2
    assert (figs["thread 7"].busy, figs["thread 7"].wait) == (110, 200)
    assert (figs["core 1"].busy, figs["core 1"].wait, figs["core 1"].tasks) == (100, 110, 3)
    add_derived(tr, a)
    assert check_tiling(tr, a) == 2
    names = [tr.tracks[c].name for c in tr.children(dev)]
    # Each kind's busy lanes go first into the group holding its lanes.
    assert names == ["busy lanes · thread", "busy lanes · core", "thread 7",
                     "thread 7 · bubbles", "core 1", "core 1", "core 1 · bubbles"]


def graph_trace() -> tuple[Trace, dict[str, int]]:
    """Two AIV lanes and an AIC lane with a small task graph (PyPTO-like)."""
    tr = make_trace("pypto", task_graph=True)   # as the PyPTO reader marks its runs
    dev = tr.add_track("Machine", None, GROUP)
    aic = tr.add_track("AIC_1", dev, nesting=False)
    v1 = tr.add_track("AIV_2", dev, nesting=False)
    v2 = tr.add_track("AIV_3", dev, nesting=False)
    ids = {}
    ids["a"] = tr.add_slice(aic, 0, 100, "a", "task")
    ids["b"] = tr.add_slice(v1, 150, 50, "b", "task")        # ready 100 -> 50 pred + 50 sched
    ids["c"] = tr.add_slice(v2, 120, 30, "c", "task")        # ready 100 -> 100 pred + 20 sched
    ids["d"] = tr.add_slice(v1, 260, 40, "d", "task")        # needs b, c; ready 200
    ids["e"] = tr.add_slice(aic, 130, 20, "e", "task")       # no predecessors
    ids["late"] = tr.add_slice(v2, 400, 10, "late", "task")  # its predecessor ends after
    ids["x"] = tr.add_slice(aic, 380, 60, "x", "task")
    for s, d in (("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")):
        tr.add_flow(ids[s], ids[d])
    # as the PyPTO reader marks a dependency that ends after its successor starts
    tr.add_flow(ids["x"], ids["late"], UNTRUSTED_FLOW)
    return tr, ids


def test_graph_splits_gaps_by_cause_and_ignores_late_dependencies():
    tr, ids = graph_trace()
    a = analyze(tr)
    b = a.bubbles
    assert b.cause_model == "task graph"
    figs = {f.name: f for f in b.lanes}
    v1 = figs["AIV_2"]
    # gap [0,150) before b: ready 100 -> 100 predecessor + 50 schedule;
    # gap [200,260) before d: ready max(200, 150) = 200 -> 60 schedule
    assert (v1.wait_predecessor, v1.wait_schedule, v1.wait) == (100, 110, 210)
    v2 = figs["AIV_3"]
    # gap [0,120): 100 + 20; gap [150,400) before 'late': its predecessor x ends at 440 > 400,
    # so it is ignored: ready = run start -> all 250 schedule
    assert (v2.wait_predecessor, v2.wait_schedule) == (100, 270)
    assert v2.ignored_dependencies == 1 and b.ignored_dependencies == 1
    aic = figs["AIC_1"]
    assert (aic.wait_predecessor, aic.wait_schedule) == (0, 30 + 230)
    ready = b.ready_series
    assert set(ready) == {"AIV", "AIC"}
    assert all(v >= 0 for _, values in ready.values() for v in values)
    add_derived(tr, a)
    assert check_tiling(tr, a) == 3
    waits = [s for s in tr.slices if s.cat == "bubble" and s.name == "wait predecessor"]
    assert {s.all_args["waiting_for"] for s in waits} == {"a"}
    assert all(s.args is None for s in tr.slices
               if s.cat == "bubble" and s.name != "wait predecessor")


def test_not_a_timeline_and_serialized_runs_have_no_bubbles():
    tr = make_trace("msprof", **{NO_BUBBLES: NOT_A_TIMELINE})   # as read
    lane = tr.add_track("cube0", tr.add_track("blocks", None, GROUP))
    tr.add_slice(lane, 0, 10, "block")
    tr.add_slice(lane, 50, 10, "block")
    a = analyze(tr)
    assert not a.bubbles.computed and "not a timeline" in a.bubbles.reason
    assert add_derived(tr, a)["bubble_slices"] == 0
    assert not any(t.derived for t in tr.tracks)
    tr = make_trace("ncu", ncu_serialized=True, **{NO_BUBBLES: NO_IDLE_REASON})   # as read
    lane = tr.add_track("kernels", tr.add_track("GPU 0", None, GROUP))
    tr.add_slice(lane, 0, 10, "k", "kernel")
    a = analyze(tr)
    assert not a.bubbles.computed and "by construction" in a.bubbles.reason
    assert a.ratings[0].level is None and "by construction" in a.ratings[0].reason


def test_add_derived_once_and_analyses_only_when_adding(monkeypatch):
    """Without an analysis, add_derived computes analyze_tracks itself, and not at all for a
    trace that has its derived tracks already (left alone)."""
    import tracecvt.analyses as analyses
    tr, _ = graph_trace()
    other, _ = graph_trace()
    want = add_derived(other, analyze(other))
    assert add_derived(tr) == want and want["bubble_slices"] > 0
    n = (len(tr.tracks), len(tr.slices))

    def fail(trace):
        raise AssertionError("analysed a trace that is left alone")
    monkeypatch.setattr(analyses, "analyze_tracks", fail)
    assert add_derived(tr) == {}
    assert (len(tr.tracks), len(tr.slices)) == n


def test_only_declared_resource_lanes_are_analysed():
    """model.RESOURCES: a host thread next to a core is drawn but gets no bubbles."""
    from tracecvt.analyses.timeline import Timeline
    from tracecvt.model import RESOURCES, RunMeta, Trace
    trace = Trace(RunMeta("r", "test"))
    dev = trace.add_track("Device", kind="group")
    core = trace.add_track("AIC_0", dev, nesting=False)
    host = trace.add_track("Thread 7", dev)
    trace.add_slice(core, 0, 10, "k")
    trace.add_slice(core, 30, 10, "k")
    trace.add_slice(host, 0, 100, "api")
    assert [l.name for l in Timeline.build(trace).lanes] == ["AIC_0", "Thread 7"]
    trace.meta.extra[RESOURCES] = ["AIC"]
    timeline = Timeline.build(trace)
    assert [l.name for l in timeline.lanes] == ["AIC_0"]
    assert (timeline.start, timeline.end) == (0, 40)
