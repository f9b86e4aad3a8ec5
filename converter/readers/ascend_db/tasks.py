"""Device tasks (TASK + COMPUTE_TASK_INFO + TASK_PMU_INFO + COMMUNICATION_TASK_INFO) and
communication ops (COMMUNICATION_OP) onto the lanes the text export's timeline uses:
``NPU n / Ascend Hardware / Stream s`` (communication subtasks too, on their stream, as the
text timeline has them) and ``NPU n / HCCL / Group g Communication``; names and args as the
text readers give them."""

from __future__ import annotations

from typing import Any, Callable

from ...arg_rows import ArgRow, ArgTable
from ...model import KERNEL, MAX_NS, Slice, Trace
from ..msprof.csvtable import normalize_task_type, tensor_list, cell_value
from ..msprof.jsontrace import _describe_lane, _describe_process
from ..msprof.layout import Layout
from ..msprof.tasks import pipe_ratios
from ..msprof.timefmt import UINT32_MAX
from .database import Database, plain, report_rows, span, text

HW_ORDER, HCCL_ORDER = 13, 15
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


def add_tasks(trace: Trace, layout: Layout, db: Database, index: dict[int, list[int]],
              stats: dict[str, Any], ahead: Callable[[], dict | None] | None = None) -> None:
    """One slice per TASK row; ``index`` gets connectionId -> slices (flow ends).
    ``ahead``: ``task_tables`` read by another process meanwhile (``ahead.Ahead``), or
    None (then read here)."""
    if "TASK" not in db.tables:
        return
    pmu = _pmu(db)
    got = (ahead() if ahead is not None else None) or task_tables(db)
    compute, comm, cur = got["compute"], got["comm"], got["rows"]
    source = db.path.name
    lanes: dict[tuple, int] = {}
    types: dict[Any, str | None] = {}
    made = bad = 0
    containers: dict[tuple, list] = {}
    plans: dict[tuple, tuple] = {}     # PMU names -> their pipe plan, a number
    norms: dict[Any, str | None] = {}

    def norm(v):
        try:
            return norms[v]
        except KeyError:
            out = norms[v] = normalize_task_type(v)
            return out
    subtasks: dict[tuple, int] = {}
    slices = trace.slices
    tables: dict[tuple, Any] = {}       # the shape of a task's args -> their ArgTable
    more = extra = None                 # a task's task info and PMU figures (``_table``)
    # id of a task info's args (held by ``got``) -> a number for their names
    more_keys: dict[int, int] = {}
    key_sets: dict[tuple, int] = {}

    def keys_of(more: dict) -> int:
        hit = more_keys.get(id(more))
        if hit is None:
            hit = more_keys[id(more)] = key_sets.setdefault(tuple(more), len(key_sets))
        return hit

    def draw(dev, stream, start, end, name, cat, args, conn) -> int:
        nonlocal made
        key = (dev, stream)
        lane = lanes.get(key)
        if lane is None:
            lane = lanes[key] = _task_lane(layout, dev, stream)
        i = len(slices)
        slices.append(Slice(lane, start, end - start, name, cat, args))
        if conn is not None:
            at = index.get(conn)
            if at is None:
                index[conn] = [i]
            else:
                at.append(i)
        made += 1
        return i

    # (The checks of every row are written out: 1 M rows; ``span`` and ``plain`` say what
    # they check.)
    for start, end, dev, conn, gid, ttype, ctx, stream, task, model in cur:
        if start.__class__ is not int or end.__class__ is not int or start < 0 \
                or end < start or end > MAX_NS:
            bad += 1
            if span(start, start) is None:  # a usable start: drawn zero-length
                continue
            end = start
        if dev.__class__ is bytes or conn.__class__ is bytes or gid.__class__ is bytes or \
                ctx.__class__ is bytes or stream.__class__ is bytes or \
                task.__class__ is bytes or model.__class__ is bytes:
            dev, conn, gid, ctx, stream, task, model = map(plain, (dev, conn, gid, ctx, stream,
                                                                    task, model))
        tname = types.get(ttype, "")
        if tname == "":
            tname = types[ttype] = db.string(ttype) if isinstance(ttype, int) else \
                (text(ttype) if ttype is not None else None)
        c = compute.get(gid)
        h = comm.get(gid) if c is None else None
        if model is not None and (model == UINT32_MAX or model == -1):      # (``_id``)
            model = None
        if ctx is not None and (ctx == UINT32_MAX or ctx == -1):
            ctx = None
        # The args: names and values in the order a dict of them had (``_TASK_ARGS``, then
        # the task info's, the PMU figures...), a row of the table of those names
        # (``arg_rows``).
        values = (model, tname, stream, task, ctx, conn, dev)
        if c is not None:
            op_name, op_type, more = c
            name = op_name or tname or "task"
            cat = norm(op_type) or norm(tname) or KERNEL
            extra = pmu.get(gid)
            if extra:
                ek = tuple(extra)
                plan = plans.get(ek)
                if plan is None:
                    plan = plans[ek] = (_pipe_plan(extra), len(plans))
                pipes = _pipes(extra, plan[0])
                values = (*values, *more.values(), op_name, *extra.values(),
                          *((pipes,) if pipes else ()), gid, source)
                shape = (keys_of(more), plan[1], not pipes)
            else:
                values = (*values, *more.values(), op_name, gid, source)
                shape = (keys_of(more), None, None)
        elif h is not None:
            # communication subtasks sit on their hardware stream, named by the task type
            # (as the text timeline draws them); the op they belong to is an arg
            op_name, op_type, more = h
            name = tname or op_name or "task"
            htype = cell_value(op_type or "")
            cat = normalize_task_type(htype) or "hccl"
            if htype is not None:
                values = (*values, op_name, *more.values(), htype, gid, source)
            else:
                values = (*values, op_name, *more.values(), gid, source)
            shape = (keys_of(more), htype is None)
        else:
            name = tname or "task"
            cat = norm(tname) or KERNEL
            values = (*values, gid, source)
            shape = ()
        table = tables.get(shape)
        if table is None:
            table = tables[shape] = _table(shape, more, extra)
        args = table.add(values) if table.__class__ is ArgTable else dict(zip(table, values))
        if c is None and h is None and ctx is None and str(tname).startswith("KERNEL"):
            # maybe the hardware task around a context subtask (MIX kernels): drawn once
            # (``ctx`` is its context_id arg: nothing was added to its args)
            containers.setdefault((dev, stream, task, conn), []).append(
                (start, end, name, cat, args))
            continue
        i = draw(dev, stream, start, end, name, cat, args, conn)
        if c is not None and args["context_id"] is not None:    # (its figures may name it)
            subtasks.setdefault((dev, stream, task, conn), i)
    merged = 0
    for whole, rows in containers.items():
        sub = subtasks.get(whole)
        for start, end, name, cat, args in rows:
            if sub is not None:
                a = trace.slices[sub].args
                if "hardware_task_start_ns" not in a:
                    more = (start, end - start, args["global_task_id"])
                    if a.__class__ is ArgRow:       # a row of the table with these too
                        wider = tables.get(a.table)
                        if wider is None:
                            wider = tables[a.table] = _table_with(a.table, _HARDWARE)
                        trace.slices[sub].args = wider.add((*a.values(), *more)) \
                            if wider.__class__ is ArgTable else dict(zip(wider, (*a.values(),
                                                                                 *more)))
                    else:
                        a.update(zip(_HARDWARE, more))
                    merged += 1
                    continue
            draw(whole[0], whole[1], start, end, name, cat, args, whole[3])
    for table in tables.values():       # the rows as columns now (``arg_rows``)
        if table.__class__ is ArgTable:
            table.settle()
    stats["TASK"] = {"rows": made + merged + bad, "slices": made,
                     "merged_into_subtask": merged}
    if merged:
        info = trace.meta.extra.setdefault("ascend_db", {})
        info["tasks_merged_into_subtask"] = info.get("tasks_merged_into_subtask", 0) + merged
    if bad:
        trace.warn(f"{db.path}: {bad} TASK rows without a usable start/end time "
                   "(drawn as zero-length where the start is known, else not converted)")


