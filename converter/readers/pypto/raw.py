"""The raw-file path: rebuild a PyPTO run from the swim file, the task graph and program.json.

PyPTO's ``draw_swim_lane.py`` makes ``merged_swimlane.json`` from three inputs:
``_simulate.swim.json`` (SIM) or ``tilefwk_L1_prof_data.json`` (NPU), the task graph
``dyn_topo.txt`` and ``program.json``.  It writes no merged file for simulations past
500,000 cycles, so this reader rebuilds the same tasks, times, names, args and flows from the
inputs directly.  Format reference: ../shared/docs/formats/pypto.md, sections 2, 3 and 5.

Task-table semantics replicated here (5.2-5.6):

* every swim record is keyed ``seqNo << 32 | taskId``; the table keeps the *last* record per
  key, at the position where the key first appeared.  PyPTO silently drops the earlier records
  of a key (SIM: HUB tasks of every device task are recorded with seqNo 0); they are kept here
  as extra slices, named like PyPTO names an entry without a topo row, and reported in a
  warning;
* a topo row whose key has no record becomes a *fake* task on ``Fake Core_0``, 1 µs long,
  timed from its successors, else its predecessors, else a 3-µs slot from the first start;
* execution statistics group every swim record (duplicates included) and the fake tasks
  (as psg 0) by ``subGraphId``, with the same float arithmetic PyPTO uses, so the numbers are
  identical to the parsed ``execution-hint``;
* names are ``{seq}-{funcIdx}-{opIdx}-{rootIndex}-{psgId}({label})`` with rootIndex = index of
  the root function in ``program.json`` and label = the CALL operation's semantic label.
"""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import glob, is_file, load_json, load_json_records, logical_name, read_text
from ...model import INT64_MIN, LABEL_ARGS, MAX_NS, UINT64_END, RunMeta, Trace
from ..base import ReadOptions, Source
from .common import (GRAPH_ROLES, HUB_QUIRK, NPU_TICKS_PER_US, SIM_CYCLES_PER_US,
                     MachineView, SharedTaskArgs, core_lane_name, cycles_clock, declarations,
                     operand, task_category)

RAW_NPU = "tilefwk_L1_prof_data.json"
PERF_DATA_PREFIX = "machine_trace_perf_data_"
FAKE_CORE = "Fake Core_0"
FUNC_NAME = "funcName"            # shared arg: a task list's leaf function name
SIM_DEVICE = "Ascend A2/A3 cost model (PyPTO simulation)"
NPU_DEVICE = "Ascend NPU"
# The counter rate names the chip (PyPTO: 50 MHz on DAV_2201, 1000 MHz on DAV_3510).
NPU_CHIPS = {Fraction(50): "Ascend A2/A3 NPU (DAV_2201)",
             Fraction(1000): "Ascend 950 NPU (DAV_3510)"}
# Task times from an NPU are absolute system-counter values (ticks since the device started:
# 1e9 ticks are 20 s at 50 MHz); the cost model counts from cycle 0 and runs its first task
# within a few thousand cycles.
ABSOLUTE_TICKS_MIN = 10**9

_STATIC_TOPO_RE = re.compile(r"^(\d+)_simulate\.topo\.json$")
_REPORT_EVERY = 20000


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def formal_name(key: int) -> str:
    """``seq-funcIdx-opIdx`` of a task key, with the 0.2.0 bit layout (11 + 20 bits)."""
    return f"{key >> 32}-{(key >> 20) & 0x7FF}-{key & 0xFFFFF}"


class _Task:
    """One entry of PyPTO's task table (or one extra execution it dropped)."""

    __slots__ = ("key", "seq", "tid", "lane", "lane_name", "psg_dyn", "start", "end",
                 "start_us", "end_us", "fake", "row", "label", "succs", "slice")

    def __init__(self, key: int, seq: int, tid: int, lane: int, lane_name: str, psg_dyn: int,
                 start: int, end: int, start_us: float, end_us: float, fake: bool = False):
        self.key = key
        self.seq = seq                # original seqNo / taskId shown in args
        self.tid = tid
        self.lane = lane
        self.lane_name = lane_name
        self.psg_dyn = psg_dyn        # swim subGraphId (fake: 0): execution-stats group
        self.start = start            # ns
        self.end = end                # ns
        self.start_us = start_us      # PyPTO's float microseconds, for the statistics
        self.end_us = end_us
        self.fake = fake
        self.row: tuple | None = None     # the topo row applied last
        self.label = "fake" if fake else ""
        self.succs: list[int] = []
        self.slice = -1


