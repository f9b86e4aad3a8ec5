"""The PyPTO raw-file path (swim file + task graph + program.json) against PyPTO's own
merged_swimlane.json, and on its own where PyPTO writes no merged file."""

from __future__ import annotations

import collections
import gzip
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from tracecvt.errors import InputError
from tracecvt.model import SOURCE_BINDING
from tracecvt.readers import ReadOptions, find_runs
from conftest import FIXTURES, PYPTO_MERGED_RUNS, PYPTO_RUNS, pypto_run_dir, pypto_sim_dir

NPU_SMALL = FIXTURES / "pypto_raw" / "npu_small"
SIM_NS_PER_CYCLE = Fraction(1000, 1800)
DUP_RE = re.compile(r"(\d+) task executions share a \(seqNo, taskId\) key")


# -- helpers --------------------------------------------------------------------------------

def _load(path: Path) -> object:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def _one_run(path: Path):
    (src,) = find_runs(path)
    # The bubble log is parsed the same way on both paths; keep these tests about tasks.
    src.files.pop("bubble_log", None)
    return src


def read(path: Path, raw: bool, options: ReadOptions | None = None):
    src = _one_run(path)
    if raw:
        src.variant = "pypto-raw"
    return src.read(options)


def lane_of(trace, s) -> str:
    return trace.tracks[s.track].name


def slice_key(trace, s) -> tuple:
    return (lane_of(trace, s), s.ts, s.dur, s.name)


# What tracecvt adds where it re-binds PyPTO's HUB dependencies (hub_binding): not PyPTO's.
BINDING_ARGS = ("deviceTask", "untrustedPredecessors")


def slice_key_args(trace, s) -> tuple:
    args = {k: v for k, v in s.all_args.items() if k not in BINDING_ARGS}
    return slice_key(trace, s) + (json.dumps(args, sort_keys=True),)


def flow_key(trace, f) -> tuple:
    """A flow as PyPTO bound it (SOURCE_BINDING where tracecvt re-bound it)."""
    src, dst = (f.args or {}).get(SOURCE_BINDING, (f.src, f.dst))
    a, b = trace.slices[src], trace.slices[dst]
    return (lane_of(trace, a), a.ts, a.end, lane_of(trace, b), b.ts)


def _psg_id(name: str) -> int:
    """The psgId a task's name spells (``seq-func-op-rootIndex-psgId(label)``)."""
    return int(re.match(r"-?\d+-\d+-\d+--?\d+-(-?\d+)", name).group(1))


def lane_names(trace) -> set[str]:
    return {t.name for t in trace.tracks if t.kind == "lane"}


