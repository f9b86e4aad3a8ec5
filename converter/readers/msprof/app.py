"""Application-level msprof: PROF_*/mindstudio_profiler_output/ (or loose op_summary /
task_time / msprof_*.json files)."""

from __future__ import annotations

from typing import Any

from ...fileio import load_json, read_text
from ...model import RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from .causes import NOT_READ
from .common import Guard, add_stats_files, files_of, import_timelines, note_ignored, role_kind
from .csvtable import read_table
from .jsonshape import obj, seq
from .layout import Layout
from .tasks import TaskIndex, add_task_table, row_args, column_names
from .timefmt import EPOCH_US, us_to_ns

# info.json "platform_version" -> msprof's chip id.  Every id msprof knows is in its ChipModel
# enum (Ascend/msprof, analysis/profiling_bean/prof_enum/chip_model.py: 0-5, 7, 8, 9, 11, 15,
# 16); the product names are those msprof itself writes for an id into its SQLite export
# (analysis/csrc/application/database/db_constant.h, CHIP_TABLE: 0 Ascend310, 1 Ascend910A,
# 4 Ascend310P, 5 Ascend910B, 7 Ascend310B, 15 Ascend950; both at commit 9ba1ac7b).  It names
# no product for 2, 3, 8, 9, 11, 16; it treats 2, 3, 4 alike (ChipManager.is_chip_v3), also
# 7, 8, 11 (is_chip_v1_1) and 15, 16 (is_chip_v6): the "family" labels say that much.
CHIPS = {"0": "CHIP_V1_1_0 (310)", "1": "CHIP_V2_1_0 (910A)", "2": "CHIP_V3_1_0 (310P family)",
         "3": "CHIP_V3_2_0 (310P family)", "4": "CHIP_V3_3_0 (310P family)",
         "5": "CHIP_V4_1_0 (910B / Atlas A2 family)", "7": "CHIP_V1_1_1 (310B)",
         "8": "CHIP_V1_1_2 (310B family)", "9": "CHIP_V5_1_0", "11": "CHIP_V1_1_3 (310B family)",
         "15": "CHIP_V6_1_0 (950)", "16": "CHIP_V6_2_0 (950 family)"}


def read_app(source: Source, options: ReadOptions) -> Trace:
    meta = RunMeta(source.name, "msprof", tool="msprof", clock=EPOCH_US)
    trace = Trace(meta)
    layout = Layout(trace)
    index = TaskIndex(trace, layout)
    sources: dict[str, Any] = {}
    meta.extra["msprof_sources"] = sources
    jsons = files_of(source, "msprof_json")
    guard = Guard(trace)
    options.report("reading msprof timeline", 0, 1)
    if jsons:
        import_timelines(trace, layout, jsons, index, sources, guard)
    first = "msprof_json" if jsons else None
    # task_time has every hardware task, op_summary only kernels (with PMU columns)
    for kind in ("task_time", "op_summary"):
        for p in files_of(source, kind):
            table = guard(read_table, p)
            if table is None:
                continue
            sources[str(p)] = add_task_table(trace, layout, index, table, kind)
            first = first or kind
            meta.source_files.append(str(p))
    meta.extra["device_tasks_from"] = (
        [p.name for p in jsons] if jsons else
        [p.name for p in files_of(source, first)] if first else [])
    for p in files_of(source, "step_trace"):
        sources[str(p)] = guard(_add_step_trace, trace, layout, p)
    layout.declare_source_idle()
    add_stats_files(trace, source, sources=sources, guard=guard)
    guard.check()
    _device_info(trace, source)
    note_ignored(trace, source)
    split_overlaps(trace)
    options.report("reading msprof timeline", 1, 1)
    return trace


