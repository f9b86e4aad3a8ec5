"""One simpler run into the model: files loaded (``records``), views built (``lanes``,
``phases``, ``flows``), what the level or the files lack said once."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

from ...errors import InputError
from ...fileio import read_text
from ...model import GROUP, MAX_NS, Clock, RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from .deps import Deps, finish_deps, start_deps
from .files import TOOL_REPORTS
from .flows import add_dependency_flows
from .hostclock import host_mapping
from .lanes import Built, add_scheduler_view, add_worker_view
from .phases import add_device_orchestrator, add_host_orchestrator, add_scheduler_phases
from .records import Records, load_host_phases, load_name_map, load_records

TOOL = "simpler (PyPTO 3.0)"
LEGACY_US = Clock("simpler-us", "us", Fraction(1000),
                  "microseconds as written by simpler before June 2026 (rounded to the ns)")
_PLATFORM_RE = re.compile(r"(?:^|[_\W])(a2a3sim|a5sim|a2a3|a5)(?:[_\W]|$)")
_PLATFORMS = {"a2a3": "Ascend A2/A3", "a5": "Ascend A5"}


def build(source: Source, options: ReadOptions) -> Trace:
    files = source.files
    path = files["records"]
    meta = RunMeta(source.name, "simpler", tool=TOOL, source_files=[str(path)])
    trace = Trace(meta)
    warn = trace.warn
    options.report(f"reading {path.name}", 0, 1)
    clock_hz = None
    if options.clock_mhz is not None:
        hz = options.clock_mhz * 10**6
        if hz.denominator != 1 or hz <= 0:
            raise InputError(path, f"--clock-mhz {options.clock_mhz} is not a whole, "
                             "positive number of Hz")
        clock_hz = int(hz)
    # A large deps.json loads in a second process meanwhile (``start_deps``).
    use_deps = "deps" in files and source.variant != "simpler-records"
    helper = start_deps(files["deps"], options.workers) if use_deps else None
    try:
        rec = load_records(path, warn, clock_hz)
        clock = meta.clock = clock_of(rec.freq_hz) if not rec.microseconds else LEGACY_US
        platform = platform_of(path)
        meta.device = device_name(platform, rec.freq_hz if not rec.microseconds else None)
        if rec.microseconds and clock_hz is not None:
            warn(f"{path}: --clock-mhz ignored: this layout is already in microseconds")
        missing: list[str] = []

        deps = None
        if use_deps:
            deps = finish_deps(helper, files["deps"], warn)
            if deps is not None:
                meta.source_files.append(str(files["deps"]))
        elif "deps" in files:
            missing.append("deps.json ignored (--from simpler-records): no function names "
                           "or dependencies")
        else:
            missing.append("no deps.json: no function names or dependencies (run with "
                           "enable_dep_gen=True / --enable-dep-gen)")
    finally:
        if helper is not None:          # (a failure before finish_deps: not left running)
            helper.abandon()
    if deps is None and rec.deps is not None:
        deps = rec.deps
        missing[:] = [m for m in missing if not m.startswith("no deps.json")]
    names = _names(source, deps, meta, missing, warn)

    per = clock.ns_per_unit if not rec.microseconds else 1
    if per == 1:
        def ns(c: int) -> int:
            return c
    elif per.denominator == 1:
        mul = per.numerator

        def ns(c: int) -> int:
            return c * mul
    else:
        ns = clock.to_ns

    built = Built(trace.add_track(meta.device, None, GROUP, 0,
                                  f"simpler level {rec.level} chip swimlane run"))
    counts: dict[str, Any] = add_worker_view(trace, rec, deps, names, ns, built, 0)
    level = rec.level
    _level_notes(rec, missing)
    counts["aicpu_rows"] = len(rec.aicpu)
    if rec.aicpu:
        counts["scheduler_view_rows"] = add_scheduler_view(trace, rec, built, 1)
    _join_warnings(trace, rec, counts)
    if rec.sched is not None:
        counts["sched_phase_records"] = sum(len(t) for t in rec.sched)
        counts.update(add_scheduler_phases(trace, rec, deps, names, ns, built, 2))
    info: dict[str, Any] = {}
    if rec.orch is not None:
        counts["orch_records"] = add_device_orchestrator(trace, rec, deps, ns, built, 3)
    host_phases = load_host_phases(files["host_phases"], warn) if "host_phases" in files \
        else []
    if host_phases:
        meta.source_files.append(str(files["host_phases"]))
    if rec.host_orch is not None or rec.uploads is not None or host_phases:
        host = _host_clock(rec, ns, host_phases, info, warn)
        counts["host_orch_records"] = add_host_orchestrator(trace, rec, deps, host, built, 3,
                                                            host_phases)
        counts["host_phase_records"] = len(host_phases)
        if built.off_clock:
            warn(f"{path}: {built.off_clock} host records fall outside the device clock's "
                 "range once placed on it (before its zero): dropped")
    counts["edges"] = len(deps.edges) if deps is not None else 0
    counts["tasks_in_deps"] = len(deps.tasks) if deps is not None else 0
    if deps is not None:
        counts["flows"] = add_dependency_flows(trace, deps, built, level)
        unknown = sum(1 for t in built.rows_of if t not in deps.tasks)
        if unknown:
            warn(f"{deps.path}: {unknown} tasks of the records are not in deps.json (it may "
                 "come from another execution): labelled task(<token>)")
    # Tasks (not slices): each executed task once (MIX / SPMD rows are one), markers and
    # allocations included.
    meta.extra["tasks"] = len(built.rows_of.keys() | built.markers.keys())
    # What a level below 4 does not record: one cause, however many lines say what it left.
    cause = (f"recorded at chip swimlane level {level} of 4 (enable_chip_swimlane = 4 "
             "records everything)") if level <= 3 else None
    for line in missing:
        warn(f"{path}: {line}", cause if line.startswith(f"level {level}: ") else None)
    orchestration = ("host" if rec.host_orch is not None or
                     rec.meta.get("orchestrator_source") == "host" else
                     "device" if rec.orch is not None else None)
    reports = _tool_reports(source, meta, warn)
    if reports:
        info["tool_reports"] = reports
    meta.extra["simpler"] = {
        "level": level, "level_key": rec.level_key,
        "clock_freq_hz": rec.freq_hz if not rec.microseconds else None,
        "num_cores": rec.meta.get("num_cores"), "core_types": rec.core_types,
        "core_to_thread": rec.core_to_thread, "platform": platform,
        "orchestration": orchestration, "task_graph": deps is not None,
        "missing": missing, "counts": counts, **info}
    split_overlaps(trace)
    options.report(f"reading {path.name}", 1, 1)
    return trace


def _tool_reports(source: Source, meta: RunMeta, warn: Callable[[str], None]
                  ) -> dict[str, str]:
    """The text of the runtime tools' reports found beside the records (TOOL_REPORTS)."""
    out: dict[str, str] = {}
    for role in TOOL_REPORTS:
        path = source.files.get(role)
        if path is None:
            continue
        try:
            out[role] = read_text(path)
        except InputError as e:
            warn(f"{e}: its figures are not compared")
            continue
        meta.source_files.append(str(path))
    return out


