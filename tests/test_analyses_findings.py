"""Ratings, time by label, Nsight Compute bounds, msprof op pipes, opportunities."""

from __future__ import annotations

import csv
import re

import pytest

from tracecvt.analyses import analyze
from tracecvt.analyses.ncu_bounds import classify
from tracecvt.analyses.ratings import level, rate
from tracecvt.convert import read
from tracecvt.model import GROUP, NO_BUBBLES, RunMeta, Trace
from tracecvt.readers.msprof.opprof import NOT_A_TIMELINE
from tracecvt.readers.ncu.layout import NO_IDLE_REASON

from conftest import FIXTURES, SAMPLES, pypto_run_dir


@pytest.mark.parametrize("key,value,expected", [
    ("lane_utilization", 98.5, "excellent"), ("lane_utilization", 98.0, "good"),
    ("lane_utilization", 91, "fair"), ("lane_utilization", 85, "poor"),
    ("lane_utilization", 80, "critical"),
    ("bubble_rate", 1.9, "excellent"), ("bubble_rate", 2.0, "good"),
    ("bubble_rate", 19.9, "poor"), ("bubble_rate", 20, "critical"),
    ("memory_efficiency", 71, "excellent"), ("memory_efficiency", 25, "poor"),
    ("control_overhead", 29, "excellent"), ("control_overhead", 75, "poor"),
    ("control_overhead", 85, "critical"),
])
def test_rating_levels(key, value, expected):
    assert level(key, value) == expected
    r = rate(key, value, "figure")
    assert r.level == expected and r.value_pct == value and 1 <= r.score <= 5


def test_ratings_show_figure_or_reason():
    (trace,) = read(pypto_run_dir("softmax_loop"))
    ratings = {r.key: r for r in analyze(trace).ratings}
    assert set(ratings) == {"lane_utilization", "bubble_rate", "memory_efficiency",
                            "control_overhead"}
    for key in ("lane_utilization", "bubble_rate", "control_overhead"):
        assert ratings[key].level is not None and ratings[key].figure
    mem = ratings["memory_efficiency"]
    assert mem.level is None and mem.value_pct is None and "no memory" in mem.reason


@pytest.mark.parametrize("where,fmt", [
    (lambda: pypto_run_dir("ffn_medium"), None),                     # merged_swimlane.json
    (lambda: pypto_run_dir("ffn_medium"), "pypto-raw"),              # swim + topo files
    (lambda: pypto_run_dir("ffn_over_threshold"), None),             # no merged file
    (lambda: FIXTURES / "pypto_raw" / "npu_small", "pypto-raw"),     # NPU raw
    (lambda: FIXTURES / "pypto_npu" / "synthetic_merged_with_aicpu", None)])
def test_pypto_reader_declares_its_label_args(where, fmt):
    for trace in read(where(), fmt):
        assert trace.meta.extra["label_args"] == {"semantic_label": "semanticLabel",
                                                  "leaf_function": "leafHash"}
        assert any(t.key == "leaf_function" for t in analyze(trace).labels)


def test_time_by_label_on_pypto():
    (trace,) = read(pypto_run_dir("ffn_medium"))
    a = analyze(trace)
    table = next(t for t in a.labels if t.key == "semantic_label")
    rows = {r.label: r for r in table.rows}
    assert set(rows) == {"gate_mm", "down_mm", "gelu", "(hub)"}
    for label, row in rows.items():
        durs = [s.dur for s in trace.slices if s.cat != "fake"
                and (s.shared_args or {}).get("semanticLabel", "") == ("" if label == "(hub)"
                                                                       else label)]
        assert row.count == len(durs) and row.total == sum(durs) and row.max == max(durs)
    d = table.to_dict()
    assert sum(r["share_pct"] for r in d["rows"]) == pytest.approx(100, abs=0.01)
    assert d["rows"][0]["mean_us"] == pytest.approx(d["rows"][0]["total_us"]
                                                    / d["rows"][0]["count"], abs=0.001)
    crit = sum(r.critical for r in table.rows)
    assert crit == a.critical_path.task_time


