""".ncu-rep -> model -> both writers, checked against the reports themselves (read with
ncu_report directly), the program that made them (many.py) and the CSV exports."""

from __future__ import annotations

import collections
import csv
import io
import json
import re
from decimal import Decimal

import pytest

from tracecvt.readers import find_runs
from tracecvt.readers.base import ReadOptions
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

ncu_report = pytest.importorskip("ncu_report")

NCU = SAMPLES / "ncu"
TRITON = NCU / "h200-triton-full" / "triton_full.ncu-rep"
MANY = NCU / "h200-nvtx-many" / "many_nvtx.ncu-rep.xz"
MANY_CSV = NCU / "h200-nvtx-many" / "many_nvtx_raw.csv"


def read(path, **kw):
    (src,) = find_runs(path)
    return src.read(ReadOptions(**kw))


def kernels(trace):
    return [s for s in trace.slices if s.cat == "kernel"]


@pytest.fixture(scope="module")
def triton():
    return read(TRITON)


@pytest.fixture(scope="module")
def many():
    return read(MANY)


# -- the full-set report ---------------------------------------------------------------------

def test_triton_kernels_match_ncu_report(triton):
    ctx = ncu_report.load_report(str(TRITON))
    rng = ctx.range_by_idx(0)
    ks = kernels(triton)
    assert len(ks) == rng.num_actions() == 2
    t = 0
    for i, s in enumerate(ks):
        a = rng.action_by_idx(i)
        get = lambda n: a.metric_by_name(n).value()  # noqa: E731
        assert s.name == a.name() == s.args["short_name"]
        assert s.ts == t and s.dur == int(get("gpu__time_duration.sum"))   # exact ns
        t += s.dur
        args = s.all_args
        assert args["duration_ns"] == s.dur
        assert args["grid"] == "({}, {}, {})".format(*(get(f"launch__grid_dim_{x}") for x in "xyz"))
        assert args["block"] == "({}, {}, {})".format(*(get(f"launch__block_dim_{x}")
                                                        for x in "xyz"))
        assert args["registers_per_thread"] == get("launch__registers_per_thread")
        assert args["shared_memory_bytes"] == (get("launch__shared_mem_per_block_static")
                                               + get("launch__shared_mem_per_block_dynamic"))
        for arg, metric in [
                ("sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                ("memory_throughput_pct",
                 "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
                ("dram_throughput_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
                ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
                ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct"),
                ("waves_per_sm", "launch__waves_per_multiprocessor"),
                ("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct"),
                ("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct"),
                ("sm_frequency_hz", "gpc__cycles_elapsed.avg.per_second"),
                ("dram_frequency_hz", "dram__cycles_elapsed.avg.per_second"),
                ("tensor_throughput_pct",
                 "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
                ("local_spill_requests", "derived__local_spilling_requests")]:
            assert args[arg] == pytest.approx(float(get(metric))), arg
        assert args["device"] == "NVIDIA H200" and args["device_id"] == 0
        assert args["compute_capability"] == "9.0"
    # the figures the format reference quotes for the two kernels
    a, b = (k.all_args for k in ks)
    assert (a["duration_ns"], b["duration_ns"]) == (7712, 9824)
    assert round(a["waves_per_sm"], 2) == 0.97 and round(b["waves_per_sm"], 2) == 1.94
    assert round(a["l2_hit_rate_pct"], 1) == 35.8 and (a["registers_per_thread"],
                                                       b["registers_per_thread"]) == (26, 23)


def test_triton_serialized_metadata(triton):
    m = triton.meta
    assert m.tool == "Nsight Compute" and m.format == "ncu"
    assert m.tool_version.startswith("2025.3.1")         # the producer, not the library
    assert m.extra["ncu_report_library_version"]
    assert m.device == "NVIDIA H200"
    assert m.extra["ncu_serialized"] is True and "Serialized timeline" in m.extra["timeline_note"]
    assert m.extra["ncu_kernels"] == 2 and m.extra["ncu_total_kernel_time_ns"] == 7712 + 9824
    assert m.clock.name == "ncu-serialized" and "synthetic" in m.clock.description
    assert m.warnings == []
    lanes = [t for t in triton.tracks if t.kind == "lane"]
    assert len(lanes) == 1 and lanes[0].nesting is False
    assert "Serialized timeline" in lanes[0].description


def test_triton_rules_match_details_page(triton):
    rows = list(csv.reader(open(NCU / "h200-triton-full" / "triton_full_details.csv",
                                newline="")))
    h = {n: i for i, n in enumerate(rows[0])}
    want = collections.defaultdict(list)
    for r in rows[1:]:
        if len(r) > h["Rule Name"] and r[h["Rule Name"]]:
            want[int(r[h["ID"]])].append(r)
    ks = kernels(triton)
    assert [len(k.args["rules"]) for k in ks] == [len(want[0]), len(want[1])] == [13, 14]
    for i, k in enumerate(ks):
        for got, r in zip(k.args["rules"], want[i]):      # same order: the report's sections
            assert got["rule"] == r[h["Rule Name"]]
            assert got["section"] == r[h["Section Name"]]
            assert got["type"] == r[h["Rule Type"]]
            assert got["message"] == r[h["Rule Description"]]
            assert (got["speedup_type"] or "") == r[h["Estimated Speedup Type"]]
            printed = r[h["Estimated Speedup"]]
            if printed:
                # about 4 significant digits in the CSV
                assert got["estimated_speedup_pct"] == pytest.approx(float(printed), rel=6e-4)
            else:
                assert got["estimated_speedup_pct"] is None
    meta = triton.meta.extra["ncu_rules"]
    assert len(meta) == 27
    assert {(e["kernel_index"], e["kernel"]) for e in meta} == {(0, "add_kernel"),
                                                                (1, "softmax_kernel")}
    opt = [e for e in meta if e["rule"] == "IssueSlotUtilization"]
    assert opt[0]["estimated_speedup_pct"] == pytest.approx(54.5711, abs=1e-3)
    assert opt[0]["speedup_type"] == "local"


def test_triton_pm_sampling_inside_kernel_span(triton):
    ctx = ncu_report.load_report(str(TRITON))
    rng = ctx.range_by_idx(0)
    ks = kernels(triton)
    counters = {triton.tracks[c.track].description.split(" (")[0]: c for c in triton.counters}
    by_metric = {}
    for c in triton.counters:
        d = triton.tracks[c.track].description
        m = re.search(r"([A-Z_]+\.TriageCompute\.\S+) \(", d)
        if m:
            by_metric[m.group(1)] = c
    assert len(by_metric) == 32 and counters
    interval = triton.meta.extra["ncu_pm_sampling_interval_ns"]
    assert interval == 1500
    for name in ("TPC.TriageCompute.sm__cycles_active.avg",
                 "FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed"):
        c = by_metric[name]
        samples = list(zip(c.ts, c.values))
        for i, k in enumerate(ks):
            a = rng.action_by_idx(i)
            tl = a.timelines()
            m = a.metric_by_name(name)
            al = tl.aligned_metric(m)
            ids = al.correlation_ids()
            expect = [(k.ts + ids.as_uint64(j), al.as_double(j))
                      for j in range(al.num_instances()) if ids.as_uint64(j) < k.dur]
            inside = [(t, v) for t, v in samples if k.ts <= t < k.end]
            assert inside == expect and len(inside) >= 5
            steps = {b[0] - a_[0] for a_, b in zip(inside, inside[1:])}
            assert steps and all(1400 <= s <= 1600 for s in steps), steps   # the real spacing
        # after the last sampled kernel the counter drops to 0 at its end, nothing later
        assert samples[-1] == (ks[-1].end, 0.0)
        assert all(ks[0].ts <= t <= ks[-1].end for t, _ in samples)


def test_boundary_counters(triton):
    names = {triton.tracks[c.track].name: c for c in triton.counters}
    for title, arg in (("SM throughput", "sm_throughput_pct"),
                       ("DRAM throughput", "dram_throughput_pct"),
                       ("Achieved occupancy", "achieved_occupancy_pct")):
        c = names[title]
        ks = kernels(triton)
        assert c.ts == [ks[0].ts, ks[1].ts, ks[1].end]
        assert c.values == [ks[0].args[arg], ks[1].args[arg], 0.0]
        assert triton.tracks[c.track].unit == "%"


# -- the 1,867-kernel NVTX report --------------------------------------------------------------

def csv_rows():
    rows = list(csv.reader(open(MANY_CSV, newline="")))
    return rows[0], rows[2:]


def csv_stack(cell):
    """The push/pop stack of the CSV's NVTX column, decoded independently of the reader."""
    return [e.split(":")[1] for e in re.findall(r'"([^"]*)"', cell)]


def test_many_all_kernels_in_order(many):
    header, rows = csv_rows()
    h = {n: i for i, n in enumerate(header)}
    ks = kernels(many)
    assert len(ks) == len(rows) == 1867 == many.meta.extra["ncu_kernels"]
    t = 0
    for s, row in zip(ks, rows):
        assert s.args["id"] == int(row[h["ID"]])
        us = Decimal(row[h["gpu__time_duration.sum"]])
        assert s.dur == int(us * 1000) and s.ts == t               # exact, end to end
        t = s.end
    assert sum(s.dur for s in ks) == 9431616      # 9,431.6 us, as the format reference says


def nvtx_tree(trace):
    """NVTX slices as a forest: (name, [children], kernels) from the lane's nesting."""
    (lane,) = [t.index for t in trace.tracks if t.kind == "lane" and t.name == "NVTX"]
    spans = sorted((s for s in trace.slices if s.track == lane), key=lambda s: (s.ts, -s.dur))
    roots, stack = [], []
    for s in spans:
        while stack and stack[-1][0].end <= s.ts:
            stack.pop()
        node = (s, [])
        if stack:
            assert s.end <= stack[-1][0].end, "NVTX ranges must nest"
            stack[-1][1].append(node)
        else:
            roots.append(node)
        stack.append(node)
    return roots


def test_many_nvtx_nesting_matches_program(many):
    roots = nvtx_tree(many)
    ks = kernels(many)
    assert [r[0].name for r in roots] == [f"step {i}" for i in range(134)]
    for i, (step, children) in enumerate(roots):
        names = [c[0].name for c in children]
        if i < 133:
            assert names == ["layer0", "layer1", "layer2", "layer3", "loss"]
            assert [c[0].args["kernels"] for c in children] == [3, 3, 3, 3, 2]
            assert step.args["kernels"] == 14
        else:                                     # the run was stopped inside step 133
            assert names == ["layer0", "layer1"]
            assert [c[0].args["kernels"] for c in children] == [3, 1]
        for c, _ in children:
            assert c.args["nvtx_path"] == f"{step.name}/{c.name}"
            inside = [k for k in ks if c.ts <= k.ts and k.end <= c.end]
            # a range spans exactly its kernels on the serialized timeline
            assert len(inside) == c.args["kernels"]
            assert inside[0].ts == c.ts and inside[-1].end == c.end
            assert all(k.args["nvtx_path"] == c.args["nvtx_path"] for k in inside)
    assert "nvtx_path" not in ks[0].args and ks[0].end <= roots[0][0].ts


def test_many_nvtx_matches_csv_columns(many):
    header, rows = csv_rows()
    col = next(i for i, n in enumerate(header) if n.startswith("thread Domain:Push/Pop"))
    ks = kernels(many)
    (lane,) = [t.index for t in many.tracks if t.kind == "lane" and t.name == "NVTX"]
    ranges = [s for s in many.slices if s.track == lane]
    starts = sorted((s.ts, s.end, s.name, s.args["nvtx_path"]) for s in ranges)
    import bisect
    for k, row in zip(ks, rows):
        want = csv_stack(row[col])
        assert k.args.get("nvtx_path", "") == "/".join(want)
        # the ranges enclosing the kernel on the NVTX lane, outermost first
        upto = bisect.bisect_right(starts, (k.ts, float("inf")))
        enclosing = sorted((s for s in starts[:upto] if s[1] >= k.end),
                           key=lambda s: (s[0], -s[1]))
        assert [s[2] for s in enclosing] == want


def test_many_partial_report_warning(many):
    (w,) = many.meta.warnings
    assert "cut short" in w and "'step 133'" in w and "at least 10 kernels" in w
    assert many.meta.extra["ncu_partial"] == {
        "range": "step 133", "previous_range": "step 132", "kernels_in_range": 4,
        "kernels_in_previous_range": 14, "missing_at_least": 10}
    nvtx_lane = next(t for t in many.tracks if t.name == "NVTX")
    assert nvtx_lane.nesting is True and "Serialized timeline" in nvtx_lane.description
    assert many.meta.extra["ncu_nvtx_ranges"] == 134 + 133 * 5 + 2


def test_many_counters_step_at_kernel_boundaries(many):
    ks = kernels(many)
    names = {many.tracks[c.track].name: c for c in many.counters}
    assert set(names) == {"SM throughput", "DRAM throughput"}   # no occupancy metric collected
    c = names["DRAM throughput"]
    assert c.ts == [k.ts for k in ks] + [ks[-1].end]
    assert c.values[:-1] == [k.args["dram_throughput_pct"] for k in ks]


# -- both writers --------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["triton", "many"])
def test_writers(which, request):
    trace = request.getfixturevalue(which)
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    pf = decode_pftrace(buf.getvalue())
    descriptors = check_pftrace(pf)
    counts = pftrace_counts(pf)
    stats = trace.stats()
    assert counts["begin"] == counts["end"] == stats["slices"]
    assert counts["counter"] == stats["counter_samples"]
    # Every track but the "PM sampling" group, whose first counter is its row (named
    # "PM sampling · <counter>", the others below it).
    pm = sum(t.name == "PM sampling" for t in trace.tracks)
    assert counts["tracks"] == len(descriptors) == stats["tracks"] - pm
    names = {d.name for d in descriptors.values()}
    assert "PM sampling" not in names
    assert sum(n.startswith("PM sampling · ") for n in names) == pm
    assert "context 1 · stream 7" in names and "GPU 0 · NVIDIA H200" in names
    buf = io.BytesIO()
    write_chrome(trace, buf)
    doc = json.loads(buf.getvalue())
    events = doc["traceEvents"]
    ph = collections.Counter(e["ph"] for e in events)
    assert ph["X"] + ph.get("B", 0) == stats["slices"]
    assert ph["C"] == stats["counter_samples"]
    assert doc["metadata"]["extra"]["ncu_serialized"] is True
    assert doc["metadata"]["tool"] == "Nsight Compute"


def test_all_metrics_keeps_every_metric():
    trace = read(TRITON, all_metrics=True)
    ctx = ncu_report.load_report(str(TRITON))
    a = ctx.range_by_idx(0).action_by_idx(0)
    with_value = [n for n in a.metric_names() if a.metric_by_name(n).has_value()]
    metrics = kernels(trace)[0].args["metrics"]
    assert sorted(metrics) == sorted(with_value) and len(metrics) > 2000
    assert metrics["gpu__time_duration.sum"] == 7712
    assert metrics["device__attribute_display_name"] == "NVIDIA H200"
    assert trace.meta.extra["ncu_metric_units"]["gpu__time_duration.sum"] == "ns"
    assert "metrics" not in kernels(read(TRITON))[0].args


# -- ncu_report runs in a child process: its native crashes become one-line errors -----------

def _cli_in_a_process(*args, path=()):
    """The CLI run as its own process (a native abort must not take pytest with it), with
    ``path`` put before the repository on PYTHONPATH."""
    import os
    import subprocess
    import sys
    from conftest import REPO
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, path), str(REPO)]))
    return subprocess.run([sys.executable, "-c", "from tracecvt.cli import main; main()",
                           *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120)


def test_report_survives_a_native_abort_in_ncu_report(tmp_path):
    """A fake ncu_report that aborts the way the real one does on a report with bytes deleted
    from its middle (protobuf's CHECK failure, SIGABRT): one line, exit code 2, no output."""
    fake = tmp_path / "fake" / "ncu_report"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os\n"
        "def load_report(path):\n"
        "    os.write(2, b'F0000 00:00:1.0 7 zero_copy_stream_impl_lite.cc:240] Check failed: "
        "count >= 0\\n')\n"
        "    os.abort()\n")
    out = tmp_path / "x.pftrace"
    p = _cli_in_a_process("to-perfetto", TRITON, "-o", out, path=[fake.parent])
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"tracecvt: error: {TRITON}: NVIDIA's ncu_report crashed")
    assert "SIGABRT" in lines[0] and "Check failed: count >= 0" in lines[0]
    assert "tracecvt bug" not in lines[0]
    assert not out.exists()


