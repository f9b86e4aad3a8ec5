"""Device task tables (op_summary, task_time, kernel_details) onto stream lanes.

The same hardware task can appear in the Chrome-trace JSON, in task_time and in
op_summary/kernel_details.  Each task becomes one slice: the first source that has it
creates the slice (JSON first: its durations carry more digits), later tables are matched
to it by (stream, task id, start) or (name, start ±2 ns) and add their columns as args.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...model import KERNEL, Trace
from .csvtable import PIPES, Table, arg_name, canonical, cell_value, normalize_task_type, \
    normalize_pipe, tensor_list
from .layout import Layout
from .timefmt import MAX_END_NS, is_scientific, us_to_ns

_TIME_TEXT = {"start_time_us", "stop_time_us"}
_SHAPES = {"input_shapes", "output_shapes"}
_LISTS = {"input_data_types", "input_formats", "output_data_types", "output_formats"}
_RATIO_SIDES = (("aic_", "aic"), ("aiv_", "aiv"))


def column_names(table: Table) -> list[str]:
    """Arg names of a task table: canonical names for aliased columns, else plain ones."""
    out = []
    seen = set()
    for h in table.header:
        n = canonical(h) or arg_name(h)
        if n in seen:
            n = arg_name(h)
        seen.add(n)
        out.append(n)
    return out


def row_args(names: list[str], row: list[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for n, text in zip(names, row):
        if n in _TIME_TEXT:
            t = text.strip()
            args[n] = t if t and cell_value(t) is not None else None
        elif n in _SHAPES:
            args[n] = tensor_list(text, True)
        elif n in _LISTS:
            args[n] = tensor_list(text, False)
        else:
            args[n] = cell_value(text)
    pipes = pipe_ratios(args)
    if pipes:
        args["pipe_ratio"] = pipes
    return args


def pipe_ratios(args: dict[str, Any]) -> dict[str, dict[str, float]]:
    """PMU ``*_ratio`` columns in the unified pipe vocabulary, per core side
    (``aic``/``aiv``; ``aicore`` for unprefixed 310P columns)."""
    out: dict[str, dict[str, float]] = {}
    for k, v in args.items():
        if not k.endswith("_ratio") or not isinstance(v, (int, float)):
            continue
        base = k[:-len("_ratio")]
        side = "aicore"
        for prefix, name in _RATIO_SIDES:
            if base.startswith(prefix):
                side, base = name, base[len(prefix):]
                break
        pipe = normalize_pipe(base)
        if pipe in PIPES:
            out.setdefault(side, {})[pipe] = float(v)
    return out


class TaskIndex:
    """Device-task slices by (device, stream, task, start) and by (name, start)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.by_key: dict[tuple, list[int]] = defaultdict(list)
        self.by_name: dict[tuple, list[int]] = defaultdict(list)

    def add(self, idx: int) -> None:
        s = self.trace.slices[idx]
        a = s.args or {}
        stream, task = _int(a.get("stream_id")), _int(a.get("task_id"))
        if stream is not None and task is not None:
            self.by_key[(stream, task, s.ts)].append(idx)
        self.by_name[(s.name, s.ts)].append(idx)

    def match(self, stream, task, name: str, ts: int, used: set[int]) -> int | None:
        if stream is not None and task is not None:
            for i in self.by_key.get((stream, task, ts), ()):
                if i not in used:
                    return i
        for d in (0, -1, 1, -2, 2):
            for i in self.by_name.get((name, ts + d), ()):
                if i not in used:
                    return i
        return None


def add_task_table(trace: Trace, layout: Layout, index: TaskIndex, table: Table, role: str,
                   device: int | None = None) -> dict[str, Any]:
    """Match or add one slice per row of a task table; returns per-file counts."""
    names = column_names(table)
    c_start = names.index("start_time_us") if "start_time_us" in names else None
    c_dur = names.index("duration_us") if "duration_us" in names else None
    c_stop = names.index("stop_time_us") if "stop_time_us" in names else None
    c_stream = names.index("stream_id") if "stream_id" in names else None
    c_dev = names.index("device_id") if "device_id" in names else None
    stats = {"file": table.name, "rows": len(table), "matched": 0, "added": 0, "skipped": 0,
             "scientific_timestamps": 0}
    if c_start is None:
        stats["skipped"] = len(table)
        trace.warn(f"{table.path}: no start-time column (Task Start Time / Start Time / "
                   f"task_start); {len(table)} rows kept out of the timeline")
        return stats
    used: set[int] = set()
    no_dur = 0
    for r, row in enumerate(table.rows):
        start_text = row[c_start]
        ts = us_to_ns(start_text)
        if ts is None or ts < 0:
            stats["skipped"] += 1
            continue
        if is_scientific(start_text):
            stats["scientific_timestamps"] += 1
        dur = us_to_ns(row[c_dur]) if c_dur is not None else None
        if dur is None and c_stop is not None:
            stop = us_to_ns(row[c_stop])
            dur = stop - ts if stop is not None else None
        if dur is None or dur < 0 or ts + dur > MAX_END_NS:
            no_dur += 1
            dur = 0
        args = row_args(names, row)
        args[f"{role}_row"] = r
        stream = _int(args.get("stream_id"))
        task = _int(args.get("task_id"))
        ttype = normalize_task_type(args.get("task_type"))
        name = args.get("op_name")
        name = str(args.get("task_type") or "task") if name is None else str(name)
        hit = index.match(stream, task, name, ts, used)
        if hit is not None:
            used.add(hit)
            s = trace.slices[hit]
            merged = dict(s.args or {})
            for k, v in args.items():
                old = merged.get(k)
                if old is not None and v is not None and old != v:
                    merged[f"{k}_{role}"] = v        # both sources kept when they differ
                elif v is not None or k not in merged:
                    merged[k] = v
            merged.setdefault("source", table.name)
            merged["also_in"] = list(merged.get("also_in") or ()) + [table.name]
            s.args = merged
            if ttype and role in ("op_summary", "kernel_details") or s.cat in (KERNEL, ""):
                s.cat = ttype or s.cat
            stats["matched"] += 1
            continue
        dev = _int(args.get("device_id")) if c_dev is not None else None
        hw = layout.group(layout.device(dev if dev is not None else device), "Ascend Hardware",
                          order=13, description="device tasks, one lane per hardware stream")
        if stream is not None:
            lane_name, order = f"Stream {stream}", stream
        elif c_stream is None:
            lane_name, order = "Kernels", 0
        else:
            lane_name, order = ttype or "No stream", 1 << 20
        lane = layout.lane(hw, lane_name, order=order, nesting=False,
                           description=f"{lane_name}: device tasks from {table.name}")
        args["source"] = table.name
        idx = trace.add_slice(lane, ts, dur, name, ttype or KERNEL, args)
        index.add(idx)
        used.add(idx)
        stats["added"] += 1
    if stats["skipped"]:
        trace.warn(f"{table.path}: {stats['skipped']} rows without a usable start time were kept "
                   "out of the timeline")
    if no_dur:
        trace.warn(f"{table.path}: {no_dur} rows without a usable duration drawn as zero-length "
                   "slices")
    if stats["scientific_timestamps"]:
        trace.warn(f"{table.path}: {stats['scientific_timestamps']} start times are in "
                   "scientific notation (a spreadsheet round trip dropped their digits); "
                   "kept as written, their times are approximate")
    for note in table.notes():
        trace.warn(note)
    return stats


def _int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None