def labelled_trace(declared: dict | None, fmt: str = "other") -> Trace:
    """Two calls whose tasks share args naming their label "op" and function "fn"."""
    tr = Trace(RunMeta("labels", fmt))
    if declared is not None:
        tr.meta.extra["label_args"] = declared
    lane = tr.add_track("core 0", tr.add_track("device", None, GROUP), nesting=False)
    calls = [{"op": "matmul", "fn": 7, "semanticLabel": "decoy", "leafHash": 1,
              "inputs": [{"dtype": "FP16", "shape": [64, 128]}],
              "outputs": [{"dtype": "FP32", "shape": [64, 64]}]},
             {"op": "relu", "fn": 8, "semanticLabel": "decoy", "leafHash": 1}]
    ts = 0
    for call, durs in zip(calls, ([300, 500], [200])):
        for dur in durs:
            tr.add_slice(lane, ts, dur, f"task {ts}", "task", {"seq": ts}, call)
            ts += dur
    return tr


def test_label_tables_follow_the_args_the_reader_declared():
    """Tables, top-task labels and shapes come from meta.extra["label_args"], whatever the
    args are called (no PyPTO names in the analyses)."""
    a = analyze(labelled_trace({"semantic_label": "op", "leaf_function": "fn"}))
    tables = {t.key: t for t in a.labels}
    assert list(tables) == ["semantic_label", "leaf_function"]
    assert tables["semantic_label"].title == "semantic label"
    assert tables["leaf_function"].title == "leaf function"
    assert [(r.label, r.count, r.total) for r in tables["semantic_label"].rows] == \
        [("matmul", 2, 800), ("relu", 1, 200)]
    assert [(r.label, r.count) for r in tables["leaf_function"].rows] == [("7", 2), ("8", 1)]
    assert [t["label"] for t in a.top_tasks] == ["matmul", "matmul", "relu"]
    assert a.configuration["shapes"] == [
        {"label": "matmul", "inputs": ["FP16[64, 128]"], "outputs": ["FP32[64, 64]"]},
        {"label": "relu"}]
    # Any table key works; its title is the key's words.
    (t,) = analyze(labelled_trace({"function": "fn"})).labels
    assert (t.key, t.title, [r.label for r in t.rows]) == ("function", "function", ["7", "8"])


@pytest.mark.parametrize("kernels", [3, 300])
def test_a_kernel_table_only_where_kernel_names_repeat(kernels):
    """Kernels named once each (simpler names every task) label nothing the declared table
    does not: no kernel table, however many there are (a table shows 200 rows at most)."""
    from tracecvt.analyses.labels import time_by_label
    from tracecvt.model import KERNEL
    tr = Trace(RunMeta("kernels", "other"))
    tr.meta.extra["label_args"] = {"function": "fn"}
    lane = tr.add_track("core 0", tr.add_track("device", None, GROUP), nesting=False)
    calls = [{"fn": n % 2} for n in range(kernels)]
    for n in range(kernels):
        tr.add_slice(lane, 10 * n, 5, f"k{n}", KERNEL, None, calls[n])
    assert [t.key for t in time_by_label(tr)] == ["function"]
    tr.add_slice(lane, 10 * kernels, 5, "k0", KERNEL, None, calls[0])     # k0 twice
    assert [t.key for t in time_by_label(tr)] == ["function", "kernel"]


@pytest.mark.parametrize("declared", [None, {}, 5, ["semanticLabel"],
                                      {"semantic_label": 3, 4: "op", "": "op", "x": ""},
                                      {"kernel": "op", "name": "fn"}])
def test_undeclared_or_damaged_label_args_label_nothing(declared):
    """Args the reader did not declare are not labels, even with PyPTO's names; a damaged
    declaration (a model file) is ignored, and cannot take the kernel / name tables' keys."""
    a = analyze(labelled_trace(declared, fmt="pypto"))
    assert all(t.key == "name" for t in a.labels)
    assert [t["label"] for t in a.top_tasks] == ["", "", ""]
    assert "shapes" not in a.configuration