def _names(source: Source, deps: Deps | None, meta: RunMeta, missing: list[str],
           warn: Callable[[str], None]) -> dict[int, str]:
    maps = sorted(k for k in source.files if k.startswith("name_map"))
    if deps is None:
        return {}
    if not maps:
        missing.append("no name_map*.json: functions shown as func_<id>_<letters>")
        return {}
    if len(maps) > 1:
        listed = ", ".join(source.files[k].name for k in maps)
        warn(f"{source.files['records'].parent}: several name maps ({listed}), none used "
             "(as simpler's converter does): functions shown as func_<id>_<letters>")
        return {}
    meta.source_files.append(str(source.files[maps[0]]))
    return load_name_map(source.files[maps[0]], warn)


def _level_notes(rec: Records, missing: list[str]) -> None:
    level = rec.level
    if level == 1:
        missing.append("level 1: no AICPU records, so no dispatch/finish times, Scheduler "
                       "View or pickup/completion latencies (run with enable_chip_swimlane "
                       ">= 2)")
    if level == 2:
        missing.append("level 2: no scheduler phase records, so no scheduler loop phases, "
                       "ready-queue depths or core -> scheduler thread map (run with "
                       "enable_chip_swimlane >= 3)")
    if level <= 3:
        missing.append(f"level {level}: no orchestrator records, so no submit times and no "
                       "allocation tasks (run with enable_chip_swimlane = 4)")
    if level >= 3 and rec.sched is None:
        missing.append(f"level {level} but no aicpu_scheduler_phases: no scheduler phases")
    if level >= 4 and rec.orch is None and rec.host_orch is None:
        missing.append("level 4 but no orchestrator records: no submit times")
    if rec.five_columns:
        missing.append(f"{rec.five_columns} aicore_tasks rows have 5 columns (records from "
                       "before 2026-06-07): no receive time, so no setup_ns")


