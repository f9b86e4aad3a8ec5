"""Every sample run, both writers, derived tracks included, loaded by Perfetto's own
trace_processor (../shared/tools/trace_processor, through the ``perfetto`` package).

For each trace: no ``error`` or ``data_loss`` stat; the slice, flow and counter-sample counts
equal the model's; every flow joins the model's predecessor (``slice_out``) to its successor
(``slice_in``).  What "the model's count" means:

* slices: the model's slices plus its instants (both writers write an instant as a
  zero-duration slice, which trace_processor keeps in its ``slice`` table);
* counter samples: one ``counter`` row per model sample, and in the .pftrace the same
  (time, value) pairs (samples there may ride on slice events, ``SequenceWriter.ride``;
  a counter track may be named there with its group's name in front, so names are not
  compared);
* flows: the model's flows that a trace can draw in their true direction
  (``writers.flows.drawable``): trace_processor directs every flow from the slice that starts
  first, so a dependency whose successor starts before its predecessor can only be drawn
  reversed (a device task before its launching host call: clock skew, ``model.CLOCK_SKEW``); the
  writers leave those out and say so (``flows_not_drawn`` and a warning).  Every other flow
  is drawn, from its source to its destination.

One trace_processor per trace; they are started a few at a time in threads (each start waits
about a second for its server) and queried in one module-scoped pass.  A new family's
samples are tested by adding its runs to ``PLACES``.
"""

from __future__ import annotations

import collections
import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tracecvt
from tracecvt.convert import add_derived_tracks, convert_source
from tracecvt.model import GROUP, LANE, SAME_WORK
from tracecvt.same_work import work_ids
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.flows import drawable
from tracecvt.writers.names import thread_names
from tracecvt.writers.perfetto import time_origin, write_perfetto

from conftest import FIELD, FIXTURES, REPO, SAMPLES
from tp_helper import TP_BIN, rows, trace_processor

# (label, where, format): every run ``find_runs`` finds there.  Add a family's samples here.
PLACES = [
    ("pypto", SAMPLES / "pypto", None),
    # Real PyPTO output from other people's machines (on-board task times, old topo.json).
    ("pypto-field", SAMPLES.parent / "field-samples" / "pypto", None),
    ("pypto-raw", SAMPLES / "pypto", "pypto-raw"),
    ("pypto-npu", FIXTURES / "pypto_npu", None),
    ("pypto-raw-fixture", FIXTURES / "pypto_raw", None),
    ("msprof", SAMPLES / "msprof", None),
    # the database exports beside the text ones (read when asked for: the text holds more)
    ("msprof-db", SAMPLES / "msprof" / "cannbot-ascendc-vs-pypto", "msprof-db"),
    ("ncu", SAMPLES / "ncu", None),
    ("simpler", SAMPLES / "simpler", None),      # the chip swimlanes (PyPTO 3.0)
    ("field", FIELD, None),                      # other people's real outputs
    # simpler's own converter output handed over alone: its older layout, and the current one
    # (the critical_path overlays of a sample's reference/ folder)
    ("simpler-converter", FIXTURES / "simpler_converter_older_layout_alone", None),
    ("simpler-converter", SAMPLES / "simpler" / "a2a3sim_tmr_vector_example_L4" / "reference"
     / "TestVectorExample_default_20261124_113755" / "critical_path", None),
]
PARALLEL = 6          # trace_processors started at once (each waits ~1 s for its server)
WRITERS = ("perfetto", "chrome")


def _runs() -> list:
    out = []
    for label, where, fmt in PLACES:
        if not where.is_dir():
            continue
        for src in find_runs(where, fmt if fmt == "msprof-db" else None):
            if fmt == "pypto-raw":
                if "swim" not in src.files:
                    continue
                src.variant = fmt
            out.append((f"{label}:{src.name}", src))
    ids = collections.Counter(i for i, _ in out)
    seen: collections.Counter = collections.Counter()
    unique = []
    for i, src in out:
        seen[i] += 1
        unique.append((f"{i}#{seen[i]}" if ids[i] > 1 else i, src))
    return unique


