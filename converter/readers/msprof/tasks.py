"""Device task tables (op_summary, task_time, kernel_details) onto stream lanes.

The same hardware task can appear in the Chrome-trace JSON, in task_time and in
op_summary/kernel_details.  Each task becomes one slice: the first source that has it
creates the slice (JSON first: its durations carry more digits), later tables are joined
to it on the keys they share (stream and task id, the device where both know it, or the
name), with the start offset the tool puts between its files, and add their columns as args
(``TaskIndex``); a row that joins no slice is reported, not drawn a second time.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from ...model import KERNEL, Trace
from .causes import SCIENTIFIC_TIMES
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


# Rows of two files of one run that are the same task agree on (device, stream, task id) or,
# without those columns, on the task's name; their start times may differ by what the tool
# itself puts between its outputs.  Measured on real runs: a 310B run (hwts 48 MHz, ticks of
# 20.83 ns) prints task_time's starts truncated and msprof_*.json's rounded to the ns, so 4 of
# its 5 tasks start 1 ns earlier in task_time; an A2 run (CANN 8.0 era) starts every task_time
# row exactly 30 ns after the JSON.  So the offset is measured per file (the most common
# offset of a row to the nearest task with its key, below MAX_OFFSET_NS: a whole printed unit,
# 1 µs, is no rounding) and each row must then agree with it within ROUNDING_NS: both files
# print µs with 3 decimals, each value within 1 ns of the instant it stands for.
ROUNDING_NS = 2
MAX_OFFSET_NS = 1000


class TaskIndex:
    """Device-task slices of one run, for joining task tables to them: by (stream, task id),
    the device checked where both sides know it, else (a row or slice without them) by
    name."""

    def __init__(self, trace: Trace, layout: Layout | None = None):
        self.trace = trace
        self.layout = layout
        self.by_key: dict[tuple, list[int]] = defaultdict(list)
        self.by_name: dict[str, list[int]] = defaultdict(list)
        self.keyless: dict[str, list[int]] = defaultdict(list)     # by name, no task key
        self.device: dict[int, int | None] = {}
        self.files: list[str] = []         # the files the slices came from
        self._track_device: dict[int, int | None] = {}
        self._sorted: dict[tuple, tuple[list[int], list[int]]] = {}

    def add(self, idx: int) -> None:
        s = self.trace.slices[idx]
        a = s.args or {}
        stream, task = _int(a.get("stream_id")), _int(a.get("task_id"))
        if stream is not None and task is not None:
            self.by_key[(stream, task)].append(idx)
        else:
            self.keyless[s.name].append(idx)
        self.by_name[s.name].append(idx)
        dev = _int(a.get("device_id"))
        if dev is None and self.layout is not None:
            dev = self._track_device.get(s.track, -1)
            if dev == -1:
                dev = self._track_device[s.track] = self.layout.place(s.track)[1]
        self.device[idx] = dev
        self._sorted.clear()
        src = a.get("source")
        if isinstance(src, str) and src not in self.files:
            self.files.append(src)

    def _window(self, table: dict, key, lo: int, hi: int) -> list[int]:
        """The slices of ``table[key]`` starting in [lo, hi] (a sorted view, made once)."""
        view = self._sorted.get((id(table), key))
        if view is None:
            ids = sorted(table.get(key, ()), key=lambda i: self.trace.slices[i].ts)
            view = self._sorted[(id(table), key)] = (
                [self.trace.slices[i].ts for i in ids], ids)
        starts, ids = view
        return ids[bisect.bisect_left(starts, lo):bisect.bisect_right(starts, hi)]

    def candidates(self, row: "_Row", lo: int, hi: int) -> list[int]:
        """The slices with the row's key (or name) starting in [lo, hi], on its device."""
        if row.stream is not None and row.task is not None:
            ids = self._window(self.by_key, (row.stream, row.task), lo, hi) + \
                self._window(self.keyless, row.name, lo, hi)
        else:
            ids = self._window(self.by_name, row.name, lo, hi)
        if row.device is None:
            return ids
        return [i for i in ids if self.device[i] in (None, row.device)]

    def offset(self, rows: list["_Row"]) -> int:
        """The file's start-time offset to the slices: the most common offset of a row to the
        nearest slice with its key (0 when none is within MAX_OFFSET_NS)."""
        slices = self.trace.slices
        seen: dict[int, int] = defaultdict(int)
        for row in rows:
            near = min((row.ts - slices[i].ts for i in self.candidates(
                row, row.ts - MAX_OFFSET_NS + 1, row.ts + MAX_OFFSET_NS - 1)),
                key=abs, default=None)
            if near is not None:
                seen[near] += 1
        if not seen:
            return 0
        return max(seen, key=lambda d: (seen[d], -abs(d)))

    def match(self, row: "_Row", shift: int, used: set[int]) -> int | None:
        """The unused slice with the row's key whose start is the row's minus ``shift``
        (within ROUNDING_NS), the same name preferred; None if there is none."""
        slices = self.trace.slices
        t = row.ts - shift
        best = None
        for i in self.candidates(row, t - ROUNDING_NS, t + ROUNDING_NS):
            if i in used:
                continue
            rank = (abs(t - slices[i].ts), slices[i].name != row.name)
            if best is None or rank < best[0]:
                best = (rank, i)
        return None if best is None else best[1]