def half_up(x: Fraction) -> int:
    return int((x + Fraction(1, 2)) // 1)


def swim_records(path: Path) -> list[tuple]:
    """(lane name, seqNo, taskId, start, end) of every record, straight from the file."""
    out = []
    for core in _load(path):
        ct, idx = core["coreType"], core["blockIdx"] + 1
        lane = f"AIC_{idx}" if "AIC" in ct else f"AIV_{idx}" if "AIV" in ct else f"{ct}_{idx}"
        for t in core["tasks"]:
            out.append((lane, t["seqNo"], t["taskId"], t["execStart"], t["execEnd"]))
    return out


def dyn_topo_rows(path: Path) -> list[list[int]]:
    rows = []
    for line in path.read_text().splitlines():
        if line and line[0].isdigit():
            fields = line.split(",")
            assert fields[9] == ""                       # the empty field before successors
            rows.append([int(x) for x in fields[:9]] + [int(x) for x in fields[10:] if x])
    return rows


def swim_lanes(path: Path) -> set[str]:
    return {r[0] for r in swim_records(path)} | {
        (f"AIC_{c['blockIdx'] + 1}" if c["coreType"] == "AIC" else
         f"AIV_{c['blockIdx'] + 1}" if c["coreType"] == "AIV" else
         f"{c['coreType']}_{c['blockIdx'] + 1}") for c in _load(path)}


# -- raw path == merged path on every shared run with a merged file ---------------------------

@pytest.fixture(scope="module", params=PYPTO_MERGED_RUNS)
def both(request):
    run = request.param
    d = pypto_run_dir(run)
    return run, read(d, raw=False), read(d, raw=True)


def test_raw_has_every_merged_task_with_same_times_names_and_args(both):
    run, merged, raw = both
    m = collections.Counter(slice_key_args(merged, s) for s in merged.slices)
    r = collections.Counter(slice_key_args(raw, s) for s in raw.slices)
    assert not (m - r), f"{run}: merged tasks missing or different in raw: {list(m - r)[:3]}"
    assert len(merged.slices) == merged.meta.extra["tasks"]


def test_raw_extras_are_exactly_the_dropped_duplicate_executions(both):
    run, merged, raw = both
    m = collections.Counter(slice_key(merged, s) for s in merged.slices)
    r = collections.Counter(slice_key(raw, s) for s in raw.slices)
    extra = r - m
    recs = swim_records(pypto_sim_dir(run) / "_simulate.swim.json")
    dup = len(recs) - len({(seq, tid) for _, seq, tid, _, _ in recs})
    assert sum(extra.values()) == dup
    warned = [DUP_RE.search(w) for w in raw.meta.warnings]
    warned = [int(w.group(1)) for w in warned if w]
    if dup:
        assert warned == [dup]
        # All collisions come from the SIM HUB seqNo bug (format doc 5.6).
        assert {k[0] for k in extra} == {"HUB_80"}
        assert any("HUB" in w and "seqNo 0" in w for w in raw.meta.warnings)
        extras = [s for s in raw.slices if s.all_args.get("duplicateKey")]
        assert len(extras) == dup
        assert all(s.cat == "hub" and s.all_args["seqNo"] == 0 for s in extras)
    else:
        assert warned == []
        assert m == r
    assert raw.meta.extra["tasks"] == len(raw.slices) == len(merged.slices) + dup


def test_raw_flows_equal_merged_flows(both):
    run, merged, raw = both
    assert len(raw.flows) == len(merged.flows)
    assert collections.Counter(flow_key(raw, f) for f in raw.flows) == \
        collections.Counter(flow_key(merged, f) for f in merged.flows)


def test_raw_lanes_and_meta(both):
    run, merged, raw = both
    swim = pypto_sim_dir(run) / "_simulate.swim.json"
    expected = swim_lanes(swim) | {"Fake Core_0"}
    assert len(expected) == 74                        # 73 SIM cores + the fake core
    assert lane_names(raw) == lane_names(merged) == expected
    assert raw.meta.clock.ns_per_unit == SIM_NS_PER_CYCLE
    assert raw.meta.clock.unit == "cycle"
    assert raw.meta.device == "Ascend A2/A3 cost model (PyPTO simulation)"
    assert raw.meta.format == "pypto" and raw.meta.tool == "PyPTO"
    assert raw.meta.name == merged.meta.name == pypto_run_dir(run).name
    assert str(swim) in raw.meta.source_files
    assert any(p.endswith("dyn_topo.txt") for p in raw.meta.source_files)


def test_raw_times_are_exact_cycles_conversion(both):
    """Every swim record appears on its core lane at round(cycles * 1000 / 1800) ns."""
    run, _, raw = both
    recs = swim_records(pypto_sim_dir(run) / "_simulate.swim.json")
    want = collections.Counter(
        (lane, half_up(a * SIM_NS_PER_CYCLE), half_up(e * SIM_NS_PER_CYCLE) -
         half_up(a * SIM_NS_PER_CYCLE)) for lane, _, _, a, e in recs)
    got = collections.Counter((lane_of(raw, s), s.ts, s.dur) for s in raw.slices
                              if lane_of(raw, s) != "Fake Core_0")
    assert got == want


def test_fake_tasks_match_the_hub_seqno_bug(both):
    """Fake tasks are the topo rows without a record: in SIM, HUB rows of seqNo >= 1."""
    run, merged, raw = both
    d = pypto_run_dir(run)
    rows = dyn_topo_rows(d / "dyn_topo.txt")
    recs = swim_records(pypto_sim_dir(run) / "_simulate.swim.json")
    keys = {(seq, tid) for _, seq, tid, _, _ in recs}
    missing = [r for r in rows if (r[0], r[1]) not in keys]
    fakes = [s for s in raw.slices if lane_of(raw, s) == "Fake Core_0"]
    assert len(fakes) == len(missing) == raw.meta.extra["pypto_fake_tasks"]
    assert all(r[7] == 4 and r[0] >= 1 for r in missing)      # coreType 4 = HUB
    assert all(s.dur == 1000 and s.cat == "fake" for s in fakes)
    assert all("(fake" in s.name for s in fakes)


# -- ffn_over_threshold: no merged file, raw files only -------------------------------------

@pytest.fixture(scope="module")
def over_threshold():
    d = pypto_run_dir("ffn_over_threshold")
    (src,) = find_runs(d)
    assert "merged" not in src.files and src.variant == "raw"
    return d, src.read()


def test_over_threshold_tasks(over_threshold):
    d, trace = over_threshold
    per_kind = collections.Counter(lane_of(trace, s).split("_")[0] for s in trace.slices)
    assert per_kind == {"AIC": 768, "AIV": 512, "HUB": 128}
    assert trace.meta.extra["tasks"] == 1408
    assert trace.meta.warnings == []
    rows = dyn_topo_rows(d / "dyn_topo.txt")
    assert len(rows) == 1408
    # Names: seq-funcIdx-opIdx of every topo row, rootIndex = index of the root in program.json.
    funcs = _load(d / "program.json.gz")["functions"]
    root_index = {f["hash"]: i for i, f in reversed(list(enumerate(funcs)))}
    names = collections.Counter(s.name.split("(")[0] for s in trace.slices)
    want = collections.Counter(
        f"{r[0]}-{r[1] >> 20}-{r[1] & 0xFFFFF}-{root_index[str(r[3])]}-{r[8]}" for r in rows)
    assert names == want
    # Semantic labels come from the CALL operations of the root function.
    labels = {op["opmagic"]: op.get("semantic_label", {}).get("label", "")
              for f in funcs if f["graphtype"] == 2 for op in f["operations"]}
    by_tid = {s.all_args["taskId"]: s for s in trace.slices}
    for r in rows:
        s = by_tid[r[1]]
        a = s.all_args
        assert s.name.endswith(f"({labels.get(r[4], '')})")
        assert a["callOpMagic"] == r[4] and a["rootHash"] == r[3]
        assert a["leafHash"] == r[6] and _psg_id(s.name) == r[8]
        assert ("inputs" in a) == (r[7] != 4)            # HUB tasks have no CALL operands


def test_over_threshold_flows_are_the_dyn_topo_edges(over_threshold):
    d, trace = over_threshold
    rows = dyn_topo_rows(d / "dyn_topo.txt")
    edges = sum(len(r) - 9 for r in rows)
    assert edges > 0 and len(trace.flows) == edges
    by_tid = {s.all_args["taskId"]: i for i, s in enumerate(trace.slices)}
    want = collections.Counter((by_tid[r[1]], by_tid[x]) for r in rows for x in r[9:])
    assert collections.Counter((f.src, f.dst) for f in trace.flows) == want
    # One device task, no HUB collisions: every dependency is respected in time.
    assert all(trace.slices[f.src].end <= trace.slices[f.dst].ts for f in trace.flows)


def test_over_threshold_times(over_threshold):
    d, trace = over_threshold
    recs = swim_records(d / "CostModelSimulationOutput" / "_simulate.swim.json")
    assert max(e for *_, e in recs) > 500_000          # why PyPTO wrote no merged file
    first = min(a for *_, a, _ in recs)
    assert min(s.ts for s in trace.slices) == half_up(first * SIM_NS_PER_CYCLE)
    assert max(s.end for s in trace.slices) == half_up(max(e for *_, e in recs)
                                                       * SIM_NS_PER_CYCLE)


def test_over_threshold_execution_stats(over_threshold):
    """avg/max/min per subGraphId over all records, as PyPTO's execution-hint (5.2)."""
    d, trace = over_threshold
    durs = collections.defaultdict(list)
    for core in _load(d / "CostModelSimulationOutput" / "_simulate.swim.json"):
        for t in core["tasks"]:
            durs[t["subGraphId"]].append(t["execEnd"] / 1800 - t["execStart"] / 1800)
    for s in trace.slices:
        st = s.all_args["exec_stats"]
        ds = durs[_psg_id(s.name)]
        assert st["max_us"] == max(ds) and st["min_us"] == min(ds)
        assert st["avg_us"] == pytest.approx(sum(ds) / len(ds), rel=1e-12)


# -- task graph fallbacks --------------------------------------------------------------------

def _copy_run(run: str, dst: Path, keep) -> Path:
    src = pypto_run_dir(run)
    for p in src.rglob("*"):
        rel = p.relative_to(src)
        if p.is_file() and keep(rel):
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dst / rel)
    return dst


