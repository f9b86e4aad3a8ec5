"""Every finding of the summary says where it is in the trace: per format family, its
interval (trace time: ns from the trace's time 0, and on the source clock) lies inside the
written .pftrace as Perfetto's trace_processor v58.2 reads it, and covers the slice it
names, which is in that trace at exactly that time, with that duration, on one of the
finding's lanes."""

from __future__ import annotations

import json

import jsonschema
import pytest

import tracecvt
from tracecvt.analyses.places import findings

from conftest import FIXTURES, REPO, SAMPLES
from tp_helper import rows, trace_processor

MS = SAMPLES / "msprof"
SCHEMA = json.loads((REPO / "docs" / "summary.schema.json").read_text())
AT = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/at"})

# One run per family: (name, path, --from format or None).
RUNS = [
    ("pypto_merged", SAMPLES / "pypto" / "tiny_add", None),
    ("pypto_raw", SAMPLES / "pypto" / "matmul_add", "pypto-raw"),
    ("pypto_aicpu", FIXTURES / "pypto_npu" / "synthetic_from_format_doc", None),
    ("chip_swimlanes", SAMPLES / "simpler" / "a2a3sim_tmr_vector_example_L4", None),
    ("msprof_app", next(iter(sorted(MS.glob(
        "cannbot-ascendc-vs-pypto/operators/add/reports/raw/pypto_b1/PROF_*"))), None), None),
    ("torch_npu", MS / "msinsight/test/data/pytorch/text/level2/rank0_ascend_pt", None),
    ("msprof_op", next(iter(sorted(MS.glob(
        "tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/OPPROF_*"))),
        None), None),
    ("msprof_sim", next(iter(sorted(MS.glob(
        "tile-ai-tilelang-ascend/examples/cann-bench/foreach_norm/output/OPPROF_*"))), None),
     None),
    ("ncu_report", SAMPLES / "ncu" / "h200-triton-full" / "triton_full.ncu-rep", None),
    ("ncu_csv", SAMPLES / "ncu" / "h200-triton-full" / "triton_full_details.csv", None),
]


def _kinds(data) -> set[str]:
    """Which kinds of finding the summary has (each must carry a place)."""
    out = set()
    if data["opportunities"]:
        out.add("opportunity")
    if (data["critical_path"] or {}).get("computed"):
        out.add("critical path")
    if (data["bubbles"] or {}).get("largest"):
        out.add("bubble")
    if (data.get("ncu") or {}).get("kernels"):
        out.add("kernel")
    return out


