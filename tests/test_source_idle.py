"""The source tool's own idle intervals (msprof's overlap analysis "Free", declared by the
reader as model.SOURCE_IDLE) against tracecvt's idle time of the same lanes: the figures equal
those recomputed from the msprof JSON alone, and the interval arithmetic on a built trace."""

from __future__ import annotations

import json
from decimal import Decimal

import tracecvt
from tracecvt.analyses.source_idle import compare_source_idle
from tracecvt.model import GROUP, SOURCE_IDLE, RunMeta, Trace

from conftest import FIELD, SAMPLES

HELIX = FIELD / "msprof" / "helix-agenticcompiler"


def _union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _from_json(path):
    """(Free total, idle of the Ascend Hardware/HCCL threads, window), in ns, from the JSON."""
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    ns = lambda v: int(Decimal(str(v).strip()) * 1000)      # noqa: E731 (µs, 3 decimals)
    free, busy = [], []
    for e in events:
        if e.get("ph") != "X" or ns(e["dur"]) <= 0:
            continue
        span = (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        proc = procs.get(e["pid"])
        if proc == "Overlap Analysis" and threads.get((e["pid"], e["tid"])) == "Free":
            free.append(span)
        elif proc in ("Ascend Hardware", "HCCL"):
            busy.append(span)
    free, busy = _union(free), _union(busy)
    lo, hi = min(free[0][0], busy[0][0]), max(free[-1][1], busy[-1][1])
    idle = (hi - lo) - sum(b - a for a, b in busy)
    return sum(b - a for a, b in free), idle, hi - lo


def test_msprof_free_against_tracecvt_idle_equals_the_json():
    (run,) = tracecvt.read(HELIX)
    (row,) = run.summary()["source_idle"]
    (js,) = HELIX.rglob("msprof_*.json")
    free, idle, window = _from_json(js)
    assert row["lane"] == "NPU 0 / Overlap Analysis / Free"
    assert (row["source_idle_us"], row["tracecvt_idle_us"], row["window_us"]) == \
        (free / 1000, idle / 1000, window / 1000)
    assert row["both_idle_us"] <= min(row["source_idle_us"], row["tracecvt_idle_us"])


def test_every_msprof_sample_with_a_free_lane_has_a_row():
    for folder in (SAMPLES / "msprof" / "cannbot-ascendc-vs-pypto", HELIX):
        for run in tracecvt.read(folder):
            t = run.trace
            free = [i for i, tr in enumerate(t.tracks) if tr.name == "Free" and any(
                s.track == i for s in t.slices)]
            rows = run.summary().get("source_idle", [])
            assert len(rows) == len(free), run.name


def test_interval_arithmetic():
    t = Trace(RunMeta("r", "test"))
    dev = t.add_track("dev", None, GROUP)
    a = t.add_track("a", dev)
    b = t.add_track("b", dev)
    free = t.add_track("Free", dev)
    for lane, ts, dur in ((a, 0, 10), (b, 5, 10), (a, 30, 10)):     # busy [0,15) [30,40)
        t.add_slice(lane, ts, dur, "task")
    for ts, dur in ((15, 10), (45, 5)):                                # tool: [15,25) [45,50)
        t.add_slice(free, ts, dur, "Free")
    t.meta.extra[SOURCE_IDLE] = [{"lane": free, "lanes": [a, b]}]
    (row,) = compare_source_idle(t)
    # window [0, 50): ours idle [15,30) + [40,50) = 25; tool's 15; both [15,25) + [45,50) = 15
    assert (row["window_us"], row["tracecvt_idle_us"], row["source_idle_us"],
            row["both_idle_us"], row["agreement_pct"], row["lanes"]) == \
        (0.05, 0.025, 0.015, 0.015, 60.0, 2)