# -- the task graph -------------------------------------------------------------------------
# A topo row: (key, seqNo, taskId, rootHash, opmagic, leafHash, psgId, successor keys,
#              semantic label or None (look it up in program.json),
#              rootIndex or None (compute it from rootHash),
#              leaf function name or None (a task list's funcName)).
KEY, SEQ, TID, ROOT_HASH, OPMAGIC, LEAF_HASH, PSG, SUCCS, LABEL, ROOT_INDEX, FUNC = range(11)


def _load_dyn_topo(path: Path, warn=None) -> list[tuple]:
    text = read_text(path)
    n_fixed = 9
    rows: list[tuple] = []
    lines = text.splitlines()
    if text.strip() and not text.endswith(("\n", "\r")):
        # PyPTO ends every line with a newline: the last one was cut short (its successors,
        # or the row itself, would be wrong), so it is dropped.
        lines.pop()
        if warn is not None:
            warn(f"{path}: the file ends mid-line at byte {len(text.encode('utf-8')):,} "
                 f"(cut short); its last line {len(lines) + 1} was dropped")
    for lineno, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            continue
        if s[0].isalpha():                     # the header (PyPTO skips such lines)
            cols = [c.strip() for c in s.split(",")]
            if "successors" in cols:
                n_fixed = cols.index("successors")
            continue
        try:
            vals = [int(x) for x in s.split(",") if x.strip()]
        except ValueError:
            raise InputError(path, f"line {lineno}: not a comma-separated list of "
                             "integers") from None
        if any(not INT64_MIN <= v < UINT64_END for v in vals):
            raise InputError(path, f"line {lineno}: a value beyond 64 bits")
        if len(vals) < max(n_fixed, 9):
            raise InputError(path, f"line {lineno}: {len(vals)} fields, expected at least "
                             f"{max(n_fixed, 9)} (seqNo,taskId,rootIndex,rootHash,opmagic,"
                             "leafIndex,leafHash,coreType,psgId)")
        seq = vals[0]
        base = seq << 32
        rows.append((base | vals[1], seq, vals[1], vals[3], vals[4], vals[6], vals[8],
                     [base | x for x in vals[n_fixed:]], None, None, None))
    return rows


def _load_task_array(path: Path, warn=None) -> list:
    """A topo file's JSON array of tasks; a file cut short gives the tasks before the cut
    (and ``warn`` is told)."""
    doc, cut = load_json_records(path, None, (1,))
    if cut is not None and warn is not None:
        warn(f"{path}: {cut.describe(f'{len(doc) if isinstance(doc, list) else 0:,} tasks')}")
    if not isinstance(doc, list):
        raise InputError(path, "expected a JSON array of tasks")
    return doc


def _load_tmp_topo(path: Path, warn=None) -> list[tuple]:
    doc = _load_task_array(path, warn)
    rows: list[tuple] = []
    for i, t in enumerate(doc):
        try:
            seq, tid = t["seqNo"], t["taskId"]
            succs = t.get("successors") or []
            extra = (t.get("rootHash"), t.get("opmagic"), t.get("funcHash"), t.get("psgId", -1))
            if not (_is_int(seq) and _is_int(tid) and all(_int_or_none(x) for x in extra)
                    and all(_is_int(x) for x in succs)):
                raise TypeError
            base = seq << 32
            rows.append((base | tid, seq, tid, *extra, [base | x for x in succs], None, None,
                         None))
        except (KeyError, TypeError, AttributeError):
            raise InputError(path, f"task {i}: expected integer seqNo, taskId, rootHash, "
                             "opmagic, funcHash, psgId and a list of integer successors") \
                from None
    return rows


