"""Host side: CANN_API, PYTORCH_API (with PYTORCH_CALLCHAINS stacks) and MSTX_EVENTS on
``Host / CANN|Python|MsTx / Thread t`` lanes, and the host -> device flows of the
connection ids (CANN_API <-> TASK; PYTORCH_API -> CONNECTION_IDS -> TASK)."""

from __future__ import annotations

from array import array
from itertools import repeat
from operator import itemgetter
from typing import Any

from ...arg_rows import ArgRow, ArgTable, coded
from ...model import Flow, Slice, Trace
from ..msprof.jsontrace import _describe_process
from ..msprof.layout import Layout
from ..msprof.tasks import _int
from .database import Database, column_batches, ends_of, plain, report_rows, span

CANN_ORDER, PYTHON_ORDER, MSTX_ORDER = 7, 5, 6
# ENUM_API_TYPE name -> the prefix the text export puts before a CANN API's name
API_PREFIX = {"acl": "AscendCL", "node": "Node", "runtime": "Runtime", "model": "Model",
              "communication": "Hccl", "hccl": "Hccl"}
# PYTORCH_API type -> the Chrome category torch_npu's trace_view.json uses
PYTORCH_CAT = {"op": "cpu_op", "trace": "python_function", "mstx": "mstx"}


def _thread_lane(layout: Layout, group: str, order: int, tid: int, cache: dict) -> int:
    lane = cache.get((group, tid))
    if lane is None:
        g = layout.group(layout.host(), group, order, _describe_process(group, "CPU"))
        lane = cache[(group, tid)] = layout.lane(g, f"Thread {tid}", order=tid, nesting=True)
    return lane


def _tid(gtid) -> int:
    return gtid & 0xFFFFFFFF if isinstance(gtid, int) else 0


def cann_rows(db: Database) -> dict[str, Any]:
    """CANN_API's usable rows, for ``add_cann``: "rows" gives per row (as they are read)
    its thread (an index into "tids", in order of first use), its start and duration, its
    name (an index into "names": (level, api, slice name)) and connection id; "tids" and
    "names" grow as the rows are read, and "bad" counts the rows without usable times
    once all are.  Another process can read them (``ahead``) while this one reads TASK."""
    out: dict[str, Any] = {"names": [], "tids": [], "bad": 0}
    out["rows"] = _cann_rows(db, out)
    return out


def _cann_rows(db: Database, out: dict[str, Any]):
    names: dict[Any, int] = {}
    named = out["names"]
    tids: dict[int, int] = {}
    tid_list = out["tids"]
    bad = 0
    _, cur = db.rows("CANN_API", ["startNs", "endNs", "type", "globalTid", "connectionId",
                                  "name"])
    for start, end, typ, gtid, conn, sid in cur:
        if span(start, end) is None:
            bad += 1
            continue
        got = names.get((typ, sid))
        if got is None:
            level = db.enum("ENUM_API_TYPE", typ)
            api = db.string(sid) or f"string {sid}"
            prefix = API_PREFIX.get(level or "", (level or "api").capitalize())
            got = names[(typ, sid)] = len(named)
            named.append((level, api, f"{prefix}@{api}"))
        tid = _tid(gtid)
        k = tids.get(tid)
        if k is None:
            k = tids[tid] = len(tid_list)
            tid_list.append(tid)
        yield k, start, end - start, got, plain(conn)
    out["bad"] = bad


def add_cann(trace: Trace, layout: Layout, db: Database, cann: dict[int, int],
             stats: dict[str, Any], rows: dict[str, Any] | None = None) -> None:
    """One slice per usable CANN_API row, on its thread's lane; ``cann`` gets connectionId
    -> its first slice.  ``rows``: ``cann_rows`` read by another process (``ahead``: its
    rows as batches of columns), or None (then read here)."""
    if "CANN_API" not in db.tables:
        return
    if rows is None:
        rows = cann_rows(db)
        rows["rows"] = column_batches(rows["rows"])
    lanes: dict = {}
    by_tid: list[int] = []      # the lanes, made in order of first use as the rows come
    tids, names = rows["tids"], rows["names"]
    slices = trace.slices
    first = len(slices)
    # the args as rows of one table (``arg_rows``), a batch of rows at a time: the writer
    # encodes them a column at a time (1.3 M rows in a 1 M-task run)
    table = ArgTable(("Thread Id", "level", "id", "connection_id"))
    for columns in rows["rows"]:
        if not columns:
            continue
        ks, starts, durs, ns, conns = (c.tolist() if c.__class__ is array else list(c)
                                       for c in columns)
        while len(by_tid) <= max(ks):   # (a thread's number is the count of those before)
            by_tid.append(_thread_lane(layout, "CANN", CANN_ORDER, tids[len(by_tid)],
                                       lanes))
        at = len(slices)
        for i, conn in enumerate(conns, at):
            if conn is not None:
                cann.setdefault(conn, i)
        code = array("H" if len(names) <= 1 << 16 else "I", ns)
        row = table.extend([list(map(tids.__getitem__, ks)),
                            coded([n[0] for n in names], code),
                            coded([n[1] for n in names], code), conns], len(ks))
        slices.extend(map(Slice, map(by_tid.__getitem__, ks), starts, durs,
                          map(_NAME, map(names.__getitem__, ns)), repeat("cann"),
                          map(ArgRow, repeat(table), range(row, row + len(ks)))))
    report_rows(trace, db, stats, "CANN_API", len(slices) - first, rows["bad"])


