"""Chrome-trace JSON as msprof (``msprof_*.json``) and torch_npu (``trace_view.json``) write it.

Processes and threads are mapped by *name* (the pids are synthetic and change per file);
``ts`` strings become exact integer ns; ``X`` events become slices, ``C`` events counter
tracks, ``s``/``f`` pairs flows bound to the enclosing slice on their thread.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InputError
from ...fileio import load_json_records
from ...model import KERNEL, Trace
from .csvtable import arg_name, canonical, normalize_task_type
from .jsonshape import hkey, number, obj
from .timefmt import UINT32_MAX, event_span, us_to_ns

if TYPE_CHECKING:
    from .layout import Layout

# Processes whose threads hold back-to-back device work (no call stacks).
DEVICE_PROCESSES = {"Ascend Hardware", "HCCL", "Overlap Analysis", "Step Trace",
                    "Task Scheduler", "AI Core Utilization"}
# msprof's own analysis: not raw work, so analyses skip them.
DERIVED_PROCESSES = {"Overlap Analysis"}
TASK_PROCESSES = {"Ascend Hardware", "HCCL"}
# Args that name a series of a counter event rather than carry a value.
_SERIES_KEYS = {"acc_id", "id", "device_id", "core_id"}


def load_events(path: Path) -> tuple[list[dict], dict[str, Any], str | None]:
    """(events, other top-level fields, truncation note or None).

    A file cut short converts the events before the cut and says so; anything else that is
    not JSON is an InputError.
    """
    obj, cut = load_json_records(path, depths=(1, 2))
    note = f"{path}: {cut.describe('events')}" if cut is not None else None
    if isinstance(obj, list):
        return obj, {}, note
    if isinstance(obj, dict) and isinstance(obj.get("traceEvents"), list):
        top = {k: v for k, v in obj.items() if k != "traceEvents"}
        return obj["traceEvents"], top, note
    raise InputError(path, "not a Chrome trace (expected a JSON array or {\"traceEvents\": [...]})")


def device_args(args: dict[str, Any]) -> dict[str, Any]:
    """Device-task args with the same plain names the CSV columns get (``Physic Stream Id``
    and ``Stream Id`` -> ``stream_id``; 4294967295 -> no value)."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        name = canonical(k) or arg_name(k)
        if v == UINT32_MAX:
            v = None
        out[name] = v
    return out


class _Process:
    __slots__ = ("group", "name", "label", "nesting", "derived", "lanes", "series")

    def __init__(self, group: int, name: str, label: str | None):
        self.group = group
        self.name = name
        self.label = label
        self.nesting = name not in DEVICE_PROCESSES
        self.derived = name in DERIVED_PROCESSES
        self.lanes: dict[str, int] = {}
        self.series: dict[tuple, Any] = {}