def _static_topo_files(path: Path) -> dict[int, Path]:
    """``<N>_simulate.topo.json`` files next to ``path``, by device task N."""
    files: dict[int, Path] = {}
    for p in glob(path.parent, "*_simulate.topo.json*"):
        m = _STATIC_TOPO_RE.match(logical_name(p))
        if m and is_file(p):
            files.setdefault(int(m.group(1)), p)
    if not files:
        m = _STATIC_TOPO_RE.match(logical_name(path))
        files[int(m.group(1)) if m else 0] = path
    return files


def _load_static_topo(path: Path, seq: int, warn=None) -> list[tuple]:
    """One device task's static topo: task ids without seqNo, optional extra keys (3.4)."""
    doc = _load_task_array(path, warn)
    base = seq << 32
    rows: list[tuple] = []
    for i, t in enumerate(doc):
        try:
            tid = t["taskId"]
            succs = t.get("successors") or []
            extra = (t.get("oriSeqNo", seq), t.get("oriTaskId", tid), t.get("rootHash"),
                     t.get("opMagic"), t.get("funcHash"), t.get("psgId"),
                     t.get("rootIndex", -1))
            if not (_is_int(tid) and all(_int_or_none(x) for x in extra)
                    and all(_is_int(x) for x in succs)):
                raise TypeError
        except (KeyError, TypeError, AttributeError):
            raise InputError(path, f"task {i}: expected an integer taskId, a list of integer "
                             "successors and integer optional keys") from None
        label = t.get("semanticLabel")
        func = t.get("funcName")
        rows.append((base | tid, *extra[:6], [base | x for x in succs],
                     "" if label is None else str(label), extra[6],
                     str(func) if func else None))
    return rows


# -- program.json ---------------------------------------------------------------------------


class _Program:
    """Root-function index, semantic labels and CALL operands, looked up once per CALL."""

    def __init__(self, path: Path | None):
        self.path = path
        self.functions: list = []
        self.index: dict[str, int] = {}
        self._ops: dict[int, dict] = {}
        self._tensor_maps: dict[int, tuple[dict, dict]] = {}
        self._cache: dict[tuple[int, Any], tuple[str, Any, Any]] = {}
        if path is None:
            return
        doc = load_json(path)
        funcs = doc.get("functions") if isinstance(doc, dict) else None
        if not isinstance(funcs, list):
            raise InputError(path, "expected an object with a 'functions' list")
        self.functions = funcs
        for i, f in enumerate(funcs):
            h = f.get("hash", "0") if isinstance(f, dict) else None
            if isinstance(h, str):            # PyPTO compares str(rootHash) with it
                self.index.setdefault(h, i)

    def root_index(self, root_hash: Any) -> int:
        """Index of the function with that hash, len(functions) when absent (as PyPTO)."""
        return self.index.get(str(root_hash), len(self.functions))

    def call(self, root_index: int, opmagic: Any) -> tuple[str, Any, Any]:
        """(semantic label, input operands, output operands) of an operation of a function.

        Operands are None when there is no such operation (HUB tasks), as in PyPTO's hint.
        """
        key = (root_index, opmagic)
        hit = self._cache.get(key)
        if hit is None:
            try:
                hit = self._cache[key] = self._call(root_index, opmagic)
            except (TypeError, AttributeError, ValueError):
                raise InputError(self.path, f"functions[{root_index}]: malformed operations, "
                                 "tensors or rawtensors") from None
        return hit

    def _call(self, root_index: int, opmagic: Any) -> tuple[str, Any, Any]:
        if not 0 <= root_index < len(self.functions):
            return "", None, None
        func = self.functions[root_index]
        ops = self._ops.get(root_index)
        if ops is None:
            ops = self._ops[root_index] = {}
            for op in (func.get("operations") or []) if isinstance(func, dict) else []:
                if isinstance(op, dict):
                    ops.setdefault(op.get("opmagic"), op)
        op = ops.get(opmagic)
        if op is None:
            return "", None, None
        sl = op.get("semantic_label")
        label = sl.get("label") if isinstance(sl, dict) else None
        label = "" if label is None else str(label)
        tensors, raws = self._tensors(root_index)
        return label, _operands(op.get("ioperands"), tensors, raws), \
            _operands(op.get("ooperands"), tensors, raws)

    def _tensors(self, root_index: int) -> tuple[dict, dict]:
        cached = self._tensor_maps.get(root_index)
        if cached is None:
            func = self.functions[root_index]
            tensors = {t.get("magic"): t for t in func.get("tensors") or []
                       if isinstance(t, dict)}
            raws = {r.get("rawmagic"): r for r in func.get("rawtensors") or []
                    if isinstance(r, dict)}
            cached = self._tensor_maps[root_index] = (tensors, raws)
        return cached