_TASK_ARGS = ("model_id", "task_type", "stream_id", "task_id", "context_id", "connection_id",
              "device_id")


def _table(shape: tuple, more: dict | None, pmu: dict | None):
    """The ``ArgTable`` of the args of a task of ``shape`` (``add_tasks``: (task info
    names, PMU names or None, no pipe ratios?) for an op, (task info names, no HCCL task
    type?) for a communication task, () for the rest; ``more``, ``pmu``: that task's task
    info and PMU figures): the names in the order a dict of them had; where a name repeats
    (a PMU metric spelled as a task arg), the names as a tuple: the args are then a dict,
    built as ``dict.update`` would (the value of the last, at the place of the first)."""
    names = _TASK_ARGS
    if len(shape) == 3:
        names += (*more, "op_name")
        if shape[1] is not None:
            names += (*pmu, *(() if shape[2] else ("pipe_ratio",)))
    elif shape:
        names += ("op_name", *more, *(() if shape[1] else ("hccl_task_type",)))
    names += ("global_task_id", "source")
    return ArgTable(names) if len(set(names)) == len(names) else names


_HARDWARE = ("hardware_task_start_ns", "hardware_task_dur_ns", "hardware_global_task_id")


def _table_with(table: ArgTable, names: tuple[str, ...]):
    """The table of ``table``'s names and ``names`` after them (as ``_table``: the names
    alone where one repeats)."""
    wider = table.names + names
    return ArgTable(wider) if len(set(wider)) == len(wider) else wider


def _pipe_plan(pmu: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(metric, side, pipe) of the metrics of ``pmu`` that are pipe ratios
    (``msprof.tasks.pipe_ratios``), in its order: the same for every task with these
    metrics."""
    plan = []
    for k in pmu:
        got = pipe_ratios({k: 0.0})
        where = next(((side, pipe) for side, d in got.items() for pipe in d), None)
        if where is not None:
            plan.append((k, *where))
    return plan


def _pipes(pmu: dict[str, Any], plan: list[tuple[str, str, str]]) -> dict:
    """msprof.tasks.pipe_ratios of ``pmu``, by its metrics' ``_pipe_plan``."""
    out: dict[str, dict[str, float]] = {}
    for k, side, pipe in plan:
        v = pmu[k]
        if v.__class__ is float or v.__class__ is int:
            d = out.get(side)
            if d is None:
                d = out[side] = {}
            d[pipe] = float(v)
    return out


def _task_lane(layout: Layout, dev, stream) -> int:
    d = layout.device(dev if isinstance(dev, int) else None)
    g = layout.group(d, "Ascend Hardware", HW_ORDER,
                     _describe_process("Ascend Hardware", f"NPU {dev}"))
    name = f"Stream {stream}" if stream is not None else "No stream"
    return layout.lane(g, name, order=stream if isinstance(stream, int) else 1 << 20,
                       nesting=False, description=_describe_lane("Ascend Hardware", name))


def add_comm_ops(trace: Trace, layout: Layout, db: Database, index: dict[int, list[int]],
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
            index.setdefault(conn, []).append(i)
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