class ChromeImporter:
    """Imports one or more Chrome-trace files into ``trace``; ``layout`` decides where each
    process's group goes (Host or an NPU group, by the process label) and shares its groups
    and lanes with the CSV tables."""

    def __init__(self, trace: Trace, layout: "Layout"):
        self.trace = trace
        self.layout = layout
        self.processes: dict[tuple[int | None, str], _Process] = {}
        self.task_slices: list[int] = []          # device tasks (Ascend Hardware, HCCL)
        self.lane_process: dict[int, _Process] = {}
        self._flow_ends: dict[tuple, list[tuple[str, int, int, bool]]] = defaultdict(list)
        self.skipped: dict[str, int] = defaultdict(int)
        self.fixed: dict[str, int] = defaultdict(int)

    # -- import ---------------------------------------------------------------------------
    def add_file(self, path: Path, events: list[dict]) -> dict[str, int]:
        names: dict[Any, str] = {}
        labels: dict[Any, str] = {}
        psort: dict[Any, int] = {}
        tnames: dict[tuple, str] = {}
        tsort: dict[tuple, int] = {}
        for e in events:
            if not isinstance(e, dict) or e.get("ph") != "M":
                continue
            a = obj(e.get("args"))
            what = e.get("name")
            pid, tid = hkey(e.get("pid")), hkey(e.get("tid"))
            if what == "process_name":
                names[pid] = str(a.get("name", pid))
            elif what == "process_labels":
                labels[pid] = str(a.get("labels", ""))
            elif what == "process_sort_index":
                psort[pid] = _int(a.get("sort_index"))
            elif what == "thread_name":
                tnames[(pid, tid)] = str(a.get("name", tid))
            elif what == "thread_sort_index":
                tsort[(pid, tid)] = _int(a.get("sort_index"))
        stats = defaultdict(int)
        trace = self.trace
        lane_cache: dict[tuple, int] = {}
        proc_cache: dict[Any, _Process] = {}

        def process(pid) -> _Process:
            pid = hkey(pid)
            p = proc_cache.get(pid)
            if p is None:
                name = names.get(pid, f"Process {pid}")
                label = labels.get(pid)
                parent = self.layout.parent_for(name, label)
                key = (parent, name)
                p = self.processes.get(key)
                if p is None:
                    group = self.layout.group(parent, name, order=psort.get(pid),
                                              description=_describe_process(name, label))
                    p = self.processes[key] = _Process(group, name, label)
                proc_cache[pid] = p
            return p

        def lane(pid, tid) -> int:
            pid, tid = hkey(pid), hkey(tid)
            key = (pid, tid)
            lid = lane_cache.get(key)
            if lid is None:
                p = process(pid)
                tname = tnames.get(key) or f"Thread {tid}"
                lid = p.lanes.get(tname)
                if lid is None:
                    order = tsort.get(key, _int(tid))
                    lid = self.layout.lane(p.group, tname, order=order, nesting=p.nesting,
                                           derived=p.derived,
                                           description=_describe_lane(p.name, tname))
                    p.lanes[tname] = lid
                    self.lane_process[lid] = p
                lane_cache[key] = lid
            return lid

        for e in events:
            if not isinstance(e, dict):
                stats["not_an_event"] += 1
                continue
            ph = e.get("ph")
            if ph == "X":
                span = event_span(e)
                if span is None:
                    stats["no_ts"] += 1
                    continue
                ts, dur, bad = span
                if bad:         # a key only for a count to report (no "(0 events)" line)
                    stats["bad_dur"] += bad
                lid = lane(e.get("pid"), e.get("tid"))
                p = self.lane_process[lid]
                args = e.get("args") or None
                if args is not None and not isinstance(args, dict):
                    args = {"args": args}
                name = str(e.get("name", ""))
                if p.name in TASK_PROCESSES:
                    args = device_args(args) if args else {}
                    cat = normalize_task_type(args.get("task_type")) or \
                        ("hccl" if p.name == "HCCL" else KERNEL)
                    args["source"] = path.name
                else:
                    cat = str(e.get("cat") or p.name.lower().replace(" ", "_"))
                idx = trace.add_slice(lid, ts, dur, name, cat, args)
                if p.name in TASK_PROCESSES:
                    self.task_slices.append(idx)
                stats["X"] += 1
            elif ph == "C":
                ts = us_to_ns(e.get("ts"))
                if ts is None or ts < 0:
                    stats["no_ts"] += 1
                    continue
                stats["C"] += 1
                stats["counter_samples"] += self._counter(process(e.get("pid")), e, ts)
            elif ph in ("s", "f"):
                ts = us_to_ns(e.get("ts"))
                if ts is None or ts < 0 or "id" not in e:
                    stats["bad_flow"] += 1
                    continue
                lid = lane(e.get("pid"), e.get("tid"))
                key = (str(e.get("cat", "")), str(e["id"]))
                self._flow_ends[key].append((ph, lid, ts, e.get("bp") == "e"))
                stats[ph] += 1
            elif ph in ("i", "I", "n"):
                ts = us_to_ns(e.get("ts"))
                if ts is None or ts < 0:
                    stats["no_ts"] += 1
                    continue
                iargs = e.get("args") or None
                trace.add_instant(lane(e.get("pid"), e.get("tid")), ts, str(e.get("name", "")),
                                  str(e.get("cat", "")),
                                  iargs if iargs is None or isinstance(iargs, dict)
                                  else {"args": iargs})
                stats["instant"] += 1
            elif ph == "M":
                stats["M"] += 1
            else:
                stats[f"ph_{ph}"] += 1
        for k, v in stats.items():
            if k.startswith("ph_") or k in ("no_ts", "bad_flow", "not_an_event"):
                what = {"no_ts": "events without a usable time", "bad_flow": "flow ends "
                        "without a usable time or id", "not_an_event": "entries that are not "
                        "events"}.get(k, f"events of phase {k[3:]!r}")
                self.skipped[f"{path}: {what}"] += v
            elif k == "bad_dur":
                self.fixed[f"{path}: negative or out-of-range durations drawn as 0 ns"] += v
        return dict(stats)

    def _counter(self, p: _Process, e: dict, ts: int) -> int:
        args = obj(e.get("args"))
        name = str(e.get("name", p.name))
        series = {k: v for k, v in args.items() if k in _SERIES_KEYS}
        n = 0
        for key, value in args.items():
            if key in _SERIES_KEYS:
                continue
            v = number(value) if not isinstance(value, bool) else None
            if v is None:
                self.skipped[f"non-numeric counter value ({name} {key})"] += 1
                continue
            value = v
            skey = (name, key, tuple(sorted(series.items())))
            c = p.series.get(skey)
            if c is None:
                c = p.series[skey] = self._new_counter(p, name, key, series, len(args))
            c.add(ts, float(value))
            n += 1
        return n

    def _new_counter(self, p: _Process, name: str, key: str, series: dict, nargs: int):
        unit = _unit(key)
        parent = p.group
        if series:
            sub = ("__sub__", name)
            parent = p.series.get(sub)
            if parent is None:
                parent = p.series[sub] = self.trace.add_track(name, p.group, "group")
            label = " ".join(f"{k} {v}" for k, v in sorted(series.items()))
            cname = label if nargs - len(series) == 1 else f"{label} {key}"
        elif nargs == 1:
            cname = name
        else:
            cname = f"{name} {key}"
        return self.trace.add_counter(cname, parent, unit=unit,
                                      description=f"{p.name}: {name} ({key})")

    # -- flows ------------------------------------------------------------------------------
    def bind_flows(self) -> dict[str, int]:
        """Turn collected s/f pairs into flows between the slices that hold them."""
        trace = self.trace
        queries: dict[int, list[tuple[int, bool, int]]] = defaultdict(list)   # lane -> (ts, next, qid)
        pairs = []
        unpaired = 0
        for key, ends in self._flow_ends.items():
            starts = [x for x in ends if x[0] == "s"]
            finishes = [x for x in ends if x[0] == "f"]
            unpaired += abs(len(starts) - len(finishes))
            for s, f in zip(starts, finishes):
                qs = len(pairs) * 2
                queries[s[1]].append((s[2], False, qs))
                queries[f[1]].append((f[2], not f[3], qs + 1))
                pairs.append(key)
        found = [-1] * (2 * len(pairs))
        by_lane: dict[int, list[int]] = defaultdict(list)
        for i, s in enumerate(trace.slices):
            if s.track in queries:
                by_lane[s.track].append(i)
        for lid, qs in queries.items():
            _bind_lane(trace, by_lane.get(lid, []), qs, found)
        made = unbound = self_loops = 0
        for i in range(len(pairs)):
            a, b = found[2 * i], found[2 * i + 1]
            if a < 0 or b < 0:
                unbound += 1
            elif a == b:
                self_loops += 1
            else:
                trace.add_flow(a, b, pairs[i][0] or "flow")
                made += 1
        self._flow_ends.clear()
        self.layout.measure_clock_skew(trace.flows[len(trace.flows) - made:])
        return {"flows": made, "unpaired": unpaired, "unbound": unbound, "self": self_loops}

    def finish_counters(self) -> None:
        for p in self.processes.values():
            for key, c in p.series.items():
                if key[0] == "__sub__":
                    continue
                if any(c.ts[i] > c.ts[i + 1] for i in range(len(c.ts) - 1)):
                    order = sorted(range(len(c.ts)), key=c.ts.__getitem__)
                    c.ts[:] = [c.ts[i] for i in order]
                    c.values[:] = [c.values[i] for i in order]