def _operands(magics: Any, tensors: dict, raws: dict) -> list:
    """CALL operands -> operand dicts, duplicates removed, order kept."""
    out: list = []
    seen: set = set()
    for m in magics if isinstance(magics, list) else []:
        if m in seen:
            continue
        seen.add(m)
        t = tensors.get(m)
        if t is None:
            out.append(operand(m, None, None, None))
            continue
        raw = t.get("rawtensor")
        if not isinstance(raw, dict):
            raw = raws.get(raw) or {}
        out.append(operand(m, t.get("shape"), raw.get("datatype"), raw.get("rawmagic")))
    return out


# -- the reader -----------------------------------------------------------------------------


def _npu_clock_mhz(swim: Path, trace: Trace) -> tuple[Fraction, Path | None]:
    """The counter frequency from a machine_trace_perf_data_*.json next to the swim file."""
    for p in glob(swim.parent, PERF_DATA_PREFIX + "*.json*"):
        if not logical_name(p).endswith(".json"):
            continue
        try:
            doc = load_json(p)
        except InputError as e:
            trace.warn(f"{e}; its counter frequency was not used")
            continue
        for block in doc if isinstance(doc, list) else []:
            f = block.get("freq") if isinstance(block, dict) else None
            if isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0:
                return Fraction(f).limit_denominator(1000), p
    return Fraction(NPU_TICKS_PER_US["A2/A3"]), None


def _join_task_list(rows: list[tuple], table: dict[int, _Task], path: Path, swim: Path,
                    warn) -> list[tuple]:
    """The rows of a task graph found beside the task times (``task_graph``: not an input
    PyPTO's own pipeline pairs with them), joined on the task key.  It is the run's graph
    only if every recorded task has a row; its rows without a record are reported, not drawn
    as fake tasks (no PyPTO script pairs these files, so a missing record is no evidence of
    a task that ran), and the dependencies on them are dropped and counted."""
    keys = {r[KEY] for r in rows}
    unjoined = [k for k in table if k not in keys]
    if unjoined:
        warn(f"{path}: not used as the task graph: {len(unjoined):,} of {len(table):,} tasks "
             f"of {swim.name} have no task there (the files are not of one run)")
        return []
    kept = [r for r in rows if r[KEY] in table]
    if len(kept) == len(rows):
        return rows
    lost = {r[KEY] for r in rows if r[KEY] not in table}
    edges = sum(len(r[SUCCS]) for r in rows if r[KEY] in lost) + \
        sum(1 for r in kept for s in r[SUCCS] if s not in table)
    ids = sorted(r[TID] for r in rows if r[KEY] in lost)
    shown = ", ".join(map(str, ids[:8])) + (", …" if len(ids) > 8 else "")
    warn(f"{path}: {len(ids):,} of its {len(rows):,} tasks have no record in {swim.name} "
         f"(taskId {shown}): not drawn, and the {edges:,} dependencies on them dropped")
    return [r[:SUCCS] + ([s for s in r[SUCCS] if s in table],) + r[SUCCS + 1:] for r in kept]


def _pick_topo(source: Source) -> tuple[str | None, Path | None]:
    for role in (*GRAPH_ROLES, "task_graph"):
        p = source.files.get(role)
        if p is not None:
            return role, p
    return None, None