def test_without_task_graph_converts_without_flows_and_warns(tmp_path):
    d = _copy_run("softmax_multiseq", tmp_path / "run",
                  lambda rel: rel.name.startswith(("_simulate.swim.json", "program.json")))
    (src,) = find_runs(d)
    assert src.variant == "raw" and not {"dyn_topo", "tmp_topo", "static_topo"} & set(src.files)
    trace = src.read()
    recs = swim_records(d / "CostModelSimulationOutput" / "_simulate.swim.json")
    assert len(trace.slices) == len(recs) == 160
    assert trace.flows == []
    graph = [w for w in trace.meta.warnings if "no task graph" in w]
    assert len(graph) == 1 and "flows" in graph[0]
    assert not any(lane_of(trace, s) == "Fake Core_0" for s in trace.slices)
    assert "Fake Core_0" in lane_names(trace)
    # Names from what the swim file has: key, unknown rootIndex, subGraphId as psgId.
    want = collections.Counter(f"{seq}-{tid >> 20}-{tid & 0xFFFFF}--1-0()"
                               for _, seq, tid, _, _ in recs)
    assert collections.Counter(s.name for s in trace.slices) == want


@pytest.mark.parametrize("graph", ["tmp_topo", "static_topo"])
def test_other_task_graph_files_give_the_same_flows(graph):
    d = pypto_run_dir("ffn_medium")
    base = read(d, raw=True)
    src = _one_run(d)
    src.variant = "pypto-raw"
    for role in ("dyn_topo", "tmp_topo"):
        if role != graph:
            src.files.pop(role, None)
    trace = src.read()
    assert collections.Counter(flow_key(trace, f) for f in trace.flows) == \
        collections.Counter(flow_key(base, f) for f in base.flows)
    assert not any("no task graph" in w for w in trace.meta.warnings)
    if graph == "tmp_topo":              # the same graph, with program.json: identical
        assert collections.Counter(slice_key_args(trace, s) for s in trace.slices) == \
            collections.Counter(slice_key_args(base, s) for s in base.slices)
    else:                                # 4 device tasks: one static file each
        assert sum("_simulate.topo.json" in p for p in trace.meta.source_files) == 4


