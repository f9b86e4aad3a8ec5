"""The figures of the runtime's ``sched_overhead_analysis`` Parts 1, 3, 4 and 6, recomputed
from the model (format reference 6.2), in exact ns.

* window: first kernel start to last kernel end over the rows;
* per task: dispatch = first, end = last over its rows; ready = latest end of its
  predecessors that have rows, else its own dispatch (roots never wait);
* Part 1: engine T (aic, aiv) is in overhead while one of the k_T cores of T that ran rows
  is idle and some task with rows on T is ready but not dispatched ([ready, dispatch));
  all_overhead: every engine is; has_overhead: every engine with ready work is; shares of
  the window; verdict: has_overhead >= 25 % scheduler-bound, >= 8 % partially, else
  compute/dependency-bound;
* Part 2 (aicore switch): per core, rows in (start, end, dispatch) order; the gap between a
  row's end and the next row's start (within the window) counts when the next row was
  dispatched before that end (pre-dispatched); per core totals, per engine min / mean / max
  over its cores, the events, the share of switch time during which the engine had ready,
  undispatched work, and the bound [min over cores, Σ per-engine minima];
* Part 3: head = min(start - dispatch, start - end of the previous row on the core in start
  order), at least 0; Part 4: tail = max(0, finish - end); distributions at sorted index
  min(n * p // 100, n - 1);
* Part 6: from the task that finishes last, step to the predecessor that ended last; exec =
  Σ (end - start), sched = Σ max(0, start - predecessor end) plus the root's
  max(0, start - dispatch); span = last finish - first start on the path.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from .runs import Run

PERCENTILES = (10, 25, 50, 75, 90, 95, 99)
SCHEDULER_BOUND, PARTIAL, COMPUTE_BOUND = (
    "SCHEDULER-BOUND", "PARTIALLY SCHEDULER-LIMITED", "COMPUTE/DEPENDENCY-BOUND")


@dataclass
class Distribution:
    values: list[int]             # sorted, ns

    @property
    def n(self) -> int:
        return len(self.values)

    def at(self, p: int) -> int:
        return self.values[min(self.n * p // 100, self.n - 1)]

    @property
    def total(self) -> int:
        return sum(self.values)


@dataclass
class Overhead:
    rows: int
    window: int                               # ns
    engines: dict[str, int] = field(default_factory=dict)   # core type -> overhead ns
    cores: dict[str, int] = field(default_factory=dict)     # core type -> cores with rows
    all_overhead: int = 0
    has_overhead: int = 0
    head: Distribution | None = None
    tail: Distribution | None = None
    path: dict[str, int] | None = None        # Part 6: hops, span, exec, sched (ns)
    # Part 2: core type -> {core: switch ns}, core type -> switch gaps, -> [during overhead,
    # independent] ns
    switch_cores: dict[str, dict[int, int]] = field(default_factory=dict)
    switch_events: dict[str, list[int]] = field(default_factory=dict)
    switch_split: dict[str, list[int]] = field(default_factory=dict)

    def pct(self, ns: int) -> float:
        return 100.0 * ns / self.window if self.window > 0 else 0.0

    @property
    def verdict(self) -> str:
        has = self.pct(self.has_overhead)
        return SCHEDULER_BOUND if has >= 25 else PARTIAL if has >= 8 else COMPUTE_BOUND


def compute_overhead(run: Run) -> Overhead | None:
    """None without dispatch/finish times (level 1)."""
    if not run.has_dispatch:
        return None
    rows = run.rows
    w0 = min(r.start for r in rows)
    w1 = max(r.end for r in rows)
    out = Overhead(len(rows), w1 - w0)
    types = sorted({r.core_type for r in rows})
    k = {ty: len({r.core for r in rows if r.core_type == ty}) for ty in types}
    out.cores = k
    types_of: dict[int, set[str]] = {}
    disp: dict[int, int] = {}
    end: dict[int, int] = {}
    start: dict[int, int] = {}
    finish: dict[int, int] = {}
    for r in rows:
        t = r.task
        types_of.setdefault(t, set()).add(r.core_type)
        disp[t] = min(disp.get(t, r.dispatch), r.dispatch)
        end[t] = max(end.get(t, r.end), r.end)
        start[t] = min(start.get(t, r.start), r.start)
        finish[t] = max(finish.get(t, r.finish), r.finish)
    preds: dict[int, set[int]] = {}
    for p, s in run.edges:
        if p != s:
            preds.setdefault(s, set()).add(p)
    delta: dict[int, dict[str, list[int]]] = {}       # time -> type -> [running, waiting]

    def add(ts: int, ty: str, j: int, v: int) -> None:
        delta.setdefault(ts, {}).setdefault(ty, [0, 0])[j] += v

    for r in rows:
        s, e = max(w0, min(r.start, w1)), max(w0, min(r.end, w1))
        if e > s:
            add(s, r.core_type, 0, 1)
            add(e, r.core_type, 0, -1)
    for t, dp in disp.items():
        inp = [end[p] for p in preds.get(t, ()) if p in end]
        ready = max(inp) if inp else dp
        a, b = max(w0, min(ready, w1)), max(w0, min(dp, w1))
        if b > a:
            for ty in types_of[t]:
                add(a, ty, 1, 1)
                add(b, ty, 1, -1)
    times = sorted(set(delta) | {w0, w1})
    running = {ty: 0 for ty in types}
    waiting = {ty: 0 for ty in types}
    out.engines = {ty: 0 for ty in types}
    steps: dict[str, tuple[list[int], list[int]]] = {ty: ([], []) for ty in types}
    for a, b in zip(times, times[1:]):
        for ty, (dr, dw) in delta.get(a, {}).items():
            running[ty] += dr
            waiting[ty] += dw
        for ty in types:
            steps[ty][0].append(a)
            steps[ty][1].append(waiting[ty])
        ov = {ty: k[ty] - running[ty] > 0 and waiting[ty] > 0 for ty in types}
        for ty in types:
            if ov[ty]:
                out.engines[ty] += b - a
        if types and all(ov.values()):
            out.all_overhead += b - a
        work = [ty for ty in types if waiting[ty] > 0]
        if work and all(k[ty] - running[ty] > 0 for ty in work):
            out.has_overhead += b - a
    heads, tails = [], []
    by_core: dict[int, list] = {}
    for r in rows:
        by_core.setdefault(r.core, []).append(r)
    _switch(out, by_core, steps, w0, w1)
    for lst in by_core.values():
        lst.sort(key=lambda r: r.start)
        last_end = None
        for r in lst:
            head = r.start - r.dispatch
            if last_end is not None:
                head = min(head, r.start - last_end)
            heads.append(max(0, head))
            tails.append(max(0, r.finish - r.end))
            last_end = r.end
    out.head = Distribution(sorted(heads))
    out.tail = Distribution(sorted(tails))
    out.path = _path(preds, start, end, finish, disp, w0)
    return out


def _path(preds, start, end, finish, disp, w0) -> dict[str, int] | None:
    if not finish:
        return None
    cur = max(finish, key=lambda t: finish[t])
    last = finish[cur]
    sched = exe = hops = 0
    first = start.get(cur, w0)
    seen = set()
    while cur not in seen:            # deps.json is a DAG; a malformed one must not loop
        seen.add(cur)
        inp = [(end[p], p) for p in preds.get(cur, ()) if p in end]
        exe += max(0, end[cur] - start[cur])
        if not inp:
            sched += max(0, start[cur] - disp[cur])
            first = min(first, start[cur])
            break
        pend, p = max(inp)
        sched += max(0, start[cur] - pend)
        hops += 1
        cur = p
        first = min(first, start[cur])
    return {"hops": hops, "span": last - first, "exec": exe, "sched": sched}


def _switch(out: Overhead, by_core: dict[int, list], steps, w0: int, w1: int) -> None:
    def ready_at(ty: str, t: int) -> int:
        ts, cum = steps.get(ty, ([], []))
        if not ts or t < ts[0]:
            return 0
        return cum[bisect_right(ts, t) - 1]

    for core, lst in by_core.items():
        ty = lst[0].core_type
        recs = sorted((r.start, r.end, r.dispatch) for r in lst)
        total = 0
        for (_, a_end, _), (b_start, _, b_disp) in zip(recs, recs[1:]):
            gap = min(b_start, w1) - max(a_end, w0)
            if gap <= 0 or not b_disp < a_end:
                continue
            total += gap
            out.switch_events.setdefault(ty, []).append(gap)
            ga, gb = max(a_end, w0), min(b_start, w1)
            ts = steps.get(ty, ([], []))[0]
            pts = sorted({ga, gb, *(x for x in ts if ga < x < gb)})
            split = out.switch_split.setdefault(ty, [0, 0])
            for aa, bb in zip(pts, pts[1:]):
                split[0 if ready_at(ty, aa) > 0 else 1] += bb - aa
        out.switch_cores.setdefault(ty, {})[core] = total
