"""The runtime's scheduler loop breakdown (``sched_overhead_analysis`` Part 5) per AICPU
scheduler thread, and its idle time as gaps for a derived track.

As the runtime defines it (format reference 6.2): only ``complete``, ``async_poll`` and
``dispatch`` records are work; sorted by start, a record that starts after the latest end so
far leaves an idle gap (so time in ``release``, ``dummy``, ``drain`` ... counts as idle, and
nothing before the first or after the last record does); loops = the largest loop_iter;
finishes = Σ complete.tasks_processed; pop hits and misses are summed over dispatch records;
a task is *completed* by the thread that owns the core of its last-finishing row; fanout and
fanin count unique dependency pairs of the tasks a thread owns (through their first row).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...model import LANE, Trace
from ...slice_columns import kept_columns
from .runs import THREAD_RE, WORK_KINDS, Run, phase_kind


@dataclass
class ThreadLoop:
    thread: int
    work: dict[str, int] = field(default_factory=dict)     # kind -> ns (records with dur > 0)
    idle: int = 0
    loops: int = 0
    finishes: int = 0
    completed: int = 0
    pop_hit: int = 0
    pop_miss: int = 0
    fanout_edges: int = 0
    fanout_max: int = 0
    fanin_edges: int = 0
    fanin_max: int = 0

    @property
    def total(self) -> int:
        return sum(self.work.values()) + self.idle


def compute_loops(run: Run) -> list[ThreadLoop]:
    """Per thread with work records, in thread order; [] without scheduler records."""
    c2t = run.core_to_thread
    last_finish: dict[int, tuple[int, int]] = {}      # task -> (finish, thread)
    first_thread: dict[int, int | None] = {}
    for r in run.rows:
        thr = c2t[r.core] if 0 <= r.core < len(c2t) and c2t[r.core] >= 0 else None
        first_thread.setdefault(r.task, thr)
        if thr is None or r.finish is None:
            continue
        prev = last_finish.get(r.task)
        if prev is None or r.finish > prev[0]:
            last_finish[r.task] = (r.finish, thr)
    completed: dict[int, int] = {}
    for _, thr in last_finish.values():
        completed[thr] = completed.get(thr, 0) + 1
    out_deg: dict[int, set[int]] = {}
    in_deg: dict[int, set[int]] = {}
    for p, s in run.edges:
        out_deg.setdefault(p, set()).add(s)
        in_deg.setdefault(s, set()).add(p)
    result = []
    for n in sorted(run.threads):
        recs = sorted((r for r in run.threads[n] if r.kind in WORK_KINDS),
                      key=lambda r: r.start)
        if not recs:
            continue
        t = ThreadLoop(n, {k: 0 for k in WORK_KINDS})
        t.idle = sum(b - a for a, b in idle_gaps([(r.start, r.end) for r in recs]))
        for r in recs:
            if r.end > r.start:
                t.work[r.kind] += r.end - r.start
            if r.kind == "complete":
                t.finishes += r.tasks_processed
            elif r.kind == "dispatch":
                t.pop_hit += r.pop_hit
                t.pop_miss += r.pop_miss
            t.loops = max(t.loops, r.loop_iter)
        t.completed = completed.get(n, 0) if last_finish else t.finishes
        for task, thr in first_thread.items():
            if thr != n:
                continue
            o = len(out_deg.get(task, ()))
            i = len(in_deg.get(task, ()))
            t.fanout_edges += o
            t.fanout_max = max(t.fanout_max, o)
            t.fanin_edges += i
            t.fanin_max = max(t.fanin_max, i)
        result.append(t)
    return result


def loop_idle(trace: Trace) -> dict[int, list[tuple[int, int]]]:
    """Scheduler-loop idle per AICPU thread lane (``Sched_<n>``) as the runtime defines it:
    lane track -> idle gaps [start, end) between its work records (complete, async_poll,
    dispatch) after the latest end so far."""
    by_lane: dict[int, list[tuple[int, int]]] = {}
    lanes = {t.index for t in trace.tracks
             if t.kind == LANE and not t.derived and THREAD_RE.match(t.name)}
    if not lanes:
        return {}
    slices = trace.slices
    cols = kept_columns(slices, make=False)     # (the conversion's: their slices alone)
    at = np.flatnonzero(np.isin(cols.track, list(lanes))).tolist() if cols is not None \
        else range(len(slices))
    for i in at:
        s = slices[i]
        if s.track in lanes and phase_kind(s.name, s.all_args) in WORK_KINDS:
            by_lane.setdefault(s.track, []).append((s.ts, s.ts + s.dur))
    out: dict[int, list[tuple[int, int]]] = {}
    for lane, recs in by_lane.items():
        recs.sort(key=lambda r: r[0])
        gaps = idle_gaps(recs)
        if gaps:
            out[lane] = gaps
    return out


def idle_gaps(recs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The idle gaps [start, end) between work records ([start, end), sorted by start): where
    a record starts after the latest end so far."""
    gaps = []
    prev = None
    for a, b in recs:
        if prev is not None and a > prev:
            gaps.append((prev, a))
        if prev is None or b > prev:
            prev = b
    return gaps