def ncu_trace(rules=True) -> Trace:
    tr = Trace(RunMeta("ncu-mem", "ncu", tool="Nsight Compute"))
    tr.meta.extra["ncu_serialized"] = True
    tr.meta.extra[NO_BUBBLES] = NO_IDLE_REASON            # as the NCU reader declares
    lane = tr.add_track("kernels", tr.add_track("GPU 0", None, GROUP), nesting=False)
    kernels = [
        ("copy_kernel", 4000, {"sm_throughput_pct": 20.0, "memory_throughput_pct": 88.0,
                               "dram_throughput_pct": 88.0, "achieved_occupancy_pct": 80.0,
                               "l2_hit_rate_pct": 40.0, "local_spill_requests": 0,
                               "waves_per_sm": 4.0}),
        ("gemm_kernel", 10000, {"sm_throughput_pct": 45.0, "tensor_throughput_pct": 91.0,
                                "memory_throughput_pct": 35.0, "dram_throughput_pct": 20.0,
                                "achieved_occupancy_pct": 30.0, "l2_hit_rate_pct": 90.0,
                                "local_spill_requests": 0, "waves_per_sm": 2.5}),
        ("tiny_kernel", 1000, {"sm_throughput_pct": 5.0, "memory_throughput_pct": 3.0,
                               "dram_throughput_pct": 1.0, "achieved_occupancy_pct": 10.0,
                               "l2_hit_rate_pct": 95.0, "local_spill_requests": 12,
                               "waves_per_sm": 0.1}),
    ]
    ts = 0
    for k, (name, dur, args) in enumerate(kernels):
        tr.add_slice(lane, ts, dur, name, "kernel",
                     {**args, "duration_ns": dur, "short_name": name, "rules": []})
        ts += dur
    if rules:
        tr.meta.extra["ncu_rules"] = [
            {"kernel_index": 2, "kernel": "tiny_kernel", "rule": "LaunchConfiguration",
             "message": "The grid is too small to fill the GPU.",
             "estimated_speedup_pct": 90.0, "speedup_type": "global"},
            {"kernel_index": 0, "kernel": "copy_kernel", "rule": "MemoryL2Compression",
             "message": "Uncoalesced accesses.", "estimated_speedup_pct": 30.0,
             "speedup_type": "local"},
            {"kernel_index": 1, "kernel": "gemm_kernel", "rule": "SOLBottleneck",
             "message": "Compute bound.", "estimated_speedup_pct": None,
             "speedup_type": None},
        ]
    return tr


def test_ncu_bounds_checks_and_advice():
    a = analyze(ncu_trace())
    ncu = a.ncu
    bounds = {k.name: k.bound for k in ncu.kernels}
    assert bounds == {"copy_kernel": "memory-bound", "gemm_kernel": "compute-bound",
                      "tiny_kernel": "latency-bound"}
    tiny = next(k for k in ncu.kernels if k.name == "tiny_kernel")
    failed = {c["check"] for c in tiny.failed}
    assert failed == {"compute throughput", "DRAM throughput", "achieved occupancy",
                      "local spilling", "waves per SM"}
    gemm = next(k for k in ncu.kernels if k.name == "gemm_kernel")
    assert {c["check"] for c in gemm.failed} == {"DRAM throughput"}
    assert [x["rule"] for x in ncu.advice] == ["LaunchConfiguration", "MemoryL2Compression",
                                               "SOLBottleneck"]
    assert ncu.advice[0]["estimated_gain_us"] == pytest.approx(0.9)
    assert ncu.advice[1]["estimated_gain_us"] == pytest.approx(1.2)
    # serialized timeline: no bubbles, and the summary says why
    assert not a.bubbles.computed and "end to end" in a.bubbles.reason
    mem = next(r for r in a.ratings if r.key == "memory_efficiency")
    assert mem.value_pct == pytest.approx((88 * 4000 + 20 * 10000 + 1 * 1000) / 15000, abs=1e-3)
    assert "compute-bound" in a.bottleneck["summary"]
    assert a.opportunities[0].title.startswith("copy_kernel")      # 1.2 µs > 0.9 µs
    d = a.to_dict()
    assert d["ncu"]["bounds"] == [{"bound": "memory-bound", "kernels": 1, "time_us": 4.0},
                                  {"bound": "compute-bound", "kernels": 1, "time_us": 10.0},
                                  {"bound": "latency-bound", "kernels": 1, "time_us": 1.0}]


def test_ncu_without_rules_uses_kernel_rule_lists_and_unknown_metrics():
    assert classify({}) == ("unknown", None, None)
    tr = ncu_trace(rules=False)
    tr.slices[0].args["rules"] = [{"rule": "X", "message": "m", "estimated_speedup_pct": 5}]
    a = analyze(tr)
    assert [x["rule"] for x in a.ncu.advice] == ["X"]
    assert a.ncu.advice[0]["kernel"] == "copy_kernel"


