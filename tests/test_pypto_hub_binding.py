"""PyPTO's HUB seqNo quirk: dependencies bound to the HUB execution they belong to (raw files),
or marked untrusted where the file does not say (merged_swimlane.json), against the task graph
of dyn_topo.txt."""

from __future__ import annotations

import collections

import pytest

from tracecvt.analyses import analyze
from tracecvt.model import SOURCE_BINDING, UNTRUSTED_FLOW
from tracecvt.readers import find_runs

from conftest import pypto_run_dir

MULTI_SEQ = ["ffn_medium", "softmax_multiseq"]      # the runs with several device tasks


def read(run: str, raw: bool):
    (src,) = find_runs(pypto_run_dir(run))
    if raw:
        src.variant = "pypto-raw"
    return src.read()


def topo_edges(run: str) -> collections.Counter:
    """(seqNo, taskId) -> (seqNo, taskId) of every successor in dyn_topo.txt."""
    edges = collections.Counter()
    for line in (pypto_run_dir(run) / "dyn_topo.txt").read_text().splitlines():
        if not line[:1].isdigit():
            continue
        f = line.split(",")
        seq, tid = int(f[0]), int(f[1])
        for succ in f[10:]:
            if succ:
                edges[((seq, tid), (seq, int(succ)))] += 1
    return edges


def true_key(s) -> tuple[int, int]:
    """The task a slice runs: its device task where tracecvt bound a HUB execution."""
    a = s.all_args
    return (a.get("deviceTask", a["seqNo"]), a["taskId"])


@pytest.mark.parametrize("run", MULTI_SEQ)
def test_raw_flows_are_the_task_graph_in_true_direction(run):
    """From the raw files every HUB execution is bound to its device task, and the flows are
    exactly the edges of dyn_topo.txt between the executions they join, all causal (today's
    reader bound 96 / 32 of them to a later device task's HUB, ending after they start)."""
    trace = read(run, raw=True)
    slices = trace.slices
    hubs = [s for s in slices if s.cat == "hub"]
    assert hubs and all("deviceTask" in s.args for s in hubs)
    # each HUB execution belongs to one device task, and each HUB row of the graph has one
    assert len({true_key(s) for s in hubs}) == len(hubs)
    got = collections.Counter((true_key(slices[f.src]), true_key(slices[f.dst]))
                              for f in trace.flows)
    assert got == topo_edges(run)
    assert all(slices[f.src].end <= slices[f.dst].ts for f in trace.flows)
    assert not any(f.name == UNTRUSTED_FLOW for f in trace.flows)
    assert trace.meta.extra["flows_out_of_order"] == 0
    assert trace.meta.extra["flows_untrusted"] == 0
    # no fake task takes part in the graph any more: their executions were found
    assert not any(slices[i].cat == "fake" for f in trace.flows for i in (f.src, f.dst))
    a = analyze(trace)
    assert a.bubbles.ignored_dependencies == 0
    assert a.critical_path.caveat is None


@pytest.mark.parametrize("run", MULTI_SEQ)
def test_merged_marks_what_the_file_cannot_bind(run):
    """merged_swimlane.json keeps one HUB execution per key: the dependencies PyPTO bound to
    an execution of another device task are marked, with args saying why; every flow that
    ends after its successor starts is among them; the rest are causal."""
    trace = read(run, raw=False)
    slices = trace.slices
    marked = [f for f in trace.flows if f.name == UNTRUSTED_FLOW]
    late = [f for f in trace.flows if slices[f.src].end > slices[f.dst].ts]
    assert late and {id(f) for f in late} <= {id(f) for f in marked}
    assert len(late) == {"ffn_medium": 96, "softmax_multiseq": 32}[run]
    assert trace.meta.extra["flows_untrusted"] == len(marked)
    for f in marked:
        assert "HUB seqNo quirk" in f.args["why"] or "ends after" in f.args["why"]
        assert f.args["from"] == slices[f.src].name and f.args["to"] == slices[f.dst].name
        assert slices[f.src].name in slices[f.dst].args["untrustedPredecessors"]
    # the drawn HUB execution of a later device task takes over that task's dependencies
    for f in trace.flows:
        if SOURCE_BINDING in (f.args or {}):
            old_src, old_dst = f.args[SOURCE_BINDING]
            assert slices[old_src].cat == "fake" or slices[old_dst].cat == "fake"
    # the analyses follow none of the marked ones
    a = analyze(trace)
    assert a.bubbles.ignored_dependencies == len({f.dst for f in marked})
    assert a.critical_path.caveat is not None and "untrusted dependency" in \
        a.critical_path.caveat
    on_path = set(a.critical_path.edges)
    assert not any((f.src, f.dst) in on_path for f in marked)


