"""Sampled tables as counter tracks under the device (names as the text export's timeline
writes them; values in the database's own units, stated on each track), and the steps
(STEP_TIME, with analysis.db's StepTraceTime figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...model import Trace
from ..msprof.jsontrace import _describe_process
from ..msprof.layout import Layout
from .database import Database, plain, span, text

# table -> (process group, sort order, value columns -> (counter name pattern, unit), series
# columns).  The name pattern may use {series} values and {type} (a STRING_IDS or enum name).
Spec = tuple[str, int, list[tuple[str, str, str]], list[str]]
COUNTERS: dict[str, Spec] = {
    "AICORE_FREQ": ("AI Core Freq", 14, [("freq", "AI Core Freq", "MHz")], []),
    "NPU_MEM": ("NPU MEM", 16, [("ddr", "{type}/DDR", "bytes"), ("hbm", "{type}/HBM", "bytes")],
                ["type"]),
    "NPU_MODULE_MEM": ("NPU Module MEM", 17, [("totalReserved", "{module}", "bytes")],
                       ["moduleId"]),
    "HBM": ("HBM", 18, [("bandwidth", "HBM {hbmId}/{type}", "bytes/s")], ["hbmId", "type"]),
    "LLC": ("LLC", 19, [("hitRate", "LLC {llcId} {mode}/Hit Rate", "%"),
                        ("throughput", "LLC {llcId} {mode}/Throughput", "bytes/s")],
            ["llcId", "mode"]),
    "ACC_PMU": ("Acc PMU", 20, [("readBwLevel", "read_bandwidth acc_id {accId}", ""),
                                ("writeBwLevel", "write_bandwidth acc_id {accId}", ""),
                                ("readOstLevel", "read_ost acc_id {accId}", ""),
                                ("writeOstLevel", "write_ost acc_id {accId}", "")], ["accId"]),
    "SOC_BANDWIDTH_LEVEL": ("Stars Soc Info", 21,
                            [("l2BufferBwLevel", "L2 Buffer Bw Level", ""),
                             ("mataBwLevel", "Mata Bw Level", "")], []),
    "MEMORY_RECORD": ("Memory", 22, [("totalAllocated", "{component} Allocated", "bytes"),
                                     ("totalReserved", "{component} Reserved", "bytes"),
                                     ("totalActive", "{component} Active", "bytes")],
                      ["component"]),
}
_TIME = {"MEMORY_RECORD": "timestamp"}


def _label(db: Database, table: str, col: str, v) -> str:
    if col in ("type", "mode"):
        s = text(db.string(v) if type(v) is int else v)
        return s.capitalize() if table in ("HBM", "LLC") else s.upper()
    if col == "moduleId":
        return db.enum("ENUM_MODULE", v) or str(v)
    if col == "component":
        return text(db.strings.get(v, v))
    return text(v)


def add_counters(trace: Trace, layout: Layout, db: Database, stats: dict[str, Any]) -> None:
    for table, (group, order, values, series) in COUNTERS.items():
        if table not in db.tables:
            continue
        time_col = _TIME.get(table, "timestampNs")
        want = [time_col, "deviceId"] + series + [c for c, _, _ in values]
        _, cur = db.rows(table, want)
        tracks: dict[tuple, Any] = {}
        rows = samples = bad = 0
        ns = len(series)
        for row in cur:
            rows += 1
            ts = row[0]
            if isinstance(ts, float) and ts.is_integer():
                ts = int(ts)
            if span(ts, ts) is None:
                bad += 1
                continue
            dev = row[1] if type(row[1]) is int else None
            key = row[2:2 + ns]
            for j, (col, pattern, unit) in enumerate(values):
                v = row[2 + ns + j]
                if type(v) not in (int, float) or v != v or abs(v) == float("inf"):
                    bad += 1
                    continue
                tk = (dev, j, key)
                c = tracks.get(tk)
                if c is None:
                    names = {s if s not in ("type", "mode", "moduleId") else
                             {"type": "type", "mode": "mode", "moduleId": "module"}[s]:
                             _label(db, table, s, k) for s, k in zip(series, key)}
                    name = pattern.format(**names)
                    g = layout.group(layout.device(dev), group, order,
                                     _describe_process(group, f"NPU {dev}") or
                                     f"{table} samples")
                    c = tracks[tk] = trace.add_counter(
                        name, g, unit=unit, description=f"{group}: {name} ({unit or col}) "
                                                        f"from {table}.{col}")
                c.add(ts, float(v))
                samples += 1
        stats[table] = {"rows": rows, "samples": samples}
        if bad:
            trace.warn(f"{db.path}: {bad} {table} values without a usable time or number "
                       "not converted")


def add_steps(trace: Trace, layout: Layout, db: Database, analysis: Path | None,
              open_db: Callable[[Path], Database], stats: dict[str, Any]) -> None:
    """STEP_TIME rows as ``Step n`` slices on the Steps lane (the torch_npu text reader's
    lane); analysis.db's StepTraceTime figures (µs) join them by step number."""
    if "STEP_TIME" not in db.tables:
        return
    figures: dict[str, dict[str, Any]] = {}
    if analysis is not None:
        try:
            with open_db(analysis) as adb:
                if "StepTraceTime" in adb.tables:
                    cur = adb.conn.execute("SELECT * FROM StepTraceTime")
                    cols = [d[0] for d in cur.description]
                    for row in cur:
                        d = dict(zip(cols, row))
                        figures[str(d.get("step"))] = {
                            (k + "_us" if k not in ("step", "type", "index") and
                             isinstance(v, (int, float)) else k): v for k, v in d.items()}
                    stats[f"{analysis.name}:StepTraceTime"] = {"rows": len(figures)}
                    trace.meta.source_files.append(str(analysis))
        except Exception as e:          # a side file never stops the timeline
            trace.warn(f"{analysis}: not read ({e}); steps have no StepTraceTime figures")
    made = 0
    for sid, start, end in db.conn.execute("SELECT id, startNs, endNs FROM STEP_TIME"):
        if span(start, end) is None:
            trace.warn(f"{db.path}: STEP_TIME step {sid} has no usable start/end; not drawn")
            continue
        lane = layout.lane(layout.root, "Steps", order=5, nesting=False,
                           description="training steps: STEP_TIME (torch_npu database)")
        args = dict(figures.get(str(sid), {}))
        args.setdefault("step", plain(sid))
        trace.add_slice(lane, start, end - start, f"Step {sid}", "step", args)
        made += 1
    stats["STEP_TIME"] = {"rows": made, "slices": made}
