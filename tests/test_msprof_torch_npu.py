"""torch_npu ASCEND_PROFILER_OUTPUT: trace_view, kernel_details, memory counters, steps,
several ranks in one trace, statistics and communication as run metadata."""

from __future__ import annotations

import collections
import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tracecvt.model import COUNTER
from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, check_pftrace, decode_pftrace, lanes_in_display_order, \
    pftrace_counts

MS = SAMPLES / "msprof"
PT = MS / "msinsight/test/data/pytorch"
OLD = MS / "msinsight/server/src/test/test_data"
OUT = "ASCEND_PROFILER_OUTPUT"


def ns(value) -> int:
    d = Decimal(value.strip()) if isinstance(value, str) else Decimal(repr(value))
    return int((d * 1000).to_integral_value(ROUND_HALF_UP))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read(path):
    runs = [r for r in find_runs(path) if r.variant == "torch-npu"]
    assert len(runs) == 1, runs
    return runs[0], runs[0].read()


def pf_of(trace):
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    pf = decode_pftrace(buf.getvalue())
    check_pftrace(pf)
    return pf


@pytest.fixture(scope="module")
def level1():
    src, trace = read(PT / "text/level1")
    return PT / "text/level1/rank0_ascend_pt" / OUT, src, trace


@pytest.fixture(scope="module")
def level2():
    src, trace = read(PT / "text/level2")
    return src, trace


def test_trace_view_events_once_exact(level1):
    out, src, trace = level1
    events = json.loads((out / "trace_view.json").read_text())
    xs = [e for e in events if e["ph"] == "X"]
    want = collections.Counter((e["name"], ns(e["ts"]), ns(e.get("dur", 0))) for e in xs)
    got = collections.Counter((s.name, s.ts, s.dur) for s in trace.slices if s.cat != "step")
    assert got == want
    assert len(trace.slices) == len(xs) + 1          # + the step slice
    c = sum(sum(1 for k in e["args"] if k != "acc_id") for e in events if e["ph"] == "C")
    assert sum(len(x) for x in trace.counters if
               " / Memory / " not in trace.path(x.track)) == c
    pairs = collections.defaultdict(lambda: [0, 0])
    for e in events:
        if e["ph"] in "sf":
            pairs[(e.get("cat"), str(e["id"]))][e["ph"] == "f"] += 1
    assert len(trace.flows) == sum(min(a, b) for a, b in pairs.values())
    pf = pf_of(trace)
    counts = pftrace_counts(pf)
    assert counts["begin"] == len(trace.slices)
    assert counts["counter"] == sum(len(x) for x in trace.counters)
    assert counts["instant"] == len(trace.instants)


def test_rank_group_host_and_device(level1):
    out, src, trace = level1
    assert src.root == out.parent and src.name == "rank0_ascend_pt"
    assert [trace.tracks[i].name for i in trace.children(None)] == ["Rank 0"]
    rank = trace.children(None)[0]
    assert [trace.tracks[i].name for i in trace.children(rank)] == ["Host", "Steps", "NPU 0"]
    python = [t for t in trace.tracks if t.name == "Python"]
    assert python and trace.path(python[0].index) == "Rank 0 / Host / Python"
    assert all(t.nesting for t in trace.tracks if t.kind == "lane"
               and "/ Host /" in trace.path(t.index))
    assert trace.meta.tool == "torch_npu"
    ranks = trace.meta.extra["torch_npu"]["ranks"]
    assert ranks["0"]["profiler_level"] == "Level1"
    assert ranks["0"]["aic_metrics"] == "ACL_AICORE_PIPE_UTILIZATION"


def test_kernel_details_rows_match_device_tasks(level1):
    out, src, trace = level1
    data = rows(out / "kernel_details.csv")
    stat = trace.meta.extra["msprof_sources"][str(out / "kernel_details.csv")]
    assert stat["rows"] == stat["matched"] == len(data) == 191
    by_row = {s.args["kernel_details_row"]: s for s in trace.slices
              if s.args and "kernel_details_row" in s.args}
    assert sorted(by_row) == list(range(len(data)))
    for r, row in enumerate(data):
        s = by_row[r]
        # HCCL rows: the CSV truncates the start to the ns below the JSON's
        assert abs(s.ts - ns(row["Start Time(us)"])) <= 1
        assert abs(s.dur - ns(row["Duration(us)"])) <= 1
        assert s.args["op_name"] == row["Name"]
        if row["Accelerator Core"] != "HCCL":
            assert s.ts == ns(row["Start Time(us)"])
            assert s.args["stream_id"] == int(row["Stream ID"])
            assert s.cat == row["Accelerator Core"]
    hccl = [by_row[r] for r, row in enumerate(data) if row["Accelerator Core"] == "HCCL"]
    assert {trace.tracks[s.track].name for s in hccl} == {"Group 0 Communication"}


