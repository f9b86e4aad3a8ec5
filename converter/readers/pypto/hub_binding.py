"""PyPTO's HUB seqNo quirk: bind each HUB execution to the device task it belongs to.

In multi-device-task SIM runs the cost model records every HUB task with seqNo 0 (format
reference 5.6), so the HUB tasks of device tasks 0..n-1 share the keys ``(0, taskId)``.
PyPTO's task table keeps the last execution per key, draws the other device tasks' HUB rows as
fake tasks, and binds every dependency of a HUB key to whichever execution it kept: seqNo 0's
first-level tasks then depend on a HUB that ran in a later device task (the arrow ends before
it starts), and seqNo 0's last tasks feed a later device task's end marker.

The task graph and the execution times decide where each execution belongs: an execution can
be the HUB task ``(N, taskId)`` only if it starts after every recorded predecessor of that
task ends and ends before every recorded successor starts.  Executions with one such device
task are bound to it (and that task is then taken), until nothing changes.  Then:

* a dependency of a bound key is re-bound to that key's execution (``SOURCE_BINDING`` keeps
  where PyPTO put it, for the check against its own figures); the execution gets
  ``args.deviceTask``;
* a dependency PyPTO bound to an execution that belongs to another device task, or one that
  still ends after its successor starts, is marked (``UNTRUSTED_FLOW``, args saying why, and
  ``untrustedPredecessors`` on the successor); the analyses do not follow marked flows.

The raw path holds every execution (the ones PyPTO dropped are extra slices), so everything
is determined there; the merged file holds one execution per key, and seqNo 0's own HUB
executions are simply not in it.
"""

from __future__ import annotations

from itertools import compress, count
from operator import attrgetter
from typing import Any

import numpy as np

from ...model import (INVENTED_TIMES, MARKER, SOURCE_BINDING, UNTRUSTED_FLOW,
                      UNTRUSTED_PREDECESSORS, Trace)
from ...slice_columns import flow_ends, kept_columns

DEVICE_TASK = "deviceTask"              # own arg of a HUB execution bound to its device task
WHY_OTHER = ("PyPTO's HUB seqNo quirk: it bound this dependency to the HUB execution of "
             "device task {n}; the execution of device task {k} is not in {what}")
WHY_LATE = "the dependency ends after its successor starts (not causal as recorded)"
_CAT = attrgetter("cat")
_NEVER = 1 << 64                        # past any time


def _key(s) -> tuple[Any, Any] | None:
    a = s.args
    if not a:
        return None
    return (a.get("seqNo"), a.get("taskId"))