RUNS = _runs()


def _model_flows(trace, writer: str, base: int) -> collections.Counter:
    slices = trace.slices
    out = collections.Counter()
    for f in trace.flows:
        a, b = slices[f.src], slices[f.dst]
        if drawable(a, b, writer, f.name):
            out[(a.ts - base, a.dur, a.name, b.ts - base, b.dur, b.name)] += 1
    return out


QUERIES = {
    "bad_stats": "select name, idx, severity, value from stats "
                 "where value > 0 and severity in ('error', 'data_loss')",
    "slices": "select count(*) as n, min(ts) as lo from slice",
    "counters": "select count(*) as n from counter",
    "samples": "select ts, value from counter",
    "args_per_slice": "select n, count(*) as slices from (select count(a.id) as n from slice s "
                      "left join args a using (arg_set_id) group by s.id) group by n",
    # Processes and the threads of our descriptors (those with a track: not the main
    # thread trace_processor makes per process) with the sort hints the UI orders them by.
    "processes": "select p.name as name, extract_arg(p.arg_set_id, "
                 "'process_sort_index_hint') as hint from process p where p.pid > 0",
    "threads": "select p.name as process, t.name as name, extract_arg(t.arg_set_id, "
               "'thread_sort_index_hint') as hint from thread t join process p using (upid) "
               "where t.utid in (select utid from thread_track)",
    "correlated": "select ts, dur, name, extract_arg(arg_set_id, 'correlation_id') as c "
                  "from slice",
    "attributes": "select name, str_value, int_value from metadata "
                  "where name glob 'trace_attribute.*'",
    "flows": "select so.ts as sts, so.dur as sdur, so.name as sname, si.ts as dts, "
             "si.dur as ddur, si.name as dname from flow f "
             "join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in",
}


def _arg_rows(s, lines: dict) -> int:
    """The args rows of a slice: one per arg, but one per declared line (model.ARG_LINES)
    of its shared args, however many of the line's args it has."""
    shared = {k for k, v in (s.shared_args or {}).items() if v is not None}
    made = {ln for ln, names in lines.items() if ln not in shared and shared & set(names)}
    folded = {n for ln in made for n in lines[ln]}
    own = {k for k, v in (s.args or {}).items() if v is not None}
    return len((shared - folded) | made | own)


def _designed_order(trace) -> tuple[list[str], dict[str, list[str]]]:
    """(process names, {process: its thread names}) in the designed order, from the model:
    the top-level groups as the model orders them (the run's own groups first, tracecvt's
    analysis last) that hold a lane or a single counter with samples (a group of two or more
    counters only is drawn as its first counter's row, no process), and within each, its
    lanes depth-first in display order (cores by kind and number), but the derived lanes
    of a source group (a lane's bubbles), which are no threads."""
    tracks = trace.tracks
    samples = {c.track for c in trace.counters if c.ts}
    roots = sorted(trace.children(None), key=lambda r: (tracks[r].derived, tracks[r].order))
    processes, lanes = [], {}
    for r in roots:
        below = [i for i, _ in trace.walk(r)][1:]
        own = [i for i in below if tracks[i].kind == LANE
               and not (tracks[i].derived and not tracks[tracks[i].parent].derived)]
        if tracks[r].kind != GROUP or (not own and len([i for i in below
                                                        if i in samples]) >= 2):
            continue
        processes.append(tracks[r].name)
        lanes[tracks[r].name] = own
    named = thread_names(trace, {i: p for p, ids in lanes.items() for i in ids})
    return processes, {p: [named.get(i, tracks[i].name) for i in ids]
                       for p, ids in lanes.items()}