class _Row:
    __slots__ = ("r", "ts", "dur", "args", "stream", "task", "device", "name", "ttype")

    def __init__(self, r, ts, dur, args, stream, task, device, name, ttype):
        self.r, self.ts, self.dur, self.args = r, ts, dur, args
        self.stream, self.task, self.device, self.name, self.ttype = \
            stream, task, device, name, ttype


def add_task_table(trace: Trace, layout: Layout, index: TaskIndex, table: Table, role: str,
                   device: int | None = None) -> dict[str, Any]:
    """One slice per row of a task table, or, where the run already has its device tasks
    (``index``: the JSON timeline, or the table read before), the row's columns joined to the
    slice of the same task; a row that joins none is reported, never drawn a second time.
    Returns per-file counts."""
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
    no_dur = 0
    rows: list[_Row] = []
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
        name = args.get("op_name")
        name = str(args.get("task_type") or "task") if name is None else str(name)
        dev = _int(args.get("device_id")) if c_dev is not None else None
        rows.append(_Row(r, ts, dur, args, _int(args.get("stream_id")),
                         _int(args.get("task_id")), dev, name,
                         normalize_task_type(args.get("task_type"))))
    # A device the run has no tasks of yet (no JSON, or this is the first table for it):
    # its rows make the slices; every other row joins the task that is already there.
    have = set(index.device.values())

    def unseen(row: _Row) -> bool:
        dev = row.device if row.device is not None else device
        return not have or (dev is not None and None not in have and dev not in have)

    new = [row for row in rows if unseen(row)]
    if len(new) < len(rows):
        fresh = set(map(id, new))
        _join(trace, index, table, role, [row for row in rows if id(row) not in fresh], stats)
    for row in new:
        _add(trace, layout, index, table, row, c_stream, device)
    stats["added"] = len(new)
    if stats["skipped"]:
        trace.warn(f"{table.path}: {stats['skipped']} rows without a usable start time were kept "
                   "out of the timeline")
    if no_dur:
        trace.warn(f"{table.path}: {no_dur} rows without a usable duration drawn as zero-length "
                   "slices")
    if stats["scientific_timestamps"]:
        trace.warn(f"{table.path}: {stats['scientific_timestamps']} start times are in "
                   "scientific notation (a spreadsheet round trip dropped their digits); "
                   "kept as written, their times are approximate", SCIENTIFIC_TIMES)
    table.warn_into(trace)
    return stats


def _join(trace: Trace, index: TaskIndex, table: Table, role: str, rows: list[_Row],
          stats: dict[str, Any]) -> None:
    """Each row's columns onto the slice of the same task (``TaskIndex.match``)."""
    keyed = [row.stream is not None and row.task is not None for row in rows]
    shifts = (index.offset([r for r, k in zip(rows, keyed) if not k]),
              index.offset([r for r, k in zip(rows, keyed) if k]))
    shift = shifts[1] if any(keyed) else shifts[0]
    if abs(shift) > ROUNDING_NS:        # more than rounding: say so in the file's counts
        stats["start_offset_ns"] = shift
    used: set[int] = set()
    lost: list[_Row] = []
    for row, k in zip(rows, keyed):
        hit = index.match(row, shifts[k], used)
        if hit is None:
            lost.append(row)
            continue
        used.add(hit)
        s = trace.slices[hit]
        merged = dict(s.args or {})
        for k, v in row.args.items():
            old = merged.get(k)
            if old is not None and v is not None and old != v:
                merged[f"{k}_{role}"] = v        # both sources kept when they differ
            elif v is not None or k not in merged:
                merged[k] = v
        merged.setdefault("source", table.name)
        merged["also_in"] = list(merged.get("also_in") or ()) + [table.name]
        s.args = merged
        if row.ttype and role in ("op_summary", "kernel_details") or s.cat in (KERNEL, ""):
            s.cat = row.ttype or s.cat
        stats["matched"] += 1
    if lost:
        stats["unmatched"] = len(lost)
        stats["unmatched_rows"] = [row.r for row in lost]
        what = ", ".join(_describe(row) for row in lost[:5]) + (
            f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        moved = f", {shift} ns after theirs" if shift else ""
        trace.warn(f"{table.path}: {len(lost)} of {len(rows)} rows match no task of "
                   f"{', '.join(index.files) or 'the run'} (same stream and task id, or name, "
                   f"and start{moved} within {ROUNDING_NS} ns): {what}; not drawn (they "
                   "would draw a task a second time)")


def _describe(row: _Row) -> str:
    key = (f"stream {row.stream} task {row.task}" if row.stream is not None
           and row.task is not None else repr(row.name))
    return f"row {row.r + 1} ({key} at {row.args.get('start_time_us') or row.ts} µs)"


def _add(trace: Trace, layout: Layout, index: TaskIndex, table: Table, row: _Row,
         c_stream: int | None, device: int | None) -> None:
    dev = row.device
    hw = layout.group(layout.device(dev if dev is not None else device), "Ascend Hardware",
                      order=13, description="device tasks, one lane per hardware stream")
    stream = row.stream
    if stream is not None:
        lane_name, order = f"Stream {stream}", stream
    elif c_stream is None:
        lane_name, order = "Kernels", 0
    else:
        lane_name, order = row.ttype or "No stream", 1 << 20
    lane = layout.lane(hw, lane_name, order=order, nesting=False,
                       description=f"{lane_name}: device tasks from {table.name}")
    row.args["source"] = table.name
    index.add(trace.add_slice(lane, row.ts, row.dur, row.name, row.ttype or KERNEL, row.args))


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