# -- NPU: tilefwk_L1_prof_data.json -----------------------------------------------------------

def test_npu_raw_matches_pypto_merged_output():
    """npu_small/merged_swimlane.json was written by PyPTO 0.2.0's draw_swim_lane.py."""
    merged = read(NPU_SMALL, raw=False)
    raw = read(NPU_SMALL, raw=True)
    assert collections.Counter(slice_key_args(raw, s) for s in raw.slices) == \
        collections.Counter(slice_key_args(merged, s) for s in merged.slices)
    assert collections.Counter(flow_key(raw, f) for f in raw.flows) == \
        collections.Counter(flow_key(merged, f) for f in merged.flows)
    assert lane_names(raw) == lane_names(merged) == \
        {"Fake Core_0", "AIC_1", "AIC_2", "AIV_27", "AI-CPU_49"}
    assert raw.meta.device == "Ascend 950 NPU (DAV_3510)"     # 1000 ticks per us
    # machine_trace_perf_data_0.json says 1000 ticks per us: 1 tick = 1 ns.
    assert raw.meta.clock.ns_per_unit == 1 and raw.meta.clock.unit == "tick"
    assert any(p.endswith("machine_trace_perf_data_0.json") for p in raw.meta.source_files)
    # HUB tasks are never recorded on an NPU: fake; the execEnd 0 record is skipped.
    assert raw.meta.extra["pypto_fake_tasks"] == 6
    assert any("1 task records with execEnd 0 skipped" in w for w in raw.meta.warnings)


