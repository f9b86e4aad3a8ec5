"""A Chrome-JSON swimlane is read as the tool that wrote it, by content: PyPTO 0.2's
draw_swim_lane.py ("Machine View"), the simpler runtime's swimlane_converter in its older layout
("AICore View", "AICPU View", "AICPU Scheduler", "AICPU Orchestrator"; a real file made with
that converter, tests/fixtures/simpler_converter_older_layout_alone/README.md) and in its
current one ("Worker View": every sample's merged_swimlane.json).  A converter output handed
over alone is read as drawn (every slice, every flow, bound on its own thread); beside its
records it stays a companion of the records run."""

from __future__ import annotations

import collections
import gzip
import json
import shutil
from pathlib import Path

import pytest

from tracecvt.readers import find_runs

from conftest import FIXTURES, cli, pypto_sim_dir
from test_simpler import IDS, RUNS, SIMPLER

OLDER = FIXTURES / "simpler_converter_older_layout_alone" / "merged_swimlane.json"
FULL = ("chip_swimlane_records.json (with deps.json and name_map*.json beside it) gives the "
        "full analysis")


def events(path: Path) -> list[dict]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)["traceEvents"]


def alone(src: Path, tmp_path: Path) -> Path:
    """The converter output copied into a folder of its own (no records beside it)."""
    d = tmp_path / "drawing"
    d.mkdir()
    dst = d / src.name
    shutil.copyfile(src, dst)
    return dst


def current_outputs() -> list[Path]:
    return [next(r.glob("merged_swimlane.json*")) for r in RUNS]


def check_flows_bound_on_their_threads(path: Path, trace) -> None:
    """Every flow of the file is one flow of the model, each end bound to a slice of its own
    thread (process group and thread lane as the file names them) that contains its time."""
    evs = events(path)
    procs = {e["pid"]: e["args"]["name"] for e in evs if e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
               if e.get("name") == "thread_name"}
    ends = {}
    for e in evs:
        if e["ph"] in "sf":
            ends.setdefault(e["id"], {})[e["ph"]] = e
    assert len(trace.flows) == len(ends)
    got = collections.Counter()
    for f in trace.flows:
        src, dst = trace.slices[f.src], trace.slices[f.dst]
        for s, ph in ((src, "s"), (dst, "f")):
            lane = trace.tracks[s.track]
            got[(ph, f.name, lane.name, trace.tracks[lane.parent].name)] += 1
    want = collections.Counter()
    for pair in ends.values():
        for ph, e in pair.items():
            want[(ph, e["name"], threads[(e["pid"], e["tid"])], procs[e["pid"]])] += 1
    assert got == want
    # The model's flows come in the order of the file's f events; each end's time lies in the
    # slice it is bound to.
    order = sorted(ends.values(), key=lambda pair: evs.index(pair["f"]))
    for f, pair in zip(trace.flows, order):
        for i, e in ((f.src, pair["s"]), (f.dst, pair["f"])):
            s = trace.slices[i]
            assert s.ts <= round(e["ts"] * 1000) <= s.ts + s.dur


@pytest.mark.parametrize("which", ["pypto 0.2", "simpler older", "simpler current"])
def test_the_tool_that_wrote_a_chrome_swimlane_is_read_from_its_content(which, tmp_path):
    if which == "pypto 0.2":
        path = alone(pypto_sim_dir("tiny_add") / "merged_swimlane.json", tmp_path)
    elif which == "simpler older":
        path = alone(OLDER, tmp_path)
    else:
        path = alone(current_outputs()[0], tmp_path)
    for found in (find_runs(path), find_runs(path.parent)):
        (src,) = found
        trace = src.read()
        if which == "pypto 0.2":
            assert (src.format, trace.meta.tool) == ("pypto", "PyPTO")
            assert "PyPTO simulation" in trace.meta.device
        else:
            assert (src.format, src.variant) == ("simpler", "converter-output")
            assert trace.meta.tool == "simpler (PyPTO 3.0) swimlane_converter"
            layout = "older layout" if which == "simpler older" else "current layout"
            assert layout in trace.meta.tool_version
    r = cli("info", path)
    assert r.exit_code == 0, r.output
    tool_line = next(x for x in r.output.splitlines() if x.strip().startswith("tool:"))
    assert ("swimlane_converter" in tool_line) == (which != "pypto 0.2")
    assert ("PyPTO simulation" in tool_line) == (which == "pypto 0.2")


