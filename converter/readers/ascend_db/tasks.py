"""Device tasks (TASK + COMPUTE_TASK_INFO + TASK_PMU_INFO + COMMUNICATION_TASK_INFO) and
communication ops (COMMUNICATION_OP) onto the lanes the text export's timeline uses:
``NPU n / Ascend Hardware / Stream s`` (communication subtasks too, on their stream, as the
text timeline has them) and ``NPU n / HCCL / Group g Communication``; names and args as the
text readers give them."""

from __future__ import annotations

from typing import Any, Callable

from ...model import Trace
from ..msprof.csvtable import tensor_list, cell_value
from ..msprof.jsontrace import _describe_process
from ..msprof.layout import Layout
from ..msprof.timefmt import UINT32_MAX
from .database import Database, add_end, column_batches, plain, report_rows, span
from .task_rows import TaskRows

HCCL_ORDER = 15
# TASK_PMU_INFO metric -> the op_summary column's arg name (the text export's spelling).
PMU_NAMES = {"aic_total_time": "aicore_time_us", "aiv_total_time": "aiv_time_us"}
# COMPUTE_TASK_INFO column -> arg name (as op_summary / kernel_details columns become)
_COMPUTE = (("opType", "op_type", "s"), ("opState", "op_state", "s"),
            ("blockNum", "block_dim", "n"), ("blockDim", "block_dim", "n"),
            ("mixBlockNum", "mix_block_dim", "n"), ("mixBlockDim", "mix_block_dim", "n"),
            ("hf32Eligible", "hf32_eligible", "s"),
            ("inputShapes", "input_shapes", "shape"), ("inputDataTypes", "input_data_types", "l"),
            ("inputFormats", "input_formats", "l"), ("outputShapes", "output_shapes", "shape"),
            ("outputDataTypes", "output_data_types", "l"),
            ("outputFormats", "output_formats", "l"), ("attrInfo", "attr_info", "s"))
_COMM = (("planeId", "plane_id", "n"), ("groupName", "group_name", "s"),
         ("notifyId", "notify_id", "n"), ("rdmaType", "rdma_type", "ENUM_HCCL_RDMA_TYPE"),
         ("srcRank", "src_rank", "n"), ("dstRank", "dst_rank", "n"),
         ("transportType", "transport_type", "ENUM_HCCL_TRANSPORT_TYPE"),
         ("size", "size_bytes", "n"), ("dataType", "data_type", "ENUM_HCCL_DATA_TYPE"),
         ("linkType", "link_type", "ENUM_HCCL_LINK_TYPE"), ("opId", "op_id", "n"),
         ("isMaster", "is_master", "n"), ("bandwidth", "bandwidth_bytes_s", "n"))
_TASK = ("startNs", "endNs", "deviceId", "connectionId", "globalTaskId", "taskType",
         "contextId", "streamId", "taskId", "modelId")


def _id(v):
    return None if v is None or v == UINT32_MAX or v == -1 else v


def _value(db: Database, kind: str, v):
    if kind == "name":
        return db.string(v) if v is not None else None
    if kind == "n":
        return _id(plain(v))
    if kind == "s":
        return cell_value(db.string(v) or "") if v is not None else None
    if kind == "shape":
        s = db.string(v)
        return tensor_list(s, True) if s is not None else None
    if kind == "l":
        s = db.string(v)
        return tensor_list(s, False) if s is not None else None
    return db.enum(kind, v) if v is not None else None


def _pmu(db: Database) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if "TASK_PMU_INFO" not in db.tables:
        return out
    names: dict[int, str] = {}
    last: Any = object()                # a task's rows come together: its dict at hand
    held: dict[str, Any] = {}
    for gid, sid, value in db.conn.execute(
            "SELECT globalTaskId, name, value FROM TASK_PMU_INFO"):
        n = names.get(sid)
        if n is None:
            raw = db.string(sid)
            if raw is None:
                continue
            n = names[sid] = PMU_NAMES.get(raw) or (raw + "_us" if raw.endswith("_time")
                                                    else raw)
        if gid != last or gid.__class__ is not last.__class__:
            held = out.get(gid)
            if held is None:
                held = out[gid] = {}
            last = gid
        held[n] = value.hex() if value.__class__ is bytes else value
    return out


def _side(db: Database, table: str, spec) -> dict[int, tuple[Any, Any, dict[str, Any]]]:
    """Per globalTaskId, from COMPUTE_TASK_INFO / COMMUNICATION_TASK_INFO (string and enum
    ids looked up once each; a task's first row): its op name, its task type and its other
    args."""
    out: dict[int, tuple[Any, Any, dict[str, Any]]] = {}
    if table not in db.tables:
        return out
    want = ["globalTaskId", "name", "taskType"] + [c for c, _, _ in spec]
    cols, cur = db.rows(table, want)
    present = set(cols)
    fields = [(i + 3, arg, kind) for i, (c, arg, kind) in enumerate(spec) if c in present]
    memo: dict[tuple, Any] = {}

    def value(kind, v):
        key = (kind, v)
        try:
            return memo[key]
        except KeyError:
            out_ = memo[key] = _value(db, kind, v)
            return out_
        except TypeError:
            return _value(db, kind, v)

    # Rows that differ only in their task id (one op run again and again) give one entry,
    # held once: the cells with their types are the key (1 and 1.0 are equal keys).
    made: dict[tuple, tuple[Any, Any, dict[str, Any]]] = {}
    for row in cur:
        key = (row[1:], tuple(map(type, row)))
        hit = made.get(key)
        if hit is None:
            a: dict[str, Any] = {}
            for i, arg, kind in fields:
                a[arg] = value(kind, row[i]) if kind != "n" else _id(plain(row[i]))
            hit = made[key] = (value("name", row[1]), value("name", row[2]), a)
        out.setdefault(row[0], hit)
    return out


