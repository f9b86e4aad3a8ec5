"""The source tool's own idle intervals against tracecvt's idle time of the same lanes.

A reader declares a lane whose slices are its tool's idle intervals of some lanes
(``model.SOURCE_IDLE``: msprof's overlap analysis "Free" of a device's streams).  Over the
window both cover (the first to the last instant of either), tracecvt's idle time is the time
no declared lane has a slice: the intersection of those lanes' bubbles.  The summary gives
both totals, the time both call idle and the agreement (that time over the larger total), so a
user sees whether the tool's overlap figures and tracecvt's bubbles describe the same gaps.
"""

from __future__ import annotations

from typing import Any

from ..model import SOURCE_IDLE, Trace
from .bubbles import us

Intervals = list[tuple[int, int]]


def _union(spans: Intervals) -> Intervals:
    out: Intervals = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _total(spans: Intervals) -> int:
    return sum(b - a for a, b in spans)


def _complement(busy: Intervals, lo: int, hi: int) -> Intervals:
    out: Intervals = []
    at = lo
    for a, b in busy:
        if a > at:
            out.append((at, min(a, hi)))
        at = max(at, b)
    if at < hi:
        out.append((at, hi))
    return out


def _intersection(x: Intervals, y: Intervals) -> int:
    i = j = total = 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if b > a:
            total += b - a
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def compare_source_idle(trace: Trace) -> list[dict[str, Any]]:
    """One row per declared idle lane that has slices and whose lanes have work."""
    decls = trace.meta.extra.get(SOURCE_IDLE) if type(trace.meta.extra) is dict else None
    if not isinstance(decls, list) or not decls:
        return []
    n = len(trace.tracks)
    wanted = {t for d in decls if isinstance(d, dict)
              for t in [d.get("lane"), *(d.get("lanes") or [])] if type(t) is int and 0 <= t < n}
    spans: dict[int, Intervals] = {t: [] for t in wanted}
    for s in trace.slices:
        if s.track in spans and s.dur > 0:
            spans[s.track].append((s.ts, s.ts + s.dur))
    out = []
    for d in decls:
        lane, lanes = d.get("lane"), [t for t in d.get("lanes") or () if t in spans]
        if lane not in spans or not lanes:
            continue
        free = _union(spans[lane])
        busy = _union([iv for t in lanes for iv in spans[t]])
        if not free or not busy:
            continue
        lo, hi = min(free[0][0], busy[0][0]), max(free[-1][1], busy[-1][1])
        idle = _complement(busy, lo, hi)
        source, ours, both = _total(free), _total(idle), _intersection(free, idle)
        out.append({
            "lane": trace.path(lane),
            "lanes": len(lanes),
            "window_us": us(hi - lo),
            "source_idle_us": us(source),
            "tracecvt_idle_us": us(ours),
            "both_idle_us": us(both),
            "agreement_pct": round(100.0 * both / max(source, ours), 2) if max(source, ours)
            else 100.0,
        })
    return out
