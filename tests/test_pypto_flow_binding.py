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