def _npu_copy(tmp_path: Path) -> Path:
    d = tmp_path / "npu"
    d.mkdir()
    for n in ("tilefwk_L1_prof_data.json", "dyn_topo.txt", "program.json"):
        shutil.copy(NPU_SMALL / n, d / n)
    return d


def _first_record(d: Path) -> tuple[int, int]:
    t = _load(d / "tilefwk_L1_prof_data.json")[0]["tasks"][0]
    return t["execStart"], t["execEnd"]


def test_npu_default_clock_is_50_mhz(tmp_path):
    d = _npu_copy(tmp_path)
    trace = read(d, raw=True)
    assert trace.meta.clock.ns_per_unit == 20
    a, e = _first_record(d)
    s = next(s for s in trace.slices if lane_of(trace, s) == "AIC_1")
    assert (s.ts, s.dur) == (a * 20, (e - a) * 20)


def test_clock_override(tmp_path):
    d = _npu_copy(tmp_path)
    trace = read(d, raw=True, options=ReadOptions(clock_mhz=Fraction(100)))
    assert trace.meta.clock.ns_per_unit == 10
    a, _ = _first_record(d)
    assert min(s.ts for s in trace.slices if lane_of(trace, s) == "AIC_1") == a * 10
    sim = read(pypto_run_dir("tiny_add"), raw=True, options=ReadOptions(clock_mhz=Fraction(900)))
    assert sim.meta.clock.ns_per_unit == Fraction(1000, 900)
    recs = swim_records(pypto_sim_dir("tiny_add") / "_simulate.swim.json")
    k = Fraction(1000, 900)
    assert collections.Counter((lane_of(sim, s), s.ts, s.end) for s in sim.slices) == \
        collections.Counter((lane, half_up(a * k), half_up(e * k)) for lane, _, _, a, e in recs)


# -- bad input -------------------------------------------------------------------------------

def _tiny_copy(tmp_path: Path) -> Path:
    return _copy_run("tiny_add", tmp_path / "run", lambda rel: rel.name.startswith(
        ("_simulate.swim.json", "program.json", "dyn_topo.txt")))


@pytest.mark.parametrize("what,mutate", [
    ("truncated swim", lambda d: _write(d / "CostModelSimulationOutput/_simulate.swim.json",
                                        '[{"blockIdx": 0, "coreType": "AIC", "tasks": [')),
    ("swim object", lambda d: _write(d / "CostModelSimulationOutput/_simulate.swim.json",
                                     '{"blockIdx": 0}')),
    ("task without taskId", lambda d: _write(
        d / "CostModelSimulationOutput/_simulate.swim.json",
        '[{"blockIdx": 0, "coreType": "AIC", "tasks": [{"execStart": 1, "execEnd": 2}]}]')),
    ("bad topo line", lambda d: _write(d / "dyn_topo.txt", "0,0,zero,1,2,0,0,4,0,,1\n")),
    ("short topo line", lambda d: _write(d / "dyn_topo.txt", "0,0,0,1\n")),
    ("program without functions", lambda d: _write(d / "program.json", '{"version": "2.0"}')),
])
def test_bad_input_is_one_line_input_error(tmp_path, what, mutate):
    d = _tiny_copy(tmp_path)
    src = _one_run(d)            # found while intact, then damaged: read_raw must cope
    src.variant = "pypto-raw"
    mutate(d)
    with pytest.raises(InputError) as e:
        src.read()
    assert "\n" not in str(e.value) and e.value.path
    assert Path(e.value.path).name.startswith(("_simulate", "dyn_topo", "program"))


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def test_progress_is_reported():
    calls = []
    read(pypto_run_dir("tiny_add"), raw=True,
         options=ReadOptions(progress=lambda *a: calls.append(a)))
    assert calls and all(0 <= done <= total for _, done, total in calls)
    assert ("building tasks", 6, 6) in calls


def test_every_shared_run_converts_from_raw_files():
    for run in PYPTO_RUNS:
        trace = read(pypto_run_dir(run), raw=True)
        assert trace.meta.extra["tasks"] == len(trace.slices) > 0