def test_memory_files_as_counters(level1):
    out, src, trace = level1
    stats = trace.meta.extra["msprof_sources"]
    mem = rows(out / "memory_record.csv")
    metrics = [k for k in mem[0] if k.startswith("Total")]
    cells = sum(1 for r in mem for k in metrics if r[k] not in ("", "N/A"))
    assert stats[str(out / "memory_record.csv")]["samples"] == cells
    got = sum(len(c) for c in trace.counters if "/ memory_record /" in trace.path(c.track))
    assert got == cells
    # PTA writes two Stream Ptr values: one series each
    names = {trace.tracks[c.track].name for c in trace.counters
             if "/ memory_record /" in trace.path(c.track)}
    assert "PTA stream 897357296 Total Allocated" in names
    npu = rows(out / "npu_module_mem.csv")
    got = sum(len(c) for c in trace.counters if "/ npu_module_mem /" in trace.path(c.track))
    assert got == len(npu)
    for c in trace.counters:
        assert c.ts == sorted(c.ts)
    op = rows(out / "operator_memory.csv")
    assert len(trace.instants) == len(op)
    assert sorted(i.args["operator_memory_row"] for i in trace.instants) == list(range(len(op)))
    first = min(trace.instants, key=lambda i: i.args["operator_memory_row"])
    assert first.ts == ns(op[0]["Allocation Time(us)"]) and first.name == op[0]["Name"]
    samples = sum(1 for r in op for k in r if k.startswith(("Allocation Total", "Release Total"))
                  and r[k] and (k.startswith("Allocation") or r["Release Time(us)"].strip()))
    got = sum(len(c) for c in trace.counters if "/ operator_memory /" in trace.path(c.track))
    assert got == samples


def test_step_slice_on_profiler_step(level1):
    out, src, trace = level1
    (step,) = [s for s in trace.slices if s.cat == "step"]
    host = next(s for s in trace.slices if s.name == "ProfilerStep#50")
    assert (step.ts, step.dur) == (host.ts, host.dur) and step.name == "Step 50"
    row = rows(out / "step_trace_time.csv")[0]
    assert step.args["computing_us"] == float(row["Computing"])
    assert step.args["preparing_us"] == float(row["Preparing"])


def test_statistics_and_communication_in_metadata(level1):
    out, src, trace = level1
    st = trace.meta.extra["msprof_statistics"]
    for kind in ("op_statistic", "api_statistic", "l2_cache", "operator_details"):
        data = rows(out / f"{kind}.csv")
        assert len(st[kind]) == len(data), kind
        assert all(r["rank"] == 0 for r in st[kind])
    comm = json.loads((out / "communication.json").read_text())
    ops = [(step, kind, op) for step, v in comm.items() for kind, ops in v.items()
           for op in ops if op != "Total Op Info"]
    assert len(st["communication"]["ops"]) == len(ops)
    step, kind, op = ops[0]
    rec = next(r for r in st["communication"]["ops"] if r["op"] == op)
    info = comm[step][kind][op]["Communication Time Info"]
    assert rec["elapse_time_us"] == pytest.approx(info["Elapse Time(ms)"] * 1000)
    assert rec["wait_time_us"] == pytest.approx(info["Wait Time(ms)"] * 1000)
    assert rec["start_timestamp_us"] == info["Start Timestamp(us)"]
    hccs = comm[step][kind][op]["Communication Bandwidth Info"]["HCCS"]
    assert rec["bandwidth"]["HCCS"]["transit_time_us"] == pytest.approx(
        hccs["Transit Time(ms)"] * 1000)
    assert len(rec["bandwidth"]["HCCS"]["size_distribution"]) == len(hccs["Size Distribution"])
    matrix = json.loads((out / "communication_matrix.json").read_text())
    links = sum(len(links) for v in matrix.values() for ops in v.values()
                for links in ops.values())
    assert len(st["communication_matrix"]) == links