def bind_hub_executions(trace: Trace, where: str) -> dict[str, int]:
    """Re-bind and mark the run's flows (see the module docstring); ``where`` names what the
    run was read from, for the marks.  Returns the counts: ``hub_flows_rebound``,
    ``hub_executions_bound``, ``flows_untrusted``, ``flows_out_of_order`` (after re-binding)."""
    slices = trace.slices
    flows = trace.flows
    counts = {"hub_executions_bound": 0, "hub_flows_rebound": 0, "flows_untrusted": 0,
              "flows_out_of_order": 0}
    if not flows:
        return counts
    # HUB executions recorded with seqNo 0, by taskId, and the slices PyPTO drew for the
    # HUB rows of every device task (those executions, and fake tasks of the same taskId).
    odd = _odd(slices)
    execs: dict[Any, list[int]] = {}
    for i in odd:
        s = slices[i]
        if s.cat == MARKER:
            k = _key(s)
            if k is not None and k[0] == 0:
                execs.setdefault(k[1], []).append(i)
    if not execs:
        return _mark_late(trace, counts, {})
    candidates: dict[Any, set[tuple]] = {}
    node_of: dict[int, tuple] = {}          # slice PyPTO bound a HUB key to -> that key
    for i in odd:
        k = _key(slices[i])
        if k is not None and k[1] in execs:
            candidates.setdefault(k[1], set()).add(k)
            node_of[i] = k
    colliding = {tid for tid, ks in candidates.items() if len(ks) > 1}
    node_of = {i: k for i, k in node_of.items() if k[1] in colliding}
    if not node_of:
        return _mark_late(trace, counts, {})
    # The recorded (non-fake, non-colliding) neighbours of every HUB key, as PyPTO bound them
    # (it binds by key): the latest predecessor end and the earliest successor start.
    get = node_of.get
    cols = kept_columns(slices)
    ends = flow_ends(flows, len(slices)) if cols is not None else None
    if ends is not None:
        invented = [i for i in odd if slices[i].cat == INVENTED_TIMES]
        lo, hi = _windows(ends, cols, node_of, invented)
    else:
        lo, hi = {}, {}
        for fi in [fi for fi, f in enumerate(flows) if f.src in node_of or f.dst in node_of]:
            f = flows[fi]
            ks, kd = get(f.src), get(f.dst)
            if kd is None:
                d = slices[f.dst]
                if d.cat != INVENTED_TIMES and d.ts < hi.get(ks, d.ts + 1):
                    hi[ks] = d.ts
            elif ks is None:
                p = slices[f.src]
                end = p.ts + p.dur
                if p.cat != INVENTED_TIMES and end > lo.get(kd, end - 1):
                    lo[kd] = end
    owner: dict[int, tuple] = {}                # execution slice -> the key it belongs to
    exec_of: dict[tuple, int] = {}
    for tid in sorted(colliding):
        es = execs[tid]
        ks = sorted(candidates[tid])
        win = [(k, lo.get(k, -1), hi.get(k, _NEVER)) for k in ks]
        fits = {}
        for e in es:
            s = slices[e]
            start, end = s.ts, s.ts + s.dur
            fits[e] = {k for k, a, b in win if a <= start and end <= b}

        def take(e: int, k: tuple) -> None:
            """Execution ``e`` is key ``k``'s: no other execution can be."""
            owner[e] = k
            exec_of[k] = e
            for other in fits.values():
                other.discard(k)

        every_key_ran = len(es) >= len(ks)
        changed = True
        while changed:
            changed = False
            for e, ok in fits.items():
                if e not in owner and len(ok) == 1:
                    take(e, next(iter(ok)))
                    changed = True
            if every_key_ran and not changed:
                for k in ks:
                    if k in exec_of:
                        continue
                    able = [e for e, ok in fits.items() if e not in owner and k in ok]
                    if len(able) == 1:
                        take(able[0], k)
                        changed = True
    for e, k in owner.items():
        slices[e].args[DEVICE_TASK] = k[0]
    counts["hub_executions_bound"] = len(owner)
    why: dict[int, str] = {}                    # flow index -> why it is marked
    rebound = 0
    bound = exec_of.get
    # a flow changes only at an end whose key is bound or that an execution of another key
    # is: the others are passed over (most of them, on a run of many device tasks)
    moved = {i for i, k in node_of.items() if k in exec_of or i in owner}
    if ends is not None:                # (the flows with an end there, a column at a time)
        at = np.zeros(len(slices), dtype=bool)
        at[np.fromiter(moved, dtype=np.int64, count=len(moved))] = True
        touching = np.flatnonzero(at[ends[0]] | at[ends[1]]).tolist()
    else:
        touching = [fi for fi, f in enumerate(flows) if f.src in moved or f.dst in moved]
    for fi in touching:
        f = flows[fi]
        src, dst = f.src, f.dst
        if src not in moved and dst not in moved:
            continue
        new_src, new_dst = src, dst
        reason = None
        k = get(src)
        if k is not None:
            e = bound(k)
            if e is not None:
                new_src = e
            elif src in owner and owner[src] != k:      # PyPTO's pick belongs elsewhere
                reason = WHY_OTHER.format(n=owner[src][0], k=k[0], what=where)
        k = get(dst)
        if k is not None:
            e = bound(k)
            if e is not None:
                new_dst = e
            elif reason is None and dst in owner and owner[dst] != k:
                reason = WHY_OTHER.format(n=owner[dst][0], k=k[0], what=where)
        if new_src != src or new_dst != dst:
            rebound += 1
            f.src, f.dst = new_src, new_dst
            if ends is not None:
                ends[0][fi], ends[1][fi] = new_src, new_dst
            f.args = {**f.args, SOURCE_BINDING: [src, dst]} if f.args else \
                {SOURCE_BINDING: [src, dst]}
        if reason is not None:
            why[fi] = reason
    counts["hub_flows_rebound"] = rebound
    return _mark_late(trace, counts, why, None if ends is None else (cols, ends))


