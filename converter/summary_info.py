"""What `tracecvt info` prints about a run: formats, files, counts, time span, tracks."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .model import COUNTER, GROUP, LANE, Trace, warning_groups
from .analyses.timeline import task_count
from .readers import Source


def describe(source: Source, trace: Trace) -> dict[str, Any]:
    span = trace.time_span()
    per_lane: dict[int, int] = {}
    for s in trace.slices:
        per_lane[s.track] = per_lane.get(s.track, 0) + 1
    samples = {c.track: len(c) for c in trace.counters}
    tracks = []
    for index, depth in trace.walk():
        t = trace.tracks[index]
        entry: dict[str, Any] = {"name": t.name, "kind": t.kind, "depth": depth}
        if t.kind == LANE:
            entry["slices"] = per_lane.get(index, 0)
        elif t.kind == COUNTER:
            entry["samples"] = samples.get(index, 0)
        tracks.append(entry)
    meta = trace.meta
    # Files of the run folder a reader lists (role "ignored") but does not read, and why: the
    # msprof family in the run's metadata, a companion in its Source (readers._walk).
    why = meta.extra.get("msprof_ignored_files") if type(meta.extra) is dict else None
    why = {**(why if isinstance(why, dict) else {}), **source.not_used}
    unused = {role for role in source.files if _role_kind(role) == "ignored"}
    # What the writers would not draw (their warning when writing), with the run's own.
    warnings, causes = list(meta.warnings), dict(meta.causes)
    from .writers.flows import not_drawn_lines
    for writer, what in (("perfetto", "a .pftrace"), ("chrome", "Chrome JSON")):
        line, cause = not_drawn_lines(trace, writer, what)
        if line is not None:
            warnings.append(line)
            if cause:
                causes[line] = cause
    return {
        "run": source.name,
        "format": source.format,
        "variant": source.variant,
        "root": str(source.root),
        # Lists of objects: a file's role and path are values, never keys (docs/api.md).
        "files": [{"role": role, "path": str(p)}
                  for role, p in sorted(source.files.items()) if role not in unused],
        "not_used": [{"path": str(p), "reason": why.get(str(p))} for p in sorted(
            (source.files[role] for role in unused), key=str)],
        "tool": meta.tool,
        "tool_version": meta.tool_version,
        "device": meta.device,
        "clock": meta.clock.typed(),
        # What the reader says of the clock: where its rate comes from, or that it is assumed.
        "clock_description": meta.clock.description,
        "tasks": task_count(trace),         # as the summary counts them
        "counts": trace.stats(),
        "time_span_ns": list(span) if span else None,
        "duration_us": (span[1] - span[0]) / 1000 if span else 0.0,
        "tracks": tracks,
        "warnings": warnings,
        # Warnings that share a cause (RunMeta.causes): the cause, and their indices in
        # "warnings".
        "causes": [{"cause": key, "warnings": [warnings.index(w) for w in group]}
                   for key, group in warning_groups(warnings, causes) if len(group) > 1],
    }


def _clock_text(clock: dict[str, Any]) -> str:
    """``ns_per_unit`` as the text output has always said it (``1000``, ``5/9``)."""
    return str(Fraction(clock["ns_per_unit_numerator"], clock["ns_per_unit_denominator"]))


def _role_kind(role: str) -> str:
    """``rank1/ignored#2`` -> ``ignored``."""
    return role.rsplit("/", 1)[-1].split("#", 1)[0]


def render_text(reports: list[dict[str, Any]]) -> str:
    out: list[str] = [f"{len(reports)} run(s) found"]
    for r in reports:
        out.append("")
        out.append(f"run {r['run']}  [{r['format']}{'/' + r['variant'] if r.get('variant') else ''}]")
        out.append(f"  root: {r['root']}")
        if "error" in r:
            out.append(f"  error: {r['error']}")
            continue
        for f in r["files"]:
            out.append(f"  file {f['role']}: {f['path']}")
        for f in r.get("not_used", []):
            out.append(f"  not used: {f['path']}" + (f" ({f['reason']})" if f["reason"] else ""))
        if r["device"] or r["tool"]:
            out.append(f"  tool: {r['tool']} {r['tool_version']}".rstrip()
                       + (f"; device: {r['device']}" if r["device"] else ""))
        out.append(f"  clock: {r['clock']['name']} ({r['clock']['unit']}, "
                   f"{_clock_text(r['clock'])} ns per unit)"
                   + (f": {r['clock_description']}" if r.get("clock_description") else ""))
        c = r["counts"]
        out.append(f"  tasks: {r['tasks']}; slices {c['slices']}, flows {c['flows']}, "
                   f"instants {c['instants']}, counter tracks {c['counter_tracks']} "
                   f"({c['counter_samples']} samples)")
        if r["time_span_ns"]:
            a, b = r["time_span_ns"]
            out.append(f"  time span: {a} .. {b} ns ({r['duration_us']:.3f} us)")
        lanes = [t for t in r["tracks"] if t["kind"] == LANE]
        busy = sum(1 for t in lanes if t.get("slices"))
        out.append(f"  tracks: {c['tracks']} ({len(lanes)} lanes, {busy} with slices)")
        for t in r["tracks"]:
            if t["kind"] == GROUP:
                out.append("    " + "  " * t["depth"] + f"{t['name']}/")
            elif t["kind"] == COUNTER:
                out.append("    " + "  " * t["depth"] + f"{t['name']} (counter, "
                           f"{t['samples']} samples)")
        shared = {i: c["cause"] for c in r.get("causes", []) for i in c["warnings"]}
        said = set()
        for i, w in enumerate(r["warnings"]):
            cause = shared.get(i)
            if cause is None:
                out.append(f"  warning: {w}")
                continue
            if cause not in said:
                said.add(cause)
                group = [j for j, c in shared.items() if c == cause]
                out.append(f"  warnings from one cause, {cause}:")
                out.extend(f"    warning: {r['warnings'][j]}" for j in sorted(group))
    return "\n".join(out)