def test_older_layout_alone_gives_every_slice_and_all_128_flows(tmp_path):
    path = alone(OLDER, tmp_path)
    (src,) = find_runs(path)
    trace = src.read()
    phases = collections.Counter(e["ph"] for e in events(path))
    assert (phases["X"], phases["s"], phases["f"]) == (127, 128, 128)
    assert len(trace.slices) == 127 and len(trace.flows) == 128
    assert not any("flow" in w and "dropped" in w for w in trace.meta.warnings)
    assert trace.meta.extra["simpler_converter"]["flows_dropped"] == 0
    assert [trace.tracks[i].name for i in trace.children(trace.roots[0])] == [
        "AICPU Orchestrator", "AICPU Scheduler", "AICPU View", "AICore View"]
    assert collections.Counter(f.name for f in trace.flows) == {
        "dispatch": 72, "submit→dispatch": 36, "complete": 20}
    # Exact times: the converter's microseconds to the ns.
    first = next(e for e in events(path) if e["ph"] == "X")
    s = trace.slices[0]
    assert (s.ts, s.dur, s.name) == (round(first["ts"] * 1000),
                                     round((first["ts"] + first["dur"]) * 1000)
                                     - round(first["ts"] * 1000), first["name"])
    assert trace.meta.extra["tasks"] == 20          # MIX: 36 AICore rows of 20 tasks
    check_flows_bound_on_their_threads(path, trace)


@pytest.mark.parametrize("merged", current_outputs(), ids=IDS)
def test_current_layout_alone_gives_every_slice_and_flow(merged, tmp_path):
    path = alone(merged, tmp_path)
    (src,) = find_runs(path)
    trace = src.read()
    phases = collections.Counter(e["ph"] for e in events(path))
    assert len(trace.slices) == phases["X"]
    assert len(trace.flows) == phases["s"] == phases["f"]
    assert trace.meta.extra["simpler_converter"]["flows_dropped"] == 0
    assert sum(len(c) for c in trace.counters) == sum(
        sum(1 for v in e["args"].values() if isinstance(v, (int, float)))
        for e in events(path) if e["ph"] == "C")
    check_flows_bound_on_their_threads(path, trace)


def test_an_f_without_bp_e_binds_to_the_next_slice_and_an_unbound_end_is_reported(tmp_path):
    evs = events(OLDER)
    flows = [e for e in evs if e["ph"] in "sf"]
    # The first flow's f loses bp "e" and moves 1 us before its slice: Chrome binds it to the
    # next slice on the thread, the same one.  The second flow's s moves off every slice.
    f0 = next(e for e in flows if e["ph"] == "f")
    del f0["bp"]
    f0["ts"] -= 1
    s1 = [e for e in flows if e["ph"] == "s"][1]
    s1["ts"] = 10**7
    path = tmp_path / "merged_swimlane.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    trace = find_runs(path)[0].read()
    base = find_runs(alone(OLDER, tmp_path))[0].read()
    pairs = collections.Counter((f.src, f.dst, f.name) for f in trace.flows)
    want = collections.Counter((f.src, f.dst, f.name) for f in base.flows)
    lost = want - pairs
    assert len(trace.flows) == 127 and sum(lost.values()) == 1 and not pairs - want
    ((_, _, name),) = lost
    assert name == s1["name"]
    (w,) = [w for w in trace.meta.warnings if "dropped" in w]
    assert "1 of 128 flows have an end outside every slice of its thread" in w
    assert str(path) in w