def test_report_with_a_range_copied_into_a_record_is_one_line_error(tmp_path):
    """A real case from fuzzing: 2,343 bytes of the report copied into its metric-names
    record make ncu_report abort (SIGABRT, exit 134 without the child process)."""
    data = TRITON.read_bytes()
    p = tmp_path / "dup.ncu-rep"
    p.write_bytes(data[:142198] + data[325081:327424] + data[142198:])
    out = tmp_path / "dup.pftrace"
    r = _cli_in_a_process("to-perfetto", p, "-o", out)
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    (line,) = r.stderr.strip().splitlines()          # the native lines do not leak
    assert line.startswith(f"tracecvt: error: {p}: NVIDIA's ncu_report crashed")
    assert "SIGABRT" in line and "Check failed" in line and "corrupt or truncated" in line
    assert not out.exists()


def test_metric_name_that_is_not_utf8_is_skipped_with_a_warning(tmp_path):
    """Found by fuzzing: one flipped byte in the report's table of metric names gives a name
    with a surrogate, which ncu_report's own metric_by_name then refuses (TypeError)."""
    from click.testing import CliRunner
    from tracecvt.cli import main
    data = bytearray(TRITON.read_bytes())
    key = b"lts__average_t_sector_hit_rate_srcunit_tex_realtime.pct"
    data[data.index(key) + key.index(b"it_tex")] = 0x92
    p = tmp_path / "flip.ncu-rep"
    p.write_bytes(bytes(data))
    for extra in ([], ["--all-metrics"]):
        r = CliRunner().invoke(main, ["to-perfetto", str(p), "-o", str(tmp_path / "f.pftrace"),
                                      "-q", "--force", *extra])
        assert r.exit_code == 0, r.output
        assert "tracecvt bug" not in r.output
        assert "metric names are not valid UTF-8" in r.output