def test_ncu_rule_findings_repeated_over_launches_are_one_opportunity_each():
    """A kernel launched three times, NCU's rule making two findings for each launch (as its
    WorkloadImbalance does for SMs and L1 slices, their figures differing from launch to
    launch): one opportunity per finding, its gain the three launches' summed, its figure
    the largest speedup; a finding of one launch only stays as it was."""
    tr = Trace(RunMeta("ncu-rep", "ncu", tool="Nsight Compute"))
    tr.meta.extra["ncu_serialized"] = True
    tr.meta.extra[NO_BUBBLES] = NO_IDLE_REASON
    lane = tr.add_track("kernels", tr.add_track("GPU 0", None, GROUP), nesting=False)
    args = {"sm_throughput_pct": 5.0, "memory_throughput_pct": 3.0, "waves_per_sm": 0.5}
    rules = []
    for n, dur in enumerate((1000, 3000, 2000)):
        tr.add_slice(lane, 4000 * n, dur, "gemm", "kernel", {**args, "duration_ns": dur,
                                                              "short_name": "gemm"})
        for what, pct in (("SMs", 10.0 + n), ("L1 Slices", 5.0 + n)):
            rules.append({"kernel_index": n, "kernel": "gemm", "rule": "WorkloadImbalance",
                          "message": f"One or more {what} have {20 + n}.5% more cycles.",
                          "estimated_speedup_pct": pct, "speedup_type": "global"})
        # two findings of one rule alike but for their figures, and two for L1 and L2
        for units, pct in ((4, 3.0), (8, 2.0)):
            rules.append({"kernel_index": n, "kernel": "gemm", "rule": "CPIStall",
                          "message": f"{units} units stall {n + 1} cycles.",
                          "estimated_speedup_pct": pct, "speedup_type": "local"})
        for cache, pct in (("L1", 1.0), ("L2", 0.5)):
            rules.append({"kernel_index": n, "kernel": "gemm", "rule": "MemoryCacheHits",
                          "message": f"{cache} hit rate {40 + n} %.",
                          "estimated_speedup_pct": pct, "speedup_type": "local"})
    rules.append({"kernel_index": 2, "kernel": "gemm", "rule": "LaunchConfiguration",
                  "message": "The grid is too small.", "estimated_speedup_pct": 50.0,
                  "speedup_type": "global"})
    tr.meta.extra["ncu_rules"] = rules
    a = analyze(tr)
    assert len(a.ncu.advice) == 19          # the rule results as NCU gave them, each
    stalls = [o for o in a.opportunities if o.title == "gemm: CPIStall"]
    assert [(o.metric, o.gain_ns) for o in stalls] == [
        ("3 launches, NCU estimated speedup up to 3.0 %: 4 units stall 1 cycles.",
         pytest.approx(3.0 * 60)),
        ("3 launches, NCU estimated speedup up to 2.0 %: 8 units stall 1 cycles.",
         pytest.approx(2.0 * 60))]
    assert sorted(o.metric for o in a.opportunities if o.title == "gemm: MemoryCacheHits") == [
        "3 launches, NCU estimated speedup up to 0.5 %: L2 hit rate 40 %.",
        "3 launches, NCU estimated speedup up to 1.0 %: L1 hit rate 40 %."]
    a.opportunities = [o for o in a.opportunities if o.title not in (
        "gemm: CPIStall", "gemm: MemoryCacheHits")]
    opps = {o.title + " " + o.metric.split(": ", 1)[1]: o for o in a.opportunities}
    sms = opps["gemm: WorkloadImbalance One or more SMs have 22.5% more cycles."]
    assert sms.metric.startswith("3 launches, NCU estimated speedup up to 12.0 %")
    assert sms.gain_ns == pytest.approx(10.0 * 10 + 11.0 * 30 + 12.0 * 20)
    assert sms.how.endswith("summed over its launches")
    l1 = opps["gemm: WorkloadImbalance One or more L1 Slices have 22.5% more cycles."]
    assert l1.gain_ns == pytest.approx(5.0 * 10 + 6.0 * 30 + 7.0 * 20)
    launch = opps["gemm: LaunchConfiguration The grid is too small."]
    assert launch.metric == "NCU estimated speedup 50.0 %: The grid is too small."
    assert launch.gain_ns == pytest.approx(1000.0) and len(opps) == 3
    assert [o.title for o in a.opportunities][:1] == ["gemm: LaunchConfiguration"]