def _on_board(cores: Any, swim: Path) -> bool:
    """Whether per-core task times were recorded on an NPU (system-counter ticks) rather
    than by the cost model (cycles), from content (3.1, 2.3): the cost model writes
    ``completeSeq`` on every task; the on-board writers (the runtime's
    ``tilefwk_L1_prof_data.json``, the profiling tools' ``tilefwk_prof_data.json``) never do,
    and their times are absolute counter values, far from the cost model's cycle 0.  Task
    times without ``completeSeq`` that start near 0 are simulation cycles (e.g. on-board
    data rebased into cycles by PyPTO's convert_onboard2sim.py).  Without any task record,
    the file's name decides."""
    first_start: int | None = None
    for core in cores if isinstance(cores, list) else []:
        tasks = core.get("tasks") if isinstance(core, dict) else None
        for t in tasks if isinstance(tasks, list) else []:
            if not isinstance(t, dict):
                continue
            if "completeSeq" in t:
                return False
            start = t.get("execStart")
            if _is_int(start) and (first_start is None or start < first_start):
                first_start = start
    if first_start is None:
        return logical_name(swim) == RAW_NPU
    return first_start >= ABSOLUTE_TICKS_MIN


def read_raw(source: Source, options: ReadOptions) -> Trace:
    swim_path = source.files.get("swim")
    if swim_path is None:
        raise InputError(source.root, "no _simulate.swim.json or tilefwk_L1_prof_data.json")
    options.report(f"reading {swim_path.name}", 0, 1)
    cores, cut = load_json_records(swim_path, None, (1, 3))    # cores, and their tasks
    if not isinstance(cores, list):
        raise InputError(swim_path, "expected a JSON array of cores")
    npu = _on_board(cores, swim_path)
    meta = RunMeta(source.name, "pypto", tool="PyPTO", device=NPU_DEVICE if npu else SIM_DEVICE,
                   source_files=[str(swim_path)])
    trace = Trace(meta)

    # Clock (2.3).
    perf_file = None
    assumed = False
    if options.clock_mhz is not None:
        mhz = Fraction(options.clock_mhz)
        if mhz <= 0:
            raise InputError(None, f"clock rate must be positive, got {mhz} MHz")
    elif npu:
        mhz, perf_file = _npu_clock_mhz(swim_path, trace)
        assumed = perf_file is None
    else:
        mhz = Fraction(SIM_CYCLES_PER_US)
    clock = cycles_clock(mhz, "npu" if npu else "sim")
    if npu:
        meta.device = NPU_CHIPS.get(mhz, NPU_DEVICE)
        why = (" (PyPTO's rate on Ascend A2/A3; no machine_trace_perf_data file gives one: "
               "--clock-mhz 1000 for Ascend 950)") if assumed else ""
        clock = dataclasses.replace(
            clock, description=f"NPU system-counter ticks at {float(mhz):g} per us{why}")
    meta.clock = clock
    if perf_file is not None:
        meta.source_files.append(str(perf_file))
    # PyPTO divides by an integer --time_convert_denominator; keep its float arithmetic.
    den: int | float = mhz.numerator if mhz.denominator == 1 else float(mhz)
    to_ns = clock.to_ns

    if cut is not None:
        last = cores[-1] if cores else None
        if isinstance(last, dict) and not (_is_int(last.get("blockIdx"))
                                           and isinstance(last.get("tasks"), list)):
            cores.pop()                    # cut before its header was complete
        n_tasks = sum(len(c["tasks"]) for c in cores
                      if isinstance(c, dict) and isinstance(c.get("tasks"), list))
        trace.warn(f"{swim_path}: "
                   + cut.describe(f"{len(cores):,} cores and {n_tasks:,} task records"))

    view = MachineView(trace, "PyPTO Machine View",
                       f"tasks per core rebuilt from {swim_path.name} and the task graph; "
                       f"times in ns ({float(mhz):g} {clock.unit}s per us)")
    fake_lane = view.lane(FAKE_CORE)

    # 1. Swim records -> task table (last record per key wins, first position kept).
    table: dict[int, _Task] = {}
    records: list[_Task] = []          # every record, file order (execution statistics)
    min_start: int | None = None
    zero_end = 0
    bad_dur = 0
    out_of_range = 0
    for ci, core in enumerate(cores):
        if not isinstance(core, dict):
            raise InputError(swim_path, f"core {ci}: not an object")
        block = core.get("blockIdx")
        tasks = core.get("tasks", [])
        if not _is_int(block) or not isinstance(tasks, list):
            raise InputError(swim_path, f"core {ci}: expected an integer 'blockIdx' and a "
                             "'tasks' list")
        ctype = core.get("coreType", "Core")
        lane_name = core_lane_name(str(ctype), block + 1)
        lane = view.lane(lane_name)
        for ti, t in enumerate(tasks):
            try:
                tid = t["taskId"]
                seq = t.get("seqNo", 0)
                psg = t.get("subGraphId", -1)
                start = t.get("execStart", 0)
                end = t.get("execEnd", 0)
                if not (_is_int(tid) and _is_int(seq) and _is_int(psg) and _is_int(start)
                        and _is_int(end)):
                    raise TypeError
            except (KeyError, TypeError, AttributeError):
                raise InputError(swim_path, f"core blockIdx {block}, task {ti}: expected "
                                 "integer taskId, seqNo, subGraphId, execStart and "
                                 "execEnd") from None
            if end == 0:                       # never finished / not recorded (NPU)
                zero_end += 1
                continue
            key = (seq << 32) | tid
            s_ns, e_ns = to_ns(start), to_ns(end)
            if e_ns < s_ns:
                bad_dur += 1
                e_ns = s_ns
            if not 0 <= s_ns <= e_ns < MAX_NS:     # not writable as int64 ns
                out_of_range += 1
                continue
            task = _Task(key, seq, tid, lane, lane_name, psg, s_ns, e_ns,
                         start / den, end / den)
            records.append(task)
            table[key] = task
            if min_start is None or start < min_start:
                min_start = start
    del cores
    options.report(f"reading {swim_path.name}", 1, 1)

    # 2. Task graph and program.json.
    topo_role, topo_path = _pick_topo(source)
    program_path = source.files.get("program")
    rows: list[tuple] = []
    static_missing: list[int] = []
    if topo_path is not None:
        options.report(f"reading {topo_path.name}", 0, 1)
        if topo_role == "dyn_topo":
            rows = _load_dyn_topo(topo_path, trace.warn)
            meta.source_files.append(str(topo_path))
        elif topo_role == "tmp_topo":
            rows = _load_tmp_topo(topo_path, trace.warn)
            meta.source_files.append(str(topo_path))
        elif topo_role == "task_graph":
            rows = _join_task_list(_load_static_topo(topo_path, 0, trace.warn), table,
                                   topo_path, swim_path, trace.warn)
            if rows:
                meta.source_files.append(str(topo_path))
        else:
            files = _static_topo_files(topo_path)
            for seq in sorted(set(files) | {t.seq for t in records}):
                p = files.get(seq)
                if p is None:
                    static_missing.append(seq)
                    continue
                rows.extend(_load_static_topo(p, seq, trace.warn))
                meta.source_files.append(str(p))
        options.report(f"reading {topo_path.name}", 1, 1)
    else:
        where = swim_path.parent
        trace.warn(f"{where}: no task graph (dyn_topo.txt, tmp_topo_json.json, "
                   "<N>_simulate.topo.json or a topo.json task list) found: tasks converted without dependency flows, "
                   "fake tasks, rootIndex, semantic labels or operands")
    if static_missing:
        trace.warn(f"{topo_path.parent}: no <N>_simulate.topo.json for device task(s) "
                   f"{', '.join(map(str, static_missing))}: their tasks have no flows")
    # Static rows name no root function unless they carry the optional rootHash.
    needs_program = topo_role in ("dyn_topo", "tmp_topo") or \
        any(r[ROOT_HASH] is not None for r in rows)
    program = _Program(program_path if rows and needs_program else None)
    if rows and needs_program and program_path is None:
        trace.warn(f"{swim_path.parent}: no program.json: rootIndex, semantic labels and "
                   "operands are unknown")
    if program.path is not None:
        meta.source_files.append(str(program.path))

    # 3. Topo rows: attach graph facts, create fake tasks for rows without a record.
    fakes: list[_Task] = []
    for row in rows:
        key = row[KEY]
        task = table.get(key)
        if task is None:
            task = table[key] = _Task(key, row[SEQ], row[TID], fake_lane, FAKE_CORE, 0, 0, 0,
                                      0.0, 0.0, fake=True)
            fakes.append(task)
        task.row = row
        task.seq, task.tid = row[SEQ], row[TID]
        task.succs = row[SUCCS]
        if row[LABEL] is not None:
            task.label += row[LABEL]
        elif program.path is not None:
            task.label += program.call(program.root_index(row[ROOT_HASH]), row[OPMAGIC])[0]

    # 4. Fake task times (5.5): successors, else predecessors, else 3-µs slots.
    missing_succ = 0
    if fakes:
        pred_end: dict[int, tuple[int, float]] = {}
        for task in table.values():
            if task.fake:
                continue
            for s in task.succs:
                cur = pred_end.get(s)
                if cur is None or task.end_us > cur[1]:
                    pred_end[s] = (task.end, task.end_us)
        slot_ns = to_ns(min_start) if min_start is not None else 0
        slot_us = (min_start / den) if min_start is not None else 0.0
        for task in fakes:
            best: _Task | None = None
            for s in task.succs:
                succ = table.get(s)
                if succ is not None and not succ.fake and (best is None
                                                           or succ.start_us < best.start_us):
                    best = succ
            if best is not None:
                t_us = best.start_us
                # 1 us before its successor, but never before time 0 (int64 ns trace times)
                task.start, task.end = max(0, best.start - 1000), best.start
                task.start_us, task.end_us = t_us - 1, t_us
                continue
            pe = pred_end.get(task.key)
            if pe is not None:
                task.start, task.end = pe[0], pe[0] + 1000
                task.start_us, task.end_us = pe[1], pe[1] + 1
                continue
            task.start, task.end = slot_ns, slot_ns + 1000
            task.start_us, task.end_us = slot_us, slot_us + 1
            slot_ns += 3000
            slot_us += 3

    # 5. Execution statistics per subGraphId: all records, then the fake tasks as psg 0.
    stats: dict[int, list] = {}
    for task in records + fakes:
        dur = task.end_us - task.start_us
        psg = 0 if task.fake else task.psg_dyn
        st = stats.get(psg)
        if st is None:
            stats[psg] = [1, dur, dur, task.key, dur, task.key]
        else:
            st[0] += 1
            st[1] += dur
            if st[2] < dur:
                st[2], st[3] = dur, task.key
            if st[4] > dur:
                st[4], st[5] = dur, task.key
    exec_stats = {psg: {"avg_us": st[1] / st[0], "max_us": st[2],
                        "max_task": formal_name(st[3]), "min_us": st[4],
                        "min_task": formal_name(st[5])}
                  for psg, st in stats.items()}

    # 6. Slices: the task table in PyPTO's order, then the executions it dropped.
    shared = SharedTaskArgs()
    has_graph = bool(rows)
    total = len(table)
    n = 0
    for task in table.values():
        task.slice = _add_task_slice(trace, task, program, exec_stats, shared, has_graph)
        n += 1
        if n % _REPORT_EVERY == 0:
            options.report("building tasks", n, total)
    options.report("building tasks", total, total)
    dropped = [t for t in records if table.get(t.key) is not t]
    for task in dropped:
        task.row = None
        task.succs = []
        idx = _add_task_slice(trace, task, program, exec_stats, shared, has_graph)
        trace.slices[idx].args["duplicateKey"] = True      # own args, not the shared ones

    # 7. Flows: every successor of every task that is in the table (5.3).
    for task in table.values():
        src = task.slice
        for s in task.succs:
            succ = table.get(s)
            if succ is None:
                missing_succ += 1
                continue
            trace.add_flow(src, succ.slice)

    view.finish()

    # 8. What was odd or lost.
    if zero_end:
        trace.warn(f"{swim_path}: {zero_end} task records with execEnd 0 skipped "
                   "(not finished when the device dumped them)")
    if bad_dur:
        trace.warn(f"{swim_path}: {bad_dur} task records end before they start; "
                   "duration set to 0")
    if out_of_range:
        trace.warn(f"{swim_path}: {out_of_range} task records with times out of range "
                   "(negative, or past 2^62 ns) skipped")
    if dropped:
        hub = all(t.lane_name.startswith("HUB") and t.seq == 0 for t in dropped)
        why = (" (PyPTO SIM bug: HUB tasks of every device task are recorded with seqNo 0, "
               "so their keys collide)") if hub and not npu else ""
        trace.warn(f"{swim_path}: {len(dropped)} task executions share a (seqNo, taskId) "
                   f"key with a later execution{why}; merged_swimlane.json keeps only the last "
                   "per key, these are kept as extra slices with args.duplicateKey",
                   HUB_QUIRK if why else None)
    if fakes:
        # SIM: the HUB rows of device tasks >= 1 lose their records to the HUB seqNo quirk.
        hub = not npu and all(t.seq >= 1 and t.row is not None and t.row[LEAF_HASH] == 0
                              for t in fakes)
        trace.warn(f"{topo_path}: {len(fakes)} tasks of the task graph have no record in "
                   f"{swim_path.name}: drawn as 1-us fake tasks on {FAKE_CORE} with invented "
                   "times (as PyPTO does)", HUB_QUIRK if hub else None)
    if missing_succ:
        trace.warn(f"{topo_path}: {missing_succ} successor edges point to tasks without a "
                   "row or record and were dropped")

    meta.extra["tasks"] = len(trace.slices)
    if any(r[FUNC] for r in rows):
        # Leaf functions by the name the task list gives them (its rows carry no leafHash).
        meta.extra[LABEL_ARGS] = {**declarations()[LABEL_ARGS], "leaf_function": FUNC_NAME}
    meta.extra["pypto_fake_tasks"] = len(fakes)
    meta.extra["pypto_duplicate_executions"] = len(dropped)
    return trace