@pytest.mark.parametrize("name,path,fmt", RUNS, ids=[r[0] for r in RUNS])
def test_every_finding_lies_in_the_trace_and_covers_its_slice(name, path, fmt, tmp_path):
    assert path is not None and path.exists(), f"sample for {name} missing"
    (run,) = tracecvt.read(path, fmt=fmt) if fmt else tracecvt.read(path)
    out = run.to_perfetto(tmp_path / "t.pftrace", force=True)
    data = run.summary()
    origin = run.trace.time_start()
    found = findings(data)
    assert found, f"{name}: no finding has a place"
    # every finding of every kind has one, numbered 1..n in order
    assert [at["finding"] for _, at in found] == list(range(1, len(found) + 1))
    everything = [o for key in ("opportunities", "more_opportunities") for o in data[key]]
    everything += [data["critical_path"]] if data["critical_path"].get("computed") else []
    everything += data["critical_path"].get("longest_segments") or []
    everything += data["bubbles"].get("largest") or []
    everything += (data.get("ncu") or {}).get("kernels") or []
    assert all(x.get("at") for x in everything), \
        [x.get("title") or x.get("name") for x in everything if not x.get("at")]
    assert len(everything) == len(found)
    assert _kinds(data), name
    lane_paths = {run.trace.path(t.index) for t in run.trace.tracks}
    with trace_processor(out) as tp:
        (bounds,) = rows(tp, "select start_ts, end_ts from trace_bounds")
        for what, at in found:
            where = f"{name} #{at['finding']} {what}"
            AT.validate(at)
            assert bounds["start_ts"] <= at["start_ns"] <= at["end_ns"] <= bounds["end_ts"], \
                (where, at, bounds)
            # the same interval on the source clock: shifted by the trace's time 0 exactly
            assert at["clock"] == run.trace.meta.clock.name
            assert at["clock_start_ns"] - at["start_ns"] == origin, where
            assert at["clock_end_ns"] - at["end_ns"] == origin, where
            assert at["lanes"] and set(at["lanes"]) <= lane_paths, (where, at["lanes"])
            sl = at["slice"]
            assert sl is not None, where
            assert at["start_ns"] <= sl["ts_ns"] <= sl["ts_ns"] + sl["dur_ns"] <= \
                at["end_ns"], (where, at)
            assert any(p.rsplit(" / ", 1)[-1] == sl["lane"] for p in at["lanes"]), where
            got = rows(tp, f"select count(*) as n from slice where ts = {sl['ts_ns']} "
                           f"and dur = {sl['dur_ns']} and name = '{sl['name']}'")
            assert got[0]["n"] >= 1, (where, sl)
            p = at["perfetto"]
            # the link marks the slice: a note at its start, named for it and its lane
            notes = [c["args"] for c in p.get("startup_commands", [])
                     if c["id"] == "dev.perfetto.AddNoteAtTimestamp"]
            assert notes == [[str(sl["ts_ns"]), f"{sl['name']} on {sl['lane']}"]], where
            # the window the link shows: the interval, given shrunk by a tenth each side
            # (the UI pads it back)
            span = at["end_ns"] - at["start_ns"]
            if span >= 10:
                pad = -(-span // 10)
                assert (p["vis_start_ns"], p["vis_end_ns"]) == \
                    (at["start_ns"] + pad, at["end_ns"] - pad), where
            else:
                assert (p["vis_start_ns"], p["vis_end_ns"]) == (at["start_ns"], at["end_ns"])


def test_ncu_kernel_rows_are_the_kernels_slices(tmp_path):
    """Each NCU kernel row's place is that kernel's launch: laid end to end, one after
    another, as the trace draws them."""
    (run,) = tracecvt.read(SAMPLES / "ncu" / "h200-triton-full" / "triton_full.ncu-rep")
    data = run.summary()
    kernels = data["ncu"]["kernels"]
    assert [k["at"]["slice"]["name"] for k in kernels] == ["add_kernel", "softmax_kernel"]
    assert [(k["at"]["start_ns"], k["at"]["end_ns"]) for k in kernels] == \
        [(0, 7712), (7712, 17536)]


def test_critical_path_place_is_the_run_marking_its_longest_segment(tmp_path):
    """tiny_add: the critical path runs 1901..12160 ns on PyPTO's clock, 0..10259 ns in
    the trace.  Its longest segment is its first wait (5.024 µs, drawn as "wait schedule"
    on AIV_34 from trace time 1 ns): the link shows the whole path (visStart/visEnd shrunk
    by a tenth, 1026 ns, each side, which the UI pads back) and notes that wait.  The first
    opportunity (the path's waits, the run's interval) marks the same wait."""
    (run,) = tracecvt.read(SAMPLES / "pypto" / "tiny_add")
    cp = run.summary()["critical_path"]
    at = cp["at"]
    assert (at["start_ns"], at["end_ns"], at["clock_start_ns"], at["clock_end_ns"]) == \
        (0, 10259, 1901, 12160)
    wait = {"name": "wait schedule", "lane": "AIV_34", "ts_ns": 1, "dur_ns": 5024}
    assert at["slice"] == wait
    assert (at["perfetto"]["vis_start_ns"], at["perfetto"]["vis_end_ns"]) == (1026, 9233)
    assert at["perfetto"]["startup_commands"][-1] == {
        "id": "dev.perfetto.AddNoteAtTimestamp", "args": ["1", "wait schedule on AIV_34"]}
    first = cp["longest_segments"][0]["at"]
    assert (first["start_ns"], first["end_ns"]) == (1, 5025)
    opp = run.summary()["opportunities"][0]["at"]
    assert (opp["start_ns"], opp["end_ns"]) == (0, 10259)
    assert opp["slice"] == wait
    assert (opp["perfetto"]["vis_start_ns"], opp["perfetto"]["vis_end_ns"]) == (1026, 9233)
