"""A simpler run as the runtime's tools see it, read from the model.

The reader's contract (docs/formats/simpler.md, the model's TASK_ID / PICKUP / COMPLETION):
one slice per AICore row on the analysed core lanes with ``core``, ``core_type``, ``func_id``,
``function`` and ``setup_ns``; dispatch = start - PICKUP and finish = end + COMPLETION from
level 2; one slice per scheduler phase record on the ``Sched_<n>`` lanes (kind, loop_iter,
tasks_processed, pop_hit, pop_miss); one flow per ``deps.json`` edge row.  Everything here is
exact integer ns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..timeline import Timeline
from ...model import COMPLETION, LANE, PICKUP, TASK_ID, Trace

THREAD_RE = re.compile(r"^Sched_(\d+)$")
WORK_KINDS = ("complete", "async_poll", "dispatch")


@dataclass
class Row:
    """One AICore row (a slice on a core lane)."""

    slice: int
    task: int
    core: int
    core_type: str                # "aic" / "aiv"
    func_id: int
    function: str
    start: int
    end: int
    dispatch: int | None          # level >= 2
    finish: int | None
    spmd: bool = False            # a block of an SPMD task (the reader's "block" arg)


@dataclass
class Phase:
    kind: str
    start: int
    end: int
    loop_iter: int
    tasks_processed: int
    pop_hit: int
    pop_miss: int


@dataclass
class Run:
    level: int | None
    freq: int | None              # device counter rate (Hz)
    ns_per_tick: Fraction
    core_to_thread: list[int]
    rows: list[Row]               # in the runtime's task order: task id, core, finish
    edges: list[tuple[int, int]]  # unique (pred, succ) task pairs, in flow order
    threads: dict[int, list[Phase]] = field(default_factory=dict)   # thread -> records

    @property
    def has_dispatch(self) -> bool:
        return bool(self.rows) and all(r.dispatch is not None for r in self.rows)


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def phase_kind(name: str, args: dict[str, Any]) -> str:
    """A scheduler record's kind: its ``kind`` or ``phase`` arg, else the slice name before
    "(" (the runtime's own ``<kind>(<tasks_processed>)``)."""
    for key in ("kind", "phase"):
        v = args.get(key)
        if isinstance(v, str) and v:
            return v
    return name.split("(", 1)[0]


def read_run(trace: Trace, tl: Timeline) -> Run | None:
    """The run's rows, edges and scheduler records, or None when ``trace`` is no simpler run
    (no ``meta.extra["simpler"]``) or has no AICore rows."""
    info = trace.meta.extra.get("simpler")
    if not isinstance(info, dict):
        return None
    freq = info.get("clock_freq_hz")
    freq = freq if isinstance(freq, int) and freq > 0 else None
    npt = Fraction(10 ** 9, freq) if freq else trace.meta.clock.ns_per_unit
    if npt <= 0:
        npt = Fraction(1)
    slices = trace.slices
    rows: list[Row] = []
    for lane in tl.lanes:
        m = re.search(r"(\d+)$", lane.name)
        lane_core = int(m.group(1)) if m else -1
        for i in lane.slices:
            s = slices[i]
            a = s.all_args
            task = a.get(TASK_ID)
            if not isinstance(task, int):
                continue
            pick = a.get(PICKUP)
            comp = a.get(COMPLETION)
            end = s.ts + s.dur
            fid = _int(a.get("func_id"), -1)
            fn = str(a.get("function") or "")
            rows.append(Row(i, task, _int(a.get("core"), lane_core),
                            str(a.get("core_type") or lane.kind).lower(), fid, fn, s.ts, end,
                            s.ts - pick if isinstance(pick, int) else None,
                            end + comp if isinstance(comp, int) else None,
                            a.get("block") is not None))
    if not rows:
        return None
    rows.sort(key=lambda r: (r.task, r.core, r.finish or 0, r.start))
    task_of = {r.slice: r.task for r in rows}
    edges: dict[tuple[int, int], None] = {}
    for f in trace.flows:
        p = task_of.get(f.src)
        if p is None:
            p = slices[f.src].all_args.get(TASK_ID)
        q = task_of.get(f.dst)
        if q is None:
            q = slices[f.dst].all_args.get(TASK_ID)
        if isinstance(p, int) and isinstance(q, int):
            edges[(p, q)] = None
    c2t = info.get("core_to_thread")
    c2t = [t if isinstance(t, int) and not isinstance(t, bool) else -1 for t in c2t] \
        if isinstance(c2t, list) else []
    level = info.get("level")
    run = Run(level if isinstance(level, int) else None, freq, npt, c2t, rows, list(edges))
    lane_thread: dict[int, int] = {}       # every lane of a thread (inner phases may have
    for t in trace.tracks:                 # a lane of their own with the same name)
        if t.kind != LANE or t.derived:
            continue
        m = THREAD_RE.match(t.name)
        if m:
            lane_thread[t.index] = int(m.group(1))
    for s in slices:
        n = lane_thread.get(s.track)
        if n is None:
            continue
        a = s.all_args
        run.threads.setdefault(n, []).append(Phase(
            phase_kind(s.name, a), s.ts, s.ts + s.dur, _int(a.get("loop_iter")),
            _int(a.get("tasks_processed")), _int(a.get("pop_hit")), _int(a.get("pop_miss"))))
    return run