def _add_task_slice(trace: Trace, task: _Task, program: _Program, exec_stats: dict[int, Any],
                    shared: SharedTaskArgs, has_graph: bool) -> int:
    """A task slice: own args {seqNo, taskId}, the rest shared with tasks of the same CALL."""
    row = task.row
    root_hash = op_magic = leaf_hash = inputs = outputs = func = None
    if row is None:
        # No topo row: PyPTO's defaults (rootIndex/psgId -1) when there is a graph; without
        # any graph the swim subGraphId (= topo psgId in SIM) is the best psgId there is.
        root_index = -1
        psg = -1 if has_graph else task.psg_dyn
    else:
        root_hash, op_magic, leaf_hash = row[ROOT_HASH], row[OPMAGIC], row[LEAF_HASH]
        root_index = -1 if row[ROOT_INDEX] is None else row[ROOT_INDEX]
        if program.path is not None and (row[ROOT_INDEX] is None or root_hash is not None):
            root_index = program.root_index(root_hash)
            _, inputs, outputs = program.call(root_index, op_magic)
        psg = row[PSG] if row[PSG] is not None else task.psg_dyn
        func = row[FUNC]
    fake = task.fake
    label = task.label
    shown = label[4:] if fake else label
    group = 0 if fake else task.psg_dyn
    # inputs/outputs are cached per CALL by _Program, so their identity names them.
    key = (root_hash, leaf_hash, op_magic, shown, group, id(inputs), id(outputs), func)
    common = shared.get(key, root_hash, leaf_hash, op_magic, shown, inputs, outputs,
                        exec_stats.get(group))
    if func is not None:
        common[FUNC_NAME] = func        # the leaf function a task list names (no leafHash)
    name = f"{formal_name(task.key)}-{root_index}-{psg}({label})"
    return trace.add_slice(task.lane, task.start, task.end - task.start, name,
                           task_category(task.lane_name, fake),
                           {"seqNo": task.seq, "taskId": task.tid}, common)
