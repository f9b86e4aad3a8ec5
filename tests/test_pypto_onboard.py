"""PyPTO per-core task times read for what their content is: on-board NPU ticks or cost-model
cycles, under any file name, found in a folder as they are as a file, and joined with an
old-style ``topo.json`` task graph (issue 23, item 5).

The field sample (../shared/field-samples/pypto/hicann-pypto-ut) is hicann/pypto's own test
data: ``tilefwk_prof_data.json`` (the ``tilefwk_L1_prof_data.json`` layout without seqNo,
absolute system-counter ticks) beside an old-style ``topo.json``.  The other fixtures are made
from a shared SIM sample changed the way that field data differs.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from tracecvt.readers import find_runs
from conftest import SHARED, pypto_sim_dir

FIELD = SHARED / "field-samples" / "pypto" / "hicann-pypto-ut" / "framework" / "tests" / "ut" \
    / "passes" / "src" / "ut_json"
NS_PER_TICK_50_MHZ = 20                      # PyPTO's counter rate on Ascend A2/A3
NS_PER_SIM_CYCLE = Fraction(1000, 1800)      # the cost model's 1.8 GHz


def _records(path: Path) -> list[tuple[str, int, int, int]]:
    """(core type, taskId, execStart, execEnd) of every task record of a swim file."""
    return [(c["coreType"], t["taskId"], t["execStart"], t["execEnd"])
            for c in json.loads(path.read_text()) for t in c["tasks"]]


def _joined_edges(topo: Path, task_ids: set[int]) -> set[tuple[int, int]]:
    """The successor edges of a task list whose two tasks both have a record."""
    return {(t["taskId"], s) for t in json.loads(topo.read_text()) for s in t["successors"]
            if t["taskId"] in task_ids and s in task_ids}


def _flow_edges(trace) -> set[tuple[int, int]]:
    return {(trace.slices[f.src].args["taskId"], trace.slices[f.dst].args["taskId"])
            for f in trace.flows}


def _check_on_board(trace, swim: Path, topo: Path) -> None:
    """The run read as NPU ticks at 50 MHz: one slice per record at its exact times, the
    dependency flows are the task list's successor edges between recorded tasks."""
    recs = _records(swim)
    assert trace.meta.device == "Ascend A2/A3 NPU (DAV_2201)"
    assert (trace.meta.clock.unit, trace.meta.clock.ns_per_unit) == ("tick", NS_PER_TICK_50_MHZ)
    assert sorted((s.args["taskId"], s.ts, s.ts + s.dur) for s in trace.slices) == \
        sorted((tid, a * NS_PER_TICK_50_MHZ, e * NS_PER_TICK_50_MHZ) for _, tid, a, e in recs)
    span = trace.time_span()
    assert span == (min(a for *_, a, _ in recs) * NS_PER_TICK_50_MHZ,
                    max(e for *_, e in recs) * NS_PER_TICK_50_MHZ)
    edges = _joined_edges(topo, {tid for _, tid, _, _ in recs})
    assert edges and _flow_edges(trace) == edges and len(trace.flows) == len(edges)
    assert str(topo) in trace.meta.source_files


# -- the field sample ----------------------------------------------------------------------

def test_field_sample_on_board_times_are_50_mhz_ticks_with_topo_json_flows():
    swim, topo = FIELD / "tilefwk_prof_data.json", FIELD / "topo.json"
    (src,) = find_runs(swim)
    assert src.files == {"swim": swim, "task_graph": topo}
    trace = src.read()
    _check_on_board(trace, swim, topo)
    # The figures of the issue: 233 task records, 430 joined edges, 2,386.5 us.
    a, b = trace.time_span()
    assert (len(trace.slices), len(trace.flows), b - a) == (233, 430, 2_386_500)
    assert trace.meta.extra["pypto_fake_tasks"] == 0
    # Tasks 177 and 195 of topo.json have no record: reported with their 43 dependencies.
    (lost,) = [w for w in trace.meta.warnings if w.startswith(str(topo))]
    assert "2 of its 235 tasks have no record" in lost and "taskId 177, 195" in lost \
        and "43 dependencies" in lost
    assert not any("HUB" in w or "no task graph" in w for w in trace.meta.warnings)
    # Each task names the leaf function its topo.json row gives (the time-by-leaf-function
    # key: the rows carry no leafHash).
    func = {t["taskId"]: t["funcName"] for t in json.loads(topo.read_text())}
    assert all(s.all_args["funcName"] == func[s.args["taskId"]] for s in trace.slices)
    assert trace.meta.extra["label_args"]["leaf_function"] == "funcName"


