"""One database export into the model: tables in the order the text reader builds lanes,
each table guarded (a table that cannot be read is named and skipped), every table not
converted named in a warning."""

from __future__ import annotations

from typing import Any

from ...errors import InputError
from ...model import NS, RunMeta, Trace, split_overlaps
from ...slice_columns import kept_columns
from ..base import ReadOptions, Source
from ..msprof.app import _device_info
from ..msprof.common import note_ignored
from ..msprof.layout import Layout
from ..msprof.torch_npu import _profiler_info
from .counters import COUNTERS, add_counters, add_steps
from .database import DB_ERRORS, Database, sql_error
from .ahead import Ahead
from .host import add_cann, add_flows, add_mstx, add_pytorch
from .tasks import add_comm_ops, add_overlap, add_tasks

# Flows from which the clock skew is measured over the slices' columns
COLUMNS_FROM = 4096
USED = {"TASK", "COMMUNICATION_OP", "CANN_API", "PYTORCH_API", "MSTX_EVENTS", "STEP_TIME",
        "OVERLAP_ANALYSIS", *COUNTERS}


def read_db(source: Source, options: ReadOptions) -> Trace:
    """The run's database, or one per rank (roles ``rankN/database``): a rank that cannot be
    read is named and the others convert."""
    from . import LOOKUPS
    prefixes = sorted(r[:-len("database")] for r in source.files if r.endswith("database"))
    trace: Trace | None = None
    errors: list[InputError] = []
    for n, prefix in enumerate(prefixes):
        path = source.files[prefix + "database"]
        try:
            db = Database(path)
            try:
                trace = _read(source, options, db, LOOKUPS, prefix, trace,
                              n if len(prefixes) > 1 else None)
            except DB_ERRORS as e:
                raise InputError(path, f"the database cannot be read ({e})") from None
            finally:
                db.close()
        except InputError as e:
            if len(prefixes) == 1:
                raise
            errors.append(e)
    if trace is None:
        raise errors[0]
    for e in errors:
        trace.warn(f"{e} (this rank is not converted; the others are)")
    split_overlaps(trace)
    return trace


# table -> (the table it describes, what is lost without it)
NEEDED = {"COMPUTE_TASK_INFO": ("TASK", "device tasks have no op names, types or block dims"),
          "STRING_IDS": ("TASK", "no names at all"),
          "CONNECTION_IDS": ("PYTORCH_API", "no PyTorch -> device flows")}


def _read(source: Source, options: ReadOptions, db: Database, lookups: set[str],
          prefix: str = "", trace: Trace | None = None, index: int | None = None) -> Trace:
    path = db.path
    if not db.is_export():
        have = ", ".join(sorted(db.tables)[:8]) or "no tables"
        raise InputError(path, "not an msprof / torch_npu database (needs META_DATA, "
                               f"STRING_IDS and a timeline table such as TASK; has {have})")
    torch = "PYTORCH_API" in db.tables or "ascend_pytorch_profiler" in path.name.lower()
    if trace is None:
        trace = Trace(RunMeta(source.name, "msprof", tool="torch_npu" if torch else "msprof",
                              clock=NS))
    meta = trace.meta
    facts, facts_info = _facts(trace, db)
    rank = None
    if torch:
        info = _profiler_info(trace, source, prefix)
        rank = info.get("rank_id") if isinstance(info.get("rank_id"), int) else None
        if rank is None or rank < 0:
            rank = facts.get("rank_id", index)
        if index is not None and str(rank) in meta.extra.get("torch_npu", {}).get("ranks", {}):
            rank = index            # two ranks saying the same id: folder order, as the text
        ranks = meta.extra.setdefault("torch_npu", {}).setdefault("ranks", {}) \
            if info and rank is not None else {}
        if info and rank is not None:
            ranks[str(rank)] = info
        elif not meta.extra.get("torch_npu"):
            meta.extra["torch_npu"] = {}
    if index is None:
        meta.extra["ascend_db"] = facts_info
    else:
        meta.extra.setdefault("ascend_db", {}).setdefault("ranks", {})[
            str(rank if rank is not None else index)] = facts_info
    layout = Layout(trace, rank=rank, order=rank or 0) if rank is not None else Layout(trace)
    devices = facts.get("devices") or []
    if len(devices) == 1:
        layout.default_device = devices[0]
    stats: dict[str, Any] = {}
    meta.extra.setdefault("msprof_sources", {})[str(path)] = stats
    meta.extra.setdefault("device_tasks_from", []).append(path.name)
    meta.source_files.append(str(path))
    options.report("reading database", 0, 1)
    cann: dict[int, int] = {}
    device: dict[int, Any] = {}            # connectionId -> device tasks (``add_end``)
    pytorch: dict[int, list[int]] = {}
    failed: list[str] = []
    ahead = Ahead(db, options.workers)      # large tables read meanwhile elsewhere
    steps = [
        ("TASK", lambda: add_tasks(trace, layout, db, device, stats,
                                   lambda: ahead.take("TASK", batches=True))),
        ("COMMUNICATION_OP", lambda: add_comm_ops(trace, layout, db, device, stats)),
        ("CANN_API", lambda: add_cann(trace, layout, db, cann, stats,
                                      ahead.take("CANN_API", batches=True))),
        ("OVERLAP_ANALYSIS", lambda: add_overlap(trace, layout, db, stats)),
        ("PYTORCH_API", lambda: add_pytorch(trace, layout, db, pytorch, stats,
                                            ahead.take("PYTORCH_API"))),
        ("MSTX_EVENTS", lambda: add_mstx(trace, layout, db, stats)),
        ("counters", lambda: add_counters(trace, layout, db, stats)),
        ("STEP_TIME", lambda: add_steps(trace, layout, db, source.files.get(prefix + "analysis"),
                                        Database, stats)),
        ("CONNECTION_IDS", lambda: add_flows(trace, db, cann, device, pytorch, stats)),
    ]
    first_flow = len(trace.flows)
    try:
        for table, step in steps:
            try:
                step()
            except DB_ERRORS as e:
                failed.append(table)
                trace.warn(sql_error(path, table, e))
    finally:
        ahead.close()
    layout.declare_source_idle()
    flows = trace.flows[first_flow:]
    # over the slices' columns, which split_overlaps then takes (``kept_columns``): this
    # reader changes no slice's lane or times once made
    layout.measure_clock_skew(flows, kept_columns(trace.slices)
                              if len(flows) >= COLUMNS_FROM else None)
    if failed and not trace.slices and not trace.counters:
        raise InputError(path, f"no table could be read ({', '.join(failed)})")
    for table, (user, lost) in NEEDED.items():
        if user in db.tables and table not in db.tables:
            trace.warn(f"{path}: no {table} table: {lost}")
    _report_lost(trace, db, lookups, facts_info)
    if not torch:
        _device_info(trace, source)
    if facts.get("chips"):
        chips = "; ".join(f"NPU {k}: {v}" for k, v in facts["chips"].items())
        if not meta.device:
            meta.device = chips
        elif index is not None and chips not in meta.device.split("; "):
            meta.device += "; " + chips
    note_ignored(trace, source, {"": "text export beside the database: not read (the "
                                     "database is read; --from msprof reads the text)"})
    text = [p for r, p in source.files.items() if r.startswith("ignored")]
    if text:
        trace.warn(f"{path}: read instead of the {len(text)} text-export files beside it, "
                   "which hold no timeline (msprof_*.json / trace_view.json) and so less "
                   "(--from msprof reads them)" if not getattr(source, "forced", False) else
                   f"{path}: read as asked (--from msprof-db); the text export beside it "
                   f"({len(text)} files) is not read")
    options.report("reading database", 1, 1)
    return trace


