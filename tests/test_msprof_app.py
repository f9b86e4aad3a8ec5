"""App-level msprof (PROF_*/mindstudio_profiler_output): every event once, exact ns, flows,
counters, CSV rows matched to the JSON's tasks; both writers."""

from __future__ import annotations

import collections
import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

MS = SAMPLES / "msprof"
PROFS = sorted(MS.glob("cannbot-ascendc-vs-pypto/operators/*/reports/raw/*/PROF_*"))
BIG = MS / "bigorange1024-ascendc/docs/perf/round_003_pke_decrypt_1launch"


def ns(value) -> int:
    d = Decimal(value.strip()) if isinstance(value, str) else Decimal(repr(value))
    return int((d * 1000).to_integral_value(ROUND_HALF_UP))


def num(text: str):
    if text in ("N/A", "NA", ""):
        return None
    return int(text) if text.lstrip("-").isdigit() else float(text)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module", params=PROFS, ids=lambda p: p.parent.name)
def run(request):
    prof = request.param
    out = prof / "mindstudio_profiler_output"
    (src,) = find_runs(prof)
    trace = src.read()
    events = json.loads(next(out.glob("msprof_*.json")).read_text())
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    return prof, out, src, trace, events, decode_pftrace(buf.getvalue())


def test_found_as_one_app_run(run):
    prof, out, src, trace, events, pf = run
    assert src.variant == "msprof-app" and src.root == prof and src.name == prof.name
    assert trace.meta.tool == "msprof" and trace.meta.clock.name == "epoch-us"
    assert "platform_version 5" in trace.meta.device
    assert trace.meta.extra["core_count"] == 20


def test_every_json_event_once_with_exact_times(run):
    prof, out, src, trace, events, pf = run
    xs = [e for e in events if e["ph"] == "X"]
    want = collections.Counter((e["name"], ns(e["ts"]), ns(e.get("dur", 0))) for e in xs)
    got = collections.Counter((s.name, s.ts, s.dur) for s in trace.slices)
    assert len(trace.slices) == len(xs)
    assert got == want
    counts = pftrace_counts(pf)
    assert counts["begin"] == counts["end"] == len(xs)
    check_pftrace(pf)


def test_processes_mapped_by_name(run):
    prof, out, src, trace, events, pf = run
    pname = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    want = collections.Counter((pname[e["pid"]], tname[(e["pid"], e["tid"])])
                               for e in events if e["ph"] == "X")
    got = collections.Counter()
    for s in trace.slices:
        path = trace.path(s.track).split(" / ")
        got[(path[1], path[2])] += 1
    assert got == want
    roots = [trace.tracks[i].name for i in trace.children(None)]
    assert roots == ["Host", "NPU 0"]
    hw = [t for t in trace.tracks if t.name.startswith("Stream ")]
    assert hw and all(not t.nesting for t in hw)
    overlap = [t for t in trace.tracks if trace.tracks[t.parent or 0].name == "Overlap Analysis"]
    assert overlap and all(t.derived for t in overlap)


def test_flows_and_counters_counted(run):
    prof, out, src, trace, events, pf = run
    ends = collections.defaultdict(lambda: [0, 0])
    for e in events:
        if e["ph"] in "sf":
            ends[(e.get("cat"), str(e["id"]))][e["ph"] == "f"] += 1
    pairs = sum(min(a, b) for a, b in ends.values())
    assert len(trace.flows) == pairs
    unpaired = sum(abs(a - b) for a, b in ends.values())
    if unpaired:
        assert any(f"{unpaired} flow ends without a partner" in w for w in trace.meta.warnings)
    for f in trace.flows:       # CANN launch -> device task
        a, b = trace.slices[f.src], trace.slices[f.dst]
        assert trace.path(a.track).startswith("Host / CANN")
        assert trace.path(b.track).startswith("NPU 0 / Ascend Hardware")
    counters = sum(len(e["args"]) for e in events if e["ph"] == "C")
    assert sum(len(c) for c in trace.counters) == counters
    assert pftrace_counts(pf)["counter"] == counters


def test_csv_rows_matched_once(run):
    """task_time and op_summary hold the JSON's tasks again: each row enriches one slice."""
    prof, out, src, trace, events, pf = run
    sources = trace.meta.extra["msprof_sources"]
    assert trace.meta.extra["device_tasks_from"] == [next(out.glob("msprof_*.json")).name]
    for kind, start_col, dur_col in (("op_summary", "Task Start Time(us)", "Task Duration(us)"),
                                     ("task_time", "task_start(us)", "task_time(us)")):
        path = next(out.glob(f"{kind}_*.csv"))
        data = rows(path)
        stat = sources[str(path)]
        assert stat["rows"] == stat["matched"] == len(data) and stat["added"] == 0
        by_row = {s.args[f"{kind}_row"]: s for s in trace.slices
                  if s.args and f"{kind}_row" in s.args}
        assert sorted(by_row) == list(range(len(data)))
        for r, row in enumerate(data):
            s = by_row[r]
            assert s.ts == ns(row[start_col])
            # the JSON keeps more digits; the CSV's duration is an arg
            assert abs(s.dur - ns(row[dur_col])) <= 1
            assert path.name in s.args["also_in"]
            assert s.args["source"].startswith("msprof_")
            assert s.args["stream_id"] == int(row["Stream ID" if kind == "op_summary"
                                                  else "stream_id"])