def _join_warnings(trace: Trace, rec: Records, counts: dict[str, Any]) -> None:
    if counts["duplicate_aicpu_keys"]:
        trace.warn(f"{rec.path}: {counts['duplicate_aicpu_keys']} aicpu_tasks rows repeat a "
                   "(core_id, reg_task_id) pair: the last one is used")
    if counts["aicpu_without_aicore"]:
        trace.warn(f"{rec.path}: {counts['aicpu_without_aicore']} aicpu_tasks rows have no "
                   "AICore row with the same (core_id, reg_task_id): dropped (their task is "
                   "unknown)")
    if rec.level >= 2 and rec.aicpu and counts["joined"] < counts["aicore_rows"]:
        trace.warn(f"{rec.path}: {counts['aicore_rows'] - counts['joined']} AICore rows have "
                   "no AICPU row with the same (core_id, reg_task_id): no dispatch/finish "
                   "for them")


def _host_clock(rec: Records, ns: Callable[[int], int], host_phases: list[dict[str, Any]],
                info: dict[str, Any],
                warn: Callable[[str], None]) -> Callable[[int], int | None]:
    lo = hi = None                  # one pass, no list: a run holds millions of values
    for c in _device_cycles(rec):
        if not c:
            continue
        if lo is None:
            lo = hi = c
        elif c < lo:
            lo = c
        elif c > hi:
            hi = c
    ends = [r.end_host_ns for t in rec.host_orch or () for r in t]
    ends += [r.end_host_ns for r in rec.uploads or ()]
    ends += [r["end_ns"] for r in host_phases]
    mapping, facts = host_mapping(rec.meta.get("clock_anchors"),
                                  clock_of(rec.freq_hz).ns_per_unit, lo, hi,
                                  max(ends) if ends else None,
                                  ns(lo) if lo is not None else None)
    info["clock_alignment"] = facts
    capture = rec.meta.get("host_capture")
    if isinstance(capture, dict):
        info["host_capture"] = capture
        if capture.get("status") not in (None, "complete"):
            warn(f"{rec.path}: host capture {capture.get('status')} "
                 f"({capture.get('error')}): host orchestrator records are incomplete")
    def host(h: int) -> int | None:
        v = mapping(h)
        return v if 0 <= v <= MAX_NS else None

    if facts["status"] != "calibrated":
        warn(f"{rec.path}: host clock not aligned with the device ({facts['reason']}): host "
             "records are placed to end where the device's first record starts; the real "
             "gap is unknown")
    return host


def _device_cycles(rec: Records) -> Iterator[int]:
    """Every device counter value the records hold (0: not recorded): AICore receive and end,
    AICPU dispatch and finish, scheduler phase start and end."""
    for r in rec.aicore:
        yield r[3] - (r[5] or 0)
        yield r[4]
    for r in rec.aicpu:
        yield r[2]
        yield r[3]
    for thread in rec.sched or ():
        for r in thread:
            yield r.start_cycles
            yield r.end_cycles


def platform_of(path: Path) -> str | None:
    for part in reversed(Path(path).absolute().parts):
        m = _PLATFORM_RE.search(part)
        if m:
            return m.group(1)
    return None


def device_name(platform: str | None, freq_hz: int | None) -> str:
    """The platform a path names, else what the counter rate says (None: no rate known)."""
    if platform is not None:
        return f"{_PLATFORMS[platform.removesuffix('sim')]} ({platform})"
    if freq_hz == 50_000_000:
        return "Ascend A2/A3"
    if freq_hz == 1_000_000_000:
        return "Ascend A5"
    return "Ascend" if freq_hz is None else f"Ascend ({freq_hz:,} Hz counter)"


def clock_of(freq_hz: int) -> Clock:
    return Clock("simpler-syscnt", "cycle", Fraction(10**9, freq_hz),
                 f"device system counter at {freq_hz:,} Hz (metadata.clock_freq_hz)")
