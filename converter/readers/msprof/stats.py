"""Aggregate files -> ``meta.extra["msprof_statistics"]`` (summaries, never timelines).

op_statistic / api_statistic / operator_details / l2_cache / static_op_mem /
step_trace_time / cluster_step_trace_time become lists of row dicts (plain names with units);
communication*.json become flat op and link records with every duration in µs (the files
write ms) and key names that carry the unit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from ...fileio import load_json, logical_name
from ...model import Trace
from .csvtable import arg_name, read_table
from .jsonshape import obj as as_dict
from .timefmt import ms_to_us

# files whose columns have no unit in the header but are µs (torch_npu docs)
_US_TABLES = {"step_trace_time", "cluster_step_trace_time"}
_NOT_TIMES = {"step", "type", "index", "dp_index", "pp_index", "tp_index", "rank"}

# stem prefix -> statistics key, for CSV aggregates (longest prefix first)
CSV_STATS = (
    ("cluster_step_trace_time", "cluster_step_trace_time"),
    ("step_trace_time", "step_trace_time"),
    ("op_statistic", "op_statistic"),
    ("api_statistic", "api_statistic"),
    ("operator_details", "operator_details"),
    ("l2_cache", "l2_cache"),
    ("static_op_mem", "static_op_mem"),
    ("data_preprocess", "data_preprocess"),
)
JSON_STATS = (
    ("cluster_communication_matrix", "cluster_communication_matrix"),
    ("cluster_communication", "cluster_communication"),
    ("communication_matrix", "communication_matrix"),
    ("communication_group", "communication_group"),
    ("communication", "communication"),
)


CSV_KINDS = {key for _, key in CSV_STATS}
JSON_KINDS = {key for _, key in JSON_STATS}


def stats_key(name: str) -> str | None:
    """The statistics key of an aggregate file name (``op_statistic_20260716.csv`` ->
    ``op_statistic``), or None."""
    low = logical_name(Path(name)).lower()
    table = CSV_STATS if low.endswith(".csv") else JSON_STATS if low.endswith(".json") else ()
    for prefix, key in table:
        if low.startswith(prefix):
            rest = low[len(prefix):]
            if rest[:1] in ("", ".", "_"):
                return key
    return None


def add_csv_stats(trace: Trace, key: str, path: Path, rank: int | None = None) -> int:
    table = read_table(path)
    rows = table.dicts(rank)
    if key in _US_TABLES:
        rows = [{(k + "_us" if k not in _NOT_TIMES and isinstance(v, (int, float))
                  and not k.endswith(("_us", "_ratio")) else k): v
                 for k, v in r.items()} for r in rows]
    stats = trace.meta.extra.setdefault("msprof_statistics", {})
    stats.setdefault(key, []).extend(rows)
    files = stats.setdefault("files", {})
    files.setdefault(key, []).append(str(path))
    table.warn_into(trace)
    trace.meta.source_files.append(str(path))
    return len(rows)


def add_json_stats(trace: Trace, key: str, path: Path, rank: int | None = None) -> int:
    obj = load_json(path)
    stats = trace.meta.extra.setdefault("msprof_statistics", {})
    stats.setdefault("files", {}).setdefault(key, []).append(str(path))
    trace.meta.source_files.append(str(path))
    if key in ("communication", "cluster_communication"):
        ops, totals = communication_records(obj, rank, cluster=key.startswith("cluster"))
        entry = stats.setdefault(key, {"ops": [], "totals": []})
        entry["ops"].extend(ops)
        entry["totals"].extend(totals)
        return len(ops) + len(totals)
    if key in ("communication_matrix", "cluster_communication_matrix"):
        links = matrix_records(obj, rank)
        stats.setdefault(key, []).extend(links)
        return len(links)
    if rank is not None:
        stats.setdefault(key, {})[str(rank)] = obj
    else:
        stats[key] = obj
    return 1


def _convert(d: dict[str, Any], keep_keys: bool = False) -> dict[str, Any]:
    """Unit-carrying names, ms -> µs; ``Size Distribution`` as records."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k == "Size Distribution" and isinstance(v, dict):
            out["size_distribution"] = [
                {"size_mb": _float(size), "count": cv[0] if len(cv) > 0 else None,
                 "time_us": ms_to_us(cv[1]) if len(cv) > 1 else None}
                for size, cv in v.items() if isinstance(cv, list)]
            continue
        if isinstance(v, dict):
            out[k if keep_keys else arg_name(k)] = _convert(v)
            continue
        if re.search(r"\(ms\)\s*$", k):
            out[arg_name(re.sub(r"\(ms\)\s*$", "", k)) + "_us"] = ms_to_us(v)
        else:
            out[arg_name(k)] = v
    return out


def _records(node: Any, marks: tuple[str, ...], rank: int | None
             ) -> Iterator[tuple[list[str], dict[str, Any], dict[str, Any]]]:
    """(key path, object, new record) for each object below ``node`` that holds one of the
    keys ``marks``, in document order (objects inside such an object are not visited).  An
    explicit stack: JSON may nest deeper than Python's recursion limit."""
    if not isinstance(node, dict):
        return
    stack: list[tuple[list[str], dict]] = [([], node)]      # only objects are stacked
    while stack:
        path, node = stack.pop()
        if any(m in node for m in marks):
            rec: dict[str, Any] = {"path": path}    # each path list is this object's own
            if rank is not None:
                rec["rank"] = rank
            yield path, node, rec
            continue
        stack.extend((path + [str(k)], v) for k, v in reversed(node.items())
                     if isinstance(v, dict))


def communication_records(obj: Any, rank: int | None, cluster: bool
                          ) -> tuple[list[dict], list[dict]]:
    ops: list[dict] = []
    totals: list[dict] = []
    for path, node, rec in _records(obj, ("Communication Time Info",
                                          "Communication Bandwidth Info"), rank):
        rec.update(_describe_path(path, cluster))
        rec.update(_convert(as_dict(node.get("Communication Time Info"))))
        rec["bandwidth"] = _convert(as_dict(node.get("Communication Bandwidth Info")),
                                    keep_keys=True)
        (totals if "Total Op Info" in path else ops).append(rec)
    return ops, totals


def matrix_records(obj: Any, rank: int | None) -> list[dict]:
    links: list[dict] = []
    for path, node, rec in _records(obj, ("Transport Type", "Transit Size(MB)"), rank):
        link = path[-1] if path else ""
        src, _, dst = link.partition("-")
        rec["link"] = link
        rec["src_rank"] = _intish(src)
        rec["dst_rank"] = _intish(dst)
        rec.update(_describe_path(path[:-1], cluster=False))
        rec.update(_convert(node))
        links.append(rec)
    return links


def _describe_path(path: list[str], cluster: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, p in enumerate(path):
        if p in ("p2p", "collective"):
            out["kind"] = p
        elif p.lower().startswith("step") and "step" not in out:
            out["step"] = p
        elif p.startswith("(") and p.endswith(")"):
            out["group"] = p
        elif p == "Total Op Info":
            out["op"] = p
        elif cluster and i == len(path) - 1 and p.isdigit():
            out["rank"] = int(p)
        elif "op" not in out and i >= 1:
            out["op"] = p
            name, _, ghash = p.partition("@")
            out["op_name"] = name
            if ghash:
                out["group_hash"] = ghash
    return out


def _float(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return None


def _intish(v: str):
    return int(v) if v.strip().isdigit() else v