def test_two_ranks_one_trace(level2):
    src, trace = level2
    assert src.name == "level2" and src.root == PT / "text/level2"
    assert [trace.tracks[i].name for i in trace.children(None)] == ["Rank 0", "Rank 1"]
    total = 0
    for r in ("rank0", "rank1"):
        events = json.loads((PT / "text/level2" / f"{r}_ascend_pt" / OUT /
                             "trace_view.json").read_text())
        total += sum(1 for e in events if e["ph"] == "X")
    assert len(trace.slices) == total + 2               # + one step slice per rank
    steps = [s for s in trace.slices if s.cat == "step"]
    assert [trace.path(s.track) for s in steps] == ["Rank 0 / Steps", "Rank 1 / Steps"]
    # each rank's kernels matched in its own rank
    for r, rank in (("rank0", "Rank 0"), ("rank1", "Rank 1")):
        path = PT / "text/level2" / f"{r}_ascend_pt" / OUT / "kernel_details.csv"
        stat = trace.meta.extra["msprof_sources"][str(path)]
        assert stat["matched"] == stat["rows"] == 191
        ks = [s for s in trace.slices if "kernel_details_row" in (s.args or {})
              and trace.path(s.track).startswith(rank)]
        assert len(ks) == 191
    comm = trace.meta.extra["msprof_statistics"]["communication"]["ops"]
    assert {r["rank"] for r in comm} == {0, 1}
    lanes = lanes_in_display_order(pf_of(trace))
    assert lanes.count("Steps") == 2


def test_level0_kernel_details_only():
    src, trace = read(PT / "text/level0")
    out = PT / "text/level0/rank0_ascend_pt" / OUT
    data = rows(out / "kernel_details.csv")
    ks = [s for s in trace.slices if s.cat != "step"]
    assert len(ks) == len(data)
    assert collections.Counter((s.name, s.ts, s.dur) for s in ks) == collections.Counter(
        (r["Name"], ns(r["Start Time(us)"]), ns(r["Duration(us)"])) for r in data)
    assert {trace.tracks[s.track].name for s in ks} == {"Kernels"}     # no Stream ID column
    # Accelerator Core is N/A at Level0 except for the communication ops
    assert collections.Counter(s.cat for s in ks) == collections.Counter(
        "HCCL" if r["Accelerator Core"] == "HCCL" else "kernel" for r in data)
    (step,) = [s for s in trace.slices if s.cat == "step"]
    assert step.ts == min(s.ts for s in ks)
    assert step.ts + step.dur == max(s.ts + s.dur for s in ks)
    assert "kernels" in step.args["anchor"]
    assert len(trace.meta.extra["msprof_statistics"]["l2_cache"]) == len(
        rows(out / "l2_cache.csv"))


def test_old_two_rank_set_with_cluster_output():
    src, trace = read(OLD)
    assert src.name == "test_data"
    assert [trace.tracks[i].name for i in trace.children(None)] == ["Rank 0", "Rank 1"]
    total = 0
    for r in (0, 1):
        data = rows(OLD / f"test_rank_{r}" / OUT / "kernel_details.csv")
        total += len(data)
        ks = [s for s in trace.slices if s.cat != "step"
              and trace.path(s.track).startswith(f"Rank {r}")]
        assert len(ks) == len(data)
        assert collections.Counter(s.ts for s in ks) == collections.Counter(
            ns(x["Start Time(us)"]) for x in data)
        assert {trace.tracks[s.track].name for s in ks if s.cat == "HCCL"} == {"HCCL"}
    st = trace.meta.extra["msprof_statistics"]
    cluster = rows(OLD / "cluster_analysis_output/cluster_step_trace_time.csv")
    assert len(st["cluster_step_trace_time"]) == len(cluster)
    assert st["cluster_step_trace_time"][0]["computing_us"] == float(cluster[0]["Computing"])
    group = json.loads((OLD / "cluster_analysis_output/communication_group.json").read_text())
    assert st["communication_group"] == group
    cc = json.loads((OLD / "cluster_analysis_output/cluster_communication.json").read_text())
    n = sum(len(ranks) for g in cc.values() for step in g.values() for op, ranks in step.items())
    assert len(st["cluster_communication"]["ops"]) + \
        len(st["cluster_communication"]["totals"]) == n
    assert len(st["static_op_mem"]) == len(rows(OLD / "test_rank_1" / OUT / "static_op_mem.csv"))
    pf = pf_of(trace)
    assert pftrace_counts(pf)["begin"] == len(trace.slices)


def test_db_only_rank_appears_with_a_warning():
    """A rank holding only the SQLite export is the database reader's run
    (tests/test_ascend_db.py); read as torch-npu text it has no timeline and says so."""
    (src,) = find_runs(PT / "db")
    assert src.format == "msprof-db"
    (src,) = find_runs(PT / "db", "torch-npu")
    trace = src.read()
    assert len(trace.slices) == 0
    assert any("only the SQLite export" in w for w in trace.meta.warnings)
    ignored = trace.meta.extra["msprof_ignored_files"]
    assert {p.split("/")[-1] for p in ignored} == {"analysis.db", "ascend_pytorch_profiler_0.db"}
    assert trace.meta.extra["torch_npu"]["ranks"]["0"]["export_type"] == "db"


