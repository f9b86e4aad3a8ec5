"""Host -> device dependencies whose device task starts before its launch (issue 23, item 8).

In real msprof and torch_npu runs a device task can start before the host call that launched
it: the two clocks differ.  Perfetto directs every flow from the slice that starts first
(Trace Processor's FlowTracker orders a flow's ends by their slices' starts), so such a
dependency cannot be drawn as it is.  The reader measures the skew per device (the largest
lead of a device task over its launching host call: the clocks differ by at least that
much), the warning and the summary say it as a figure, and the times stay as recorded.
"""

from __future__ import annotations

import bisect
import collections
import json
from decimal import Decimal

import pytest

import tracecvt
from tracecvt.readers import find_runs

from conftest import SAMPLES, SHARED
from tp_helper import rows, trace_processor

MS = SAMPLES / "msprof"
HELIX = SHARED / ("field-samples/msprof/helix-agenticcompiler/tests/fixtures/"
                  "ascend_npu_operator_profiler/msprof_real_output")
RUNS = {   # run folder -> its Chrome JSON, one device each
    "helix-field": (HELIX, "mindstudio_profiler_output/msprof_*.json"),
    "msinsight-level1": (MS / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
                         "ASCEND_PROFILER_OUTPUT/trace_view.json"),
    "msprof-analyze": (MS / "msprof-analyze/msprof_analyze/test/ut/advisor/timeline_advice",
                       "trace_view.json"),
}
DEVICE_SIDE = {"Ascend Hardware", "HCCL"}     # device tasks (the rest is host side)


def ns(v) -> int:
    return int(Decimal(str(v)) * 1000)


def _expected(path):
    """From the JSON alone: (largest lead in ns, tasks leading, host -> device pairs)."""
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    pname = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    xs = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            xs[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e.get("dur", 0))))
    for v in xs.values():
        v.sort()

    def innermost(key, t):      # the latest-starting slice containing t
        v = xs[key]
        for s, d in reversed(v[:bisect.bisect_right(v, (t, float("inf")))]):
            if s <= t <= s + d:
                return s
        return None

    ends = collections.defaultdict(lambda: ([], []))     # (cat, id) -> starts, finishes
    for e in events:
        if e.get("ph") in ("s", "f"):
            ends[(e.get("cat"), str(e["id"]))][e["ph"] == "f"].append(e)
    lead, n, pairs = 0, 0, 0
    for s, f in (p for starts, finishes in ends.values() for p in zip(starts, finishes)):
        if pname[s["pid"]] in DEVICE_SIDE or pname[f["pid"]] not in DEVICE_SIDE:
            continue
        host = innermost((s["pid"], s["tid"]), ns(s["ts"]))
        dev = innermost((f["pid"], f["tid"]), ns(f["ts"]))
        if host is None or dev is None:
            continue
        pairs += 1
        if dev < host:
            lead, n = max(lead, host - dev), n + 1
    return lead, n, pairs


@pytest.mark.parametrize("name", sorted(RUNS))
def test_clock_skew_measured_from_the_flows_per_device(name):
    run, pattern = RUNS[name]
    (path,) = run.glob(pattern)
    lead, n, pairs = _expected(path)
    assert n > 0
    (src,) = [s for s in find_runs(run) if s.variant in ("msprof-app", "torch-npu")]
    (entry,) = src.read().meta.extra["clock_skew"]
    assert entry["clock_skew_us"] == lead / 1000
    assert (entry["tasks_before_launch"], entry["dependencies"]) == (n, pairs)


def test_warning_and_summary_name_the_skew_and_perfetto_draws_the_rest(tmp_path):
    (run,) = tracecvt.read(HELIX)
    out = run.to_perfetto(tmp_path / "t.pftrace")
    (line,) = [w for w in run.warnings if "dependencies are not drawn" in w]
    assert "5 of 11 dependencies are not drawn" in line
    assert ("host and device clocks differ by at least 12.214 µs on NPU 0 (5 of 11 device "
            "tasks start before the host call that launched them)") in line
    assert "binding order" not in line
    summary = run.summary()
    (entry,) = summary["configuration"]["clock_skew"]
    assert entry == {"device": 0, "clock_skew_us": 12.214, "tasks_before_launch": 5,
                     "dependencies": 11}
    md = run.write_summary(tmp_path / "s.md").read_text()
    assert "| clock skew | host and device clocks differ by at least 12.214 µs on NPU 0" in md
    # every dependency whose successor starts after its predecessor is drawn, host -> device
    with trace_processor(out) as tp:
        flows = rows(tp, "select so.ts as a, si.ts as b, so.track_id as ta, si.track_id as tb "
                         "from flow f join slice so on so.id = f.slice_out "
                         "join slice si on si.id = f.slice_in")
    assert len(flows) == 11 - 5
    assert all(f["a"] <= f["b"] for f in flows)


