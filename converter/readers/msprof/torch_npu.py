"""torch_npu (Ascend PyTorch Profiler): *_ascend_pt/ASCEND_PROFILER_OUTPUT/, one or several
ranks, plus msprof-analyze's cluster_analysis_output/ next to the ranks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...fileio import load_json
from ...model import RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from .causes import NOT_READ
from .common import Guard, add_stats_files, files_of, import_timelines, note_ignored
from .csvtable import Table, read_table
from .jsonshape import obj
from .layout import Layout
from .memory import add_memory_counters, add_operator_memory, device_column, device_number
from .tasks import TaskIndex, add_task_table
from .timefmt import EPOCH_US

_STEP = re.compile(r"ProfilerStep#(\d+)")


def read_torch(source: Source, options: ReadOptions) -> Trace:
    meta = RunMeta(source.name, "msprof", tool="torch_npu", clock=EPOCH_US)
    trace = Trace(meta)
    sources: dict[str, Any] = {}
    meta.extra["msprof_sources"] = sources
    prefixes = sorted({r.split("/", 1)[0] + "/" for r in source.files
                       if r.startswith("rank") and "/" in r}) or [""]
    infos = {p: _profiler_info(trace, source, p) for p in prefixes}
    ranks = _rank_ids(source, prefixes, infos)
    multi = len(prefixes) > 1
    guard = Guard(trace)
    for n, prefix in enumerate(prefixes):
        options.report("reading torch_npu ranks", n, len(prefixes))
        _read_rank(trace, source, prefix, ranks[prefix], infos[prefix], sources, multi, guard)
    if multi:
        add_stats_files(trace, source, "cluster/", None, sources, guard)
    guard.check()
    meta.extra["torch_npu"] = {"ranks": {str(ranks[p]): infos[p] for p in prefixes
                                         if ranks[p] is not None}} if any(infos.values()) else {}
    note_ignored(trace, source)
    split_overlaps(trace)
    options.report("reading torch_npu ranks", len(prefixes), len(prefixes))
    return trace


def read_stats_only(source: Source, options: ReadOptions) -> Trace:
    """Aggregate files without a timeline (cluster_analysis_output, loose statistics)."""
    trace = Trace(RunMeta(source.name, "msprof", tool="msprof-analyze" if any(
        "cluster" in r for r in source.files) else "msprof", clock=EPOCH_US))
    sources: dict[str, Any] = {}
    trace.meta.extra["msprof_sources"] = sources
    guard = Guard(trace)
    add_stats_files(trace, source, "", None, sources, guard)
    guard.check()
    note_ignored(trace, source)
    return trace


def _read_rank(trace: Trace, source: Source, prefix: str, rank: int | None,
               info: dict[str, Any], sources: dict[str, Any], multi: bool,
               guard: Guard) -> None:
    layout = Layout(trace, rank=rank, order=rank or 0) if rank is not None else Layout(trace)
    layout.default_device, parsed = _device_hint(source, prefix)
    index = TaskIndex(trace, layout)
    views = files_of(source, "trace_view", prefix)
    if views:
        import_timelines(trace, layout, views, index, sources, guard)
    kernels = files_of(source, "kernel_details", prefix)
    for p in kernels:
        table = guard(read_table, p)
        if table is None:
            continue
        sources[str(p)] = add_task_table(trace, layout, index, table, "kernel_details",
                                         layout.default_device)
        trace.meta.source_files.append(str(p))
    for kind in ("memory_record", "npu_module_mem"):
        for p in files_of(source, kind, prefix):
            sources[str(p)] = guard(add_memory_counters, trace, layout, p,
                                    layout.default_device, parsed.pop(p, None))
    for p in files_of(source, "operator_memory", prefix):
        sources[str(p)] = guard(add_operator_memory, trace, layout, p, layout.default_device,
                                parsed.pop(p, None))
    _steps(trace, layout, source, prefix, rank, sources, guard)
    layout.declare_source_idle()
    add_stats_files(trace, source, prefix, rank if (multi or rank is not None) else None,
                    sources, guard)
    dbs = files_of(source, "db", prefix)
    if dbs:
        guard.accept()           # a SQLite-only rank is a run (with its warning), not an error
    if dbs and not views and not kernels:
        trace.warn(f"{dbs[0].parent}: only the SQLite export is present "
                   f"({', '.join(p.name for p in dbs)}); the msprof reader converts the text "
                   "export, so this rank has no timeline")


def _steps(trace: Trace, layout: Layout, source: Source, prefix: str, rank: int | None,
           sources: dict[str, Any], guard: Guard) -> None:
    """step_trace_time.csv rows as step slices, placed at the rank's ProfilerStep#N host
    slice or, without one, over the kernels of that step (kernel_details Step Id)."""
    paths = files_of(source, "step_trace_time", prefix)
    if not paths:
        return
    anchors: dict[int, tuple[int, int, str]] = {}
    kernels: dict[int, list[int]] = {}
    mine = _tracks_under(trace, layout.root)
    for s in trace.slices:
        if mine is not None and s.track not in mine:
            continue
        m = _STEP.fullmatch(s.name) if "ProfilerStep" in s.name else None
        if m:
            anchors.setdefault(int(m.group(1)), (s.ts, s.ts + s.dur, f"{s.name} host slice"))
        a = s.args
        if a and a.get("kernel_details_row") is not None and isinstance(a.get("step_id"), int):
            k = kernels.setdefault(a["step_id"], [s.ts, s.ts + s.dur])
            k[0] = min(k[0], s.ts)
            k[1] = max(k[1], s.ts + s.dur)
    for p in paths:
        table = guard(read_table, p)
        if table is None:
            continue
        rows = table.dicts()
        c_step = table.col("step")
        made = 0
        missing = []
        for r, (row, d) in enumerate(zip(table.rows, rows)):
            step = d.get("step")
            if not isinstance(step, int):
                missing.append(str(row[c_step]) if c_step is not None else str(r))
                continue
            if step in anchors:
                start, end, how = anchors[step]
            elif step in kernels:
                start, end = kernels[step]
                how = "extent of the step's kernels (kernel_details Step Id)"
            else:
                missing.append(str(step))
                continue
            lane = layout.lane(layout.root, "Steps", order=5, nesting=False,
                               description="training steps: step_trace_time figures (µs) on "
                                           "the step's host ProfilerStep slice")
            args = {(k + "_us" if k not in ("step", "type", "index") and
                     isinstance(v, (int, float)) else k): v for k, v in d.items()}
            args["anchor"] = how
            args["step_trace_time_row"] = r
            trace.add_slice(lane, start, end - start, f"Step {step}", "step", args)
            made += 1
        if missing:
            trace.warn(f"{p}: steps {', '.join(missing)} have no ProfilerStep slice or kernels "
                       "to place them on; kept in msprof_statistics only")
        sources.setdefault(str(p), {})["step_slices"] = made


def _tracks_under(trace: Trace, root: int | None) -> set[int] | None:
    """Every track below ``root`` (None: no rank group, every track counts)."""
    if root is None:
        return None
    out: set[int] = set()
    todo = [root]
    while todo:
        t = todo.pop()
        out.add(t)
        todo.extend(trace.tracks[t].children)
    return out


def _profiler_info(trace: Trace, source: Source, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in files_of(source, "profiler_info", prefix):
        try:
            info = load_json(p)
        except Exception as e:
            trace.warn(f"{p}: not read ({e})", NOT_READ)
            continue
        trace.meta.source_files.append(str(p))
        info = obj(info)
        cfg = obj(info.get("config"))
        exp = obj(cfg.get("experimental_config"))
        common = obj(cfg.get("common_config"))
        out.update({"rank_id": info.get("rank_id"),
                    "profiler_level": exp.get("_profiler_level"),
                    "aic_metrics": exp.get("_aic_metrics"),
                    "export_type": exp.get("_export_type"),
                    "l2_cache": exp.get("_l2_cache"),
                    "activities": common.get("activities"),
                    "record_shapes": common.get("record_shapes"),
                    "profile_memory": common.get("profile_memory"),
                    "with_stack": common.get("with_stack"),
                    "schedule": common.get("schedule"),
                    "start_info": info.get("start_info"),
                    "end_info": info.get("end_info"),
                    "file": str(p)})
    for p in files_of(source, "profiler_metadata", prefix):
        try:
            out["metadata"] = load_json(p)
            trace.meta.source_files.append(str(p))
        except Exception as e:
            trace.warn(f"{p}: not read ({e})", NOT_READ)
    return out


def _rank_ids(source: Source, prefixes: list[str], infos: dict[str, dict]) -> dict[str, int | None]:
    ranks = getattr(source, "ranks", None) or []
    out: dict[str, int | None] = {}
    for i, prefix in enumerate(prefixes):
        rid = infos[prefix].get("rank_id")
        if not isinstance(rid, int) or rid < 0:
            rid = None
            name = ranks[i].name if i < len(ranks) else ""
            m = re.search(r"rank_?(\d+)", name)
            if m:
                rid = int(m.group(1))
            elif len(prefixes) > 1:
                rid = i
        out[prefix] = rid
    used = [r for r in out.values() if r is not None]
    if len(used) != len(set(used)):          # duplicate rank ids: fall back to folder order
        out = {p: i for i, p in enumerate(prefixes)}
    return out


def _device_hint(source: Source, prefix: str) -> tuple[int | None, dict[Path, Table]]:
    """The rank's NPU id as its memory files write it (``NPU:0``; None if unknown), and the
    memory tables parsed to find it (converted from there, not parsed again)."""
    parsed: dict[Path, Table] = {}
    for kind in ("memory_record", "npu_module_mem", "operator_memory"):
        for p in files_of(source, kind, prefix):
            try:
                table = parsed[p] = read_table(p)
            except Exception:
                continue
            c = device_column(table)
            if c is not None and table.rows:
                dev = device_number(table.rows[0][c])
                if dev is not None:
                    return dev, parsed
    return None, parsed