def _facts(trace: Trace, db: Database) -> tuple[dict[str, Any], dict[str, Any]]:
    """META_DATA, NPU_INFO, HOST_INFO, RANK_DEVICE_MAP, SESSION_TIME_INFO into run meta."""
    out: dict[str, Any] = {}
    info: dict[str, Any] = {"schema": db.meta()}
    trace.meta.tool_version = info["schema"].get("SCHEMA_VERSION", "")
    try:
        if "NPU_INFO" in db.tables:
            chips = {i: str(n) for i, n in db.conn.execute("SELECT id, name FROM NPU_INFO")}
            out["chips"] = info["npu_info"] = chips
            out["devices"] = [i for i in chips if isinstance(i, int) and i >= 0]
        if "RANK_DEVICE_MAP" in db.tables:
            pairs = db.conn.execute("SELECT rankId, deviceId FROM RANK_DEVICE_MAP").fetchall()
            info["rank_device_map"] = [list(p) for p in pairs]
            ranks = [r for r, _ in pairs if isinstance(r, int) and r >= 0]
            if len(ranks) == 1:
                out["rank_id"] = ranks[0]
        if "HOST_INFO" in db.tables:
            info["hosts"] = [list(r) for r in db.conn.execute("SELECT * FROM HOST_INFO")]
        if "SESSION_TIME_INFO" in db.tables:
            info["session_ns"] = [list(r) for r in db.conn.execute(
                "SELECT * FROM SESSION_TIME_INFO")]
    except DB_ERRORS as e:
        trace.warn(sql_error(db.path, "run facts (NPU_INFO, RANK_DEVICE_MAP, HOST_INFO)", e))
    return out, info


def _report_lost(trace: Trace, db: Database, lookups: set[str],
                 info: dict[str, Any]) -> None:
    unused = sorted(db.tables - USED - lookups)
    if unused:
        listed = ", ".join(f"{t} ({_count(db, t)} rows)" for t in unused)
        trace.warn(f"{db.path}: tables not converted: {listed}")
    info["tables_not_converted"] = unused
    if db.missing_strings:
        trace.warn(f"{db.path}: {db.missing_strings} string ids have no STRING_IDS row "
                   "(names left empty or shown as 'string <id>')")
    for table, values in sorted(db.unknown_enums.items()):
        trace.warn(f"{db.path}: {len(values)} values not in {table} "
                   f"({', '.join(map(str, sorted(values)[:5]))}); kept as numbers")


def _count(db: Database, table: str) -> int | str:
    try:
        return db.count(table)
    except DB_ERRORS:
        return "unreadable"
