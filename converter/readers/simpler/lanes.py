"""Worker View (one lane per AICore, a slice per AICore row) and Scheduler View (dispatch ->
finish per row, with its pickup and completion latencies), format reference 2.3 and 5.3-5.4.

Rows of the two streams join on (core_id, reg_task_id), never by position (2.3).
"""

from __future__ import annotations

from typing import Any, Callable

from ...model import COMPLETION, GROUP, KERNEL, LANE, PICKUP, TASK_ID, Slice, Trace
from .deps import Deps
from .names import core_lane, function_name, row_func_id, spmd, token
from .records import Records

WORKER_VIEW = "Worker View"
SCHEDULER_VIEW = "Scheduler View"
_TYPE_RANK = {"aic": 0, "aiv": 1}


class Built:
    """What the later builders (phases, flows) need from the worker view."""

    def __init__(self, root: int) -> None:
        self.root = root                             # the run's device group
        self.off_clock = 0                           # host records mapped out of range
        self.rows_of: dict[int, list[int]] = {}      # task id -> its worker slices
        self.markers: dict[int, int] = {}            # task id -> marker / alloc slice
        # joined rows: (core, task id, start, end, dispatch, finish (ns), slice name)
        self.sched_rows: list[tuple[int, int, int, int, int, int, str]] = []


def add_worker_view(trace: Trace, rec: Records, deps: Deps | None, names: dict[int, str],
                    ns: Callable[[int], int], built: Built, order: int) -> dict[str, int]:
    """Worker lanes and slices; returns counts (rows, joined, unjoined AICPU rows)."""
    types = rec.core_types
    ntypes = len(types)
    cores = sorted({r[0] for r in rec.aicore},
                   key=lambda c: (_TYPE_RANK.get(types[c] if c < ntypes else "", 2), c))
    group = trace.add_track(WORKER_VIEW, built.root, GROUP, order,
                            "one lane per AICore with task rows (AIC cube, AIV vector cores); "
                            "a slice per AICore row: kernel start -> end")
    lanes = {c: trace.add_track(core_lane(c, types[c] if c < ntypes else ""), group, LANE,
                                rank, nesting=False) for rank, c in enumerate(cores)}
    cpu: dict[tuple[int, int], list[int]] = {}
    dup = 0
    for r in rec.aicpu:
        key = (r[0], r[1])
        if key in cpu:
            dup += 1
        cpu[key] = r
    tasks = deps.tasks if deps is not None else {}
    shared: dict[tuple[str, int | None, str], dict[str, Any]] = {}
    spmd_rows: dict[tuple[int, str], list[int]] = {}
    rows_of = built.rows_of
    sched_rows = built.sched_rows
    slices = trace.slices
    joined = 0
    used: set[tuple[int, int]] = set()
    for core, tid, reg, start, end, r2s in rec.aicore:
        ctype = types[core] if core < ntypes else ""
        info = tasks.get(tid)
        if info is not None:
            fid = row_func_id(info[0], ctype)
            multi = info[1] > 1
        else:
            fid, multi = None, False
        key = (ctype, fid, "s" if multi else "")
        sh = shared.get(key)
        if sh is None:
            fname = function_name(fid, names)
            if multi and fid is not None:
                fname = spmd(fname)
            sh = shared[key] = {"function": fname, "core_type": ctype}
            if fid is not None:
                sh["func_id"] = fid
        tok = token(tid)
        s = ns(start)
        e = ns(end)
        args: dict[str, Any] = {TASK_ID: tid, "task": tok, "core": core}
        if r2s is not None:
            args["setup_ns"] = s - ns(start - r2s)
        name = f"{sh['function']}({tok})"
        c = cpu.get((core, reg))
        if c is not None:
            joined += 1
            used.add((core, reg))
            d, f = ns(c[2]), ns(c[3])
            args[PICKUP] = s - d
            args[COMPLETION] = f - e
            sched_rows.append((core, tid, s, e, d, f, name))
        i = len(slices)
        slices.append(Slice(lanes[core], s, e - s, name, KERNEL, args, sh))
        lst = rows_of.get(tid)
        if lst is None:
            rows_of[tid] = [i]
        else:
            lst.append(i)
        if multi or info is None:
            spmd_rows.setdefault((tid, ctype), []).append(i)
    _block_indexes(trace, spmd_rows, tasks)
    return {"aicore_rows": len(rec.aicore), "joined": joined, "duplicate_aicpu_keys": dup,
            "aicpu_without_aicore": len(cpu) - len(used), "cores": len(cores)}