NCU_REPEATED = FIXTURES / "ncu_repeated_launches"


@pytest.mark.parametrize("name", ["triton_repeat_full.ncu-rep.xz",
                                  "triton_repeat_full_details.csv"])
def test_ncu_rule_findings_of_three_launches_are_one_opportunity_as_ncu_exports_them(name):
    """A real full-set report, three launches of each of two Triton kernels (README.md
    there), read from the report and from NCU's own CSV export of it: each finding (a
    kernel's rule, the n-th of that rule in a launch) is one opportunity, its gain NCU's
    estimated speedup × the launch's duration summed over the three launches, as the CSV
    export gives them."""
    if name.endswith(".ncu-rep.xz"):
        pytest.importorskip("ncu_report")
    rows = list(csv.DictReader((NCU_REPEATED / "triton_repeat_full_details.csv").open()))
    duration = {r["ID"]: float(r["Metric Value"]) for r in rows
                if r["Metric Name"] == "Duration" and r["Metric Unit"] == "us"}
    findings: dict[tuple, list] = {}
    nth: dict[tuple, int] = {}
    for r in rows:
        if r["Rule Name"]:
            at = (r["ID"], r["Rule Name"])
            nth[at] = nth.get(at, 0) + 1
            speedup = float(r["Estimated Speedup"]) if r["Estimated Speedup"] else None
            findings.setdefault((r["Kernel Name"], r["Rule Name"], nth[at]), []).append(
                (r["ID"], speedup))
    assert sum(map(len, findings.values())) == 69 and len(findings) == 23
    order = lambda t: (t[0], t[1] is None, t[1] or 0.0)     # noqa: E731
    expected = sorted((
        (f"{kernel}: {rule}", round(sum(s / 100 * duration[i] for i, s in found
                                        if s is not None), 2) if any(
            s is not None for _, s in found) else None)
        for (kernel, rule, _), found in findings.items()), key=order)
    (trace,) = read(NCU_REPEATED / name)
    a = analyze(trace)
    assert len(a.ncu.kernels) == 6 and len(a.ncu.advice) == 69
    opps = [o for o in a.opportunities if o.source == "ncu rules"]
    assert all(o.metric.startswith("3 launches, NCU estimated speedup ") for o in opps)
    got = sorted(((o.title, None if o.gain_ns is None else o.gain_ns / 1000) for o in opps),
                 key=order)
    assert [t for t, _ in got] == [t for t, _ in expected]
    for (_, g), (_, e) in zip(got, expected):
        assert (g is None) == (e is None) and (g is None or g == pytest.approx(e, abs=0.02))


NCU_MANY = SAMPLES / "ncu" / "h200-nvtx-many"


@pytest.mark.parametrize("name", ["many_nvtx.ncu-rep.xz", "many_nvtx_raw.csv"])
def test_ncu_failed_checks_rank_each_kernel_once_by_the_time_of_all_its_launches(name):
    """A report without NCU's rule results (many.py: 1,867 launches of five kernels): one
    opportunity per kernel name and bound class, the one whose launches take the most time
    in all first (not the first launched), with its launch count and share of the kernel
    time, its longest launch's figures, and a place covering every launch."""
    if name.endswith(".ncu-rep.xz"):
        pytest.importorskip("ncu_report")
    (trace,) = read(NCU_MANY / name)
    a = analyze(trace)
    assert not a.ncu.advice and len(a.ncu.kernels) == 1867
    launches: dict[tuple, list] = {}
    for k in a.ncu.kernels:
        if k.failed:
            launches.setdefault((k.name, k.bound), []).append(k)
    time = {key: sum(k.duration for k in ks) for key, ks in launches.items()}
    opps = [o for o in a.opportunities if o.source == "ncu checks"]
    assert [tuple(o.title.rsplit(": ", 1)) for o in opps] == sorted(time, key=lambda g: -time[g])
    assert len(opps) == len(launches) == 5
    total = sum(k.duration for k in a.ncu.kernels)
    slices = trace.slices
    for o in opps:
        ks = launches[tuple(o.title.rsplit(": ", 1))]
        longest = max(ks, key=lambda k: k.duration)
        share = f"{100 * time[tuple(o.title.rsplit(': ', 1))] / total:.1f} %"
        if len(ks) > 1:                     # (a kernel launched once: its checks alone)
            assert o.metric.startswith(f"{len(ks)} launches, ") and \
                f"= {share} of kernel time; the longest: " in o.metric, o.metric
        assert o.metric.endswith(f"{longest.failed[-1]['text']} (healthy "
                                 f"{longest.failed[-1]['threshold']})")
        assert (o.place.start, o.place.end) == (min(slices[k.index].ts for k in ks),
                                                max(slices[k.index].end for k in ks))
        assert o.place.select[0] == slices[longest.index].ts
    # the first is the heaviest kernel of the run, Kernel2 (534 launches, 47 % of the time)
    assert opps[0].title == "Kernel2: latency-bound" and len(launches[
        ("Kernel2", "latency-bound")]) == 534


