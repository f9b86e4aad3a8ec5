"""One run's files joined on the keys they share, never drawn twice (issue 23, item 3).

msprof writes the same device task into msprof_*.json, task_time and op_summary.  A real A2
run (CANN 8.0 era) starts every task_time row exactly 30 ns after the JSON's same task: the
rows must still join the JSON's slices on (stream, task id), with the offset measured and the
tool's rounding as the tolerance; a row that joins nothing is reported, not drawn again.
"""

from __future__ import annotations

import collections
import csv
import json
import shutil
from decimal import Decimal

import pytest

from tracecvt.readers import find_runs

from conftest import SAMPLES, SHARED

PROF = next((SAMPLES / "msprof").glob(
    "cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1/PROF_*"))
HELIX = SHARED / ("field-samples/msprof/helix-agenticcompiler/tests/fixtures/"
                  "ascend_npu_operator_profiler/msprof_real_output")
HANSHENG = next((SHARED / "field-samples/msprof/hansheng1001-ascendccontest-310b").glob(
    "01Addcmul/FrameworkLaunch/AddcmulTest/output/PROF_*"))
# hansheng's 310B prints task_time's starts truncated, the JSON's rounded: 0 or -1 ns apart
RUNS = {"cannbot-ascendc": PROF, "helix-field": HELIX, "hansheng-310b-field": HANSHENG}


def _out(run):
    return run / "mindstudio_profiler_output"


def _shifted(src, tmp_path, ns=30, edit=None):
    """A copy of ``src`` whose task_time starts and stops lie ``ns`` later (text kept in
    msprof's form: 3 decimals and a trailing TAB); ``edit(rows)`` may change rows."""
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    path = next(_out(dst).glob("task_time_*.csv"))
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    for col in ("task_start(us)", "task_stop(us)"):
        c = head.index(col)
        for row in rows[1:]:
            row[c] = f"{Decimal(row[c].strip()) + Decimal(ns) / 1000:.3f}\t"
    if edit:
        body = rows[1:]
        edit(head, body)
        rows = [head] + body
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return dst, path, len(rows) - 1


def _device_tasks(out):
    events = json.loads(next(out.glob("msprof_*.json")).read_text())
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    return [e for e in events if e.get("ph") == "X" and procs[e["pid"]] == "Ascend Hardware"]


def _offsets(run):
    """(stream, task id) -> task_time's start minus the JSON's, in ns, from the files."""
    json_start = {(e["args"]["Physic Stream Id"], e["args"]["Task Id"]): Decimal(e["ts"])
                  for e in _device_tasks(_out(run))}
    with open(next(_out(run).glob("task_time_*.csv")), newline="") as f:
        return {(int(r["stream_id"]), int(r["task_id"])):
                int((Decimal(r["task_start(us)"].strip()) - json_start[
                    (int(r["stream_id"]), int(r["task_id"]))]) * 1000)
                for r in csv.DictReader(f)}


def _hardware(trace):
    return [s for s in trace.slices if "/ Ascend Hardware /" in trace.path(s.track)]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_task_time_30ns_after_the_json_joins_its_tasks(tmp_path, name):
    src = RUNS[name]
    run, path, n = _shifted(src, tmp_path)
    trace = find_runs(run)[0].read()
    stat = trace.meta.extra["msprof_sources"][str(path)]
    assert stat["rows"] == stat["matched"] == n and stat["added"] == 0
    offsets = _offsets(src)        # row start - the JSON's start, per task, as msprof wrote
    assert stat["start_offset_ns"] == 30 + collections.Counter(
        offsets.values()).most_common(1)[0][0]
    assert "unmatched" not in stat
    # task_time rows = device-task slices = the JSON's device tasks, in one NPU group
    hw = _hardware(trace)
    assert len(hw) == n == len(_device_tasks(_out(src)))
    assert len({trace.path(s.track).split(" / ")[0] for s in hw}) == 1
    joined = [s for s in hw if "task_time_row" in s.args]
    assert sorted(s.args["task_time_row"] for s in joined) == list(range(n))
    for s in joined:      # the JSON's time is kept; the row's own start is an arg
        start = Decimal(s.args.get("start_time_us_task_time") or s.args["start_time_us"])
        assert int(start * 1000) - s.ts == 30 + offsets[(s.args["stream_id"], s.args["task_id"])]
    assert not [w for w in trace.meta.warnings if path.name in w]
    # the summary counts each kernel once: the same figures as the unshifted run
    plain = find_runs(src)[0].read()
    assert collections.Counter((s.name, s.ts, s.dur) for s in hw) == \
        collections.Counter((s.name, s.ts, s.dur) for s in _hardware(plain))


def _break(head, rows, r, col, value):
    rows[r][head.index(col)] = value


@pytest.mark.parametrize("what,edit", [
    ("task id no task has", lambda h, rows: _break(h, rows, 2, "task_id", "65000")),
    ("start 5 us off", lambda h, rows: _break(
        h, rows, 2, "task_start(us)", f"{Decimal(rows[2][h.index('task_start(us)')]) + 5:.3f}\t")),
])
def test_task_time_row_without_a_json_task_is_reported_not_drawn(tmp_path, what, edit):
    run, path, n = _shifted(PROF, tmp_path, edit=edit)
    trace = find_runs(run)[0].read()
    stat = trace.meta.extra["msprof_sources"][str(path)]
    assert (stat["matched"], stat["added"], stat["unmatched"]) == (n - 1, 0, 1)
    assert stat["unmatched_rows"] == [2]
    assert len(_hardware(trace)) == len(_device_tasks(_out(PROF)))
    (warning,) = [w for w in trace.meta.warnings if str(path) in w]
    assert f"1 of {n} rows match no task of msprof_" in warning
    assert "row 3 (stream " in warning and "not drawn" in warning


def test_rows_of_a_device_without_json_tasks_are_drawn_on_that_device(tmp_path):
    """The device is part of the key: task_time rows of NPU 1 (which the JSON does not
    cover), written first, with the same stream, task ids and times as NPU 0's join nothing
    of NPU 0; they are the only record of NPU 1's tasks, so they are drawn there, and NPU 0's
    rows join NPU 0's tasks."""
    def second_device(head, rows):
        c = head.index("Device_id")
        rows[:0] = [[("1" if i == c else v) for i, v in enumerate(row)] for row in list(rows)]

    run, path, n = _shifted(PROF, tmp_path, ns=0, edit=second_device)
    trace = find_runs(run)[0].read()
    stat = trace.meta.extra["msprof_sources"][str(path)]
    assert (stat["rows"], stat["matched"], stat["added"]) == (n, n // 2, n // 2)
    groups = collections.Counter(trace.path(s.track).split(" / ")[0] for s in _hardware(trace))
    assert groups == {"NPU 0": n // 2, "NPU 1": n // 2}
    assert all(s.args["device_id"] == 0 for s in _hardware(trace)
               if trace.path(s.track).startswith("NPU 0"))
