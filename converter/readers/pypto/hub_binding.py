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

from typing import Any

from ...model import INVENTED_TIMES, MARKER, SOURCE_BINDING, UNTRUSTED_FLOW, Trace

DEVICE_TASK = "deviceTask"              # own arg of a HUB execution bound to its device task
UNTRUSTED_PREDECESSORS = "untrustedPredecessors"   # own arg of a marked flow's destination
WHY_OTHER = ("PyPTO's HUB seqNo quirk: it bound this dependency to the HUB execution of "
             "device task {n}; the execution of device task {k} is not in {what}")
WHY_LATE = "the dependency ends after its successor starts (not causal as recorded)"


def _key(s) -> tuple[Any, Any] | None:
    a = s.args
    if not a:
        return None
    return (a.get("seqNo"), a.get("taskId"))


def bind_hub_executions(trace: Trace, where: str) -> dict[str, int]:
    """Re-bind and mark the run's flows (see the module docstring); ``where`` names what the
    run was read from, for the marks.  Returns the counts: ``hub_flows_rebound``,
    ``hub_executions_bound``, ``flows_untrusted``."""
    slices = trace.slices
    flows = trace.flows
    counts = {"hub_executions_bound": 0, "hub_flows_rebound": 0, "flows_untrusted": 0}
    if not flows:
        return counts
    # The graph by task key, as PyPTO bound it (it binds by key).
    preds: dict[tuple, list[tuple]] = {}
    succs: dict[tuple, list[tuple]] = {}
    keys_used: set[tuple] = set()
    for f in flows:
        ks, kd = _key(slices[f.src]), _key(slices[f.dst])
        if ks is None or kd is None:
            continue
        succs.setdefault(ks, []).append(kd)
        preds.setdefault(kd, []).append(ks)
        keys_used.add(ks)
        keys_used.add(kd)
    # HUB executions recorded with seqNo 0, by taskId; the keys they may belong to.
    execs: dict[Any, list[int]] = {}
    real_of: dict[tuple, int] = {}          # key -> its one recorded (non-fake) slice
    for i, s in enumerate(slices):
        k = _key(s)
        if k is None or s.cat == INVENTED_TIMES:
            continue
        if s.cat == MARKER and k[0] == 0:
            execs.setdefault(k[1], []).append(i)
        real_of.setdefault(k, i)
    candidates: dict[Any, list[tuple]] = {}
    for k in keys_used:
        if k[1] in execs:
            candidates.setdefault(k[1], []).append(k)
    colliding = {tid for tid, ks in candidates.items() if len(ks) > 1}
    if not colliding:
        return _mark_late(trace, counts, {})
    for tid in colliding:
        for k in candidates[tid]:
            real_of.pop(k, None)                # not one execution: not a known time
    owner: dict[int, tuple] = {}                # execution slice -> the key it belongs to
    exec_of: dict[tuple, int] = {}
    for tid in sorted(colliding):
        es = execs[tid]
        ks = sorted(candidates[tid])
        window = {}
        for k in ks:
            lo = max((slices[real_of[p]].end for p in preds.get(k, ()) if p in real_of),
                     default=None)
            hi = min((slices[real_of[q]].ts for q in succs.get(k, ()) if q in real_of),
                     default=None)
            window[k] = (lo, hi)
        fits = {e: {k for k in ks if (window[k][0] is None or slices[e].ts >= window[k][0])
                    and (window[k][1] is None or slices[e].end <= window[k][1])} for e in es}
        every_key_ran = len(es) >= len(ks)
        changed = True
        while changed:
            changed = False
            for e, ok in fits.items():
                if e not in owner and len(ok) == 1:
                    (k,) = ok
                    owner[e] = k
                    exec_of[k] = e
                    for other in fits.values():
                        other.discard(k)
                    changed = True
            if every_key_ran and not changed:
                for k in ks:
                    if k in exec_of:
                        continue
                    able = [e for e, ok in fits.items() if e not in owner and k in ok]
                    if len(able) == 1:
                        owner[able[0]] = k
                        exec_of[k] = able[0]
                        for other in fits.values():
                            other.discard(k)
                        changed = True
    for e, k in owner.items():
        slices[e].args[DEVICE_TASK] = k[0]
    counts["hub_executions_bound"] = len(owner)
    why: dict[int, str] = {}                    # flow index -> why it is marked
    rebound = 0
    for fi, f in enumerate(flows):
        old = (f.src, f.dst)
        ends = []
        for end in ("src", "dst"):
            i = getattr(f, end)
            k = _key(slices[i])
            if k is None or k[1] not in colliding:
                continue
            e = exec_of.get(k)
            if e is not None:
                setattr(f, end, e)
            elif i in owner and owner[i] != k:      # PyPTO's pick belongs elsewhere
                ends.append(WHY_OTHER.format(n=owner[i][0], k=k[0], what=where))
        if (f.src, f.dst) != old:
            rebound += 1
            f.args = {**(f.args or {}), SOURCE_BINDING: list(old)}
        if ends:
            why[fi] = ends[0]
    counts["hub_flows_rebound"] = rebound
    return _mark_late(trace, counts, why)


def _mark_late(trace: Trace, counts: dict[str, int], why: dict[int, str]) -> dict[str, int]:
    """Mark the flows in ``why`` and every flow that ends after its successor starts."""
    slices = trace.slices
    for fi, f in enumerate(trace.flows):
        reason = why.get(fi)
        src, dst = slices[f.src], slices[f.dst]
        if reason is None and src.end > dst.ts and src.cat != INVENTED_TIMES:
            reason = WHY_LATE
        if reason is None:
            continue
        f.name = UNTRUSTED_FLOW
        f.args = {**(f.args or {}), "why": reason, "from": src.name, "to": dst.name}
        own = dst.args if dst.args is not None else {}
        dst.args = own
        listed = own.get(UNTRUSTED_PREDECESSORS)
        own[UNTRUSTED_PREDECESSORS] = src.name if not listed else f"{listed}, {src.name}"
        counts["flows_untrusted"] += 1
    return counts