def msprof_op_trace(block_dim=20, core_count=24) -> Trace:
    tr = Trace(RunMeta("op", "msprof", tool="msprof op"))
    tr.meta.extra[NO_BUBBLES] = NOT_A_TIMELINE            # as the msprof op reader declares
    blocks = []
    for k in range(block_dim):
        blocks.append({"block": f"cube{k}", "duration_us": 10.0 + k,
                       "pipes": {"cube": 0.3, "mte2": 0.8 if k % 4 else 0.2, "scalar": 0.1,
                                 "fixpipe": 0.05, "mte1": 0.4 if k % 4 == 0 else 0.1},
                       "pipe_time_us": {"scalar": 1.0}})
    tr.meta.extra["msprof_op"] = {
        "blocks": blocks, "block_dim": block_dim, "core_count": core_count,
        "op_name": "main_kernel",
        "roofline": [{"name": "GM", "bound": "memory bound", "ratio": 0.7}],
        "advice": ["Increase the tile size to cut MTE2 traffic."]}
    lane = tr.add_track("cube0", tr.add_track("blocks", None, GROUP))
    tr.add_slice(lane, 0, 10000, "block")
    return tr


def test_msprof_op_bound_pipes_fill_and_advice():
    a = analyze(msprof_op_trace())
    m = a.msprof_op
    assert m.bound_counts == {"mte2": 15, "mte1": 5} and m.dominant_bound == "mte2"
    assert m.blocks[0]["bound_pipe"] == "mte1" and m.blocks[1]["bound_pipe"] == "mte2"
    assert "20 of 24 cores" in m.fill_note
    assert m.advice == ["Increase the tile size to cut MTE2 traffic."]
    ctrl = next(r for r in a.ratings if r.key == "control_overhead")
    total = sum(10.0 + k for k in range(20))
    assert ctrl.value_pct == pytest.approx(100 * 20 / total, abs=1e-3)
    assert not a.bubbles.computed and "not a timeline" in a.bubbles.reason
    assert "mte2" in a.bottleneck["summary"] and "memory bound" in a.bottleneck["summary"]
    titles = [o.title for o in a.opportunities]
    assert titles[0] == "Fill every core: change the block count"
    assert a.opportunities[0].gain_ns == pytest.approx(29.0 * 1000 * (1 - 20 / 24))
    tail = analyze(msprof_op_trace(block_dim=30)).msprof_op
    assert "1.25 waves" in tail.fill_note


def test_msprof_op_damaged_numbers_are_no_value():
    """A NaN or infinite block count (a damaged OpBasicInfo.csv) is no value, not a crash."""
    for bad in (float("nan"), float("inf"), "nan", "1e999"):
        tr = msprof_op_trace()
        tr.meta.extra["msprof_op"]["block_dim"] = bad
        m = analyze(tr).msprof_op
        assert m.block_dim is None and m.fill_note is None


def test_pypto_opportunities_carry_metric_and_gain():
    (trace,) = read(pypto_run_dir("ffn_large"))
    a = analyze(trace)
    top = a.opportunities[:3]
    assert len(top) == 3
    gains = [o.gain_ns for o in top]
    assert gains == sorted(gains, reverse=True) and all(g > 0 for g in gains)
    assert top[0].gain_ns == a.critical_path.wait_time
    assert all(o.metric and o.how for o in top)
    s = a.bottleneck
    assert "critical path" in s["summary"] and "AIC lanes are saturated" in s["root_cause"]
    sentences = re.split(r"\.\s+", (s["summary"] + " " + s["root_cause"]).strip(" ."))
    assert len(sentences) == 2          # at most two sentences
