"""``msprof op simulator``: per-core instruction pipelines.

Two trace.json schemas: schemaVersion 1 (one file per core in ``core{N}.{cube|vec}core{M}/``,
numeric pids named after pipes, numeric tids ``SCALAR_1``, ``SCALAR_2`` … for instructions in
flight at once) and schemaVersion 2 (one all-core file, pid = ``core0.cubecore0``, tid = pipe).
Both become one group per core with one lane per pipe in one pipe vocabulary; instructions in
flight together go to overlap lanes.  ``*_instr_exe*.csv`` rows join the slices by PC as shared
args and give per-pipe summary figures; ``*_code_exe*.csv`` rows go to run metadata.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...fileio import is_dir, is_file, logical_name, read_text
from ...model import GROUP, RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from .causes import CUT_SHORT
from .common import Guard, role_kind
from .csvtable import arg_name, normalize_pipe, read_table
from .discover import CORE_DIR
from .jsontrace import load_events
from .jsonshape import hkey, obj
from .timefmt import KERNEL_US, event_span
from .visualize_bin import read_blocks

PIPE_ORDER = ["scalar", "scalarldst", "cube", "vector", "mte1", "mte2", "mte3", "fixpipe",
              "flowctrl", "pushq", "rvecld", "rvecst", "rvecex", "rvecsu", "rveclp", "set_flag",
              "wait_flag", "set_event", "wait_event", "event", "usermark", "cachemiss", "all"]
_CORE = re.compile(r"core(\d+)\.(cube|vec)core(\d+)")
_SHORT = re.compile(r"(cube|vec)core(\d+)")


def _core_key(core: str) -> tuple:
    m = _CORE.search(core)
    if m:
        return (int(m.group(1)), 0 if m.group(2) == "cube" else 1, int(m.group(3)), core)
    return (1 << 20, 2, 0, core)


def _pipe_key(pipe: str) -> tuple:
    return (PIPE_ORDER.index(pipe), pipe) if pipe in PIPE_ORDER else (len(PIPE_ORDER), pipe)


def _file_core(path: Path, suffix: str | None = None) -> str | None:
    """Core of a per-core file: its folder (``core0.cubecore0/``) or its name prefix."""
    if CORE_DIR.match(path.parent.name):
        return path.parent.name
    name = logical_name(path)
    if suffix and suffix in name:
        prefix = name.split(suffix, 1)[0]
        if prefix:
            return prefix
    m = _CORE.search(name) or _SHORT.search(name)
    return m.group(0) if m else None


def read_sim(source: Source, options: ReadOptions) -> Trace:
    meta = RunMeta(source.name, "msprof", tool="msprof op simulator", clock=KERNEL_US)
    trace = Trace(meta)
    sim: dict[str, Any] = {"cores": {}, "files": {}, "schema_versions": []}
    meta.extra["msprof_sim"] = sim
    traces = [(r, p) for r, p in sorted(source.files.items()) if role_kind(r) == "sim_trace"]
    all_core = [(r, p) for r, p in traces if not CORE_DIR.match(p.parent.name)]
    use = all_core or traces
    for r, p in traces:
        if (r, p) not in use:
            meta.extra.setdefault("msprof_ignored_files", {})[str(p)] = (
                "per-core trace: the all-core trace.json holds the same instructions")
    lanes: dict[tuple[str, str], int] = {}
    groups: dict[str, int] = {}
    events_per_core: dict[str, int] = {}
    slices_by_core: dict[str, list[int]] = {}
    guard = Guard(trace)
    for _, path in use:
        options.report(f"reading {path.name}", 0, 1)
        guard(_read_trace, trace, sim, path, groups, lanes, events_per_core, slices_by_core)
    for role, path in sorted(source.files.items()):
        kind = role_kind(role)
        if kind == "instr_exe":
            guard(_instr, trace, sim, path, slices_by_core, list(groups))
        elif kind == "code_exe":
            guard(_code, trace, sim, path, list(groups))
        elif kind == "visualize_bin":
            guard(_bin, trace, sim, path)
    guard.check()
    _order(trace, groups, lanes)
    _check_cut(trace, sim, events_per_core, use)
    _device(trace, source)
    split_overlaps(trace)
    return trace


def _read_trace(trace: Trace, sim: dict[str, Any], path: Path, groups: dict[str, int],
                lanes: dict[tuple[str, str], int], per_core: dict[str, int],
                by_core: dict[str, list[int]]) -> None:
    events, top, note = load_events(path)
    if note:
        trace.warn(note, CUT_SHORT)
    trace.meta.source_files.append(str(path))
    schema = obj(top).get("schemaVersion")
    sim["schema_versions"].append(schema)
    pnames: dict[Any, str] = {}
    tnames: dict[tuple, str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M":
            a = obj(e.get("args"))
            pid, tid = hkey(e.get("pid")), hkey(e.get("tid"))
            if e.get("name") == "process_name":
                pnames[pid] = str(a.get("name"))
            elif e.get("name") == "thread_name":
                tnames[(pid, tid)] = str(a.get("name"))
            elif e.get("name") == "process_sort_index" and isinstance(pid, str):
                _group(trace, groups, pid)          # declared cores, even if idle
    file_core = _file_core(path) or "core"
    counts = {"X": 0, "other": 0, "no_ts": 0, "bad_dur": 0}
    for e in events:
        if not isinstance(e, dict):
            counts["other"] += 1
            continue
        ph = e.get("ph")
        if ph == "M":
            continue
        if ph != "X":
            counts["other"] += 1
            continue
        span = event_span(e)
        if span is None:
            counts["no_ts"] += 1
            continue
        ts, dur, bad = span
        counts["bad_dur"] += bad
        pid, tid = hkey(e.get("pid")), hkey(e.get("tid"))
        raw = e.get("args")
        args = dict(raw) if isinstance(raw, dict) else ({"args": raw} if raw else {})
        if isinstance(pid, str) and not pid.isdigit():       # schema 2: pid = core, tid = pipe
            core, pipe_src = pid, str(tid)
        else:                                                # schema 1: pid = pipe, tid = slot
            core = file_core
            pipe_src = pnames.get(pid, str(pid))
            args["sim_lane"] = tnames.get((pid, tid), str(tid))
        pipe = normalize_pipe(pipe_src)
        args["pipe"] = pipe_src
        if e.get("cname"):
            args["cname"] = str(e["cname"])
        lane = lanes.get((core, pipe))
        if lane is None:
            lane = lanes[(core, pipe)] = trace.add_track(
                pipe, _group(trace, groups, core), nesting=False,
                description=f"{core} {pipe_src} pipe: instructions as simulated (µs from "
                            "kernel start)")
        idx = trace.add_slice(lane, ts, dur, str(e.get("name", "")), pipe, args)
        by_core.setdefault(core, []).append(idx)
        per_core[core] = per_core.get(core, 0) + 1
        counts["X"] += 1
    sim["files"][str(path)] = {"kind": "trace.json", "schema_version": schema,
                               "events": len(events), "slices": counts["X"],
                               "truncated": bool(note)}
    if counts["other"] or counts["no_ts"]:
        trace.warn(f"{path}: {counts['other']} non-instruction events and {counts['no_ts']} "
                   "events without a usable time not converted")
    if counts["bad_dur"]:
        trace.warn(f"{path}: {counts['bad_dur']} negative or out-of-range durations drawn as "
                   "0 ns")


def _group(trace: Trace, groups: dict[str, int], core: str) -> int:
    g = groups.get(core)
    if g is None:
        g = groups[core] = trace.add_track(core, None, GROUP,
                                           description=f"simulated core {core}: one lane per "
                                                       "pipe")
    return g


def _order(trace: Trace, groups: dict[str, int], lanes: dict[tuple[str, str], int]) -> None:
    for rank, core in enumerate(sorted(groups, key=_core_key)):
        trace.tracks[groups[core]].order = rank
    for core in groups:
        mine = sorted((pipe for c, pipe in lanes if c == core), key=_pipe_key)
        for rank, pipe in enumerate(mine):
            trace.tracks[lanes[(core, pipe)]].order = rank


def _match_core(core: str | None, known: list[str]) -> str | None:
    """``cubecore0`` (a renamed per-core file) -> ``core0.cubecore0`` when unique."""
    if core is None or core in known:
        return core
    hits = [k for k in known if k.endswith("." + core)]
    return hits[0] if len(hits) == 1 else core


def _instr(trace: Trace, sim: dict[str, Any], path: Path, by_core: dict[str, list[int]],
           cores: list[str]) -> None:
    table = read_table(path)
    trace.meta.source_files.append(str(path))
    core = _match_core(_file_core(path, "_instr_exe"), cores) or path.stem
    rows = table.dicts()
    entry = sim["cores"].setdefault(core, {})
    entry.setdefault("instructions", []).extend(rows)
    pipes: dict[str, dict[str, Any]] = entry.setdefault("pipes", {})
    by_pc: dict[int, dict[str, Any]] = {}
    executions = 0
    for r in rows:
        pipe = normalize_pipe(str(r.get("pipe") or "unknown"))
        p = pipes.setdefault(pipe, {"instructions": 0, "call_count": 0, "cycles": 0,
                                    "running_time_us": 0.0})
        p["instructions"] += 1
        for k in ("call_count", "cycles"):
            if isinstance(r.get(k), (int, float)):
                p[k] += r[k]
        if isinstance(r.get("running_time_us"), (int, float)):
            p["running_time_us"] = max(p["running_time_us"], float(r["running_time_us"]))
        if isinstance(r.get("call_count"), int):
            executions += r["call_count"]
        if isinstance(r.get("addr"), int):
            by_pc.setdefault(r["addr"], {"instr": r.get("instr"), "instr_pipe": r.get("pipe"),
                                         "instr_call_count": r.get("call_count"),
                                         "instr_cycles": r.get("cycles"),
                                         "instr_running_time_us": r.get("running_time_us")})
    entry["executions"] = entry.get("executions", 0) + executions
    joined = 0
    for i in by_core.get(core, ()):
        s = trace.slices[i]
        pc = (s.args or {}).get("pc_addr")
        try:
            pc_int = int(str(pc), 16) if isinstance(pc, str) else None
        except ValueError:
            pc_int = None
        shared = by_pc.get(pc_int) if pc_int is not None else None
        if shared is not None:
            s.shared_args = shared
            joined += 1
    sim["files"][str(path)] = {"kind": "instr_exe", "core": core, "rows": len(rows),
                               "executions": executions, "slices_joined": joined}
    table.warn_into(trace)


def _code(trace: Trace, sim: dict[str, Any], path: Path, cores: list[str]) -> None:
    table = read_table(path)
    trace.meta.source_files.append(str(path))
    core = _match_core(_file_core(path, "_code_exe"), cores) or path.stem
    rows = table.dicts()
    sim["cores"].setdefault(core, {}).setdefault("code", []).extend(rows)
    sim["files"][str(path)] = {"kind": "code_exe", "core": core, "rows": len(rows)}
    if not rows:
        sim["files"][str(path)]["note"] = ("header only: the kernel was built without -g, so "
                                           "there is no source-line attribution")


def _bin(trace: Trace, sim: dict[str, Any], path: Path) -> None:
    blocks, note = read_blocks(path)
    trace.meta.source_files.append(str(path))
    if note:
        trace.warn(note, CUT_SHORT)
    counts: dict[str, int] = {}
    for b in blocks:
        counts[b.name] = counts.get(b.name, 0) + 1
    sim["files"][str(path)] = {"kind": "visualize_data.bin", "blocks": counts}
    if blocks:
        trace.warn(f"{path}: {len(blocks)} blocks ({', '.join(sorted(counts))}) kept as counts "
                   "only: the trace.json and instr_exe/code_exe files carry the same views")


def _check_cut(trace: Trace, sim: dict[str, Any], per_core: dict[str, int], used) -> None:
    for core, entry in sim["cores"].items():
        n = per_core.get(core, 0)
        entry["trace_events"] = n
        execs = entry.get("executions", 0)
        if n and execs and n * 2 < execs:
            where = ", ".join(str(p) for _, p in used)
            trace.warn(f"{where}: {core} holds {n} instruction events but instr_exe counts "
                       f"{execs} executions: the trace looks cut short (the events present are "
                       "converted)", CUT_SHORT)


def _device(trace: Trace, source: Source) -> None:
    root = source.root if is_dir(source.root) else source.root.parent
    txt = root / "dump" / "op_basic_info.txt"
    if is_file(txt):
        for line in read_text(txt).splitlines():
            k, _, v = line.partition("=")
            if arg_name(k) == "run_soc_version" and v.strip():
                trace.meta.device = v.strip()
        trace.meta.source_files.append(str(txt))