def test_op_summary_columns_kept_as_args(run):
    prof, out, src, trace, events, pf = run
    path = next(out.glob("op_summary_*.csv"))
    data = rows(path)
    by_row = {s.args["op_summary_row"]: s for s in trace.slices
              if s.args and "op_summary_row" in s.args}
    for r, row in enumerate(data):
        a = by_row[r].args
        assert a["aic_total_cycles"] == num(row["aic_total_cycles"])
        assert a["aiv_total_cycles"] == num(row["aiv_total_cycles"])
        assert a["cube_utilization_pct"] == num(row["cube_utilization(%)"])
        assert a["start_time_us"] == row["Task Start Time(us)"].strip()
        assert a["block_dim"] == int(row["Block Num"])
        if row["aic_mac_ratio"] == "N/A":        # PMU not matched (PyPTO MIX_AIC kernels)
            assert "aic" not in (a.get("pipe_ratio") or {})
        else:
            assert a["pipe_ratio"]["aic"]["cube"] == float(row["aic_mac_ratio"])
            assert a["pipe_ratio"]["aiv"]["vector"] == float(row["aiv_vec_ratio"])
        assert a["model_id"] is None


def test_task_types_in_one_vocabulary(run):
    prof, out, src, trace, events, pf = run
    types = collections.Counter(e["args"]["Task Type"] for e in events
                                if e["ph"] == "X" and "Task Type" in e.get("args", {}))
    cats = collections.Counter(s.cat for s in trace.slices if (s.args or {}).get("task_type"))
    for t, n in types.items():
        cat = {"KERNEL_AICORE": "AI_CORE", "KERNEL_AIVEC": "AI_VECTOR_CORE",
               "KERNEL_MIX_AIC": "MIX_AIC", "KERNEL_AICPU": "AI_CPU"}.get(t, t)
        assert cats[cat] >= n


def test_api_statistic_rows_in_metadata(run):
    prof, out, src, trace, events, pf = run
    data = rows(next(out.glob("api_statistic_*.csv")))
    got = trace.meta.extra["msprof_statistics"]["api_statistic"]
    assert len(got) == len(data)
    assert [g["api_name"] for g in got] == [r["API Name"] for r in data]
    assert all(g["device_id"] == "host" for g in got)


def test_chrome_writer(run):
    prof, out, src, trace, events, pf = run
    buf = io.BytesIO()
    write_chrome(trace, buf)
    doc = json.loads(buf.getvalue())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(trace.slices)
    assert doc["metadata"]["clock"]["name"] == "epoch-us"


def test_csv_only_run_from_task_time_and_op_summary():
    runs = [r for r in find_runs(BIG) if r.variant == "msprof-app"]
    (src,) = runs
    trace = src.read()
    tt = rows(next(BIG.glob("task_time_*.csv")))
    assert len(trace.slices) == len(tt)
    got = collections.Counter((s.ts, s.dur) for s in trace.slices)
    assert got == collections.Counter((ns(r["task_start(us)"]), ns(r["task_time(us)"]))
                                      for r in tt)
    op = rows(next(BIG.glob("op_summary_*.csv")))[0]
    (k,) = [s for s in trace.slices if "op_summary_row" in (s.args or {})]
    assert k.ts == ns(op["Task Start Time(us)"]) and k.cat == "MIX_AIC"
    assert k.args["source"].startswith("task_time_")
    # the two files name the task differently: both names kept
    assert k.args["op_name"] == "d09_decrypt_fused_custom_0"
    assert k.args["op_name_op_summary"] == op["Op Name"] == "d09_decrypt_fused_custom"
    assert trace.meta.extra["device_tasks_from"] == [next(BIG.glob("task_time_*.csv")).name]
    names = {trace.tracks[s.track].name for s in trace.slices}
    assert names == {"Stream 46", "Stream 49"}
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    pf = decode_pftrace(buf.getvalue())
    check_pftrace(pf)
    assert pftrace_counts(pf)["begin"] == len(tt)


def test_single_file_op_summary():
    path = next(BIG.glob("op_summary_*.csv"))
    (src,) = find_runs(path)
    trace = src.read()
    assert src.variant == "msprof-app" and len(trace.slices) == 1


def test_step_trace_iterations(tmp_path):
    """No real msprof step_trace_*.csv exists (docs §4.5): header from the format reference,
    values invented, with the TAB after absolute timestamps."""
    (tmp_path / "step_trace_20260101000000.csv").write_text(
        "Device_id,Iteration ID,FP Start(us),BP End(us),Iteration End(us),Iteration Time(us),"
        "FP to BP Time(us),Iteration Refresh(us),Data Aug Bound(us),Model ID\n"
        "0,1,1784216647596110.805\t,1784216647596200.000\t,1784216647596300.001\t,190.001,"
        "89.195,100.001,N/A,4294967295\n")
    (src,) = find_runs(tmp_path)
    trace = src.read()
    (s,) = trace.slices
    assert (s.name, s.ts, s.dur) == ("Iteration 1", 1784216647596110000, 190001)
    assert trace.path(s.track) == "NPU 0 / Iterations"
    assert s.args["model_id"] is None and s.args["data_aug_bound_us"] is None