def test_isolated_call_results_progress_and_errors():
    import os
    from tracecvt.errors import InputError
    from tracecvt.readers.ncu import isolate
    seen = []
    opts = ReadOptions(progress=lambda *a: seen.append(a))

    def work(options, n):
        for i in range(n):
            options.report("stage", i, n)
        return {"pid": os.getpid(), "values": list(range(n))}

    got = isolate.call(work, "f.ncu-rep", opts, 3)
    assert got["values"] == [0, 1, 2] and got["pid"] != os.getpid()
    assert seen == [("stage", 0, 3), ("stage", 1, 3), ("stage", 2, 3)]

    def bad_input(options):
        raise InputError("f.ncu-rep", "no results")
    with pytest.raises(InputError, match="no results"):
        isolate.call(bad_input, "f.ncu-rep", opts)

    def bug(options):
        return {}["missing"]
    with pytest.raises(isolate.ChildError, match="KeyError"):
        isolate.call(bug, "f.ncu-rep", opts)

    def crash(options):
        os.write(2, b"something native went wrong\n")
        os.abort()
    with pytest.raises(InputError) as e:
        isolate.call(crash, "f.ncu-rep", opts)
    assert e.value.path == "f.ncu-rep" and "SIGABRT" in e.value.message
    assert "something native went wrong" in e.value.message
