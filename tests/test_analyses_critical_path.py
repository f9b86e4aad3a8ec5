"""Critical path: a valid chain through the task graph whose segments add up to the makespan."""

from __future__ import annotations

import pytest

from tracecvt.analyses import add_derived, analyze
from tracecvt.analyses.critical_path import DEPENDENCY, LANE_ORDER, RUN_START
from tracecvt.convert import read

from conftest import PYPTO_MERGED_RUNS, pypto_run_dir
from test_analyses_bubbles import graph_trace


def check_chain(trace, a):
    cp = a.critical_path
    tl = a.timeline
    segs = cp.segments
    assert cp.computed and segs
    slices = trace.slices
    flows = {(f.src, f.dst) for f in trace.flows}
    # contiguous from the run start to the last end: total = makespan
    assert segs[0].ts == tl.start == cp.start
    for x, y in zip(segs, segs[1:]):
        assert x.ts + x.dur == y.ts
    assert segs[-1].ts + segs[-1].dur == cp.end
    assert sum(s.dur for s in segs) == cp.length == cp.task_time + cp.wait_time
    last = max(slices[i].ts + slices[i].dur for lane in tl.lanes if lane.graph
               for i in lane.slices)
    assert cp.end == last
    # every link between consecutive tasks exists: a flow, or the lane's previous task
    tasks = [s for s in segs if s.kind == "task"]
    for x, y in zip(tasks, tasks[1:]):
        assert x.via in (DEPENDENCY, LANE_ORDER)
        if x.via == DEPENDENCY:
            assert (x.slice, y.slice) in flows
        else:
            assert tl.lane_of[x.slice] == tl.lane_of[y.slice]
            assert a.bubbles.lane_prev[y.slice] == x.slice
        assert slices[x.slice].ts + slices[x.slice].dur <= slices[y.slice].ts
    waits = [s for s in segs if s.kind == "wait"]
    assert all(w.dur > 0 for w in waits)
    assert segs[0].kind == "task" or segs[0].via == RUN_START
    # no schedule of these tasks beats the dependency chain alone
    assert 0 < cp.graph_bound <= cp.length
    return cp


@pytest.mark.parametrize("name", PYPTO_MERGED_RUNS)
def test_critical_path_is_a_valid_chain(name):
    (trace,) = read(pypto_run_dir(name))
    a = analyze(trace)
    cp = check_chain(trace, a)
    assert cp.length == a.timeline.makespan
    d = a.to_dict()["critical_path"]
    assert d["length_us"] == pytest.approx(cp.length / 1000)
    assert d["tasks"] == len(cp.tasks)
    if any(s.cat == "fake" for s in trace.slices):
        assert cp.caveat and "incomplete" in cp.caveat


def test_critical_path_in_the_trace(tmp_path):
    (trace,) = read(pypto_run_dir("matmul_add"))
    a = analyze(trace)
    add_derived(trace, a)
    lane = next(t for t in trace.tracks if t.name == "critical path")
    assert lane.derived and trace.tracks[lane.parent].name == "tracecvt analysis"
    segs = sorted((s for s in trace.slices if s.track == lane.index), key=lambda s: s.ts)
    assert len(segs) == len(a.critical_path.segments)
    assert sum(s.dur for s in segs) == a.critical_path.length
    steps = sorted((s.args["critical_path_step"], i) for i, s in enumerate(trace.slices)
                   if s.args and "critical_path_step" in s.args)
    assert [k for k, _ in steps] == list(range(1, len(a.critical_path.tasks) + 1))
    assert [i for _, i in steps] == a.critical_path.tasks
    marked = [f for f in trace.flows if f.args and f.args.get("critical_path")]
    assert {(f.src, f.dst) for f in marked} == set(a.critical_path.edges)
    assert all(f.name == "critical path" for f in marked)


def test_critical_path_on_a_small_graph():
    tr, ids = graph_trace()
    a = analyze(tr)
    cp = check_chain(tr, a)
    names = [(s.kind, tr.slices[s.slice].name if s.kind == "task" else s.dur)
             for s in cp.segments]
    # last end: x (380..440), which has no predecessor; on AIC_1 it follows e (130..150),
    # which follows a (0..100): lane order both times
    assert names == [("task", "a"), ("wait", 30), ("task", "e"), ("wait", 230), ("task", "x")]
    assert cp.length == 440 and cp.wait_time == 260
    # the dependency chain a -> b -> d is the longest: 100 + 50 + 40
    assert cp.graph_bound == 190


@pytest.mark.parametrize("seed", range(30))
def test_the_slices_columns_give_the_loops_path_and_bound(seed):
    """Where each slice is its own task, the path's last task and the graph bound are
    taken from the slices' columns when a conversion keeps them (``_slice_nodes``): the
    same path, edges and bound as the loop's, on lanes with ties at the latest end."""
    import random

    from tracecvt.analyses.bubbles import compute_bubbles
    from tracecvt.analyses.critical_path import _slice_nodes, compute_critical_path
    from tracecvt.analyses.timeline import Timeline
    from tracecvt.slice_columns import columns_kept
    from test_bubbles_columns import _lanes

    def path(trace):
        tl = Timeline.build(trace)
        cp = compute_critical_path(trace, tl, compute_bubbles(trace, tl))
        return _slice_nodes(trace, tl) is not None, \
            (cp.computed, [vars(s) for s in cp.segments], cp.edges, cp.graph_bound)

    trace = _lanes(random.Random(seed), graph=True)
    last = max(s.ts + s.dur for s in trace.slices)
    lanes = [t.index for t in trace.tracks if t.name in ("core 0", "core 5")]
    for lane, dur in zip(lanes, (50, 5) if seed % 2 else (5, 50)):    # both end last
        trace.add_flow(0, trace.add_slice(lane, last - dur, dur, "last"))
    taken, loop = path(trace)
    assert not taken and loop[0] and loop[1]
    with columns_kept():
        from tracecvt.slice_columns import kept_columns
        kept_columns(trace.slices)
        taken, columns = path(trace)
    assert taken and columns == loop


@pytest.mark.parametrize("run", ["simpler/a2a3sim_tmr_benchmark_bgemm_Case0_L4",
                                 "simpler/a2a3sim_tmr_sync_start_drain_phases_L4",
                                 "simpler/a2a3sim_tmr_paged_attention_CaseVarSeq4_L4",
                                 "pypto/ffn_large"])
def test_the_flows_marked_on_the_path_are_its_edges(run):
    """The flows named "critical path" are exactly those between the nodes of an edge of the
    path, a task of several slices (simpler's MIX tasks) by any of its slices."""
    from conftest import SAMPLES
    from tracecvt.analyses import analyze_tracks
    from tracecvt.readers import find_runs

    (src,) = find_runs(SAMPLES / run)
    trace = src.read()
    a = analyze_tracks(trace)
    edges, node = set(a.critical_path.edges), a.timeline.node
    expected = [k for k, f in enumerate(trace.flows) if (node(f.src), node(f.dst)) in edges]
    add_derived(trace, a)
    marked = [k for k, f in enumerate(trace.flows) if f.name == "critical path"]
    assert marked == expected and marked
    assert all(trace.flows[k].args["critical_path"] is True for k in marked)
