"""PyPTO's flows bound to task slices a column at a time (``readers.pypto.flow_binding``)
and one at a time (``ChromeEventLoader._bind_each``, kept for times that are not floats):
the same flows in the same order, the same warnings.  On every PyPTO merged sample, on
mutated ones (tests/fuzzing.py) and on pathologies named for what they show."""

from __future__ import annotations

import shutil

import orjson
import pytest

from tracecvt.readers.pypto import merged
from tracecvt.readers.pypto.flow_binding import XSlices, bind_flows
from conftest import SAMPLES
from fuzzing import family, on_mutated, read_model, same_reading


def _read(root, each: bool, monkeypatch):
    with monkeypatch.context() as m:
        if each:
            m.setattr(merged, "bind_flows", lambda *a: None)
        return read_model(root, "pypto")


def _same(root, monkeypatch):
    columns = _read(root, False, monkeypatch)
    each = _read(root, True, monkeypatch)
    if same_reading(columns, each) is not None:
        assert [(f.src, f.dst) for f in columns[0].flows] == \
            [(f.src, f.dst) for f in each[0].flows]
    return columns[0]


def test_every_pypto_sample_binds_the_same_flows(monkeypatch):
    seeds = family("pypto-merged").seeds()
    assert seeds
    flows = sum(len(_same(seed.root, monkeypatch).flows) for seed in seeds)
    assert flows >= 50


def test_mutated_pypto_runs_bind_the_same_flows(tmp_path_factory, monkeypatch):
    seeds = [s for s in family("pypto-merged").seeds()
             if any("merged" in t.name for t in s.targets)]
    on_mutated(seeds, tmp_path_factory.mktemp("binding"),
               lambda root, _: _same(root, monkeypatch),
               lambda seed: [t for t in seed.targets if "merged" in t.name])


def _flow_ends(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") in ("s", "f")]


@pytest.mark.parametrize("name, edit", [
    # a flow start exactly at its source's end (no 0.0001 us before): found at +-1 ns
    ("start_at_the_end", lambda e: e.__setitem__("ts", round(e["ts"] + 0.0001, 4))
     if e["ph"] == "s" else None),
    # a flow start 1 ns after or before where PyPTO puts it: found at -1 / +1 ns
    ("start_one_ns_late", lambda e: e.__setitem__("ts", e["ts"] + 0.001)
     if e["ph"] == "s" else None),
    ("start_one_ns_early", lambda e: e.__setitem__("ts", e["ts"] - 0.001)
     if e["ph"] == "s" else None),
    ("end_one_ns_late", lambda e: e.__setitem__("ts", e["ts"] + 0.001)
     if e["ph"] == "f" else None),
    # times written as whole numbers: the one-at-a-time path
    ("integer_times", lambda e: e.__setitem__("ts", int(e["ts"]))),
    # an end on a thread with no slices: not bound, counted
    ("end_on_an_empty_thread", lambda e: e.__setitem__("tid", 987654) if e["ph"] == "f"
     else None),
])
def test_pathology_binds_the_same_flows(tmp_path, monkeypatch, name, edit):
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "pypto/matmul_add/output", run)
    (path,) = run.rglob("merged_swimlane.json")
    doc = orjson.loads(path.read_bytes())
    for e in _flow_ends(doc)[:40]:
        edit(e)
    path.write_bytes(orjson.dumps(doc))
    _same(run, monkeypatch)


def test_a_time_one_ns_before_is_tried_before_one_after():
    """Slices of one thread ending at 9 and 11 ns, starting at 20 and 19: a flow start at
    10 binds to the one ending at 9 (one ns before first); its end at 20 to the one
    starting there; a flow on a thread without slices binds nowhere."""
    xs = XSlices()
    for thread, start, end, index in ((0, 1, 9, 0), (0, 2, 11, 1), (0, 20, 30, 2),
                                      (0, 19, 30, 3), (1, 20, 30, 4)):
        xs.thread.append(thread)
        xs.start.append(start)
        xs.end.append(end)
        xs.index.append(index)
    out = []
    # flow threads: 0 -> thread 0, 1 -> none; starts at 10 ns (us * 1000 + 0.1 rounds)
    unbound = bind_flows(xs, [0, None], ([0, 1], [0.0099, 0.0099], [0, 0], [0.02, 0.02]),
                         out)
    assert [(f.src, f.dst) for f in out] == [(0, 2)] and unbound == 1


def _flows_as_perfetto_reads(path):
    """(source slice's start and name, destination's start and name) of each flow Perfetto's
    own importer makes of a Chrome JSON file, sorted; and its flow_duplicate_id stat."""
    from tp_helper import rows, trace_processor
    with trace_processor(path) as tp:
        flows = rows(tp, "select so.ts as a, so.name as b, si.ts as c, si.name as d "
                         "from flow f join slice so on so.id = f.slice_out "
                         "join slice si on si.id = f.slice_in")
        dup = rows(tp, "select value from stats where name = 'flow_duplicate_id'")
    return sorted((r["a"], r["b"], r["c"], r["d"]) for r in flows), sum(r["value"] for r in dup)


@pytest.mark.parametrize("helper", [False, True])
def test_a_flow_start_repeating_an_open_id_is_left_out_and_counted_as_perfetto_does(
        tmp_path, monkeypatch, helper):
    """Another task's flow start given the id of a flow still open (between its start and its
    end): Perfetto keeps the first start and counts the other (flow_duplicate_id); the reader
    draws the same flows and names the start it left out (read here and by the forked helper
    alike).  tiny_add: the model's flows are exactly those Perfetto reads from the JSON."""
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "pypto/tiny_add/output", run)
    (path,) = run.rglob("merged_swimlane.json")
    doc = orjson.loads(path.read_bytes())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    first = next(i for i, e in enumerate(events) if e.get("ph") == "s")
    other = next(e for e in events[first + 1:] if e.get("ph") == "s"
                 and (e["tid"], e["ts"]) != (events[first]["tid"], events[first]["ts"]))
    events.insert(first + 1, {**other, "id": events[first]["id"]})
    path.write_bytes(orjson.dumps(doc))
    forked = []
    if helper:                      # the forked helper reads the flows, whatever the size
        monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
        real = merged.fork_series_pass
        monkeypatch.setattr(merged, "fork_series_pass",
                            lambda data: forked.append(1) or real(data))
    trace, error = read_model(run, "pypto", 2 if helper else 1)
    assert error is None and len(forked) == helper
    drawn, duplicates = _flows_as_perfetto_reads(path)
    assert duplicates == 1
    s = trace.slices
    assert sorted((s[f.src].ts, s[f.src].name, s[f.dst].ts, s[f.dst].name)
                  for f in trace.flows) == drawn
    assert len(drawn) == sum(1 for e in events if e.get("ph") == "f")
    assert [w for w in trace.meta.warnings if "repeating the id of an open flow" in w] == [
        f"{path}: 1 events skipped: flow start repeating the id of an open flow (the first "
        "is kept, as Perfetto keeps it)"]
