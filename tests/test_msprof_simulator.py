"""msprof op simulator: both trace.json schemas as one group per core, one lane per pipe;
instr_exe/code_exe as args and summary figures."""

from __future__ import annotations

import collections
import csv
import io
import json
import shutil
from decimal import ROUND_HALF_UP, Decimal

from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, check_pftrace, decode_pftrace, lanes_in_display_order, \
    pftrace_counts

MS = SAMPLES / "msprof"
SCHEMA1 = next(MS.glob("tile-ai-tilelang-ascend/examples/cann-bench/foreach_norm/output/OPPROF_*"))
SCHEMA2 = MS / "zouzias-pto-isa-mirror/tests/npu/a5/src/st/testcase/qk_attn_incore5/profiling"


def ns(value: float) -> int:
    return int((Decimal(repr(value)) * 1000).to_integral_value(ROUND_HALF_UP))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def sim_run(path):
    (src,) = find_runs(path)
    assert src.variant == "msprof-sim"
    return src, src.read()


def test_schema1_per_core_file():
    src, trace = sim_run(SCHEMA1)
    assert src.root == SCHEMA1 and trace.meta.tool == "msprof op simulator"
    path = SCHEMA1 / "simulator/core0.cubecore0/trace.HEAD_EXCERPT.json"
    doc = json.loads(path.read_text())
    assert doc["schemaVersion"] == 1
    events = doc["traceEvents"]
    pname = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["name"] == "thread_name"}
    xs = [e for e in events if e["ph"] == "X"]
    assert len(trace.slices) == len(xs) == 5
    want = collections.Counter((e["name"], ns(e["ts"]), ns(e["dur"]), pname[e["pid"]].lower(),
                                tname[(e["pid"], e["tid"])]) for e in xs)
    got = collections.Counter((s.name, s.ts, s.dur, s.cat, s.args["sim_lane"])
                              for s in trace.slices)
    assert got == want
    # one group per core, one lane per pipe: SCALAR_1 and SCALAR_2 share the "scalar" lane
    # (in-flight instructions that overlap go to its overlap lane)
    assert {trace.path(s.track).split(" / ")[0] for s in trace.slices} == {"core0.cubecore0"}
    lanes = [t.name for t in trace.tracks if t.kind == "lane"]
    assert set(lanes) == {"scalar", "scalarldst"}
    assert all(not t.nesting for t in trace.tracks if t.kind == "lane")
    assert trace.meta.clock.name == "kernel-us"
    assert any("looks cut short" in w for w in trace.meta.warnings)


def test_schema1_instr_and_code_exe():
    src, trace = sim_run(SCHEMA1)
    sim = trace.meta.extra["msprof_sim"]
    instr = rows(SCHEMA1 / "simulator/core0.cubecore0/core0.cubecore0_instr_exe.ROW_SELECTION.csv")
    core = sim["cores"]["core0.cubecore0"]
    assert len(core["instructions"]) == len(instr)
    assert core["pipes"]["cube"]["cycles"] == sum(int(r["cycles"]) for r in instr
                                                  if r["pipe"] == "CUBE")
    assert core["pipes"]["flowctrl"]["instructions"] == sum(1 for r in instr
                                                            if r["pipe"] == "FLOWCTRL")
    assert core["executions"] == sum(int(r["call_count"]) for r in instr)
    code = sim["files"][str(SCHEMA1 / "simulator/core0.veccore1/core0.veccore1_code_exe.csv")]
    assert code["rows"] == 0 and "without -g" in code["note"]
    # the PC join: slices whose pc_addr is a row's addr carry its figures as shared args
    addrs = {int(r["addr"]): r for r in instr}
    for s in trace.slices:
        pc = int(s.args["pc_addr"], 16)
        if pc in addrs:
            assert s.shared_args["instr_cycles"] == int(addrs[pc]["cycles"])
        else:
            assert s.shared_args is None


def test_schema2_all_core_file():
    src, trace = sim_run(SCHEMA2)
    doc = json.loads((SCHEMA2 / "trace.HEAD_EXCERPT.json").read_text())
    assert doc["schemaVersion"] == 2
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert collections.Counter((s.name, s.ts, s.dur) for s in trace.slices) == \
        collections.Counter((e["name"], ns(e["ts"]), ns(e["dur"])) for e in xs)
    # every declared core is a group, in core order (cube first)
    groups = [trace.tracks[i].name for i in trace.children(None)]
    assert groups == ["core0.cubecore0", "core0.veccore0", "core0.veccore1"]
    assert {trace.tracks[s.track].name for s in trace.slices} == {"scalar"}
    sim = trace.meta.extra["msprof_sim"]
    # renamed per-core CSVs (cubecore0_instr_exe.csv) find their core
    assert set(sim["cores"]) >= {"core0.cubecore0", "core0.veccore1"}
    for name, core in (("cubecore0_instr_exe.csv", "core0.cubecore0"),
                       ("veccore1_instr_exe.csv", "core0.veccore1")):
        data = rows(SCHEMA2 / name)
        entry = sim["cores"][core]
        assert len(entry["instructions"]) == len(data)
        pipes = collections.Counter()
        for r in data:
            pipes[{"FIXP": "fixpipe", "VECTOR": "vector", "CUBE": "cube"}.get(
                r["pipe"], r["pipe"].lower())] += int(r["cycles"])
        assert {p: v["cycles"] for p, v in entry["pipes"].items()} == dict(pipes)
    assert any("core0.cubecore0" in w and "cut short" in w for w in trace.meta.warnings)


def test_both_writers():
    for path in (SCHEMA1, SCHEMA2):
        src, trace = sim_run(path)
        buf = io.BytesIO()
        write_perfetto(trace, buf)
        pf = decode_pftrace(buf.getvalue())
        check_pftrace(pf)
        assert pftrace_counts(pf)["begin"] == len(trace.slices)
        assert "scalar" in lanes_in_display_order(pf)
        cbuf = io.BytesIO()
        write_chrome(trace, cbuf)
        doc = json.loads(cbuf.getvalue())
        assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == len(trace.slices)


def test_single_trace_file():
    (src,) = find_runs(SCHEMA2 / "trace.HEAD_EXCERPT.json")
    assert src.variant == "msprof-sim"
    assert len(src.read().slices) == 5


def test_simulator_folder_with_a_dump_is_one_run(tmp_path):
    """OPPROF_*/dump/op_basic_info.txt beside simulator/ belongs to the simulator run (the dump
    file is a real one from an on-board msprof op run)."""
    root = tmp_path / SCHEMA1.name
    shutil.copytree(SCHEMA1, root)
    (root / "dump").mkdir()
    tile = next(MS.glob("tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/"
                        "msprof_output_iter1/OPPROF_*"))
    shutil.copy(tile / "dump/op_basic_info.txt", root / "dump/op_basic_info.txt")
    (src,) = find_runs(tmp_path)
    assert src.variant == "msprof-sim" and src.root == root
    trace = src.read()
    assert trace.meta.device == "Ascend910_9362" and len(trace.slices) == 5
