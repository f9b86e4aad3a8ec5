"""simpler runs through the writers: Perfetto's trace_processor reads the .pftrace with no
error and the model's counts, flows link the right slices; Chrome JSON carries the same."""

from __future__ import annotations

import collections
import json

import pytest

from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.writers.perfetto import time_origin

from test_simpler import IDS, RUNS
from tp_helper import problems, rows, trace_processor


def _written(run, tmp_path, writer: str, name: str):
    """(the run written by ``writer`` without derived tracks, the model it was read into)."""
    (src,) = find_runs(run)
    out = tmp_path / name
    convert_source(src, writer, out, True, ReadOptions(), derived=False)
    return out, src.read()


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_trace_processor_reads_what_the_model_holds(run, tmp_path):
    out, trace = _written(run, tmp_path, "perfetto", "run.pftrace")
    with trace_processor(out) as tp:
        assert problems(tp) == []
        n_slices = rows(tp, "select count(*) as n from slice")[0]["n"]
        n_flows = rows(tp, "select count(*) as n from flow")[0]["n"]
        n_counter = rows(tp, "select count(*) as n from counter")[0]["n"]
        links = collections.Counter(
            (r["a"], r["b"]) for r in rows(tp, "select s1.name as a, s2.name as b from flow f "
                                                "join slice s1 on f.slice_out = s1.id "
                                                "join slice s2 on f.slice_in = s2.id"))
        ends = rows(tp, "select a1.int_value as pred, a2.int_value as succ from flow f "
                        "join slice s1 on f.slice_out = s1.id "
                        "join slice s2 on f.slice_in = s2.id "
                        "join args a1 on a1.arg_set_id = s1.arg_set_id "
                        "and a1.key = 'debug.task_id' "
                        "join args a2 on a2.arg_set_id = s2.arg_set_id "
                        "and a2.key = 'debug.task_id'")
        kernel = rows(tp, "select s.ts, s.dur, a.int_value as task from slice s "
                          "join args a using(arg_set_id) where s.category = 'kernel' "
                          "and a.key = 'debug.task_id'")
    assert n_slices == len(trace.slices)
    assert n_flows == len(trace.flows)
    assert n_counter == sum(len(c) for c in trace.counters)
    assert links == collections.Counter((trace.slices[f.src].name, trace.slices[f.dst].name)
                                        for f in trace.flows)
    # Each flow links a slice of its edge's predecessor to one of its successor.
    deps = json.loads((run / "deps.json").read_bytes())
    edges = collections.Counter((int(e["pred"]), int(e["succ"])) for e in deps["edges"])
    assert collections.Counter((r["pred"], r["succ"]) for r in ends) == edges
    origin = time_origin(trace)         # the .pftrace counts from the run's first time
    assert collections.Counter((r["ts"] + origin, r["dur"], r["task"]) for r in kernel) == \
        collections.Counter((s.ts, s.dur, s.args["task_id"]) for s in trace.slices
                            if s.cat == "kernel")


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_chrome_json_carries_the_same_content(run, tmp_path):
    out, trace = _written(run, tmp_path, "chrome", "run.json")
    doc = json.loads(out.read_bytes())
    base = doc["metadata"]["base_time_ns"]
    events = doc["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    assert collections.Counter(e["name"] for e in xs) == \
        collections.Counter(s.name for s in trace.slices)
    assert collections.Counter(round(e["ts"] * 1000) + base for e in xs) == \
        collections.Counter(s.ts for s in trace.slices)
    kernels = collections.Counter(e["args"]["task_id"] for e in xs if e.get("cat") == "kernel")
    assert kernels == collections.Counter(s.args["task_id"] for s in trace.slices
                                          if s.cat == "kernel")
    assert sum(1 for e in events if e.get("ph") == "s") == len(trace.flows)
    assert sum(1 for e in events if e.get("ph") == "C") == \
        sum(len(c) for c in trace.counters)