_NAME = itemgetter(2)


def _stacks(db: Database) -> dict[int, str]:
    if "PYTORCH_CALLCHAINS" not in db.tables:
        return {}
    frames: dict[int, list[tuple[int, str]]] = {}
    for cid, sid, depth in db.conn.execute(
            "SELECT id, stack, stackDepth FROM PYTORCH_CALLCHAINS"):
        frames.setdefault(cid, []).append((depth if isinstance(depth, int) else 0,
                                           db.string(sid) or ""))
    return {k: ";\n".join(s for _, s in sorted(v)) for k, v in frames.items()}


def pytorch_rows(db: Database) -> dict[str, Any]:
    """PYTORCH_API's usable rows, for ``add_pytorch``: "rows" gives per row (as they are
    read) its thread (an index into "tids", in order of first use), its start and
    duration, its name and category (an index into "names"), "has", the bits of the args
    it has (1 "Sequence number", 2 "Fwd thread id", 4 "Input type", 8 "Input Dims", 16
    "Call stack", 32 "connection_id": an arg can be there with the value None, a string
    id with no string), and their values in that order (None where it has none).
    "tids" and "names" grow as the rows are read, and "bad" counts the rows without
    usable times once all are.  Every lookup is made per row (a missing string counts
    each time).  Another process can read them (``ahead``) while this one reads TASK."""
    out: dict[str, Any] = {"names": [], "tids": [], "bad": 0}
    out["rows"] = _pytorch_rows(db, out)
    return out


def _pytorch_rows(db: Database, out: dict[str, Any]):
    stacks = _stacks(db)
    names: dict[tuple, int] = {}
    named = out["names"]
    tids: dict[int, int] = {}
    tid_list = out["tids"]
    bad = 0
    string, enum = db.string, db.enum
    _, cur = db.rows("PYTORCH_API", ["startNs", "endNs", "globalTid", "connectionId", "name",
                                     "sequenceNumber", "fwdThreadId", "inputDtypes",
                                     "inputShapes", "callchainId", "type"])
    for start, end, gtid, conn, sid, seq, fwd, dtypes, shapes, chain, typ in cur:
        start, end = _int(start), _int(end)  # TEXT in some versions
        if span(start, end) is None:
            bad += 1
            continue
        conn, seq, fwd = plain(conn), plain(seq), plain(fwd)
        name = string(sid) or f"string {sid}"
        level = enum("ENUM_API_TYPE", typ)
        got = names.get((name, level))
        if got is None:
            cat = PYTORCH_CAT.get(level or "") or (
                ("dequeue" if name.startswith("Dequeue") else "enqueue") if level == "queue"
                else (level or "pytorch"))
            got = names[(name, level)] = len(named)
            named.append((name, cat))
        stack = stacks.get(chain) if chain is not None else None
        has = (seq is not None) | (fwd is not None) << 1 | (dtypes is not None) << 2 \
            | (shapes is not None) << 3 | (stack is not None) << 4 | (conn is not None) << 5
        tid = _tid(gtid)
        k = tids.get(tid)
        if k is None:
            k = tids[tid] = len(tid_list)
            tid_list.append(tid)
        yield (k, start, end - start, got, has, seq, fwd,
               string(dtypes) if dtypes is not None else None,
               string(shapes) if shapes is not None else None, stack, conn)
    out["bad"] = bad


def add_pytorch(trace: Trace, layout: Layout, db: Database, torch: dict[int, list[int]],
                stats: dict[str, Any], rows: dict[str, Any] | None = None) -> None:
    """One slice per usable PYTORCH_API row, on its thread's lane, with its call stack;
    ``torch`` gets connectionId -> its slices.  ``rows``: ``pytorch_rows`` read by another
    process (``ahead``), or None (then read here)."""
    if "PYTORCH_API" not in db.tables:
        return
    if rows is None:
        rows = pytorch_rows(db)
    lanes: dict = {}
    by_tid: list[int] = []      # the lanes, made in order of first use as the rows come
    tids, names = rows["tids"], rows["names"]
    slices = trace.slices
    first = len(slices)
    for k, start, dur, n, has, seq, fwd, dtypes, shapes, stack, conn in rows["rows"]:
        if k == len(by_tid):
            by_tid.append(_thread_lane(layout, "Python", PYTHON_ORDER, tids[k], lanes))
        name, cat = names[n]
        args: dict[str, Any] | None = None
        if has:
            # one test per arg, in pytorch_rows' order (a loop over the six bits made this
            # pass 1.40 -> 1.56 s on 492,000 rows)
            args = {}
            if has & 1:
                args["Sequence number"] = seq
            if has & 2:
                args["Fwd thread id"] = fwd
            if has & 4:
                args["Input type"] = dtypes
            if has & 8:
                args["Input Dims"] = shapes
            if has & 16:
                args["Call stack"] = stack
            if has & 32:
                args["connection_id"] = conn
                torch.setdefault(conn, []).append(len(slices))
        slices.append(Slice(by_tid[k], start, dur, name, cat, args))
    report_rows(trace, db, stats, "PYTORCH_API", len(slices) - first, rows["bad"])


