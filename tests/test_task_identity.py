"""Which slices are one task (``model.SAME_TASK``): only what a reader declares.

msprof's ``task_id`` (text export and database alike) is a per-stream counter: every stream
has a task 3.  It once met the model's TASK_ID by name, so the analyses joined unrelated
tasks of different streams into one node (the cannbot PyPTO run: 1,795 device tasks counted
as 601) and the .pftrace gave them one correlation_id.  Now an arg joins slices only where
the reader declares it (simpler: TASK_ID); msprof declares none."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tracecvt.analyses.full import analyze
from tracecvt.analyses.timeline import Timeline
from tracecvt.model import SAME_TASK, TASK_ID, task_arg
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.same_work import work_ids

SHARED = Path(__file__).resolve().parents[2] / "shared"
CANNBOT = SHARED / "samples/msprof/cannbot-ascendc-vs-pypto/operators"
RUNS = [
    (CANNBOT / "add/reports/raw/pypto_b1/PROF_000001_20260716124658116_00198324ACOLKAKA", None),
    (CANNBOT / "add/reports/raw/pypto_b1/PROF_000001_20260716124658116_00198324ACOLKAKA",
     "msprof-db"),
    (CANNBOT / "matmul/reports/raw/torch_b1/PROF_000001_20260716234341283_00087317MDEDFEKD",
     None),
    (CANNBOT / "matmul/reports/raw/torch_b1/PROF_000001_20260716234341283_00087317MDEDFEKD",
     "msprof-db"),
    (SHARED / "samples/msprof/msinsight/test/data/pytorch/db/level0/rank0_ascend_pt", None),
    (SHARED / "field-samples/msprof/helix-agenticcompiler", None),
]


def _read(path: Path, variant):
    if not path.exists():
        pytest.skip(f"{path} not here")
    return find_runs(path, variant)[0].read(ReadOptions())


def _streams(trace, ids):
    return {trace.tracks[trace.slices[i].track].name for i in ids
            if trace.tracks[trace.slices[i].track].name.startswith("Stream ")}


@pytest.mark.parametrize("path, variant", RUNS, ids=lambda x: getattr(x, "name", str(x)))
def test_msprof_task_ids_join_nothing(path, variant):
    trace = _read(path, variant)
    assert task_arg(trace) is None
    on_streams = [i for i, s in enumerate(trace.slices)
                  if trace.tracks[s.track].name.startswith("Stream ")]
    ids = collections.Counter((trace.slices[i].args or {}).get(TASK_ID) for i in on_streams)
    assert ids and max(ids.values()) > 1 or len(on_streams) < 2, \
        "the run repeats task_id values across its stream slices (what this test is about)"
    # each device task is a task of its own for the analyses ...
    assert not Timeline.build(trace).node_of
    # ... and one piece of work with its host launch at most, never with another stream's
    groups = collections.defaultdict(list)
    for i, w in work_ids(trace).items():
        groups[w].append(i)
    assert all(len(_streams(trace, ids)) <= 1 for ids in groups.values())


def test_pypto_add_run_counts_its_1795_device_tasks():
    path, _ = RUNS[0]
    for variant in (None, "msprof-db"):
        trace = _read(path, variant)
        streams = sum(1 for s in trace.slices
                      if trace.tracks[s.track].name.startswith("Stream "))
        assert streams == 1795
        analysis = analyze(trace)
        assert analysis.bubbles.run.tasks == 1795     # was 601: task ids met across streams


def test_simpler_declares_its_task_ids():
    run = SHARED / "samples/simpler/a2a3sim_tmr_mixed_example_case1_L4"     # MIX tasks
    trace = _read(run, None)
    assert trace.meta.extra[SAME_TASK] == TASK_ID == task_arg(trace)
    tl = Timeline.build(trace)
    assert tl.node_of                   # a task's rows on several cores are one node
    for node in set(tl.node_of.values()):
        members = [i for i, n in tl.node_of.items() if n == node]
        assert len({trace.slices[i].args[TASK_ID] for i in members}) == 1


@pytest.mark.parametrize("path", [
    SHARED / "field-samples/msprof/hansheng1001-ascendccontest-310b",
    SHARED / "field-samples/msprof/helix-agenticcompiler",
    RUNS[0][0]], ids=lambda p: p.name)
def test_info_counts_the_tasks_the_summary_counts(path):
    """`info` says as many tasks as the summary's configuration: the device tasks on the
    run's resources (the 310B run's 5 AI Core / AI CPU tasks, not its 64 slices with host
    calls and msprof's Overlap Analysis intervals)."""
    from conftest import cli
    if not path.exists():
        pytest.skip(f"{path} not here")
    r = cli("info", path, "--json", "-q")
    assert r.exit_code == 0, r.output
    import json
    for rep in json.loads(r.stdout):
        trace = find_runs(rep["root"])[0].read(ReadOptions())
        summary = analyze(trace)
        tasks = sum(len(lane.slices) for lane in summary.timeline.lanes)
        assert rep["tasks"] == tasks < rep["counts"]["slices"]
        if "310b" in str(path):
            assert tasks == 5