def _add_step_trace(trace: Trace, layout: Layout, path) -> dict[str, Any]:
    """msprof step_trace_*.csv: one slice per iteration (iteration end − iteration time)."""
    table = read_table(path)
    names = column_names(table)
    c_end = table.col("iteration_end")
    c_time = table.col("iteration_time")
    c_fp = table.col("fp_start")
    c_it = table.col("iteration_id")
    made = skipped = 0
    for r, row in enumerate(table.rows):
        end = us_to_ns(row[c_end]) if c_end is not None else None
        dur = us_to_ns(row[c_time]) if c_time is not None else None
        start = end - dur if end is not None and dur is not None else (
            us_to_ns(row[c_fp]) if c_fp is not None else None)
        if start is None or end is None or start < 0 or end < start:
            skipped += 1
            continue
        args = row_args(names, row)
        dev = args.get("device_id")
        lane = layout.lane(layout.device(dev if isinstance(dev, int) else None), "Iterations",
                           order=1, description="iterations from step_trace (msprof)")
        args["step_trace_row"] = r
        it = row[c_it].strip() if c_it is not None else str(r)
        trace.add_slice(lane, start, end - start, f"Iteration {it}", "step", args)
        made += 1
    if skipped:
        trace.warn(f"{path}: {skipped} iterations without a usable end/time not drawn")
    table.warn_into(trace)
    trace.meta.source_files.append(str(path))
    return {"rows": len(table), "slices": made}


def _device_info(trace: Trace, source: Source) -> None:
    infos: dict[str, Any] = {}
    devices = []
    for role, p in sorted(source.files.items()):
        kind = role_kind(role)
        where = role.rsplit("/", 1)[0] if "/" in role else ""
        if kind == "info":
            try:
                info = load_json(p)
            except Exception as e:       # a broken side file never stops the timeline
                trace.warn(f"{p}: not read ({e})", NOT_READ)
                continue
            trace.meta.source_files.append(str(p))
            info = obj(info)
            dev = [d for d in seq(info.get("DeviceInfo")) if isinstance(d, dict)]
            entry = {"platform_version": info.get("platform_version"),
                     "pid": info.get("pid"), "pid_name": info.get("pid_name"),
                     "devices": info.get("devices"), "rank_id": info.get("rank_id"),
                     "hostname": info.get("hostname"), "os": info.get("OS"),
                     "drv_version": info.get("drvVersion")}
            if dev:
                d0 = dev[0]
                entry.update({"ai_core_num": d0.get("ai_core_num"), "aiv_num": d0.get("aiv_num"),
                              "aic_frequency_mhz": _num(d0.get("aic_frequency")),
                              "aiv_frequency_mhz": _num(d0.get("aiv_frequency")),
                              "hwts_frequency_mhz": _num(d0.get("hwts_frequency")),
                              "device_id": d0.get("id")})
                pv = str(info.get("platform_version", ""))
                devices.append(f"NPU {d0.get('id', 0)}: platform_version {pv} "
                               f"({CHIPS.get(pv, 'unknown chip model')}), "
                               f"{_count(d0.get('ai_core_num'), 'AI core')} + "
                               f"{_count(d0.get('aiv_num'), 'vector core')} "
                               f"@ {d0.get('aic_frequency')} MHz")
            infos.setdefault(where or p.name, {}).update(entry)
        elif kind in ("start_info", "end_info", "sample"):
            try:
                infos.setdefault(where or "run", {})[kind] = load_json(p) if kind == "sample" \
                    else _json_or_text(p)
                trace.meta.source_files.append(str(p))
            except Exception as e:
                trace.warn(f"{p}: not read ({e})", NOT_READ)
    if infos:
        trace.meta.extra["msprof_info"] = infos
    if devices:
        trace.meta.device = "; ".join(devices)
        cores = [v.get("ai_core_num") for v in infos.values() if v.get("ai_core_num")]
        if cores:
            trace.meta.extra["core_count"] = cores[0]


def _json_or_text(p):
    try:
        return load_json(p)
    except Exception:
        return read_text(p)


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _count(n, noun: str) -> str:
    """"1 AI core", "20 AI cores" (info.json gives the numbers as ints or text)."""
    return f"{n} {noun}" if n in (1, "1") else f"{n} {noun}s"