def _block_indexes(trace: Trace, rows: dict[tuple[int, str], list[int]],
                   tasks: dict[int, Any]) -> None:
    """An SPMD task's block index per row: its rank by start among the task's rows of that
    core type (the records do not carry it).  Tasks missing from deps.json count as SPMD
    when they have several rows of one core type (as simpler's converter does)."""
    slices = trace.slices
    for (tid, _), ids in rows.items():
        if tid not in tasks and len(ids) < 2:
            continue
        ids.sort(key=lambda i: (slices[i].ts, slices[i].args["core"]))
        for k, i in enumerate(ids):
            slices[i].args["block"] = k


def add_scheduler_view(trace: Trace, rec: Records, built: Built, order: int) -> int:
    """Per joined row: dispatch -> finish on a lane per (scheduler thread, core), with nested
    "pickup" (dispatch -> start) and "completion" (end -> finish) slices.  Returns the rows
    drawn."""
    types = rec.core_types
    ntypes = len(types)
    c2t = rec.core_to_thread
    by_core: dict[int, list[tuple[int, int, int, int, int, int, str]]] = {}
    for r in built.sched_rows:
        by_core.setdefault(r[0], []).append(r)
    if not by_core:
        return 0

    def thread(core: int) -> int:
        t = c2t[core] if c2t is not None and core < len(c2t) else -1
        return t if t >= 0 else 1 << 30

    def lane_name(core: int) -> str:
        t = thread(core)
        who = f"Sched_{t}" if t < 1 << 30 else "AICPU"
        return f"{who} → {core_lane(core, types[core] if core < ntypes else '')}"

    how = ("core_to_thread" if c2t is not None else
           "level 2 has no core_to_thread, so the thread is unknown")
    group = trace.add_track(SCHEDULER_VIEW, built.root, GROUP, order,
                            "per AICore row, the AICPU scheduler's dispatch -> finish, on a "
                            f"lane per (scheduler thread, core) ({how}); nested: pickup "
                            "(dispatch -> kernel start) and completion (kernel end -> finish)")
    cores = sorted(by_core, key=lambda c: (
        thread(c), _TYPE_RANK.get(types[c] if c < ntypes else "", 2), c))
    rank = 0
    odd = 0
    slices = trace.slices
    for core in cores:
        name = lane_name(core)
        sub: list[list[int]] = []           # [track, last finish] per (overlap) lane
        for _, tid, s, e, d, f, label in sorted(by_core[core], key=lambda r: r[4]):
            for lane in sub:
                if lane[1] <= d:
                    break
            else:
                extra = len(sub)       # the core got its next task before this one finished
                lane = [trace.add_track(f"{name} ({extra + 1})" if extra else name, group,
                                        LANE, rank, "" if not extra else
                                        "dispatch -> finish overlapping the lane above"), d]
                rank += 1
                sub.append(lane)
            lane[1] = f
            track = lane[0]
            slices.append(Slice(track, d, f - d, label, "dispatch",
                                {"task": token(tid), "core": core}))
            if d <= s <= e <= f:
                slices.append(Slice(track, d, s - d, "pickup", "pickup"))
                slices.append(Slice(track, e, f - e, "completion", "completion"))
            else:
                odd += 1
    if odd:
        trace.warn(f"{rec.path}: {odd} rows whose kernel does not lie within dispatch -> "
                   "finish: their pickup/completion slices are not drawn")
    return len(built.sched_rows)
