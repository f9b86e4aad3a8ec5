"""AICPU scheduler phases with the ready-queue counters (format reference 2.6, 5.6), and the
orchestrators: device (2.7), host with its uploads and host phase records (2.7, 2.8)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

import numpy as np

from ...model import GROUP, INT64_END, INT64_MIN, LANE, TASK_ID, Slice, Trace
from .deps import Deps
from .lanes import Built
from .names import task_function, token
from .records import Records

SCHEDULER = "AICPU Scheduler"
KNOWN_KINDS = {"complete", "async_poll", "dispatch", "release", "dummy", "early_dispatch",
               "drain", "graph_prepare", "resolve", "drain_prepare", "drain_publish",
               "dummy_task", "predicated_skip"}
MARKER_KINDS = ("dummy_task", "predicated_skip")
QUEUE_KINDS = ("complete", "dispatch")
_QUEUES = ("AIC", "AIV", "MIX")
_INT = {int}
_SUBMITS = ("submit_task", "alloc_tensors", "graph_submit")
_HOST_TIMES = attrgetter("start_host_ns", "end_host_ns")
_START, _END = attrgetter("start_cycles"), attrgetter("end_cycles")


def _int(v: Any) -> int | None:
    return v if type(v) is int and INT64_MIN <= v < INT64_END else None


def add_scheduler_phases(trace: Trace, rec: Records, deps: Deps | None,
                         names: dict[int, str], ns: Callable[[int], int], built: Built,
                         order: int) -> dict[str, Any]:
    """One nesting lane per AICPU scheduler thread with every record as a slice (sorted by
    start: the file is in emission order), markers as zero-length slices; ready-queue depth
    counters from ``shared_at_end`` of complete/dispatch records.  Returns counts."""
    group = trace.add_track(SCHEDULER, built.root, GROUP, order,
                            "the AICPU scheduler loop per thread: outer phases, inner phases "
                            "nested, dummy_task / predicated_skip markers (zero length); "
                            "gaps are idle iterations (simpler writes nothing for them)")
    kinds: dict[str, int] = {}
    samples: list[tuple[int, int, list[int]]] = []
    bad_queue = 0
    slices = trace.slices
    rank = 0
    lo, hi = INT64_MIN, INT64_END
    for thread, records in enumerate(rec.sched or ()):
        if not records:
            continue
        lane = trace.add_track(f"Sched_{thread}", group, LANE, rank)
        rank += 1
        records = sorted(records, key=_END, reverse=True)
        records.sort(key=_START)                            # by start, the longer first
        for r in records:
            kind = r.kind
            if type(kind) is not str or not kind:
                kind = "?"
            kinds[kind] = kinds.get(kind, 0) + 1
            s = ns(r.start_cycles)
            dur = ns(r.end_cycles) - s
            args: dict[str, Any] = {"phase": kind}
            v = r.loop_iter
            if type(v) is int and lo <= v < hi:
                args["loop_iter"] = v
            tp = r.tasks_processed
            if type(tp) is int and lo <= tp < hi:
                args["tasks_processed"] = tp
            else:
                tp = ""
            if kind == "dispatch":
                for k in ("pop_hit", "pop_miss"):
                    v = getattr(r, k)
                    if type(v) is int and lo <= v < hi:
                        args[k] = v
            elif kind in MARKER_KINDS:
                tid = r.task_id
                if type(tid) is int and 0 <= tid < 1 << 64:
                    tok = token(tid)
                    args[TASK_ID] = tid
                    args["task"] = tok
                    if kind == "dummy_task":
                        name = f"dummy({tok})"
                    else:
                        args["function"] = task_function(tid, deps, names)
                        name = f"{args['function']}({tok})"
                    built.markers.setdefault(tid, len(slices))
                    slices.append(Slice(lane, s, dur, name, kind, args))
                    continue
            slices.append(Slice(lane, s, dur, f"{kind}({tp})", "scheduler", args))
            if kind in QUEUE_KINDS:
                q = r.shared_at_end
                if type(q) is list and len(q) == 3 and set(map(type, q)) == _INT \
                        and min(q) >= 0 and max(q) < 1 << 53:
                    samples.append((s + dur, thread, q))
                else:
                    bad_queue += 1
    unknown = {k: n for k, n in kinds.items() if k not in KNOWN_KINDS}
    if unknown:
        listed = ", ".join(f"{k} ({n})" for k, n in sorted(unknown.items()))
        trace.warn(f"{rec.path}: scheduler phase kinds this reader does not know, kept as "
                   f"drawn: {listed}")
    if bad_queue:
        trace.warn(f"{rec.path}: {bad_queue} complete/dispatch records without a valid "
                   "shared_at_end [AIC, AIV, MIX]: no ready-queue sample from them")
    if samples:
        _queue_counters(trace, group, samples)
    return {"kinds": kinds, "queue_samples": len(samples)}


def _queue_counters(trace: Trace, group: int, samples: list[tuple[int, int, list[int]]]) -> None:
    """One counter per queue, a sample where its depth changes (a value holds until the next
    sample; of records ending at the same ns, the last one's depth, by thread)."""
    counters = [trace.add_counter(f"ready queue {q}", group, "tasks", 100 + k,
                                  f"global ready-queue depth of {q} tasks: shared_at_end of "
                                  "every complete/dispatch record, sampled where it changes")
                for k, q in enumerate(_QUEUES)]
    stamps = [x[0] for x in samples]
    try:
        times = np.array(stamps, dtype=np.int64)
        at_time = None
    except OverflowError:                       # past int64: their ranks, in the same order
        at_time = sorted(set(stamps))
        rank = {t: k for k, t in enumerate(at_time)}
        times = np.array([rank[t] for t in stamps], dtype=np.int64)
    # By time, then thread (stably); the last sample of each time; where the depth changes.
    order = np.lexsort((np.array([x[1] for x in samples], dtype=np.int64), times))
    times = times[order]
    depths = np.array([x[2] for x in samples], dtype=np.int64)[order]
    last = np.append(times[1:] != times[:-1], True)
    times, depths = times[last], depths[last]
    for k, c in enumerate(counters):
        v = depths[:, k]
        change = np.append(True, v[1:] != v[:-1])
        kept = times[change].tolist()
        c.ts.extend(kept if at_time is None else map(at_time.__getitem__, kept))
        c.values.extend(v[change].tolist())


def add_device_orchestrator(trace: Trace, rec: Records, deps: Deps | None,
                            ns: Callable[[int], int], built: Built, order: int) -> int:
    """``aicpu_orchestrator_phases``: a lane per orchestrator thread, ``submit(<task>)`` per
    record, ``alloc(<task>)`` for alloc_tensors records (2.7)."""
    return _orchestrator(trace, rec.orch or [], deps, built, order, "AICPU Orchestrator",
                         "Orch", attrgetter("start_cycles", "end_cycles"), ns,
                         "submit_task() / alloc_tensors() calls of the device orchestrator")[0]


def add_host_orchestrator(trace: Trace, rec: Records, deps: Deps | None,
                          host: Callable[[int], int], built: Built, order: int,
                          host_phases: list[dict[str, Any]]) -> int:
    """``host_orchestrator_phases`` (host ns mapped onto the device timeline), the
    ``host_device_uploads`` lane and the host phase records."""
    n, group = _orchestrator(trace, rec.host_orch or [], deps, built, order,
                             "Host Orchestrator", "Host", _HOST_TIMES,
                             host, "host_build_graph submits on the host (host ns mapped "
                             "onto the device timeline through the clock anchors)")
    if rec.uploads or host_phases:
        if group is None:
            group = trace.add_track("Host Orchestrator", built.root, GROUP, order)
        if rec.uploads:
            lane = trace.add_track("H2D", group, LANE, 50, "host -> device uploads",
                                   nesting=False)
            for u in rec.uploads:
                ph = u.phase
                span = _span(built, host, u.start_host_ns, u.end_host_ns)
                if span is None:
                    continue
                args = {"bytes": u.detail} if _int(u.detail) is not None else None
                trace.add_slice(lane, *span, ph if isinstance(ph, str) else "upload",
                                "host_h2d", args)
        lanes: dict[Any, int] = {}
        for r in sorted(host_phases, key=lambda r: (r["start_ns"], -r["end_ns"])):
            tid = r.get("tid")
            key = tid if _int(tid) is not None else None
            lane = lanes.get(key)
            if lane is None:
                lane = lanes[key] = trace.add_track(
                    f"Host thread {key}" if key is not None else "Host thread", group, LANE,
                    60 + len(lanes), "host_phase_records.jsonl: bind segments and "
                    "orchestrator operations of the host pass")
            span = _span(built, host, r["start_ns"], r["end_ns"])
            if span is None:
                continue
            args: dict[str, Any] = {}
            detail = _int(r.get("detail"))
            if detail is not None:
                args["detail"] = detail
                if r["phase"] in _SUBMITS and 0 <= detail < 1 << 64:
                    args["task"] = token(detail)    # detail is the task id (2.8)
            trace.add_slice(lane, *span, r["phase"], "host_phase", args or None)
    return n


def _orchestrator(trace: Trace, threads: list, deps: Deps | None, built: Built, order: int,
                  title: str, prefix: str, times: Callable[[Any], tuple[int, int]],
                  to_ns: Callable[[int], int],
                  description: str) -> tuple[int, int | None]:
    """(records drawn, the group track: None when there are no records)."""
    if not any(threads):
        return 0, None
    group = trace.add_track(title, built.root, GROUP, order, description)
    known = deps.tasks if deps is not None else None
    n = 0
    for k, records in enumerate(threads):
        if not records:
            continue
        lane = trace.add_track(f"{prefix}_{k}", group, LANE, k, nesting=False)
        for r in records:
            tid = r.task_id
            span = _span(built, to_ns, *times(r))
            if span is None:
                continue
            s, dur = span
            args: dict[str, Any] = {}
            idx = _int(r.submit_idx)
            if idx is not None:
                args["submit_idx"] = idx
            n += 1
            if not (type(tid) is int and 0 <= tid < 1 << 64):
                trace.add_slice(lane, s, dur, "submit(?)", "orchestrator", args)
                continue
            tok = token(tid)
            args["task"] = tok
            alloc = (known is not None and tid not in known and tid not in built.rows_of
                     and tid not in built.markers)
            if alloc:
                args[TASK_ID] = tid
                i = trace.add_slice(lane, s, dur, f"alloc({tok})", "alloc", args)
                built.markers.setdefault(tid, i)
            else:
                step = r.phase               # pre-June-2026 records: orch_submit, orch_alloc …
                step = step if isinstance(step, str) and step != "orch_submit" else "submit"
                trace.add_slice(lane, s, dur, f"{step}({tok})", "orchestrator", args)
    return n, group


def _span(built: Built, to_ns: Callable[[int], int | None], start: int, end: int
          ) -> tuple[int, int] | None:
    """(ts, dur) of a record on the trace's clock; None, counted in ``built.off_clock``, when
    an end falls outside it."""
    s, e = to_ns(start), to_ns(end)
    if s is None or e is None:
        built.off_clock += 1
        return None
    return s, e - s
