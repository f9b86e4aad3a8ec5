"""torch_npu memory files as counter tracks: memory_record.csv, npu_module_mem.csv and
operator_memory.csv (whose rows are also kept as instants at their allocation time)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from ...model import Trace
from .causes import SCIENTIFIC_TIMES
from .csvtable import Table, arg_name, cell_value, match_key, read_table
from .layout import Layout
from .timefmt import is_scientific, us_to_ns

_SKIP = {"component", "timestamp", "stream_ptr", "device_type", "device", "name"}


def device_number(text: str) -> int | None:
    """The NPU id a memory file's Device Type cell writes (``NPU:0`` -> 0), or None."""
    m = re.search(r"(\d+)", text or "")
    return int(m.group(1)) if m else None


def device_column(table: Table) -> int | None:
    return table.col_any("device_type", "device_id")


def _unit(header: str) -> str:
    m = re.search(r"\(([^)]*)\)", header)
    return m.group(1) if m else ""


def _metric(header: str) -> str:
    return re.sub(r"\([^)]*\)", "", header).strip()


def add_memory_counters(trace: Trace, layout: Layout, path: Path, device: int | None,
                        table: Table | None = None) -> dict[str, Any]:
    """memory_record.csv / npu_module_mem.csv: one counter per (component[, stream], metric).
    ``table``: the file already parsed, if it was."""
    if table is None:
        table = read_table(path)
    c_comp = table.col("component")
    c_ts = table.col("timestamp")
    c_dev = device_column(table)
    c_ptr = table.col("stream_ptr")
    stats = {"file": table.name, "rows": len(table), "samples": 0, "skipped_rows": 0,
             "scientific_timestamps": 0}
    if c_ts is None:
        trace.warn(f"{path}: no Timestamp column; {len(table)} rows not converted")
        stats["skipped_rows"] = len(table)
        return stats
    metrics = [i for i, k in enumerate(table.keys) if k not in _SKIP and i != c_ts]
    ptrs: dict[str, set[str]] = defaultdict(set)
    if c_ptr is not None:
        for row in table.rows:
            ptrs[row[c_comp] if c_comp is not None else ""].add(row[c_ptr].strip())
    counters: dict[tuple, Any] = {}
    samples: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    stem = Path(table.name).stem
    for row in table.rows:
        ts = us_to_ns(row[c_ts])
        if ts is None or ts < 0:
            stats["skipped_rows"] += 1
            continue
        if is_scientific(row[c_ts]):
            stats["scientific_timestamps"] += 1
        comp = row[c_comp].strip() if c_comp is not None else stem
        dev = _row_device(row, c_dev, device)
        series = comp
        if c_ptr is not None and len(ptrs[comp]) > 1 and row[c_ptr].strip():
            series = f"{comp} stream {row[c_ptr].strip()}"
        for i in metrics:
            v = cell_value(row[i])
            if not isinstance(v, (int, float)):
                continue
            key = (dev, series, i)
            if key not in counters:
                group = _memory_group(layout, dev, stem, table)
                counters[key] = trace.add_counter(f"{series} {_metric(table.header[i])}", group,
                                                  unit=_unit(table.header[i]),
                                                  description=f"{table.header[i]} of {comp} "
                                                              f"({table.name})")
            samples[key].append((ts, float(v)))
            stats["samples"] += 1
    _add_samples(counters, samples)
    _report(trace, table, stats)
    trace.meta.source_files.append(str(path))
    return stats


