"""Loading a simpler run's files into checked, plain Python data.

``chip_swimlane_records.json`` (format reference ../shared/docs/formats/simpler.md, section
2), ``name_map*.json`` (4) and ``host_phase_records.jsonl`` (2.8); ``deps.json`` (3) in
``deps``.  What is
malformed is dropped here, counted, and reported as one warning line per file and kind of
loss; what is left is trusted by the builders (``lanes``, ``phases``, ``flows``).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import orjson

from ...errors import InputError
from ...fileio import json_bytes, load_json, load_json_records, read_bytes
from ...model import MAX_NS, UINT64_END
from . import typed
from .typed import HostRecord, PhaseRecord, from_dict

if TYPE_CHECKING:
    from .deps import Deps

Warn = Callable[[str], None]

LEVEL_KEYS = ("chip_swimlane_level", "l2_swimlane_level")
_INT = {int}


def _uint(v: Any) -> bool:
    return type(v) is int and 0 <= v < UINT64_END


@dataclass
class Records:
    """The content of one records file, rows checked."""

    path: Path
    level: int
    level_key: str
    meta: dict[str, Any]
    freq_hz: int
    core_types: list[str]
    core_to_thread: list[int] | None
    # [core, task_id, reg_task_id, start, end, receive_to_start] (receive_to_start None: 5 cols)
    aicore: list[list[Any]]
    aicpu: list[list[int]]                     # [core, reg_task_id, dispatch, finish]
    sched: list[list[PhaseRecord]] | None      # per AICPU thread slot
    orch: list[list[PhaseRecord]] | None       # device orchestrator records
    host_orch: list[list[HostRecord]] | None
    uploads: list[HostRecord] | None
    five_columns: int = 0
    microseconds: bool = False                 # the pre-June-2026 layout: times already ns
    deps: Deps | None = None                   # its functions and fanout edges (legacy)


def load_records(path: Path, warn: Warn, clock_hz: int | None = None) -> Records:
    raw = read_bytes(path)
    doc = typed.decode(json_bytes(path, raw))
    checked = doc is not None               # row and record types checked by the decoder
    cut = None
    if doc is None:
        doc, cut = load_json_records(path, raw, (2, 3), rows=True)
    if not isinstance(doc, dict):
        raise InputError(path, "not a chip swimlane records file (no JSON object)")
    if cut is not None:
        warn(f"{path}: {cut.describe('rows')}")
    if isinstance(doc.get("tasks"), list) and "aicore_tasks" not in doc:
        from .legacy import from_microseconds
        rec, rec.deps = from_microseconds(path, doc, warn)
        return rec
    level_key = next((k for k in LEVEL_KEYS if k in doc), None)
    if level_key is None:
        raise InputError(path, "no chip_swimlane_level: not a chip swimlane records file")
    level = doc[level_key]
    if type(level) is not int or level < 1:
        raise InputError(path, f"{level_key} is {level!r}, not a level 1-4")
    if level > 4:
        warn(f"{path}: {level_key} {level} is newer than this reader knows (1-4); "
             "what it knows was read")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        warn(f"{path}: no metadata object; clock and core types unknown")
    freq = meta.get("clock_freq_hz")
    if clock_hz is not None:
        if _uint(freq) and freq != clock_hz:
            warn(f"{path}: clock_freq_hz {freq} overridden by --clock-mhz ({clock_hz} Hz)")
        freq = clock_hz
    elif not _uint(freq) or freq == 0:
        raise InputError(path, f"metadata.clock_freq_hz is {freq!r}: cannot convert cycles "
                         "to time (give the counter rate with --clock-mhz)")
    core_types = meta.get("core_types")
    if not isinstance(core_types, list):
        core_types = []
        warn(f"{path}: no metadata.core_types; cores are named CORE_<id>")
    core_types = [c if isinstance(c, str) else "" for c in core_types]
    c2t = meta.get("core_to_thread")
    if c2t is not None and not (isinstance(c2t, list) and all(type(x) is int for x in c2t)):
        warn(f"{path}: metadata.core_to_thread is not a list of integers; ignored")
        c2t = None
    limit = MAX_NS * freq // 10**9          # the last cycle whose ns fits the model
    aicore, five = _aicore(path, doc.get("aicore_tasks"), limit, warn, checked)
    rec = Records(path, level, level_key, meta, freq, core_types, c2t, aicore, [], None, None,
                  None, None)
    rec.five_columns = five
    rec.aicpu = _aicpu(path, doc.get("aicpu_tasks"), level, limit, warn, checked)
    rec.sched = _thread_lists(path, doc, "aicpu_scheduler_phases", PhaseRecord, limit, warn,
                              checked)
    rec.orch = _thread_lists(path, doc, "aicpu_orchestrator_phases", PhaseRecord, limit, warn,
                             checked)
    rec.host_orch = _thread_lists(path, doc, "host_orchestrator_phases", HostRecord, MAX_NS,
                                  warn, checked)
    ups = doc.get("host_device_uploads")
    if ups is not None:
        rec.uploads = _records(path, "host_device_uploads", ups if isinstance(ups, list)
                               else None, HostRecord, MAX_NS, warn, checked)
    return rec


def _aicore(path: Path, rows: Any, limit: int, warn: Warn, checked: bool = False
            ) -> tuple[list[list[Any]], int]:
    """The AICore rows, each of 6 (a 5-column row gets None for receive_to_start), and how
    many had 5 columns."""
    if rows is None:
        warn(f"{path}: no aicore_tasks: no task executions recorded")
        return [], 0
    if not isinstance(rows, list):
        warn(f"{path}: aicore_tasks is not a list; no task executions read")
        return [], 0
    out = _int_rows(path, "aicore_tasks", rows, (6, 5), "5 or 6 non-negative integers "
                    "[core_id, task_id, reg_task_id, start, end, receive_to_start]",
                    lambda r: r[3] <= r[4] <= limit and (len(r) == 5 or r[5] <= r[3]),
                    "end before start, receive before cycle 0, or times beyond the model's "
                    "range", warn, checked)
    five = [r for r in out if len(r) == 5]
    for r in five:
        r.append(None)
    return out, len(five)


def _aicpu(path: Path, rows: Any, level: int, limit: int, warn: Warn, checked: bool = False
           ) -> list[list[int]]:
    if rows is None:
        if level >= 2:
            warn(f"{path}: no aicpu_tasks at level {level}: dispatch/finish times missing")
        return []
    if not isinstance(rows, list):
        warn(f"{path}: aicpu_tasks is not a list; dispatch/finish times not read")
        return []
    return _int_rows(path, "aicpu_tasks", rows, (4,), "4 non-negative integers [core_id, "
                     "reg_task_id, dispatch, finish]", lambda r: r[2] <= r[3] <= limit,
                     "finish before dispatch or beyond the model's time range", warn, checked)


def _int_rows(path: Path, key: str, rows: list, widths: tuple[int, ...], shape: str,
              in_order: Callable[[list[int]], bool], why: str, warn: Warn,
              checked: bool = False) -> list[list[int]]:
    """The rows of ``key`` that are ``widths`` unsigned 64-bit integers whose times are
    ``in_order``; the others dropped, counted in one warning per kind.  ``checked``: rows
    the typed decoder made, lists of such integers already."""
    if checked:
        sized = [r for r in rows if len(r) in widths]
        out = [r for r in sized if in_order(r)]
        bad, backwards = len(rows) - len(sized), len(sized) - len(out)
    else:
        out = []
        bad = backwards = 0
        for r in rows:
            if not (type(r) is list and len(r) in widths and set(map(type, r)) == _INT
                    and min(r) >= 0 and max(r) < UINT64_END):
                bad += 1
            elif in_order(r):
                out.append(r)
            else:
                backwards += 1
    if bad:
        warn(f"{path}: {bad} of {len(rows)} {key} rows dropped: not {shape}")
    if backwards:
        warn(f"{path}: {backwards} {key} rows dropped: {why}")
    return out


def _thread_lists(path: Path, doc: dict, key: str, cls: type, limit: int, warn: Warn,
                  checked: bool = False) -> list[list[Any]] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        warn(f"{path}: {key} is not a list of thread lists; not read")
        return None
    out = []
    lost = 0
    for thread in value:
        if not isinstance(thread, list):
            lost += 1
            out.append([])
            continue
        out.append(_records(path, key, thread, cls, limit, warn, checked, quiet=True))
        lost += len(thread) - len(out[-1])
    if lost:
        a, b = cls.__struct_fields__[:2]
        warn(f"{path}: {lost} {key} records dropped: not objects with integer "
             f"{a} <= {b} in range")
    return out


def _records(path: Path, key: str, rows: list | None, cls: type, limit: int, warn: Warn,
             checked: bool = False, quiet: bool = False) -> list[Any]:
    """The records of ``rows`` with integer times in order up to ``limit``, as ``cls``
    (``typed.PhaseRecord`` or ``HostRecord``, whose first two fields are the times)."""
    if rows is None:
        warn(f"{path}: {key} is not a list; not read")
        return []
    a, b = cls.__struct_fields__[:2]
    if checked:                     # cls objects with times of 0 and more already
        start, end = attrgetter(a), attrgetter(b)
        out = [r for r in rows if start(r) <= end(r) <= limit]
    else:
        out = [from_dict(cls, r) for r in rows if type(r) is dict
               and type(x := r.get(a)) is int and type(y := r.get(b)) is int
               and 0 <= x <= y <= limit]
    if not quiet and len(out) < len(rows):
        warn(f"{path}: {len(rows) - len(out)} {key} records dropped: not objects with "
             f"integer {a} <= {b} in range")
    return out


def load_name_map(path: Path, warn: Warn) -> dict[int, str]:
    try:
        doc = load_json(path)
    except InputError as e:
        warn(f"{e}; function ids shown unnamed")
        return {}
    names = doc.get("callable_id_to_name") if isinstance(doc, dict) else None
    if not isinstance(names, dict):
        warn(f"{path}: no callable_id_to_name object; function ids shown unnamed")
        return {}
    out = {}
    for k, v in names.items():
        if k.lstrip("-").isdigit() and isinstance(v, str) and v:
            out[int(k)] = v
    if len(out) < len(names):
        warn(f"{path}: {len(names) - len(out)} name map entries ignored (key not a function "
             "id or name not text)")
    return out


def load_host_phases(path: Path, warn: Warn) -> list[dict[str, Any]]:
    """``host_phase_records.jsonl``: every record of every pass, with the pass's pid."""
    try:
        data = read_bytes(path)
    except InputError as e:
        warn(str(e))
        return []
    out = []
    bad_lines = bad = dropped = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad_lines += 1
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("records"), list):
            bad_lines += 1
            continue
        if type(obj.get("dropped")) is int:
            dropped += obj["dropped"]
        pid = obj.get("pid")
        for r in obj["records"]:
            if type(r) is dict and _uint(r.get("start_ns")) and _uint(r.get("end_ns")) \
                    and r["start_ns"] <= r["end_ns"] and isinstance(r.get("phase"), str):
                out.append({**r, "pid": pid})
            else:
                bad += 1
    if bad_lines:
        warn(f"{path}: {bad_lines} lines not a JSON pass object with records; skipped")
    if bad:
        warn(f"{path}: {bad} host phase records dropped: not objects with phase and integer "
             "start_ns <= end_ns")
    if dropped:
        warn(f"{path}: the host phase pool dropped {dropped} records at capture time")
    return out