# What is one piece of work shown in several places, per family (format, variant): simpler's
# task token on its Worker, Scheduler and orchestrator views; msprof's host launch and the
# device task it launched, a framework op and its device task, an op on and off the task
# queue.  Other families declare nothing.
SAME_WORK_FACTS = {
    ("simpler", ""): {"args": ["task"]},
    # simpler's own converter output: the task's id is taskId on its AICore / Worker and
    # AICPU / Scheduler rows, task_id on its submit in the orchestrator view
    ("simpler", "converter-output"): {"args": [["taskId", "task_id"]]},
    ("msprof", "msprof-app"): {"flows": ["HostToDevice", "async_npu", "async_task_queue"]},
    ("msprof", "torch-npu"): {"flows": ["HostToDevice", "async_npu", "async_task_queue"]},
    # the database exports: the text export's flows, named alike
    ("msprof-db", "msprof-db"): {"flows": ["HostToDevice", "async_npu", "async_task_queue"]},
}


def _same_work(trace, base: int, family: tuple) -> dict:
    """What is one piece of work in the run (``SAME_WORK_FACTS``), as slice keys (start from
    the first slice, duration, name): the ends of each flow of a listed name, and the slices
    per value of each listed arg (own or shared); and what its reader declares."""
    declared = SAME_WORK_FACTS.get(family, {})
    slices = trace.slices

    def key(s):
        return (s.ts - base, s.dur, s.name)
    pairs = [(key(slices[f.src]), key(slices[f.dst])) for f in trace.flows
             if f.name in declared.get("flows", ())]
    by_value: dict = collections.defaultdict(set)
    for s in slices:
        if trace.tracks[s.track].derived:
            continue
        for arg in declared.get("args", ()):
            names = [arg] if isinstance(arg, str) else arg      # a list: one id, named so
            v = next((s.all_args[n] for n in names if s.all_args.get(n) is not None), None)
            if v is not None:
                by_value[(str(names), v)].add((key(s), s.track))
    # the critical path's task copies and the slices of the tasks they copy (model.COPIES)
    on_path = {key(s) for s in slices if s.cat == "critical path" and s.name != "wait schedule"
               or s.args and "critical_path_step" in s.args}
    return {"declared": bool(declared), "pairs": pairs, "by_value": by_value,
            "reader": trace.meta.extra.get(SAME_WORK), "facts": declared or None,
            "on_path": on_path}


def _load(path: Path) -> dict:
    with trace_processor(path) as tp:
        return {k: rows(tp, q) for k, q in QUERIES.items()}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """{(run id, writer): (model figures, trace_processor figures)} for every run."""
    if not os.access(TP_BIN, os.X_OK):
        pytest.skip(f"trace_processor_shell not found at {TP_BIN}")
    pytest.importorskip("perfetto.trace_processor")
    tmp = tmp_path_factory.mktemp("tp")
    jobs = {}
    models = {}
    for k, (rid, src) in enumerate(RUNS):
        trace = src.read()
        add_derived_tracks(trace)
        span = [s.ts for s in trace.slices] + [i.ts for i in trace.instants]
        base = min(span) if span else 0
        origin = time_origin(trace)             # the .pftrace's time 0
        work = work_ids(trace)
        samples = collections.Counter((t - origin, float(v))
                                      for c in trace.counters for t, v in zip(c.ts, c.values))
        for writer in WRITERS:
            path = tmp / f"{k}.{'pftrace' if writer == 'perfetto' else 'json'}"
            with open(path, "wb") as f:
                counts = (write_perfetto if writer == "perfetto" else write_chrome)(trace, f)
            models[(rid, writer)] = {
                "slices": len(trace.slices) + len(trace.instants), "base": base,
                "counters": sum(len(c) for c in trace.counters),
                "flows": _model_flows(trace, writer, base), "counts": counts,
                "flows_total": len(trace.flows), "order": _designed_order(trace),
                "meta": trace.meta, "origin": origin,
                "samples": samples,
                "same_work": _same_work(trace, base, (src.format, src.variant)),
                # .pftrace: one more row, correlation_id, on the slices of one piece of work
                "args_per_slice": collections.Counter(
                    [_arg_rows(s, trace.meta.extra.get("arg_lines", {}))
                     + (writer == "perfetto" and k in work) for k, s in enumerate(trace.slices)]
                    + [sum(v is not None for v in (i.args or {}).values())
                       for i in trace.instants])}
            jobs[(rid, writer)] = path
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = dict(zip(jobs, pool.map(_load, jobs.values())))
    return {key: (models[key], results[key]) for key in jobs}


