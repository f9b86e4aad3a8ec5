"""The run's own correlation ids are computed once (``same_work.own_work``) and kept after the
analyses only where they still hold (``same_work.still``): an analysis that changes a declared
arg's value, or renames a flow that joined two slices, makes the writer compute them again, so
a two-process write (the forked process writes the run's own slices while the analyses run)
gives the ids a one-process write gives."""

from __future__ import annotations

import io

from tracecvt.model import SAME_WORK, RunMeta, Trace
from tracecvt.readers import find_runs
from tracecvt.same_work import own_work, still, work_ids
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, decode_pftrace, resolve_packets

CANNBOT_ADD = SAMPLES / "msprof/cannbot-ascendc-vs-pypto/operators/add"


def _declared_trace() -> Trace:
    """Host calls joined to device tasks by HostToDevice flows, and two slices joined by a
    declared arg."""
    trace = Trace(RunMeta("t", "test"))
    trace.meta.extra[SAME_WORK] = {"args": ["task"], "flows": ["HostToDevice"]}
    host, dev, a, b = (trace.add_track(n) for n in ("host", "device", "a", "b"))
    for k in range(2):
        h = trace.add_slice(host, 100 * k, 10, f"launch {k}")
        d = trace.add_slice(dev, 100 * k + 20, 30, f"kernel {k}")
        trace.add_flow(h, d, "HostToDevice")
    trace.add_slice(a, 0, 5, "x", args={"task": 5})
    trace.add_slice(b, 10, 5, "y", args={"task": 5})
    return trace


def test_own_work_still_holds_where_the_analyses_only_add_args():
    trace = _declared_trace()
    own = own_work(trace)
    assert sorted(own.ids.values()) == [1, 1, 2, 2, 3, 3]
    s = trace.slices[4]
    old = s.args
    s.args = {**old, "critical_path_step": 1}       # what the critical path adds
    assert still(trace, own, {4: (old, None)})
    assert work_ids(trace, own) == work_ids(trace)


def test_own_work_no_longer_holds_where_a_declared_value_changes():
    trace = _declared_trace()
    own = own_work(trace)
    s = trace.slices[4]
    old = s.args
    s.args = {"task": 6}
    assert not still(trace, own, {4: (old, None)})
    assert work_ids(trace) != own.ids
    s.args = {"task": 5.0}                          # equal, but another type: another key
    assert not still(trace, own, {4: (old, None)})


def test_own_work_no_longer_holds_where_a_joining_flow_is_renamed():
    trace = _declared_trace()
    own = own_work(trace)
    trace.flows[0].name = "critical path"
    assert not still(trace, own, {})
    assert len(work_ids(trace)) == len(own.ids) - 2     # launch 0 and kernel 0 no longer one


def _begin_ids(data: bytes) -> dict[tuple[int, int], int]:
    """(track uuid, time) -> correlation id (0: none) of every slice BEGIN in ``data``."""
    out = {}
    for p, _, ts, track, _ in resolve_packets(decode_pftrace(data)):
        if p.HasField("track_event") and p.track_event.type == 1:
            out[track, ts] = p.track_event.correlation_id
    return out


def test_two_processes_give_one_process_ids_after_an_analysis_renames_a_flow(monkeypatch):
    from tracecvt.writers import perfetto
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)       # fork even a small run

    def enrich(trace):
        flow = next(f for f in trace.flows if f.name == "HostToDevice")
        flow.name = "renamed by an analysis"

    (src,) = find_runs(next(CANNBOT_ADD.rglob("PROF_*")), "msprof")
    ways = []
    for workers in (2, 1):
        trace = src.read()
        before = work_ids(trace)
        buf = io.BytesIO()
        if workers == 2:
            write_perfetto(trace, buf, None, workers=2, enrich=enrich)
        else:
            enrich(trace)
            write_perfetto(trace, buf, None, workers=1)
        assert work_ids(trace) != before                # the rename unjoined two slices
        ways.append(_begin_ids(buf.getvalue()))
    assert ways[0] == ways[1]
    assert len(set(ways[0].values()) - {0}) > 100
