"""``deps.json`` edges as flows: one per edge row, not deduplicated (format reference 3.4).

Source: the predecessor's worker slice that ends last (a dummy or predicated-skip task: its
scheduler marker; an allocation: its orchestrator slice).  Destination: the successor's worker
slice that starts first (or its marker).  An edge without both ends is not drawn, and one
warning line per reason says how many and which.
"""

from __future__ import annotations

from ...model import Trace
from .deps import Deps
from .lanes import Built
from .names import token


def add_dependency_flows(trace: Trace, deps: Deps, built: Built, level: int) -> int:
    slices = trace.slices
    last: dict[int, int] = {}
    first: dict[int, int] = {}
    for tid, ids in built.rows_of.items():
        last[tid] = max(ids, key=lambda i: (slices[i].ts + slices[i].dur, -i))
        first[tid] = min(ids, key=lambda i: (slices[i].ts, i))
    for tid, i in built.markers.items():
        last.setdefault(tid, i)
        first.setdefault(tid, i)
    missing: dict[str, list[str]] = {}
    drawn = 0
    add = trace.add_flow
    for p, s, args in deps.edges:
        src, dst = last.get(p), first.get(s)
        if src is None or dst is None:
            tid = p if src is None else s
            why = _why(tid, deps, level)
            missing.setdefault(why, []).append(f"{token(p)}->{token(s)} ({token(tid)})")
            continue
        add(src, dst, "dependency", args)
        drawn += 1
    for why, edges in missing.items():
        shown = ", ".join(edges[:5]) + (", …" if len(edges) > 5 else "")
        trace.warn(f"{deps.path}: {len(edges)} of {len(deps.edges)} edges not drawn: {why} "
                   f"({shown})")
    return drawn


def _why(tid: int, deps: Deps, level: int) -> str:
    """Why task ``tid`` has no slice, as a reason shared by all such edges."""
    info = deps.tasks.get(tid)
    if info is None:
        if level < 4:
            return ("an end is not a task of deps.json (an allocation: its orchestrator "
                    "record needs level 4)")
        return "an end is in neither deps.json tasks nor the records"
    if all(k < 0 for k in info[0]):
        if level < 3:
            return "an end is a dummy task (its marker needs level 3 or more)"
        return "an end is a dummy task without a dummy_task record"
    return "an end has no AICore row or marker in the records"
