"""simpler (PyPTO 3.0) chip swimlanes -> model -> traces, checked against the input files and
the runtime's own converter output (reference/ and merged_swimlane.json of every sample run)."""

from __future__ import annotations

import bisect
import collections
import gzip
import json
from fractions import Fraction
from pathlib import Path

import pytest

from tracecvt.model import COMPLETION, PICKUP, TASK_ID
from tracecvt.readers import find_runs

from conftest import SAMPLES

SIMPLER = SAMPLES / "simpler"
RUNS = sorted(p.parent for p in SIMPLER.glob("*/outputs/*/chip_swimlane_records.json"))
IDS = [f"{p.parents[1].name}/{p.name.split('_')[1]}" for p in RUNS]


def run_id(run: Path) -> str:
    return IDS[RUNS.index(run)]


def load(path: Path):
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def exact_ns(cycles: int, freq: int) -> int:
    """cycles * 1e9 / freq, rounded half up (exact rational arithmetic)."""
    v = Fraction(cycles * 10**9, freq)
    return int(v + Fraction(1, 2)) if v.denominator != 1 else int(v)


def token(tid: int) -> str:
    ring, local = (tid >> 32) & 0xFF, tid & 0xFFFFFFFF
    return f"t{local}" if ring == 0 else f"r{ring}t{local}"


_cache: dict[Path, object] = {}


def read(run: Path):
    if run not in _cache:
        (src,) = find_runs(run)
        _cache[run] = src.read()
    return _cache[run]


