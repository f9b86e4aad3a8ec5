"""Pieces every msprof-family run uses: file roles, ignored files, JSON timelines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import read_head
from ...model import Trace
from ..base import Source
from .causes import CUT_SHORT, FLOWS_NOT_DRAWN
from .discover import MARKER_HEAD, marker_kind
from .jsontrace import ChromeImporter, load_events
from .layout import Layout
from .tasks import TaskIndex


class Guard:
    """Reads the files of a multi-file run one by one: a file that is bad input is reported
    (one warning) and skipped so the rest of the run still converts; if no file of the run
    could be read at all, the first error stands."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.errors: list[InputError] = []
        self.ok = 0

    def __call__(self, fn, *args, **kwargs):
        try:
            out = fn(*args, **kwargs)
        except InputError as e:
            self.errors.append(e)
            self.trace.warn(f"{e} (this file is not converted; the rest of the run is)")
            return None
        self.ok += 1
        return out

    def accept(self) -> None:
        """Something of the run was usable without reading a file through the guard."""
        self.ok += 1

    def check(self) -> None:
        if self.errors and not self.ok:
            raise self.errors[0]


def role_kind(role: str) -> str:
    """``rank1/kernel_details#2`` -> ``kernel_details``."""
    return role.rsplit("/", 1)[-1].split("#", 1)[0]


def files_of(source: Source, kind: str, prefix: str = "") -> list[Path]:
    return [p for r, p in sorted(source.files.items())
            if r.startswith(prefix) and role_kind(r) == kind
            and "/" not in r[len(prefix):]]


def note_ignored(trace: Trace, source: Source, reasons: dict[str, str] | None = None) -> None:
    """Files of the run folder that are not converted, with the reason, in run metadata."""
    ignored = trace.meta.extra.setdefault("msprof_ignored_files", {})
    for role, p in sorted(source.files.items()):
        if role_kind(role) == "ignored":
            ignored[str(p)] = _reason(p, reasons or {})
        elif role_kind(role) == "db":
            ignored[str(p)] = "SQLite export: not read (the text export holds the same data)"
        else:
            continue
        if p.name.lower().endswith(".db"):
            from ..ascend_db import is_export       # the one hook into the database reader
            if is_export(p):
                # Listed (info's "not used"), not warned about: every recent PROF_* holds one.
                ignored[str(p)] = ("the run's database export: not read, the text export's "
                                   "timeline holds the same tasks and msprof's overlap "
                                   "analysis (--from msprof-db reads the database)")


def _reason(p: Path, reasons: dict[str, str]) -> str:
    low = p.name.lower()
    for key, why in reasons.items():
        if key in low:
            return why
    marker = marker_kind(read_head(p, MARKER_HEAD))
    if marker == "marker":
        marks = f" of {p.name[:-5]}" if low.endswith(".done") else ""
        return f"msprof's write-complete marker{marks} (filesize): no data"
    if marker == "empty":
        return "empty file" + (" (msprof's write-complete marker)" if low.endswith(
            (".done", ".complete")) else "")
    if low.endswith(".db"):
        if p.parent.name == "sqlite":
            return ("msprof's per-module SQLite file: not read (the text export in "
                    "mindstudio_profiler_output holds the same data)")
        return "SQLite export: not read (the text export holds the same data)"
    if low == "readme.txt":
        return "msprof's field description text"
    if _SLICE.search(low):
        return ("raw collected data (binary slice): msprof's own export of it is what the "
                "run reads")
    if low.endswith((".log", ".log.0")) or ".log." in low:
        if "start.log" in low:
            return "collection log (clock sync), not profiling data"
        return "msprof's collection or analysis log, not profiling data"
    return "not a file the msprof reader converts"


_SLICE = re.compile(r"\.slice_\d+$")


def add_stats_files(trace: Trace, source: Source, prefix: str = "",
                    rank: int | None = None, sources: dict[str, Any] | None = None,
                    guard: Guard | None = None) -> None:
    """Every aggregate file of the run (under ``prefix``) into msprof_statistics."""
    from .stats import CSV_KINDS, JSON_KINDS, add_csv_stats, add_json_stats
    guard = guard or Guard(trace)
    for role, p in sorted(source.files.items()):
        if not role.startswith(prefix) or "/" in role[len(prefix):]:
            continue
        kind = role_kind(role)
        if kind in CSV_KINDS:
            n = guard(add_csv_stats, trace, kind, p, rank)
        elif kind in JSON_KINDS:
            n = guard(add_json_stats, trace, kind, p, rank)
        else:
            continue
        if sources is not None and n is not None:
            sources[str(p)] = {"records": n}


def import_timelines(trace: Trace, layout: Layout, paths: list[Path], index: TaskIndex,
                     sources: dict[str, Any], guard: Guard | None = None) -> ChromeImporter:
    """Chrome-trace JSON files into ``trace`` (flows bound across all of them)."""
    imp = ChromeImporter(trace, layout)
    guard = guard or Guard(trace)
    read = []
    for p in paths:
        loaded = guard(load_events, p)
        if loaded is None:
            continue
        events, _, note = loaded
        read.append(p)
        stats = imp.add_file(p, events)
        if note:
            trace.warn(note, CUT_SHORT)
        sources[str(p)] = {"events": len(events), "slices": stats.get("X", 0),
                           "counter_events": stats.get("C", 0),
                           "counter_samples": stats.get("counter_samples", 0),
                           "flow_starts": stats.get("s", 0), "flow_ends": stats.get("f", 0),
                           "instants": stats.get("instant", 0), "truncated": bool(note)}
        trace.meta.source_files.append(str(p))
    imp.finish_counters()
    flows = imp.bind_flows()
    for p in read:
        sources[str(p)]["flows"] = flows
    for what, n in sorted(imp.skipped.items()):
        trace.warn(f"{what}: {n} not converted")
    for what, n in sorted(imp.fixed.items()):
        trace.warn(f"{what} ({n} events)")
    lost = flows["unpaired"] + flows["unbound"] + flows["self"]
    if lost:
        trace.warn(f"{', '.join(str(p) for p in read)}: {flows['flows']} flows converted; "
                   f"{flows['unpaired']} flow ends without a partner, {flows['unbound']} "
                   f"pairs with no slice at an end and {flows['self']} pairs within one slice "
                   "not drawn", FLOWS_NOT_DRAWN)
    for i in imp.task_slices:
        index.add(i)
    return imp