def _mark_late(trace: Trace, counts: dict[str, int], why: dict[int, str],
               known: tuple | None = None) -> dict[str, int]:
    """Mark the flows in ``why`` and every flow that ends after its successor starts (a fake
    source's invented times excepted); counts them (``flows_untrusted``) and the late ones
    (``flows_out_of_order``).  ``known``: the slices' columns and the flows' sources and
    destinations, where the caller made them."""
    slices = trace.slices
    flows = trace.flows
    late = _late(slices, flows, known)
    counts["flows_out_of_order"] = len(late)
    marks = dict(why)
    for fi in late:
        if fi not in marks and slices[flows[fi].src].cat != INVENTED_TIMES:
            marks[fi] = WHY_LATE
    for fi, reason in sorted(marks.items()):
        f = flows[fi]
        src, dst = slices[f.src], slices[f.dst]
        f.name = UNTRUSTED_FLOW
        f.args = {**(f.args or {}), "why": reason, "from": src.name, "to": dst.name}
        own = dst.args if dst.args is not None else {}
        dst.args = own
        listed = own.get(UNTRUSTED_PREDECESSORS)
        own[UNTRUSTED_PREDECESSORS] = src.name if not listed else f"{listed}, {src.name}"
    counts["flows_untrusted"] = len(marks)
    return counts


def _late(slices: list, flows: list, known: tuple | None = None) -> list[int]:
    """The flows (by index) whose source ends after their destination starts: a column at
    a time from the slices' kept columns (``split_overlaps`` made them), else one flow at a
    time (a time outside int64).  ``known``: (those columns, the flows' sources and
    destinations), where the caller made them."""
    cols, ends = known if known is not None else (kept_columns(slices), None)
    if ends is None and cols is not None:
        ends = flow_ends(flows, len(slices))
    if ends is None:
        return [fi for fi, f in enumerate(flows)
                if slices[f.src].ts + slices[f.src].dur > slices[f.dst].ts]
    src, dst = ends
    return np.flatnonzero(cols.end[src] > cols.ts[dst]).tolist()


_ODD = frozenset({MARKER, INVENTED_TIMES})


def _odd(slices: list) -> list[int]:
    """The slices (by index) that PyPTO drew for HUB rows or with invented times."""
    try:
        return list(compress(count(), map(_ODD.__contains__, map(_CAT, slices))))
    except TypeError:               # (a category that is no string)
        return [i for i, s in enumerate(slices) if s.cat == MARKER or s.cat == INVENTED_TIMES]


def _windows(ends: list[np.ndarray], cols: Any, node_of: dict[int, tuple],
             invented: list[int]) -> tuple[dict[tuple, int], dict[tuple, int]]:
    """The recorded neighbours of every HUB key (``node_of``: slice -> key), a column at a
    time: the latest end of a predecessor that is no HUB slice, and the earliest start of a
    successor that is none, by key, leaving out the slices with ``invented`` times
    (``cols``: the slices' columns; ``ends``: the flows' sources and destinations)."""
    src, dst = ends
    keys = list(dict.fromkeys(node_of.values()))
    number = dict(zip(keys, count()))
    key_of = np.full(len(cols.ts), -1, dtype=np.int64)
    key_of[np.fromiter(node_of, dtype=np.int64, count=len(node_of))] = np.fromiter(
        map(number.__getitem__, node_of.values()), dtype=np.int64, count=len(node_of))
    fake = np.zeros(len(cols.ts), dtype=bool)
    fake[np.array(invented, dtype=np.int64)] = True
    ks, kd = key_of[src], key_of[dst]
    out = []
    # (into a key from a slice of none: that slice's end, the latest; out of a key into a
    # slice of none: that slice's start, the earliest)
    for mine, other, near, times, pick in ((kd, ks, src, cols.end, np.maximum),
                                           (ks, kd, dst, cols.ts, np.minimum)):
        ok = (mine >= 0) & (other < 0) & ~fake[near]
        k, t = mine[ok], times[near[ok]]
        best = np.zeros(len(keys), dtype=np.int64)
        seen = np.zeros(len(keys), dtype=bool)
        seen[k] = True
        best[k] = t                 # (a value of each key's, then the extreme of them all)
        pick.at(best, k, t)
        out.append({keys[j]: v for j, v in zip(np.flatnonzero(seen).tolist(),
                                                best[seen].tolist())})
    return out[0], out[1]