CASES = [pytest.param(rid, w, id=f"{rid}-{w}") for rid, _ in RUNS for w in WRITERS]


@pytest.mark.parametrize("rid, writer", CASES)
def test_loads_cleanly_with_the_models_counts(loaded, rid, writer):
    model, tp = loaded[(rid, writer)]
    assert tp["bad_stats"] == []
    assert tp["slices"][0]["n"] == model["slices"]
    assert tp["counters"][0]["n"] == model["counters"]
    assert len(tp["flows"]) == sum(model["flows"].values())
    # the flows left out are exactly those the writer counts (and warns about)
    assert model["counts"]["flows_not_drawn"] == model["flows_total"] - len(tp["flows"])


@pytest.mark.parametrize("rid, writer", CASES)
def test_every_flow_joins_predecessor_to_successor(loaded, rid, writer):
    """Flow ends by (start, duration, name) of the slices, relative to the first slice:
    the .pftrace keeps the model's ns, the Chrome JSON counts from the trace start."""
    model, tp = loaded[(rid, writer)]
    lo = tp["slices"][0]["lo"]
    got = collections.Counter((r["sts"] - lo, r["sdur"], r["sname"], r["dts"] - lo, r["ddur"],
                               r["dname"]) for r in tp["flows"])
    assert got == model["flows"]


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_counter_samples_are_the_models(loaded, rid):
    """Every sample at its time with its value, whether it has a packet of its own or rides
    on a slice event as an extra counter value."""
    model, tp = loaded[(rid, "perfetto")]
    got = collections.Counter((r["ts"], r["value"]) for r in tp["samples"])
    assert got == model["samples"]