def _bind_lane(trace: Trace, ids: list[int], queries: list[tuple[int, bool, int]],
               found: list[int]) -> None:
    """For each query time: the innermost slice containing it, or (``next``) the first slice
    starting at or after it.  One sweep over the lane's slices sorted by start."""
    slices = trace.slices
    ids = sorted(ids, key=lambda i: (slices[i].ts, -slices[i].dur))
    starts = [slices[i].ts for i in ids]
    queries = sorted(queries)
    stack: list[int] = []
    k = 0
    for ts, want_next, qid in queries:
        while k < len(ids) and starts[k] <= ts:
            s = slices[ids[k]]
            while stack and slices[stack[-1]].ts + slices[stack[-1]].dur < s.ts:
                stack.pop()
            stack.append(ids[k])
            k += 1
        while stack and slices[stack[-1]].ts + slices[stack[-1]].dur < ts:
            stack.pop()
        if want_next:
            j = bisect.bisect_left(starts, ts)
            if j < len(ids):
                found[qid] = ids[j]
                continue
        if stack:
            found[qid] = stack[-1]


def _describe_process(name: str, label: str | None) -> str:
    what = {
        "Ascend Hardware": "device tasks, one lane per hardware stream",
        "HCCL": "collective communication: op level and per-link planes",
        "Overlap Analysis": "msprof's own overlap analysis of computing vs communication "
                            "(derived by msprof, not raw work)",
        "CANN": "host CANN API calls per thread",
        "Python": "host PyTorch ops and Python functions per thread",
        "AI Core Freq": "AI Core frequency samples",
    }.get(name, "")
    parts = [p for p in (what, f"label {label}" if label else "") if p]
    return "; ".join(parts)


def _describe_lane(process: str, thread: str) -> str:
    if process == "Ascend Hardware":
        return f"{thread}: device tasks in issue order (back-to-back work)"
    return ""


def _unit(key: str) -> str:
    m = re.search(r"\(([^)]*)\)\s*$", key)
    if m:
        return m.group(1)
    if key in ("MHz", "KB", "MB", "GB", "B", "%"):
        return key
    return ""


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None