def add_mstx(trace: Trace, layout: Layout, db: Database, stats: dict[str, Any]) -> None:
    """MSTX_EVENTS: ranges as slices, markers as instants, per thread."""
    if "MSTX_EVENTS" not in db.tables:
        return
    lanes: dict = {}
    ranges = marks = bad = 0
    _, cur = db.rows("MSTX_EVENTS", ["startNs", "endNs", "eventType", "rangeId", "category",
                                     "message", "globalTid", "domainId", "connectionId"])
    for start, end, typ, rid, cat, msg, gtid, dom, conn in cur:
        if span(start, start) is None:
            bad += 1
            continue
        rid, cat, dom, conn = map(plain, (rid, cat, dom, conn))
        kind = db.enum("ENUM_MSTX_EVENT_TYPE", typ)
        lane = _thread_lane(layout, "MsTx", MSTX_ORDER, _tid(gtid), lanes)
        args = {"event_type": kind, "range_id": rid, "category": cat, "domain_id": dom,
                "connection_id": conn}
        text = db.string(msg) or "mstx"
        if span(start, end) is not None and end > start and kind != "marker":
            trace.add_slice(lane, start, end - start, text, "mstx", args)
            ranges += 1
        else:
            trace.add_instant(lane, start, text, "mstx", args)
            marks += 1
    stats["MSTX_EVENTS"] = {"rows": ranges + marks + bad, "slices": ranges, "instants": marks}
    if bad:
        trace.warn(f"{db.path}: {bad} MSTX_EVENTS rows without a start time not converted")


def add_flows(trace: Trace, db: Database, cann: dict[int, int],
              device: dict[int, Any], torch: dict[int, list[int]],
              stats: dict[str, Any]) -> None:
    """CANN API -> device task (same connectionId: ``HostToDevice``) and PyTorch op ->
    device task (CONNECTION_IDS: ``async_npu``); ``device``: connectionId -> device tasks
    (``database.add_end``)."""
    flows, get = trace.flows, cann.get
    first = len(flows)
    for conn, targets in device.items():       # (``Trace.add_flow``'s, written out: a
        src = get(conn)                         # million flows at 0.2 against 0.4 µs)
        if src is None:
            continue
        if targets.__class__ is int:           # (``ends_of``'s two kinds, inline)
            flows.append(Flow(src, targets, "HostToDevice"))
        else:
            flows.extend([Flow(src, t, "HostToDevice") for t in targets])
    stats["flows"] = {"HostToDevice": len(flows) - first}
    if "CONNECTION_IDS" not in db.tables or not torch:
        return
    drawn = to_cann = no_api = 0
    queue: dict[int, list[int]] = {}
    for pid, conn in db.conn.execute("SELECT id, connectionId FROM CONNECTION_IDS"):
        srcs = torch.get(pid)
        if not srcs:
            no_api += 1
            continue
        targets = ends_of(device.get(conn))
        if targets:
            for t in targets:
                trace.add_flow(srcs[0], t, "async_npu")
                drawn += 1
        elif conn in cann:
            trace.add_flow(srcs[0], cann[conn], "async_npu")
            to_cann += 1
        else:       # an Enqueue and its Dequeue share a connectionId no task has
            queue.setdefault(conn, []).append(srcs[0])
    queued = alone = 0
    slices = trace.slices
    for ends in queue.values():
        if len(ends) < 2:
            alone += 1
            continue
        ends.sort(key=lambda i: slices[i].ts)
        for t in ends[1:]:
            trace.add_flow(ends[0], t, "async_task_queue")
            queued += 1
    stats["flows"].update({"async_npu": drawn + to_cann, "to_cann_api": to_cann,
                           "async_task_queue": queued})
    lost = alone + no_api
    if lost:
        trace.warn(f"{db.path}: {lost} CONNECTION_IDS pairs not drawn as flows: "
                   f"{no_api} name a PYTORCH_API connection id no row has, {alone} a "
                   "connectionId no TASK, COMMUNICATION_OP, CANN_API or other PYTORCH_API "
                   "row has")