def add_operator_memory(trace: Trace, layout: Layout, path: Path, device: int | None,
                        table: Table | None = None) -> dict[str, Any]:
    """operator_memory.csv: total allocated/reserved/active counters sampled at each
    allocation and release, and one instant per allocation carrying the whole row.
    ``table``: the file already parsed, if it was."""
    if table is None:
        table = read_table(path)
    c_alloc = table.col("allocation_time")
    c_rel = table.col("release_time")
    c_dev = device_column(table)
    c_name = table.col("name")
    stats = {"file": table.name, "rows": len(table), "samples": 0, "instants": 0,
             "skipped_rows": 0}
    if c_alloc is None:
        trace.warn(f"{path}: no Allocation Time column; {len(table)} rows not converted")
        stats["skipped_rows"] = len(table)
        return stats
    pairs: list[tuple[str, int | None, int | None]] = []   # metric, alloc col, release col
    for i, k in enumerate(table.keys):
        if k.startswith("allocation_total_"):
            metric = k[len("allocation_"):]
            rel = table.col("release_" + metric)
            pairs.append((_metric(table.header[i])[len("Allocation "):], i, rel))
    names = [arg_name(h) for h in table.header]
    counters: dict[tuple, Any] = {}
    samples: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    lanes: dict[int | None, int] = {}
    for r, row in enumerate(table.rows):
        ts = us_to_ns(row[c_alloc])
        if ts is None or ts < 0:
            stats["skipped_rows"] += 1
            continue
        rel_ts = us_to_ns(row[c_rel]) if c_rel is not None else None
        if rel_ts is not None and rel_ts < 0:
            rel_ts = None
        dev = _row_device(row, c_dev, device)
        group = _memory_group(layout, dev, "operator_memory", table)
        for metric, ca, cr in pairs:
            key = (dev, metric)
            if key not in counters:
                counters[key] = trace.add_counter(
                    f"operator {metric}", group, unit=_unit(table.header[ca]),
                    description=f"{metric} as operator_memory records it at each allocation "
                                "and release")
            for col, when in ((ca, ts), (cr, rel_ts)):
                if col is None or when is None:
                    continue
                v = cell_value(row[col])
                if isinstance(v, (int, float)):
                    samples[key].append((when, float(v)))
                    stats["samples"] += 1
        lane = lanes.get(dev)
        if lane is None:
            lane = lanes[dev] = layout.lane(group, "allocations", order=1 << 20, nesting=True,
                                            description="one instant per operator allocation "
                                                        "(all operator_memory columns as args)")
        args = {n: (row[i].strip() if match_key(table.header[i]).endswith("time")
                    and cell_value(row[i]) is not None else cell_value(row[i]))
                for i, n in enumerate(names)}
        args["operator_memory_row"] = r
        trace.add_instant(lane, ts, row[c_name].strip() if c_name is not None else "alloc",
                          "memory", args)
        stats["instants"] += 1
    _add_samples(counters, samples)
    _report(trace, table, stats)
    trace.meta.source_files.append(str(path))
    return stats


def _row_device(row: list[str], c_dev: int | None, default: int | None) -> int | None:
    dev = device_number(row[c_dev]) if c_dev is not None else None
    return default if dev is None else dev


def _memory_group(layout: Layout, dev: int | None, name: str, table: Table) -> int:
    """The ``name`` group (one per file kind) in the device's Memory group."""
    memory = layout.group(layout.device(dev), "Memory", order=1 << 20,
                          description="memory counters from the torch_npu CSV files")
    return layout.group(memory, name, description=f"from {table.name}")


def _add_samples(counters: dict[tuple, Any], samples: dict[tuple, list[tuple[int, float]]]
                 ) -> None:
    """Each counter's samples in time order."""
    for key, pts in samples.items():
        pts.sort(key=lambda p: p[0])
        for ts, v in pts:
            counters[key].add(ts, v)


def _report(trace: Trace, table: Table, stats: dict[str, Any]) -> None:
    if stats.get("skipped_rows"):
        trace.warn(f"{table.path}: {stats['skipped_rows']} rows without a usable timestamp not "
                   "converted")
    if stats.get("scientific_timestamps"):
        trace.warn(f"{table.path}: {stats['scientific_timestamps']} timestamps are in "
                   "scientific notation (a spreadsheet round trip dropped their digits, e.g. "
                   "1.69512E+15); kept as written, their times are approximate", SCIENTIFIC_TIMES)
    table.warn_into(trace)