def task_tables(db: Database) -> dict[str, Any]:
    """What ``add_tasks`` reads besides the PMU figures: the task info of COMPUTE_TASK_INFO
    and COMMUNICATION_TASK_INFO by globalTaskId (``_side``), and TASK's rows (a cursor)."""
    return {"compute": _side(db, "COMPUTE_TASK_INFO", _COMPUTE),
            "comm": _side(db, "COMMUNICATION_TASK_INFO", _COMM),
            "rows": db.rows("TASK", list(_TASK))[1]}


def add_tasks(trace: Trace, layout: Layout, db: Database, index: dict[int, Any],
              stats: dict[str, Any], ahead: Callable[[], dict | None] | None = None) -> None:
    """One slice per TASK row; ``index`` gets connectionId -> slices (flow ends).
    ``ahead``: ``task_tables`` read by another process meanwhile (``ahead.Ahead``: its
    rows as batches of columns), or None (then read here)."""
    if "TASK" not in db.tables:
        return
    pmu = _pmu(db)
    got = ahead() if ahead is not None else None
    if got is None:
        got = task_tables(db)
        got["rows"] = column_batches(got["rows"])
    tasks = TaskRows(trace, layout, db, index, got["compute"], got["comm"], pmu)
    for columns in got["rows"]:
        tasks.batch(columns)
    tasks.finish(stats)


def add_comm_ops(trace: Trace, layout: Layout, db: Database, index: dict[int, Any],
                 stats: dict[str, Any]) -> None:
    """COMMUNICATION_OP rows: one slice per op on ``HCCL / Group g Communication``."""
    if "COMMUNICATION_OP" not in db.tables:
        return
    want = ["opName", "startNs", "endNs", "connectionId", "groupName", "opId", "relay",
            "retry", "dataType", "algType", "count", "opType", "deviceId"]
    _, cur = db.rows("COMMUNICATION_OP", want)
    groups: dict[Any, int] = {}
    made = bad = 0
    for name, start, end, conn, group, op_id, relay, retry, dtype, alg, count, optype, dev \
            in cur:
        if span(start, end) is None:
            bad += 1
            continue
        conn, op_id, relay, retry, count, dev = map(plain, (conn, op_id, relay, retry, count,
                                                            dev))
        d = layout.device(dev if isinstance(dev, int) else None)
        g = layout.group(d, "HCCL", HCCL_ORDER, _describe_process("HCCL", None))
        n = groups.setdefault(group, len(groups))
        lane = layout.lane(g, f"Group {n} Communication", order=0, nesting=False)
        args = {"connection_id": conn, "group_name": db.string(group),
                "op_id": op_id, "relay": relay, "retry": retry,
                "data_type": db.enum("ENUM_HCCL_DATA_TYPE", dtype),
                "alg_type": db.string(alg), "count": count,
                "op_type": cell_value(db.string(optype) or ""), "source": db.path.name}
        i = trace.add_slice(lane, start, end - start, db.string(name) or "communication",
                            "hccl", args)
        if conn is not None:
            add_end(index, conn, i)
        made += 1
    report_rows(trace, db, stats, "COMMUNICATION_OP", made, bad)


# OVERLAP_ANALYSIS type (ENUM_OVERLAP_ANALYSIS_TYPE) -> the text timeline's lane (its order)
OVERLAP_LANES = {"COMPUTE": ("Computing", 2), "COMMUNICATION": ("Communication", 0),
                 "COMM_NOT_OVERLAP_COMP": ("Communication(Not Overlapped)", 1),
                 "FREE": ("Free", 3)}
_OVERLAP_IDS = {0: "COMPUTE", 1: "COMMUNICATION", 2: "COMM_NOT_OVERLAP_COMP", 3: "FREE"}


def add_overlap(trace: Trace, layout: Layout, db: Database, stats: dict[str, Any]) -> None:
    """OVERLAP_ANALYSIS (newer msprof): msprof's own computing / communication / free
    intervals, on the text timeline's derived ``Overlap Analysis`` lanes."""
    if "OVERLAP_ANALYSIS" not in db.tables:
        return
    _, cur = db.rows("OVERLAP_ANALYSIS", ["deviceId", "startNs", "endNs", "type"])
    enum = "ENUM_OVERLAP_ANALYSIS_TYPE" in db.tables
    lanes: dict[tuple, int] = {}
    made = bad = 0
    for dev, start, end, typ in cur:
        if isinstance(start, float) and start.is_integer():
            start = int(start)
        if isinstance(end, float) and end.is_integer():
            end = int(end)
        kind = db.enum("ENUM_OVERLAP_ANALYSIS_TYPE", typ) if enum else _OVERLAP_IDS.get(typ)
        where = OVERLAP_LANES.get(kind or "")
        if span(start, end) is None or where is None:
            bad += 1
            continue
        dev = dev if type(dev) is int else None
        lane = lanes.get((dev, where))
        if lane is None:
            g = layout.group(layout.device(dev), "Overlap Analysis", 30,
                             _describe_process("Overlap Analysis", f"NPU {dev}"))
            lane = lanes[(dev, where)] = layout.lane(g, where[0], order=where[1],
                                                     nesting=False, derived=True)
        trace.add_slice(lane, start, end - start, where[0], "overlap_analysis")
        made += 1
    stats["OVERLAP_ANALYSIS"] = {"rows": made + bad, "slices": made}
    if bad:
        trace.warn(f"{db.path}: {bad} OVERLAP_ANALYSIS rows without usable times or a known "
                   "type not converted")