def test_pypto_check_still_uses_pyptos_own_binding():
    """PyPTO's figures are recomputed on PyPTO's graph (its bindings kept in SOURCE_BINDING):
    re-binding changes none of them (every core of the raw path matches the log)."""
    (src,) = find_runs(pypto_run_dir("ffn_medium"))
    src.variant = "pypto-raw"
    trace = src.read()
    check = analyze(trace).pypto_check
    assert check.matched == len(check.cores) == 74


@pytest.mark.parametrize("seed", range(5))
def test_the_late_flows_a_column_at_a_time_are_the_loops(seed):
    """``hub_binding._late`` from the slices' columns gives the flows (by index, in order)
    whose source ends after their destination starts, as the loop over the flows does
    (which it takes where a time is past int64), ties (an end at the start) not late."""
    import random

    from tracecvt.model import RunMeta, Trace
    from tracecvt.readers.pypto.hub_binding import _late
    rng = random.Random(seed)

    def run(base):
        t = Trace(RunMeta("late", "test"))
        lane = t.add_track("AIC_0", nesting=False)
        for _ in range(200):
            t.add_slice(lane, base + rng.choice((0, 10, 20, 30)), rng.choice((0, 5, 10, 25)),
                        "task")
        for _ in range(400):
            t.add_flow(rng.randrange(200), rng.randrange(200))
        return t

    state = rng.getstate()
    near = run(0)
    rng.setstate(state)
    far = run(1 << 70)                  # (no columns: one flow at a time)
    expected = [fi for fi, f in enumerate(near.flows)
                if near.slices[f.src].end > near.slices[f.dst].ts]
    assert 0 < len(expected) < len(near.flows)
    assert _late(near.slices, near.flows) == expected == _late(far.slices, far.flows)


@pytest.mark.parametrize("run, raw", [(r, raw) for r in MULTI_SEQ for raw in (False, True)])
def test_the_binding_a_column_at_a_time_is_the_loops(run, raw, monkeypatch):
    """``bind_hub_executions`` finds the HUB keys' recorded neighbours and the flows to
    re-bind from the flows' columns (``_windows``), or one flow at a time where an end is
    not a slice's index: the same counts, flows (ends, names, args) and slices' args, on
    the runs as recorded and with their executions' times moved at random (other fits)."""
    import pickle
    import random

    from tracecvt.readers import pypto as pypto_reader
    from tracecvt.readers.pypto import hub_binding

    with monkeypatch.context() as m:
        m.setattr(pypto_reader, "_bind_flows", lambda trace, merged: None)
        unbound = pickle.dumps(read(run, raw))
    rebound = 0
    for seed in range(4):
        got = []
        for columns in (True, False):
            rng = random.Random(seed)
            trace = pickle.loads(unbound)
            for s in trace.slices:              # (the same moves both ways)
                if seed and s.cat in ("hub", "fake") and rng.random() < 0.3:
                    s.ts = max(0, s.ts + rng.randrange(-5000, 5000))
            with monkeypatch.context() as m:
                if not columns:
                    m.setattr(hub_binding, "flow_ends", lambda *a: None)
                counts = hub_binding.bind_hub_executions(trace, "here")
            got.append((counts, [(f.src, f.dst, f.name, f.args) for f in trace.flows],
                        [s.args for s in trace.slices]))
        assert got[0] == got[1], seed
        rebound += got[0][0]["hub_flows_rebound"] + got[0][0]["hub_executions_bound"]
    assert rebound
