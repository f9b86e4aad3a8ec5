"""Every field sample (../shared/field-samples: real outputs other people committed from their
own machines, PROVENANCE.md there) found by content, read with the right tool, chip and clock,
and converted with the source's own counts: msprof's Chrome JSON X events = slices and s
events = flows, task_time rows = device-task slices; PyPTO's task records = slices and the
task list's successor edges between recorded tasks = flows; the NCU CSV's kernels = slices.
No warning names a file the run does not need."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import tracecvt

from conftest import FIELD

MSPROF_310B = next(iter(sorted((FIELD / "msprof" / "hansheng1001-ascendccontest-310b").rglob(
    "PROF_*"))), None) if FIELD.is_dir() else None
HELIX = FIELD / "msprof" / "helix-agenticcompiler" / "tests" / "fixtures" / \
    "ascend_npu_operator_profiler" / "msprof_real_output"
PYPTO = FIELD / "pypto" / "hicann-pypto-ut" / "framework" / "tests" / "ut" / "passes" / "src" / \
    "ut_json"
NCU = FIELD / "ncu" / "averyclapp-esmm" / "metrics.csv"

pytestmark = pytest.mark.skipif(not FIELD.is_dir(), reason=f"no field samples at {FIELD}")


def _one(path: Path) -> tracecvt.Run:
    runs = tracecvt.read(path)
    assert len(runs) == 1, [r.name for r in runs]
    return runs[0]


def _chrome_counts(path: Path) -> tuple[int, int]:
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    return (sum(1 for e in events if e.get("ph") == "X"),
            sum(1 for e in events if e.get("ph") == "s"))


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _device_task_slices(trace) -> int:
    hw = {i for i, t in enumerate(trace.tracks) if "Ascend Hardware" in trace.path(i)}
    return sum(1 for s in trace.slices if s.track in hw)


def _no_warning_about_unused(run: tracecvt.Run) -> None:
    unused = [str(p) for role, p in run.trace.meta.extra.get("msprof_ignored_files", {}).items()] \
        if isinstance(run.trace.meta.extra.get("msprof_ignored_files"), dict) else []
    for w in run.warnings:
        assert ".done" not in w and "not read" not in w, w
        assert not any(u in w for u in unused), w


@pytest.mark.parametrize("root", [MSPROF_310B, HELIX], ids=["310B", "A2-helix"])
def test_msprof_runs_have_the_sources_counts(root):
    run = _one(root)
    assert (run.format, run.trace.meta.tool) == ("msprof", "msprof")
    assert run.trace.meta.clock.name == "epoch-us"
    out = root / "mindstudio_profiler_output"
    (js,) = out.glob("msprof_*.json")
    (tt,) = out.glob("task_time_*.csv")
    x, s = _chrome_counts(js)
    trace = run.trace
    assert len(trace.slices) == x and len(trace.flows) == s
    assert _device_task_slices(trace) == len(_csv_rows(tt))
    # the summary's kernel table counts each device task once
    _no_warning_about_unused(run)


def test_msprof_310b_names_its_chip():
    run = _one(MSPROF_310B)
    assert "310B" in run.trace.meta.device
    assert not any(str(p).endswith(".done") for p in run.trace.meta.source_files)


def test_pypto_on_board_task_times():
    run = _one(PYPTO)
    meta = run.trace.meta
    assert meta.tool == "PyPTO" and "NPU" in meta.device
    assert (meta.clock.unit, meta.clock.ns_per_unit) == ("tick", 20)     # 50 MHz
    records = json.loads((PYPTO / "tilefwk_prof_data.json").read_text())
    tasks = [t for core in records for t in core["tasks"]]
    assert len(run.trace.slices) == len(tasks)
    topo = json.loads((PYPTO / "topo.json").read_text())
    rows = topo if isinstance(topo, list) else next(v for v in topo.values()
                                                   if isinstance(v, list))
    ids = {r["taskId"] for r in rows}
    recorded = ids & {t["taskId"] for t in tasks}     # tasks without a record are warned of
    edges = sum(1 for r in rows if r["taskId"] in recorded
                for d in r.get("successors") or [] if d in recorded)
    assert len(run.trace.flows) == edges
    span = run.trace.time_span()
    assert span[1] - span[0] == 2_386_500
    _no_warning_about_unused(run)


def test_ncu_metrics_csv_kernels():
    run = _one(NCU)
    meta = run.trace.meta
    assert meta.tool == "Nsight Compute" and "compute capability 8.6" in meta.device
    rows = _csv_rows(NCU)
    kernels = {r["ID"] for r in rows}
    assert len(run.trace.slices) == len(kernels) == 9
    durations = sorted(int(r["Metric Value"].replace(",", "")) for r in rows
                       if r["Metric Name"] == "gpu__time_duration.sum")
    assert sorted(s.dur for s in run.trace.slices) == durations