def test_the_summary_says_the_records_give_the_full_analysis(tmp_path):
    path = alone(OLDER, tmp_path)
    r = cli("summary", path, "-o", f"{tmp_path}/out/")
    assert r.exit_code == 0, r.output
    md = next((tmp_path / "out").glob("*.md")).read_text()
    assert f"No bubble figures: a drawing by simpler's swimlane_converter, not its records: " \
           f"{FULL}." in md
    assert "swimlane_converter (older layout" in md
    r = cli("summary", path, "-o", tmp_path / "s.json", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads((tmp_path / "s.json").read_text())
    assert FULL in d["bubbles"]["reason"]


def test_a_drawing_beside_its_records_is_a_companion_of_the_records_run(tmp_path):
    """In a folder, or anywhere in a tree that holds the records it draws, the converter
    output is no run of its own: the samples folder stays fifteen records runs although its
    reference/ folders hold 31 converter outputs (CPM_*.json, an --overhead one) without
    records beside them."""
    drawings = list(SIMPLER.glob("*/reference/**/*.json*"))
    assert len(drawings) == 31
    runs = find_runs(SIMPLER)
    assert len(runs) == 15 and all("records" in r.files for r in runs)
    ref = next(SIMPLER.glob("*/reference/*/critical_path"))
    assert [r.variant for r in find_runs(ref)] == ["converter-output"] * 2


def test_each_drawing_is_listed_not_used_by_the_records_run_it_draws_with_the_reason():
    """A sample of two cases: each case's merged_swimlane.json (beside its records) and its
    reference/<case>/critical_path/CPM_*.json.gz are its own run's files not used, never the
    other case's, and `info` says why."""
    sample = SIMPLER / "a2a3sim_tmr_predicated_dispatch_L4"
    r = cli("info", sample, "--json", "-q")
    assert r.exit_code == 0, r.output
    reports = json.loads(r.stdout)
    assert len(reports) == 2
    for rep in reports:
        case = rep["run"]
        got = sorted(Path(u["path"]).relative_to(sample).as_posix() for u in rep["not_used"])
        assert got == [f"outputs/{case}/merged_swimlane.json",
                       f"reference/{case}/critical_path/CPM_observed.json.gz",
                       f"reference/{case}/critical_path/CPM_static.json.gz"]
        reasons = sorted(u["reason"] for u in rep["not_used"])
        assert reasons[0].startswith("a drawing of this run's records by simpler's "
                                     "swimlane_converter (in their folder)")
        assert reasons[1] == reasons[2] == (
            "a drawing of this run's records by simpler's tools (under a folder named for "
            f"its case, {case}): the records give the full analysis")
    text = cli("info", sample, "-q").output
    assert f"  not used: {sample}/outputs/{reports[0]['run']}/merged_swimlane.json (a drawing" \
        in text
    # Every drawing of the samples folder is one run's file not used: none lost, none twice.
    runs = find_runs(SIMPLER)
    listed = [p for run in runs for p in run.not_used]
    drawings = [*SIMPLER.glob("*/reference/**/*.json*"),
                *SIMPLER.glob("*/outputs/*/merged_swimlane.json*")]
    assert len(listed) == len(set(listed)) == len(drawings) == 46
    assert set(listed) == {str(p) for p in drawings}


def test_a_drawing_of_another_run_in_a_tree_with_records_is_a_run_of_its_own(tmp_path):
    """Only the records it was made from make a drawing a companion: a tree holding one case's
    records and another case's drawing (reference/<other case>/) has two runs."""
    mine = next((SIMPLER / "a2a3sim_tmr_vector_example_L4" / "outputs").iterdir())
    other = next((SIMPLER / "a2a3sim_tmr_benchmark_bgemm_Case0_L4" / "reference").glob(
        "*/critical_path"))
    shutil.copytree(mine, tmp_path / "outputs" / mine.name)
    shutil.copytree(other, tmp_path / "reference" / other.parent.name / "critical_path")
    runs = sorted(find_runs(tmp_path), key=lambda s: s.variant)
    assert [(r.name, r.variant) for r in runs] == [
        (mine.name, ""), ("CPM_observed", "converter-output"),
        ("CPM_static", "converter-output")]
    # the records run lists only its own drawing (merged_swimlane.json beside it)
    assert list(runs[0].not_used) == [str(tmp_path / "outputs" / mine.name
                                          / "merged_swimlane.json")]
    drawn = runs[1].read()
    assert drawn.slices and drawn.meta.tool.startswith("simpler")