def test_every_family_is_tested():
    kinds = {(src.format, src.variant) for _, src in RUNS}
    assert {("pypto", "merged"), ("pypto", "pypto-raw"), ("pypto", "raw"), ("pypto", "aicpu"),
            ("msprof", "msprof-app"), ("msprof", "msprof-op"), ("msprof", "msprof-sim"),
            ("msprof", "torch-npu"), ("ncu", "ncu-rep"), ("ncu", "csv"),
            ("simpler", ""), ("simpler", "converter-output")} <= kinds


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_args_are_one_row_per_model_arg(loaded, rid):
    """Trace Processor stores every leaf of a nested debug annotation as an args row of its
    own; the .pftrace writes nested values (operand lists, statistics) as one string each,
    so a slice has exactly one args row per model arg, except that a declared line of its
    shared args (model.ARG_LINES) is one row (PyPTO tasks: 5 rows, not 37; the reader no
    longer repeats what the name and category say: rootIndex, psgId, fake,
    input_bytes/output_bytes, 14 rows with them; a call's label, three hashes and execution
    statistics are one line, 9 rows without it)."""
    model, tp = loaded[(rid, "perfetto")]
    got = collections.Counter({r["n"]: r["slices"] for r in tp["args_per_slice"]})
    assert got == model["args_per_slice"]


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_processes_and_threads_have_sort_hints_in_the_designed_order(loaded, rid):
    """Perfetto v57 and later order processes and threads by the sort hints trace_processor
    derives from their descriptors' sibling_order_rank where the root descriptor asks for
    explicit ordering (else by slice count, then name: Rank 1 could come first).  Every
    process and every thread of the .pftrace has a hint, and ordered by them they are the
    model's designed order."""
    model, tp = loaded[(rid, "perfetto")]
    processes, threads = model["order"]
    got = tp["processes"]
    assert bool(got) == bool(processes) and all(r["hint"] is not None for r in got), got
    hints = [r["hint"] for r in got]
    assert len(set(hints)) == len(hints), got
    shown = [r["name"] for r in sorted(got, key=lambda r: r["hint"])]
    assert shown == [p for p in processes if p in set(shown)]
    assert set(shown) <= set(processes)
    if any(p == "tracecvt analysis" for p in shown):
        assert shown[-1] == "tracecvt analysis"
    by_process = collections.defaultdict(list)
    for r in tp["threads"]:
        assert r["hint"] is not None, r
        by_process[r["process"]].append(r)
    assert set(by_process) <= set(shown)
    for p, rows_ in by_process.items():
        assert len({r["hint"] for r in rows_}) == len(rows_), rows_
        names = [r["name"] for r in sorted(rows_, key=lambda r: r["hint"])]
        assert names == [n for n in threads[p] if n in set(names)], p
        assert set(names) <= set(threads[p])


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_carries_the_runs_facts_as_trace_attributes(loaded, rid):
    """The run's facts (tool, version, device, clock, source files, time 0) are the trace's
    TraceAttributes: trace_processor's metadata rows "trace_attribute.<key>", which the
    Perfetto UI lists on its Overview page."""
    model, tp = loaded[(rid, "perfetto")]
    meta = model["meta"]
    got = {r["name"].split(".", 1)[1]: r["str_value"] if r["int_value"] is None
           else r["int_value"] for r in tp["attributes"]}
    want = {"run": meta.name, "format": meta.format, "tool": meta.tool,
            "tool_version": meta.tool_version, "device": meta.device,
            "source_files": "; ".join(meta.source_files)}
    assert got == {**{k: v for k, v in want.items() if v}, "clock": got.get("clock"),
                   "time_origin_ns": model["origin"],
                   "source_file_count": len(meta.source_files),
                   "converter": f"tracecvt {tracecvt.__version__}"}
    assert got["clock"].startswith(f"{meta.clock.name}: {meta.clock.unit}")
    if meta.clock.unit != "ns":
        assert f", {meta.clock.ns_per_unit} ns per {meta.clock.unit}" in got["clock"]


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_one_piece_of_work_on_several_tracks_has_one_correlation_id(loaded, rid):
    """The Perfetto UI colours the slices of one correlation_id alike across tracks.  What
    the reader declares one piece of work (model.SAME_WORK) has one: the two ends of every
    flow of a declared name (msprof: a host launch and its device task), and the slices of
    one value of a declared arg on two or more tracks (simpler: a task's AICore row, its
    dispatch in the Scheduler View, its submit), and different values have different ones.
    A run that declares nothing (PyPTO, Nsight Compute, msprof op) has none but on its
    critical path's task copies and the tasks they copy (the next test): its other slices keep
    their colour by name."""
    model, tp = loaded[(rid, "perfetto")]
    work = model["same_work"]
    assert work["reader"] == work["facts"]
    lo = tp["slices"][0]["lo"] if tp["slices"][0]["n"] else 0
    ids = collections.defaultdict(set)
    for r in tp["correlated"]:
        ids[(r["ts"] - lo, r["dur"], r["name"])].add(r["c"])
    if not work["declared"]:
        assert all(c == {None} for k, c in ids.items() if k not in work["on_path"])
        return
    for a, b in work["pairs"]:
        common = ids[a] & ids[b] - {None}
        assert common, (a, b, ids[a], ids[b])
    owner: dict = {}
    for value, members in work["by_value"].items():
        if len({t for _, t in members}) < 2:
            continue
        (c,) = set.intersection(*(ids[k] for k, _ in members)) - {None} or {None}
        assert c is not None, (value, members)
        assert owner.setdefault(c, value) == value, (c, value, owner[c])


