"""The figures of the runtime's ``critical_path`` tool, recomputed from the model.

Its definitions (format reference 6.1), in device ticks (ns / ns-per-tick, exact on a2a3 and
a5): a task is its AICore rows folded (first start to last end); its kernel is the name-map
entry of its first used kernel slot (``cid<N>`` unnamed, ``unknown`` without deps.json); a
dependency (unique pred/succ pair, both timed) is kept when the predecessor ends by the
successor's start + ``tol`` ticks and starts strictly earlier; a task's core predecessor is
the latest-ending earlier task on the core where it first started.  Static CPM = longest
duration-weighted chain of kept edges; the observed path walks back from the last-ending task
through whichever of its kept predecessors (data-wait) or core predecessor (core-wait) ended
last, stopping at a task with neither (front-gap); a frontier sweep tiles the makespan into
compute and stall.  Ties are broken as the tool breaks them (task order of the records, then
the larger task id as text).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

from .runs import Run

TOL_TICKS = 2
KINDS = ("data-wait", "core-wait", "front-gap")


def kernel_name(func_id: int, function: str, spmd: bool = False) -> str:
    """The tool's kernel name from the reader's function label: the name-map entry, without
    the ``_spmd`` the runtime's labels add to SPMD tasks; ``cid<N>`` for the label of an
    unnamed function (``func_<N>_<letters>``)."""
    if func_id < 0:
        return "unknown"
    if not function or re.fullmatch(rf"func_{func_id}(_[a-z]+)?(_spmd)?", function):
        return f"cid{func_id}"
    if spmd and function.endswith("_spmd"):
        return function[:-5]
    return function


def family(name: str) -> str:
    """The tool's kernel family: the name without a trailing ``_<n>`` and/or ``_aic``/``_aiv``."""
    return re.sub(r"(_\d+)?(_(?:aic|aiv))?$", "", name)


@dataclass
class PathTask:
    task: int
    name: str
    dur: int                      # ns
    compute: int
    stall: int
    kind: str


@dataclass
class CpmResult:
    ns_per_tick: Fraction
    tasks: int
    kept_edges: int
    makespan: int                 # ns
    cpm_len: int
    cpm_path: list[int]
    path: list[PathTask] = field(default_factory=list)
    compute: int = 0
    stall: int = 0
    stall_by_kind: dict[str, int] = field(default_factory=dict)

    def ticks(self, ns: int) -> Fraction:
        return Fraction(ns) / self.ns_per_tick

    def families(self) -> list[tuple[str, int, int, int]]:
        """(family, compute, stall, tasks on the path), most compute first (ties: first seen)."""
        fam: dict[str, list[int]] = {}
        for t in self.path:
            row = fam.setdefault(family(t.name), [0, 0, 0])
            row[0] += t.compute
            row[1] += t.stall
            row[2] += 1
        return [(k, v[0], v[1], v[2])
                for k, v in sorted(fam.items(), key=lambda kv: -kv[1][0])]


def compute_cpm(run: Run, tol_ticks: int = TOL_TICKS) -> CpmResult:
    tol = tol_ticks * run.ns_per_tick
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    kern: dict[int, tuple[int, int, str]] = {}        # task -> (aic first, func id, function)
    by_core: dict[int, list[tuple[int, int, int]]] = {}
    for r in sorted(run.rows, key=lambda r: (r.core, r.start, r.end)):   # the records' order
        t = r.task
        if t not in start or r.start < start[t]:
            start[t] = r.start
        if t not in end or r.end > end[t]:
            end[t] = r.end
        rank = (0 if r.core_type == "aic" else 1, r.func_id, r.function, r.spmd)
        if r.func_id >= 0 and (t not in kern or rank < kern[t]):
            kern[t] = rank
        by_core.setdefault(r.core, []).append((r.start, r.end, t))
    name = {t: kernel_name(*kern[t][1:]) if t in kern else "unknown" for t in start}
    hb: dict[int, list[int]] = {}
    kept = 0
    for p, s in run.edges:
        if p == s or p not in start or s not in start:
            continue
        if end[p] <= start[s] + tol and start[p] < start[s]:
            hb.setdefault(s, []).append(p)
            kept += 1
    core_prev: dict[int, tuple[int, int]] = {}
    for sl in by_core.values():
        sl.sort(key=lambda x: (x[0], x[1], str(x[2])))
        best_end = best_task = None
        for st, en, t in sl:
            if best_task is not None and best_task != t and best_end <= st + tol \
                    and st == start[t]:
                cur = core_prev.get(t)
                if cur is None or best_end > cur[1]:
                    core_prev[t] = (best_task, best_end)
            if best_end is None or en > best_end:
                best_end, best_task = en, t
    order = _topo(start, hb)
    finish: dict[int, int] = {}
    choice: dict[int, int | None] = {}
    for v in order:
        best_p, best_f = None, 0
        for p in hb.get(v, ()):
            if finish[p] > best_f:
                best_f, best_p = finish[p], p
        finish[v] = best_f + end[v] - start[v]
        choice[v] = best_p
    sink = max(finish, key=lambda t: finish[t])
    cpm_path: list[int] = []
    v: int | None = sink
    while v is not None:
        cpm_path.append(v)
        v = choice[v]
    cpm_path.reverse()
    t0 = min(start.values())
    res = CpmResult(run.ns_per_tick, len(start), kept, max(end.values()) - t0, finish[sink],
                    cpm_path)
    frontier = t0
    for t, kind in _observed(start, end, hb, core_prev, tol):
        s, e = start[t], end[t]
        gap = max(0, s - frontier)
        eff = max(0, e - max(s, frontier))
        res.path.append(PathTask(t, name[t], e - s, eff, gap, kind))
        res.stall_by_kind[kind] = res.stall_by_kind.get(kind, 0) + gap
        res.compute += eff
        res.stall += gap
        frontier = max(frontier, e)
    return res


def _topo(start: dict[int, int], hb: dict[int, list[int]]) -> list[int]:
    indeg = {t: 0 for t in start}
    succ: dict[int, list[int]] = {}
    for s, preds in hb.items():
        for p in preds:
            succ.setdefault(p, []).append(s)
            indeg[s] += 1
    q = deque(t for t in start if indeg[t] == 0)
    order = []
    while q:
        u = q.popleft()
        order.append(u)
        for v in succ.get(u, ()):
            indeg[v] -= 1
            if indeg[v] == 0:
                q.append(v)
    return order


def _observed(start, end, hb, core_prev, tol) -> list[tuple[int, str]]:
    v: int | None = max(end, key=lambda t: end[t])
    walk: list[tuple[int, str]] = []
    seen: set[int] = set()
    while v is not None and v not in seen:
        seen.add(v)
        cand = []
        for p in hb.get(v, ()):
            if end[p] <= start[v] + tol and start[p] < start[v]:
                cand.append((end[p], str(p), "data-wait", p))
        cp = core_prev.get(v)
        if cp is not None and cp[1] <= start[v] + tol and start.get(cp[0], start[v]) < start[v]:
            cand.append((cp[1], str(cp[0]), "core-wait", cp[0]))
        if not cand:
            walk.append((v, "front-gap"))
            break
        cand.sort()
        _, _, kind, v2 = cand[-1]
        walk.append((v, kind))
        v = v2
    walk.reverse()
    return walk