def lanes_under(trace, group_name: str) -> dict[int, str]:
    """Lane index -> name, for every lane below the group named ``group_name``."""
    out = {}
    for t in trace.tracks:
        p = t.parent
        while p is not None and trace.tracks[p].name != group_name:
            p = trace.tracks[p].parent
        if p is not None and t.kind == "lane":
            out[t.index] = t.name
    return out


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_every_aicore_row_is_one_worker_slice_to_the_ns(run):
    rec = load(run / "chip_swimlane_records.json")
    freq = rec["metadata"]["clock_freq_hz"]
    types = rec["metadata"]["core_types"]
    cpu = {(r[0], r[1]): r for r in rec["aicpu_tasks"]}
    expected = collections.Counter()
    for core, tid, reg, start, end, r2s in rec["aicore_tasks"]:
        s, e = exact_ns(start, freq), exact_ns(end, freq)
        c = cpu.get((core, reg))
        lat = (s - exact_ns(c[2], freq), exact_ns(c[3], freq) - e) if c else (None, None)
        expected[(f"{types[core].upper()}_{core}", s, e - s, tid, token(tid),
                  s - exact_ns(start - r2s, freq), *lat)] += 1
    trace = read(run)
    lanes = lanes_under(trace, "Worker View")
    got = collections.Counter()
    for sl in trace.slices:
        if sl.track in lanes:
            a = sl.all_args
            got[(lanes[sl.track], sl.ts, sl.dur, a[TASK_ID], a["task"], a["setup_ns"],
                 a.get(PICKUP), a.get(COMPLETION))] += 1
    assert got == expected
    assert sum(got.values()) == len(rec["aicore_tasks"])


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_worker_lanes_and_labels_equal_the_runtime_converter(run):
    """Lane names and slice names per lane are the runtime converter's Worker View (pid 4)."""
    merged = next(run.glob("merged_swimlane.json*"))
    events = load(merged)["traceEvents"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    theirs = collections.Counter(
        (names[(4, e["tid"])], e["name"]) for e in events
        if e.get("ph") == "X" and e["pid"] == 4 and names.get((4, e["tid"]), "")[:4]
        in ("AIC_", "AIV_"))
    trace = read(run)
    lanes = lanes_under(trace, "Worker View")
    mine = collections.Counter((lanes[s.track], s.name) for s in trace.slices
                               if s.track in lanes)
    assert mine == theirs
    # Lanes in the runtime's order: AIC cores, then AIV cores, by core id.
    order = [trace.tracks[i].name for i in trace.children(
        next(t.index for t in trace.tracks if t.name == "Worker View"))]
    assert order == sorted(order, key=lambda n: (n[:3] != "AIC", int(n.split("_")[1])))


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_every_aicpu_row_is_dispatch_to_finish_with_its_latencies(run):
    rec = load(run / "chip_swimlane_records.json")
    freq = rec["metadata"]["clock_freq_hz"]
    core_of = {(r[0], r[2]): r for r in rec["aicore_tasks"]}
    expected = collections.Counter()
    for core, reg, disp, fin in rec["aicpu_tasks"]:
        a = core_of[(core, reg)]
        d, f = exact_ns(disp, freq), exact_ns(fin, freq)
        expected[(token(a[1]), core, d, f - d)] += 1
        expected[("pickup", d, exact_ns(a[3], freq) - d)] += 1
        expected[("completion", exact_ns(a[4], freq), f - exact_ns(a[4], freq))] += 1
    trace = read(run)
    lanes = lanes_under(trace, "Scheduler View")
    got = collections.Counter()
    for s in trace.slices:
        if s.track in lanes:
            if s.name in ("pickup", "completion"):
                got[(s.name, s.ts, s.dur)] += 1
            else:
                got[(s.args["task"], s.args["core"], s.ts, s.dur)] += 1
    assert got == expected
    if rec["chip_swimlane_level"] == 1:
        assert not lanes and any("level 1: no AICPU records" in w
                                 for w in trace.meta.warnings)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_every_phase_and_orchestrator_record_is_one_slice(run):
    rec = load(run / "chip_swimlane_records.json")
    freq = rec["metadata"]["clock_freq_hz"]
    trace = read(run)
    sched = lanes_under(trace, "AICPU Scheduler")
    expected = collections.Counter()
    for k, thread in enumerate(rec.get("aicpu_scheduler_phases", [])):
        for r in thread:
            expected[(f"Sched_{k}", r["kind"], exact_ns(r["start_cycles"], freq),
                      exact_ns(r["end_cycles"], freq) - exact_ns(r["start_cycles"], freq),
                      r.get("loop_iter"))] += 1
    got = collections.Counter((sched[s.track], s.args["phase"], s.ts, s.dur,
                               s.args.get("loop_iter"))
                              for s in trace.slices if s.track in sched)
    assert got == expected
    # Markers: dummy_task / predicated_skip carry their task; names as the runtime's.
    for s in trace.slices:
        if s.track in sched and s.args["phase"] in ("dummy_task", "predicated_skip"):
            assert s.dur == 0 and s.name.endswith(f"({token(s.args[TASK_ID])})")
        elif s.track in sched:
            assert s.name == f"{s.args['phase']}({s.args['tasks_processed']})"
    orch = lanes_under(trace, "AICPU Orchestrator")
    expected = collections.Counter(
        (token(r["task_id"]), exact_ns(r["start_cycles"], freq))
        for t in rec.get("aicpu_orchestrator_phases", []) for r in t)
    got = collections.Counter((s.args["task"], s.ts) for s in trace.slices if s.track in orch)
    assert got == expected
    host = rec.get("host_orchestrator_phases", [])
    assert sum(len(t) for t in host) == sum(
        1 for s in trace.slices if trace.tracks[s.track].name.startswith("Host_"))
    uploads = rec.get("host_device_uploads", [])
    # Host ns on the device clock: durations scale by the anchors' rate (1 +- 1e-7): +-1 ns.
    mine = sorted((s.name, s.dur) for s in trace.slices if s.cat == "host_h2d")
    theirs = sorted((u["phase"], u["end_host_ns"] - u["start_host_ns"]) for u in uploads)
    assert [n for n, _ in mine] == [n for n, _ in theirs]
    assert all(abs(a[1] - b[1]) <= 1 for a, b in zip(mine, theirs))
    jsonl = run / "host_phase_records.jsonl"
    passes = [json.loads(line) for line in jsonl.read_text().splitlines()] \
        if jsonl.exists() else []
    assert sorted(r["phase"] for p in passes for r in p["records"]) == \
        sorted(s.name for s in trace.slices if s.cat == "host_phase")


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_ready_queue_counters_hold_every_complete_and_dispatch_depth(run):
    """At the end of every complete/dispatch record each counter holds that record's
    shared_at_end (of records ending at the same ns, the last by thread); samples only where
    a depth changes."""
    rec = load(run / "chip_swimlane_records.json")
    freq = rec["metadata"]["clock_freq_hz"]
    at_end = {}
    for k, t in enumerate(rec.get("aicpu_scheduler_phases", [])):
        for r in t:
            if r["kind"] in ("complete", "dispatch"):
                at_end.setdefault(exact_ns(r["end_cycles"], freq), []).append(
                    (k, tuple(r["shared_at_end"])))
    trace = read(run)
    counters = {trace.tracks[c.track].name: c for c in trace.counters}
    if not at_end:
        assert not counters
        return
    for q, name in enumerate(("AIC", "AIV", "MIX")):
        c = counters[f"ready queue {name}"]
        assert c.ts == sorted(set(c.ts))
        assert all(a != b for a, b in zip(c.values, c.values[1:]))
        for ts, recs in at_end.items():
            i = bisect.bisect_right(c.ts, ts) - 1
            assert c.values[i] == max(recs)[1][q]


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_every_edge_is_one_flow_between_its_tasks(run):
    deps = load(run / "deps.json")
    trace = read(run)
    edges = collections.Counter(
        (int(e["pred"]), int(e["succ"]), e["source"], e.get("tensor_id"), e["arg"],
         ",".join(e["flags"]) if "flags" in e else None, e.get("overlap"))
        for e in deps["edges"])
    got = collections.Counter()
    for f in trace.flows:
        src, dst = trace.slices[f.src].all_args, trace.slices[f.dst].all_args
        a = f.args
        got[(src[TASK_ID], dst[TASK_ID], a["source"], a.get("tensor_id"), a["arg"],
             a.get("flags"), a.get("overlap"))] += 1
        assert f.name == "dependency"
    # Every sample run has all its edges drawn (dummy tasks, allocs and skips have markers),
    # except below level 3/4 where those have none: then a warning names them.
    missing = edges - got
    assert not got - edges
    if missing:
        warned = [w for w in trace.meta.warnings if "edges not drawn" in w]
        assert sum(int(w.split(": ", 1)[1].split(" of ")[0]) for w in warned) == \
            sum(missing.values())
    else:
        assert got == edges


def test_flow_ends_are_the_last_ending_and_first_starting_rows():
    run = next(r for r in RUNS if "sync_start" in str(r))      # SPMD tasks with 5 and 8 blocks
    trace = read(run)
    rows = collections.defaultdict(list)
    for s in trace.slices:
        if s.cat == "kernel":
            rows[s.args[TASK_ID]].append(s)
    for f in trace.flows:
        src, dst = trace.slices[f.src], trace.slices[f.dst]
        assert src.end == max(s.end for s in rows[src.args[TASK_ID]])
        assert dst.ts == min(s.ts for s in rows[dst.args[TASK_ID]])


def test_spmd_blocks_are_one_task_with_block_indexes():
    run = next(r for r in RUNS if "spmd_paged" in str(r))
    trace = read(run)
    kernels = [s for s in trace.slices if s.cat == "kernel"]
    assert {s.args[TASK_ID] for s in kernels} == {0}
    by_type = collections.defaultdict(list)
    for s in kernels:
        by_type[s.all_args["core_type"]].append(s)
    assert {k: len(v) for k, v in by_type.items()} == {"aic": 16, "aiv": 32}
    for rows in by_type.values():
        rows.sort(key=lambda s: (s.ts, s.args["core"]))
        assert [s.args["block"] for s in rows] == list(range(len(rows)))
    assert all(s.name.endswith("_spmd(t0)") or "spmd" in s.name.lower() for s in kernels)


def test_level_notes_and_counts_in_meta():
    for run in RUNS:
        trace = read(run)
        info = trace.meta.extra["simpler"]
        rec = load(run / "chip_swimlane_records.json")
        assert info["level"] == rec["chip_swimlane_level"]
        assert info["counts"]["aicore_rows"] == len(rec["aicore_tasks"])
        assert info["clock_freq_hz"] == rec["metadata"]["clock_freq_hz"]
        assert trace.meta.extra["resources"] == ["AIC", "AIV"]
        assert trace.meta.extra["task_graph"] is True
        assert trace.meta.clock.to_ns(1) == 10**9 // info["clock_freq_hz"]
        assert info["orchestration"] == ("host" if "_hbg_" in str(run) else
                                         "device" if info["level"] == 4 else None)
        assert trace.meta.device.startswith("Ascend A5 (a5sim)" if "a5sim" in str(run)
                                            else "Ascend A2/A3 (a2a3sim)")


def test_host_orchestration_lands_where_the_runtime_puts_it():
    """The runtime aligns the host onto its own zero with the anchors; tracecvt maps the host
    onto the device clock through the same line: the gap between a host submit and a device
    bar is the same in both, to 2 ns, once the runtime's host ns are scaled to device ns (the
    anchors' rate: the clocks drift by ~1e-7, 3 ns over the 50 ms of the bgemm run)."""
    for run in (r for r in RUNS if "_hbg_" in str(r)):
        trace = read(run)
        alignment = trace.meta.extra["simpler"]["clock_alignment"]
        assert alignment["status"] == "calibrated"
        rate = alignment["device_ns_per_host_ns"]
        assert abs(rate - 1) < 1e-6
        events = load(run / "merged_swimlane.json")["traceEvents"]
        submit = {e["args"]["task_id"]: e["ts"] for e in events
                  if e.get("ph") == "X" and e["pid"] == 1 and "task_id" in e.get("args", {})}
        worker = {e["args"]["taskId"]: e["ts"] for e in events
                  if e.get("ph") == "X" and e["pid"] == 4 and "taskId" in e.get("args", {})}
        mine_submit = {s.args["task"]: s.ts for s in trace.slices
                       if trace.tracks[s.track].name.startswith("Host_")}
        mine_receive = {s.args["task"]: s.ts - s.args["setup_ns"] for s in trace.slices
                        if s.cat == "kernel"}
        checked = 0
        for tid, ts in worker.items():
            key = token(tid)
            sub = next(v for k, v in submit.items() if (int(k) if isinstance(k, str) else k)
                       == tid)
            theirs = (ts - sub) * 1000 * rate
            mine = mine_receive[key] - mine_submit[key]
            assert abs(mine - theirs) <= 2, (key, mine, theirs)
            checked += 1
        assert checked == len(mine_receive) > 0


def test_declarations_for_model_files_written_before_them():
    from tracecvt.model import (LABEL_ARGS, RESOURCES, SAME_TASK, SAME_WORK, TASK_GRAPH,
                                TASK_ID, RunMeta)
    from tracecvt.readers.simpler import READER
    with_graph = RunMeta("r", "simpler", extra={"simpler": {"task_graph": True}})
    assert READER.declarations(with_graph) == {
        TASK_GRAPH: True, RESOURCES: ["AIC", "AIV"], LABEL_ARGS: {"function": "function"},
        SAME_WORK: {"args": ["task"]}, SAME_TASK: TASK_ID}
    assert READER.declarations(RunMeta("r", "simpler"))[TASK_GRAPH] is False
    # a model file written before the task declaration: its tasks are joined as before
    from tracecvt.readers.base import apply_declarations
    old = RunMeta("r", "simpler", extra={"simpler": {}, TASK_GRAPH: False})
    apply_declarations(READER, old)
    assert old.extra[SAME_TASK] == TASK_ID and old.extra[TASK_GRAPH] is False