def test_field_sample_folder_is_found_as_its_file_is():
    (by_folder,) = find_runs(FIELD.parent.parent)        # .../src: the folder above, too
    (by_file,) = find_runs(FIELD / "tilefwk_prof_data.json")
    assert (by_folder.root, by_folder.files, by_folder.name, by_folder.variant) == \
        (by_file.root, by_file.files, by_file.name, by_file.variant)


# -- a shared SIM sample changed the way the field data differs -------------------------------

def _on_board_copy(tmp_path: Path, swim_name: str) -> tuple[Path, Path]:
    """matmul_add's task times as an NPU writes them: no completeSeq and no seqNo, absolute
    counter ticks (the field sample's base), only cores that ran a task and no HUB core (HUB
    tasks never run on an AI core), under ``swim_name``; its static topo as an old-style
    ``topo.json`` (taskId, funcName, semanticLabel, successors)."""
    sim = pypto_sim_dir("matmul_add")
    cores = json.loads((sim / "_simulate.swim.json").read_text())
    base = 375_218_373_910
    board = [{"blockIdx": c["blockIdx"], "coreType": c["coreType"],
              "tasks": [{"subGraphId": t["subGraphId"], "taskId": t["taskId"],
                         "execStart": base + t["execStart"], "execEnd": base + t["execEnd"]}
                        for t in c["tasks"]]}
             for c in cores if c["tasks"] and c["coreType"] != "HUB"]
    d = tmp_path / "run"
    d.mkdir()
    swim = d / swim_name
    swim.write_text(json.dumps(board, indent=4))
    topo = d / "topo.json"
    topo.write_text(json.dumps(
        [{k: t[k] for k in ("funcName", "semanticLabel", "successors", "taskId")}
         for t in json.loads((sim / "0_simulate.topo.json").read_text())], indent=1))
    return swim, topo


@pytest.mark.parametrize("name", ["tilefwk_prof_data.json", "tilefwk_L1_prof_data.json"])
def test_on_board_times_under_any_name_are_ticks_found_in_their_folder(tmp_path, name):
    swim, topo = _on_board_copy(tmp_path, name)
    (src,) = find_runs(swim.parent)
    assert src.files["swim"] == swim and src.files["task_graph"] == topo
    trace = src.read()
    _check_on_board(trace, swim, topo)
    # The HUB rows of the graph ran on no AI core: not drawn, reported.
    assert trace.meta.extra["pypto_fake_tasks"] == 0
    assert any(w.startswith(str(topo)) and "2 of its 34 tasks have no record" in w
               for w in trace.meta.warnings)


def test_simulation_times_under_the_on_board_name_are_cycles(tmp_path):
    """The cost model's task times (completeSeq on every task, cycles from 0) named like
    on-board data are still cycles at 1.8 GHz."""
    sim = pypto_sim_dir("matmul_add")
    d = tmp_path / "run"
    d.mkdir()
    swim = d / "tilefwk_L1_prof_data.json"
    swim.write_bytes((sim / "_simulate.swim.json").read_bytes())
    (src,) = find_runs(swim)
    trace = src.read()
    assert trace.meta.clock.unit == "cycle" and trace.meta.clock.ns_per_unit == NS_PER_SIM_CYCLE
    assert "simulation" in trace.meta.device
    recs = _records(swim)
    half_up = lambda v: int(v + Fraction(1, 2))       # noqa: E731 - the model's rounding
    assert sorted(s.ts for s in trace.slices) == \
        sorted(half_up(a * NS_PER_SIM_CYCLE) for *_, a, _ in recs)


def test_a_task_list_of_another_run_is_not_the_task_graph(tmp_path):
    """topo.json joins the task times only if every recorded task has a row there."""
    swim, topo = _on_board_copy(tmp_path, "tilefwk_prof_data.json")
    rows = json.loads(topo.read_text())
    topo.write_text(json.dumps([{**t, "taskId": t["taskId"] + 1000,
                                 "successors": [s + 1000 for s in t["successors"]]}
                                for t in rows]))
    (src,) = find_runs(swim.parent)
    trace = src.read()
    assert not trace.flows and len(trace.slices) == len(_records(swim))
    assert any(w.startswith(str(topo)) and "not used as the task graph" in w
               for w in trace.meta.warnings)