@pytest.mark.parametrize("folder", [
    "msprof-analyze/msprof_analyze/test/ut/advisor/compute_advice/data",
    "msprof-analyze/msprof_analyze/test/ut/advisor/advisor_backend/compute_advice",
    "msprof-analyze/msprof_analyze/test/resource",
])
def test_loose_kernel_details_files(folder):
    path = next(p for p in (MS / folder).iterdir() if p.suffix == ".csv")
    src, trace = read(MS / folder)
    data = rows(path)
    assert len(trace.slices) == len(data)
    assert collections.Counter((s.ts, s.dur) for s in trace.slices) == collections.Counter(
        (ns(r["Start Time(us)"]), ns(r["Duration(us)"])) for r in data)
    buf = io.BytesIO()
    write_chrome(trace, buf)
    doc = json.loads(buf.getvalue())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == len(data)


def test_loose_older_trace_view():
    folder = MS / "msprof-analyze/msprof_analyze/test/ut/advisor/timeline_advice"
    src, trace = read(folder)
    events = json.loads((folder / "trace_view.json").read_text())
    xs = [e for e in events if e["ph"] == "X"]
    assert collections.Counter((s.name, s.ts, s.dur) for s in trace.slices) == \
        collections.Counter((e["name"], ns(e["ts"]), ns(e["dur"])) for e in xs)
    assert [trace.tracks[i].name for i in trace.children(None)] == ["Host", "NPU"]
    pairs = collections.defaultdict(lambda: [0, 0])
    for e in events:
        if e["ph"] in "sf":
            pairs[(e.get("cat"), str(e["id"]))][e["ph"] == "f"] += 1
    assert len(trace.flows) == sum(min(a, b) for a, b in pairs.values())


def test_prof_tree_inside_a_rank_is_left_to_the_torch_run(tmp_path):
    """torch_npu keeps the msprof PROF_* tree it exported from inside the rank folder; the
    rank's text export already shows it, so it is not a second run (copies of real files)."""
    import shutil
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(PT / "text/level0/rank0_ascend_pt", rank)
    prof = next(MS.glob("cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1/"
                        "PROF_*"))
    shutil.copytree(prof / "mindstudio_profiler_output",
                    rank / prof.name / "mindstudio_profiler_output")
    (src,) = find_runs(tmp_path)
    assert src.variant == "torch-npu" and src.root == rank
    # beside a SQLite-only export the PROF tree is the only timeline: it is kept
    shutil.rmtree(rank / OUT)
    (rank / OUT).mkdir()
    shutil.copy(PT / "db/level0/rank0_ascend_pt" / OUT / "analysis.db", rank / OUT)
    variants = sorted(r.variant for r in find_runs(tmp_path))
    assert variants == ["msprof-app", "torch-npu"]


def test_runs_with_msprof_overlap_lanes_get_tracecvt_derived_tracks_once():
    """msprof's own overlap lanes (Computing, Free, ...) are marked derived (not raw work),
    but they are not tracecvt's analysis: bubble lanes, counters and the analysis group are
    still added, once."""
    from tracecvt.analyses.derived import GROUP_NAME
    from tracecvt.convert import add_derived_tracks
    (src,) = find_runs(MS / "msinsight/test/data/pytorch/text/level2/rank0_ascend_pt")
    trace = src.read()
    assert {"Computing", "Free"} <= {t.name for t in trace.tracks if t.derived}
    added = add_derived_tracks(trace)
    assert added["bubble_lanes"] > 0 and added["bubble_slices"] > 0
    # Every bubble-holding lane sits in a rank's own group, so the busy-lanes counters go
    # there, one per group, and no analysis group is needed (no task graph: no critical path).
    tracks = trace.tracks
    placed = sorted((trace.path(t.parent), t.name)
                    for t in tracks if t.derived and t.kind == COUNTER)
    assert [t.name for t in tracks if t.parent is None and t.derived] == []
    assert GROUP_NAME not in {t.name for t in tracks}
    assert placed == sorted((f"Rank {r} / NPU / {group}", f"busy lanes · {kind}") for r in (0, 1)
                            for group, kind in (("Ascend Hardware", "Stream"), ("HCCL", "Plane")))
    assert add_derived_tracks(trace) == {}