def test_info_groups_the_writers_warnings_under_the_skew():
    """The .pftrace's and the Chrome JSON's "not drawn" warnings have one cause, the clock
    skew: `info` says so once, with both under it; a run whose reversed flows are not all
    explained by its skew keeps its warnings apart."""
    from conftest import cli
    r = cli("info", HELIX, "--json", "-q")
    assert r.exit_code == 0, r.output
    (rep,) = json.loads(r.stdout)
    drawn = [i for i, w in enumerate(rep["warnings"]) if "dependencies are not drawn" in w]
    assert len(drawn) == 2
    assert rep["causes"] == [{"cause": "host and device clocks differ by at least 12.214 µs on "
                              "NPU 0 (5 of 11 device tasks start before the host call that "
                              "launched them)", "warnings": drawn}]
    (run,) = tracecvt.read(HELIX)
    skew = run.trace.meta.extra["clock_skew"]
    skew[0] = {**skew[0], "tasks_before_launch": 4}     # one reversed flow left unexplained
    from tracecvt.writers.flows import not_drawn_lines
    assert not_drawn_lines(run.trace, "perfetto", "x")[1] is None


def test_the_skew_is_the_same_measured_over_columns():
    """``Layout._leads_by_columns`` (a large database's flows) gives ``_leads``' figures:
    host -> device flows on numbered and unnumbered devices, device -> host, host -> host,
    flows into a track outside both sides, leads and lags at random and ends that start
    together, a device with flows but none leading (no entry then) and one whose flows all
    go to the host (none), and a flow whose end is no slice (the loop's then)."""
    import random
    from tracecvt.model import Flow, RunMeta, Slice, Trace
    from tracecvt.readers.msprof.layout import Layout
    from tracecvt.slice_columns import columns_of
    rng = random.Random(7)
    trace = Trace(RunMeta("skew", "test"))
    layout = Layout(trace, rank=2)
    host = [layout.lane(layout.host(), f"Thread {k}") for k in range(3)]
    devices = {dev: [layout.lane(layout.group(layout.device(dev), "Ascend Hardware"),
                                 f"Stream {k}") for k in range(2)] for dev in (None, 0, 3, 5, 7)}
    outside = trace.add_track("elsewhere", None)
    lanes = host + [t for v in devices.values() for t in v] + [outside]
    for _ in range(5000):
        trace.slices.append(Slice(rng.choice(lanes), rng.randrange(10**9), rng.randrange(1000),
                                  "s", "c"))
    quiet = [i for i, s in enumerate(trace.slices) if s.track in devices[5]]
    for _ in range(6000):
        a, b = rng.randrange(len(trace.slices)), rng.randrange(len(trace.slices))
        if b in quiet and trace.slices[b].ts < trace.slices[a].ts:
            continue                    # device 5: launched, never before its launch
        if trace.slices[b].track in devices[7] and trace.slices[a].track in host:
            continue                    # device 7: only flows out of it
        trace.flows.append(Flow(a, b))
    n = len(trace.slices)
    for k in range(40):                 # ends that start together: no lead
        trace.slices.append(Slice(host[0], 10**9 + k, 5, "launch", "c"))
        trace.slices.append(Slice(devices[(None, 0)[k % 2]][0], 10**9 + k, 5, "task", "c"))
        trace.flows.append(Flow(n + 2 * k, n + 2 * k + 1))
    cols = columns_of(trace.slices)
    loop = layout._leads(trace.flows)
    assert set(loop) == {None, 0, 3, 5} and loop[5][1] == 0 and all(v[1] for k, v in
                                                                     loop.items() if k != 5)
    assert sum(trace.slices[f.src].ts == trace.slices[f.dst].ts and
               layout.place(trace.slices[f.dst].track)[0] == "device" and
               layout.place(trace.slices[f.src].track)[0] == "host" for f in trace.flows) > 5
    assert layout._leads_by_columns(trace.flows, cols) == loop
    assert layout._leads_by_columns(trace.flows + [Flow(0, len(trace.slices))], cols) is None
    both = []
    for given in (None, cols):
        trace.meta.extra.clear()
        layout.measure_clock_skew(trace.flows, given)
        both.append(trace.meta.extra["clock_skew"])
    assert both[0] == both[1] and [e["device"] for e in both[0]] == [0, 3, None]


def test_a_database_measures_its_skew_over_columns_as_one_at_a_time(monkeypatch):
    """The database reader measures over the slices' columns from ``COLUMNS_FROM`` flows:
    the same entries as one flow at a time, on torch_npu's database (36 tasks before their
    launch)."""
    from tracecvt.readers.ascend_db import read as db_read
    run = MS / "msinsight/test/data/pytorch/db/level0/rank0_ascend_pt"
    got = []
    for columns_from in (10**9, 1):
        monkeypatch.setattr(db_read, "COLUMNS_FROM", columns_from)
        (src,) = find_runs(run)
        got.append(src.read().meta.extra["clock_skew"])
    assert got[0] == got[1] and got[0][0]["tasks_before_launch"] == 36
