"""``msprof op`` on-board results (OPPROF_*): OpBasicInfo.csv, the per-block metric CSVs and
visualize_data.bin.  These are aggregates: each block/sub-block becomes a lane holding one
slice of its measured busy time drawn from 0 (a per-block view, not a timeline), its metric
rows become the slice's args, and basic info, roofline verdicts and advice go to
``meta.extra["msprof_op"]``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...fileio import logical_name, read_text
from ...model import GROUP, NO_BUBBLES, RunMeta, Trace
from ..base import ReadOptions, Source
from .causes import CUT_SHORT
from .common import Guard, role_kind
from .csvtable import PIPES, arg_name, cell_value, normalize_pipe, read_table
from .jsonshape import number, obj, rank, seq
from .timefmt import BLOCK_US, us_to_ns
from .visualize_bin import read_blocks

METRIC = re.compile(r"^(OpBasicInfo|PipeUtilization|ArithmeticUtilization|L2Cache|MemoryL0|"
                    r"MemoryUB|Memory|ResourceConflictRatio)", re.I)
NOT_A_TIMELINE = ("not a timeline: the lanes hold per-block aggregates without start times, "
                  "so there are no gaps to measure")
_RATIO = re.compile(r"^(aic|aiv)_([a-z0-9]+)_ratio$")
_TIME = re.compile(r"^(aic|aiv)_([a-z0-9]+)_time_us$")


def metric_label(path: Path) -> str:
    """``PipeUtilization.HEAD_EXCERPT.csv`` -> ``PipeUtilization``;
    ``PipeUtilization_roofline.csv`` -> ``PipeUtilization_roofline``."""
    stem = logical_name(path).split(".", 1)[0]
    return stem if METRIC.match(stem) else f"Metrics_{stem}"


def _metric(label: str) -> str:
    m = METRIC.match(label)
    return m.group(1) if m else "Metrics"


def _sub_order(sub: str) -> tuple:
    m = re.match(r"([a-z]+)(\d*)", sub)
    kind = m.group(1) if m else sub
    return ({"cube": 0, "vector": 1, "aicore": 2}.get(kind, 3), int(m.group(2) or 0) if m else 0,
            sub)


def _norm_sub(sub: str) -> str:
    s = str(sub).strip().lower()
    return {"vector": "vector0", "cube": "cube0", "aic": "cube0", "aiv": "vector0"}.get(s, s)


class _Blocks:
    def __init__(self):
        self.entries: dict[tuple[int, str], dict[str, Any]] = {}

    def get(self, block_id: int, sub: str) -> dict[str, Any]:
        key = (block_id, sub)
        e = self.entries.get(key)
        if e is None:
            e = self.entries[key] = {"block": sub, "block_id": block_id, "duration_us": None,
                                     "pipes": {}, "pipe_time_us": {}, "args": {}}
        return e


def read_opprof(source: Source, options: ReadOptions) -> Trace:
    meta = RunMeta(source.name, "msprof", tool="msprof op", clock=BLOCK_US)
    trace = Trace(meta)
    op: dict[str, Any] = {"op_name": None, "op_type": None, "block_dim": None,
                          "mix_block_dim": None, "core_count": None, "task_duration_us": None,
                          "soc": None, "blocks": [], "roofline": [], "advice": [], "files": {}}
    meta.extra["msprof_op"] = op
    blocks = _Blocks()
    roles = sorted(source.files.items(), key=lambda rp: (not rp[0].startswith("op_basic"),
                                                         rp[0]))
    guard = Guard(trace)
    for role, path in roles:
        kind = role_kind(role)
        if kind == "op_basic":
            guard(_basic_csv, trace, op, path)
        elif kind == "op_basic_info":
            guard(_basic_txt, trace, op, path)
    for role, path in roles:
        if role_kind(role).startswith("metric:") or role_kind(role) == "op_metric":
            guard(_metric_csv, trace, op, blocks, path, metric_label(path))
    for role, path in roles:
        if role_kind(role) == "visualize_bin":
            guard(_visualize, trace, op, blocks, path)
    guard.check()
    _draw(trace, op, blocks)
    if op.get("soc"):
        meta.device = str(op["soc"])
    op["advice"] = list(dict.fromkeys(a for a in op["advice"] if a))
    return trace


# -- OpBasicInfo ----------------------------------------------------------------------------
_BASIC_KEYS = {"op_name": "op_name", "op_type": "op_type", "task_duration_us": "task_duration_us",
               "block_dim": "block_dim", "block_num": "block_dim",
               "mix_block_dim": "mix_block_dim", "mix_block_num": "mix_block_dim",
               "device_id": "device_id", "pid": "pid", "current_freq": "current_freq_mhz",
               "rated_freq": "rated_freq_mhz"}


def _basic_csv(trace: Trace, op: dict[str, Any], path: Path) -> None:
    table = read_table(path)
    trace.meta.source_files.append(str(path))
    op["files"][path.name] = {"kind": "OpBasicInfo", "rows": len(table)}
    if not table.rows:
        trace.warn(f"{path}: no data row")
        return
    row = table.dicts()[0]
    for k, v in row.items():
        op[_BASIC_KEYS.get(k, k)] = v
    table.warn_into(trace)


def _basic_txt(trace: Trace, op: dict[str, Any], path: Path) -> None:
    """dump/op_basic_info.txt: ``Key=value`` lines; the best chip identifier."""
    trace.meta.source_files.append(str(path))
    info: dict[str, Any] = {}
    for line in read_text(path).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            info[arg_name(key)] = cell_value(value)
    op["files"][path.name] = {"kind": "op_basic_info.txt", "keys": len(info)}
    op["op_basic_info"] = info
    if info.get("run_soc_version"):
        op["soc"] = info["run_soc_version"]
    for k, v in info.items():
        target = _BASIC_KEYS.get(k)
        if target and op.get(target) is None:
            op[target] = v


# -- metric CSVs ----------------------------------------------------------------------------
def _metric_csv(trace: Trace, op: dict[str, Any], blocks: _Blocks, path: Path,
                label: str) -> None:
    table = read_table(path)
    trace.meta.source_files.append(str(path))
    metric = _metric(label)
    names = [arg_name(h) for h in table.header]
    c_block = table.col("block_id")
    c_sub = table.col("sub_block_id")
    for r, row in enumerate(table.rows):
        bid = cell_value(row[c_block]) if c_block is not None else r
        if not isinstance(bid, int):
            bid = r
        sub = _norm_sub(row[c_sub]) if c_sub is not None and row[c_sub].strip() else "aicore"
        e = blocks.get(bid, sub)
        values = {n: cell_value(v) for i, (n, v) in enumerate(zip(names, row))
                  if i not in (c_block, c_sub)}
        values["row"] = r
        e["args"][label] = values
        if e["duration_us"] is None:
            side = ("aiv_time_us", "aic_time_us") if sub.startswith("vector") else \
                ("aic_time_us", "aiv_time_us")
            for k in side:
                us = number(values[k]) if isinstance(values.get(k), (int, float)) else None
                if us is not None and us >= 0:
                    e["duration_us"] = us
                    e["duration_from"] = f"{label}.{k}"
                    break
        if metric in ("PipeUtilization", "ArithmeticUtilization"):
            for k, v in values.items():
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    continue
                m = _RATIO.match(k)
                if m and normalize_pipe(m.group(2)) in PIPES:
                    e["pipes"].setdefault(normalize_pipe(m.group(2)), float(v))
                m = _TIME.match(k)
                if m and normalize_pipe(m.group(2)) in PIPES and metric == "PipeUtilization":
                    e["pipe_time_us"].setdefault(normalize_pipe(m.group(2)), float(v))
    info: dict[str, Any] = {"kind": metric, "label": label, "rows": len(table),
                            "columns": len(table.header)}
    expected = _expected_rows(op)
    if expected and len(table) < expected and c_block is not None:
        info["expected_rows"] = expected
        trace.warn(f"{path}: {len(table)} of {expected} block rows (Block Dim "
                   f"{op.get('block_dim')}" + (f" + Mix Block Dim {op.get('mix_block_dim')}"
                                               if _is_mix(op) else "") +
                   "): the file looks cut short; the rows present are converted", CUT_SHORT)
    op["files"][path.name] = info
    table.warn_into(trace)


def _is_mix(op: dict[str, Any]) -> bool:
    return str(op.get("op_type") or "").lower() == "mix" and isinstance(op.get("mix_block_dim"),
                                                                        int)


def _expected_rows(op: dict[str, Any]) -> int | None:
    bd = op.get("block_dim")
    if not isinstance(bd, int) or bd <= 0:
        return None
    return bd + op["mix_block_dim"] if _is_mix(op) else bd


# -- visualize_data.bin ---------------------------------------------------------------------
def _visualize(trace: Trace, op: dict[str, Any], blocks: _Blocks, path: Path) -> None:
    found, note = read_blocks(path)
    trace.meta.source_files.append(str(path))
    if note:
        trace.warn(note, CUT_SHORT)
    counts: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for b in found:
        counts[b.name] = counts.get(b.name, 0) + 1
        p = b.payload
        if b.error or not isinstance(p, dict):
            skipped[b.name] = skipped.get(b.name, 0) + 1
            continue
        advice = p.get("advice")
        if isinstance(advice, list):
            op["advice"].extend(str(a) for a in advice)
        elif isinstance(advice, str) and b.type != 0xD:
            op["advice"].extend(a.strip() for a in advice.splitlines() if a.strip())
        if b.type == 5:
            _bin_basic(op, blocks, p)
        elif b.type in (6, 7):
            key = "compute_load" if b.type == 6 else "compute_load_table"
            for item in seq(p.get("subblock_detail")):
                if isinstance(item, dict):
                    _bin_subblock(blocks, item, key)
        elif b.type == 8:
            cores = seq(p.get("core_memory_map"))
            op.setdefault("memory_heat_map", []).extend(cores)
            for c in cores:
                op["advice"].extend(str(a) for a in seq(obj(c).get("advice")))
        elif b.type == 9:
            tables = seq(p.get("table_per_block"))
            op.setdefault("storage_tables", []).extend(tables)
            for t in tables:
                op["advice"].extend(str(a) for a in seq(obj(t).get("advice")))
        elif b.type == 0xC:
            op["occupancy"] = p.get("op_detail")
        elif b.type == 0xD:
            op["roofline_verdict"] = p.get("advice") if isinstance(p.get("advice"), str) \
                else None
            if op["roofline_verdict"]:
                op["advice"].append(op["roofline_verdict"])
            op["roofline"].extend(_rooflines(p))
        else:
            skipped[b.name] = skipped.get(b.name, 0) + 1
    op["files"][path.name] = {"kind": "visualize_data.bin", "blocks": counts}
    if skipped:
        trace.warn(f"{path}: blocks kept out of the model: " + ", ".join(
            f"{n} {k}" for k, n in sorted(skipped.items())) +
            " (source/instruction views, or unreadable)")


def _bin_basic(op: dict[str, Any], blocks: _Blocks, p: dict[str, Any]) -> None:
    for key, target in (("name", "op_name"), ("op_type", "op_type"), ("soc", "soc"),
                        ("block_dim", "block_dim"), ("mix_block_dim", "mix_block_dim"),
                        ("device_id", "device_id"), ("pid", "pid"),
                        ("duration", "task_duration_us")):
        if key in p and op.get(target) is None:
            v = p[key]
            v = cell_value(v) if isinstance(v, str) else v
            if target == "mix_block_dim" and isinstance(v, int) and v < 0:
                v = None
            op[target] = v
    op_type = str(op.get("op_type") or "").lower()
    kind = "vector" if op_type in ("vector", "aiv") else "cube" if op_type in ("cube", "aic") \
        else "aicore"
    for item in seq(p.get("block_detail")):
        item = obj(item)
        bid = cell_value(str(item.get("block_id")))
        durations = seq(item.get("duration"))
        for i, d in enumerate(durations):
            sub = "aicore" if kind == "aicore" and len(durations) == 1 else f"{kind}{i}"
            _bin_duration(blocks, bid, sub, d)
    mix = obj(p.get("mix_block_detail"))
    heads = seq(mix.get("head_name"))
    subs = [_norm_sub(re.sub(r"\s*duration.*$", "", str(h), flags=re.I)) for h in heads]
    for row in seq(mix.get("row")):
        values = seq(obj(row).get("value"))
        if not values:
            continue
        bid = cell_value(str(values[0]))
        for sub, v in zip(subs[1:], values[1:]):
            _bin_duration(blocks, bid, sub, v)


def _bin_duration(blocks: _Blocks, bid, sub: str, value) -> None:
    if not isinstance(bid, int):
        return
    v = cell_value(str(value)) if not isinstance(value, (int, float)) else value
    e = blocks.get(bid, _norm_sub(sub))
    e["args"].setdefault("visualize_data.bin", {})["duration_us"] = v
    if e["duration_us"] is None and isinstance(v, (int, float)) and number(v) is not None \
            and v >= 0:
        e["duration_us"] = float(v)
        e["duration_from"] = "visualize_data.bin"


def _bin_subblock(blocks: _Blocks, item: dict[str, Any], key: str) -> None:
    bid = cell_value(str(item.get("block_id")))
    if not isinstance(bid, int):
        return
    detail = obj(item.get("data_detail")) or item
    name = str(detail.get("name"))
    value = detail.get("value")
    value = cell_value(value) if isinstance(value, str) else value
    unit = detail.get("unit")
    e = blocks.get(bid, _norm_sub(str(item.get("block_type", "aicore"))))
    entry = e["args"].setdefault(key, {})
    entry[name] = value
    if "origin_value" in item:
        entry[f"{name} (origin)"] = item["origin_value"]
    low = name.lower().replace("_", " ")
    if key == "compute_load" and "all active" in low and isinstance(value, (int, float)):
        pipe = "cube" if low.startswith("cube") else "vector"
        e["pipes"].setdefault(pipe, float(value) / 100 if unit == 3 else float(value))


def _rooflines(p: dict[str, Any]) -> list[dict[str, Any]]:
    """Each roofline point with its region: ``memory`` bound left of the ridge point
    (computility / bandwidth), ``compute`` bound right of it; the tool's overall verdict is
    ``roofline_verdict``."""
    out = []
    for group in seq(p.get("multiple_rooflines")):
        group = obj(group)
        title = str(group.get("title", ""))
        for r in seq(group.get("rooflines")):
            r = obj(r)
            bw = number(r.get("bw"))
            comp = number(r.get("computility"))
            point = seq(r.get("point")) or [None, None]
            x = number(point[0])
            bound = None
            if bw and comp and x is not None:
                bound = "memory" if x < comp / bw else "compute"
            out.append({"name": f"{title}: {r.get('bw_name')}".strip(": "), "title": title,
                        "bound": bound, "verdict": p.get("advice"),
                        "bandwidth": bw, "bandwidth_name": r.get("bw_name"),
                        "computility": comp, "computility_name": r.get("computility_name"),
                        "point": point, "ratio": number(r.get("ratio"))})
    return out


# -- tracks ----------------------------------------------------------------------------------
def _draw(trace: Trace, op: dict[str, Any], blocks: _Blocks) -> None:
    if not blocks.entries:
        return
    title = f"{op.get('op_name') or 'kernel'}: per-block view"
    # Tells the analyses there are no gaps to measure here (docs/analyses.md).
    trace.meta.extra[NO_BUBBLES] = NOT_A_TIMELINE
    top = trace.add_track(title, None, GROUP, order=0,
                          description="msprof op per-block view, NOT a timeline: one lane per "
                                      "block/sub-block holding one slice of its measured busy "
                                      "time, drawn from 0; metric rows as args")
    groups: dict[int, int] = {}
    missing = 0
    for (bid, sub) in sorted(blocks.entries, key=lambda k: (k[0], _sub_order(k[1]))):
        e = blocks.entries[(bid, sub)]
        g = groups.get(bid)
        if g is None:
            g = groups[bid] = trace.add_track(f"Block {bid}", top, GROUP, order=rank(bid))
        lane = trace.add_track(sub, g, order=len(trace.tracks[g].children), nesting=False,
                               description=f"block {bid} {sub}: per-block view (its measured "
                                           "time from 0), not a timeline")
        dur = us_to_ns(e["duration_us"]) if e["duration_us"] is not None else None
        if dur is None or dur < 0:
            missing += 1
            dur = 0
        args = {"block_id": bid, "sub_block": sub, "duration_us": e["duration_us"],
                "duration_from": e.get("duration_from"), "pipes": e["pipes"] or None,
                "pipe_time_us": e["pipe_time_us"] or None}
        args.update(e["args"])
        trace.add_slice(lane, 0, dur or 0, f"{op.get('op_name') or 'block'} block {bid} {sub}",
                        "block", args)
        op["blocks"].append({"block": sub, "block_id": bid, "duration_us": e["duration_us"],
                             "pipes": dict(e["pipes"]), "pipe_time_us": dict(e["pipe_time_us"])})
    if missing:
        trace.warn(f"{trace.meta.name}: {missing} blocks have no usable measured time; drawn "
                   "as zero-length slices")