# Every slice, with its lane (thread tracks; a bubble lane is a process track: none) and
# category ("critical path": the critical-path lane's, "bubble": the bubble lanes').
CP_QUERY = ("select s.ts, s.dur, s.name, s.category as cat, th.name as lane, "
            "extract_arg(s.arg_set_id, 'correlation_id') as c, "
            "extract_arg(s.arg_set_id, 'debug.step') as step, "
            "extract_arg(s.arg_set_id, 'debug.lane') as of_lane, "
            "extract_arg(s.arg_set_id, 'debug.critical_path_step') as on_path "
            "from slice s left join thread_track tt on s.track_id = tt.id "
            "left join thread th using (utid)")


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("where", [
    REPO / "samples" / "pypto" / "tiny_add",       # one slice per task, nothing declared
    # simpler: a task is several slices (an SPMD kernel's blocks on AIV lanes), declared as one
    SAMPLES / "simpler" / "a2a3sim_tmr_sync_start_drain_phases_L4"])
def test_pftrace_critical_path_copies_share_their_tasks_correlation_id(where, workers,
                                                                       tmp_path, monkeypatch):
    """The critical-path lane draws copies of the run's tasks (model.COPIES): each copy has
    the correlation_id of its task, the one of every slice the task is made of (those that
    carry its ``critical_path_step``, among them the slice on the copy's ``lane`` with its
    start and name), so hovering one highlights the other; copies of different tasks have
    different ids, and the path's "wait schedule" segments and the bubbles have none.  With
    two processes too (a large run's way: a forked process writes the run's own slices while
    the analyses draw the copies here)."""
    if not os.access(TP_BIN, os.X_OK):
        pytest.skip(f"trace_processor_shell not found at {TP_BIN}")
    from tracecvt.writers import perfetto
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)       # fork even a small run
    (src,) = find_runs(where)
    out = tmp_path / "t.pftrace"
    convert_source(src, "perfetto", out, False, ReadOptions(),
                   workers=workers)                             # derived tracks on
    with trace_processor(out) as tp:
        got = rows(tp, CP_QUERY)
    path = [r for r in got if r["cat"] == "critical path"]
    assert {r["lane"] for r in path} == {"critical path"}
    copies = [r for r in path if r["name"] != "wait schedule"]
    waits = [r for r in path if r["name"] == "wait schedule"]
    bubbles = [r for r in got if r["cat"] == "bubble"]
    assert copies and waits and bubbles
    own = [r for r in got if r["cat"] not in ("critical path", "bubble")]
    for r in copies:
        task = [o for o in own if o["on_path"] == r["step"]]
        assert any((o["lane"], o["ts"], o["name"]) == (r["of_lane"], r["ts"], r["name"])
                   for o in task), r
        assert r["c"] is not None and {o["c"] for o in task} == {r["c"]}, (r, task)
    assert len({r["c"] for r in copies}) == len(copies)
    assert all(r["c"] is None for r in waits + bubbles)


def test_top_level_lanes_process_takes_its_place_in_the_designed_order(tmp_path):
    """Lanes outside any group go to one more process, named after the run; ranked by its
    first lane, it comes where that lane is in the model's order (here before a group the
    model puts after it), and its threads have hints too."""
    if not os.access(TP_BIN, os.X_OK):
        pytest.skip(f"trace_processor_shell not found at {TP_BIN}")
    from tracecvt.model import RunMeta, Trace
    trace = Trace(RunMeta("loose", "test"))
    group = trace.add_track("Device", None, GROUP, 1)
    core = trace.add_track("core 0", group, LANE, 0)
    host = trace.add_track("host", None, LANE, 0)
    for lane in (core, core, host):             # more slices in the group: the UI's fallback
        trace.add_slice(lane, 10 * len(trace.slices), 5, "work")   # would put it first
    path = tmp_path / "loose.pftrace"
    with open(path, "wb") as f:
        write_perfetto(trace, f)
    with trace_processor(path) as tp:
        got = rows(tp, QUERIES["processes"])
        threads = rows(tp, QUERIES["threads"])
    assert [r["name"] for r in sorted(got, key=lambda r: r["hint"])] == ["loose", "Device"]
    assert sorted((r["process"], r["name"]) for r in threads if r["hint"] is not None) == \
        [("Device", "core 0"), ("loose", "host")]
