"""simpler's records before June 2026 (format reference 1.4): ``tasks[]`` objects already in
microseconds (``perf_swimlane_<ts>.json``, ``l2_perf_records*.json``, and
``l2_swimlane_records.json`` until 2026-06-04).

Fields, from the runtime's docs of that period (``docs/dfx/l2-swimlane-profiling.md`` at
#916): per task ``task_id``, ``func_id``, ``core_id``, ``core_type``, ``start_time_us``,
``end_time_us``, ``dispatch_time_us`` / ``finish_time_us`` (level >= 2), ``fanout[]``
(successor task ids); phase records with ``phase``, ``start_time_us``, ``end_time_us``,
``loop_iter`` / ``submit_idx``, ``tasks_processed`` / ``task_id``, ``pop_hit`` / ``pop_miss``;
``core_to_thread[]``.  Every one is treated as optional.

The file is turned into the current layout (``records.Records``) with times in ns (µs x 1000,
rounded), so the rest of the reader is the same; the functions and ``fanout[]`` edges become a
``records.Deps`` (edge source ``fanout``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...model import MAX_NS
from .deps import Deps
from .records import Records, Warn
from .typed import PhaseRecord, from_dict

_US_LEVEL_KEYS = ("l2_swimlane_level", "l2_perf_level")


def _ns(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return None
    n = round(v * 1000)
    return n if n <= MAX_NS else None


def _int(v: Any, hi: int = 1 << 64) -> int | None:
    return v if type(v) is int and 0 <= v < hi else None


def from_microseconds(path: Path, doc: dict, warn: Warn) -> tuple[Records, Deps | None]:
    tasks = doc["tasks"]
    level_key = next((k for k in _US_LEVEL_KEYS if k in doc), "version")
    level = doc.get(level_key)
    if type(level) is not int or level < 1 or level_key == "version":
        level = None            # "version" is the file layout's, not a level
    rows: list[dict[str, Any]] = []
    bad = 0
    for t in tasks:
        if not isinstance(t, dict):
            bad += 1
            continue
        core, tid = _int(t.get("core_id"), 1 << 31), _int(t.get("task_id"))
        s, e = _ns(t.get("start_time_us")), _ns(t.get("end_time_us"))
        if core is None or tid is None or s is None or e is None or e < s:
            bad += 1
            continue
        rows.append(t | {"_core": core, "_tid": tid, "_s": s, "_e": e})
    if bad:
        warn(f"{path}: {bad} of {len(tasks)} tasks dropped: no integer core_id / task_id or no "
             "start_time_us <= end_time_us")
    rows.sort(key=lambda r: (r["_core"], r["_s"]))
    ncores = max((r["_core"] for r in rows), default=-1) + 1
    core_types = [""] * ncores
    aicore, aicpu = [], []
    regs: dict[int, int] = {}
    funcs: dict[int, list[int]] = {}
    edges = []
    for r in rows:
        core, tid = r["_core"], r["_tid"]
        ctype = r.get("core_type") if r.get("core_type") in ("aic", "aiv") else ""
        core_types[core] = core_types[core] or ctype
        reg = regs[core] = regs.get(core, 0) + 1
        aicore.append([core, tid, reg, r["_s"], r["_e"], None])
        d, f = _ns(r.get("dispatch_time_us")), _ns(r.get("finish_time_us"))
        if d and f and d <= f:
            aicpu.append([core, reg, d, f])
        fid = _int(r.get("func_id"), 1 << 62)
        kernels = funcs.setdefault(tid, [-1, -1, -1])
        if fid is not None:
            kernels[0 if ctype == "aic" else 1] = fid
        fan = r.get("fanout")
        if isinstance(fan, list):
            edges += [(tid, s, {"source": "fanout"}) for s in fan if _int(s) is not None]
    if level is None:       # a "version" file: what it holds
        level = 1 + bool(aicpu) + ("aicpu_scheduler_phases" in doc) + \
            ("aicpu_orchestrator_phases" in doc)
        warn(f"{path}: level not recorded ({level_key} file): read as level {level} from its "
             "content")
    c2t = doc.get("core_to_thread")
    if not (isinstance(c2t, list) and all(type(x) is int for x in c2t)):
        c2t = None
    rec = Records(path, level, level_key, {}, 10**9, core_types, c2t, aicore, aicpu,
                  _phases(doc.get("aicpu_scheduler_phases"), False),
                  _phases(doc.get("aicpu_orchestrator_phases"), True), None, None,
                  microseconds=True)
    warn(f"{path}: pre-June-2026 layout (tasks[] in microseconds): times are the file's "
         "microseconds (to the ns), no receive times (no setup_ns)")
    deps = Deps(path, {t: (k, 1) for t, k in funcs.items()}, edges, list(funcs)) \
        if funcs else None
    return rec, deps


def _phases(value: Any, orchestrator: bool) -> list[list[PhaseRecord]] | None:
    """Phase records in the current shape (``kind``, ``start_cycles`` ... in ns)."""
    if not isinstance(value, list):
        return None
    out = []
    for thread in value:
        recs = []
        for p in thread if isinstance(thread, list) else ():
            if not isinstance(p, dict):
                continue
            s, e = _ns(p.get("start_time_us")), _ns(p.get("end_time_us"))
            if s is None or e is None or e < s:
                continue
            q = {k: v for k, v in p.items() if not k.endswith("_time_us")}
            q["start_cycles"], q["end_cycles"] = s, e
            if not orchestrator:
                q["kind"] = p.get("phase")
            recs.append(from_dict(PhaseRecord, q))
        out.append(recs)
    return out
