"""Kernels -> model: the serialized timeline, lanes, NVTX ranges and counter tracks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ...model import (GROUP, LANE, MAX_NS, NO_BUBBLES, SEP, Clock, Counter, RunMeta, Trace,
                      split_overlaps)
from .kernels import Kernel
from .metrics import BOUNDARY_COUNTERS, KEY_METRICS, printable
from .nvtx import DEFAULT_DOMAIN, build_ranges, cut_short, nvtx_path

SERIAL_SENTENCE = ("Serialized timeline: Nsight Compute replays each kernel on its own and "
                   "records no launch times, so kernels are laid end to end in profiling "
                   "order, each lasting its measured duration (gpu__time_duration.sum); gaps, "
                   "overlaps and host time of the real run are not shown.")
NO_IDLE_REASON = ("Nsight Compute replays kernels one by one and lays them end to end: the "
                  "timeline has no idle time by construction, so bubbles and utilization are "
                  "not measured")

SERIALIZED = Clock("ncu-serialized", "ns", Fraction(1),
                   "synthetic: kernels of a Nsight Compute report laid end to end in profiling "
                   "order from 0 ns, each lasting its measured gpu__time_duration.sum")

_KEY_ORDER = [arg for arg, _, _ in KEY_METRICS]


@dataclass
class RunInfo:
    """What a path knows about the run beyond its kernels."""

    name: str
    source: str                         # "ncu-rep", "csv-raw" or "csv-details"
    path: str
    tool_version: str = ""
    library_version: str = ""
    metric_units: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)    # extra sentences for timeline_note


def build(kernels: list[Kernel], run: RunInfo) -> Trace:
    meta = RunMeta(run.name, "ncu", tool="Nsight Compute", tool_version=run.tool_version,
                   clock=SERIALIZED, source_files=[run.path])
    trace = Trace(meta)
    for w in run.warnings:
        trace.warn(w)

    # -- the serialized timeline ----------------------------------------------------------
    starts: list[int] = []
    ends: list[int] = []
    t = 0
    no_duration = []
    too_long = []
    for k in kernels:
        d = k.duration_ns
        if not isinstance(d, int) or d < 0:
            no_duration.append(k.index)
            d = 0
        elif t + d > MAX_NS:        # (2^62 ns, 146 years): a longer kernel is corrupt data
            too_long.append(k.index)
            d = 0
        starts.append(t)
        t += d
        ends.append(t)
    if no_duration:
        trace.warn(f"{run.path}: {len(no_duration)} kernels have no gpu__time_duration.sum "
                   f"(IDs {_ids(no_duration)}): drawn with zero length")
    if too_long:
        trace.warn(f"{run.path}: {len(too_long)} kernels have a gpu__time_duration.sum that "
                   f"would end the timeline past {MAX_NS:,} ns (IDs "
                   f"{_ids(too_long)}): not plausible, drawn with zero length")
    ids = [k.index for k in kernels]
    if ids and ids != list(range(ids[0], ids[0] + len(ids))):
        expected = max(ids) - min(ids) + 1
        trace.warn(f"{run.path}: kernel IDs are not contiguous ({len(ids)} kernels for IDs "
                   f"{min(ids)}..{max(ids)}): {expected - len(set(ids))} results are missing "
                   "from this file")

    # -- NVTX ranges (host side, above the devices) ----------------------------------------
    ranges = build_ranges(kernels, starts, ends)
    order = 0
    n_ranges = 0
    if ranges:
        group = trace.add_track("NVTX ranges", None, GROUP, order,
                                "NVTX ranges active at each kernel launch, drawn over the "
                                "kernels launched inside them. " + SERIAL_SENTENCE)
        order += 1
        keys = sorted(ranges, key=lambda dk: (dk[0] != DEFAULT_DOMAIN, dk[0], dk[1]))
        for rank, (domain, kind) in enumerate(keys):
            title = "NVTX" if domain == DEFAULT_DOMAIN else f"NVTX {domain}"
            if kind == "start/end":
                title += " start/end"
            lane = trace.add_track(title, group, LANE, rank,
                                   f"NVTX {kind} ranges of domain {domain}; each spans "
                                   "exactly the kernels launched inside it. " + SERIAL_SENTENCE,
                                   nesting=True)
            for span in ranges[(domain, kind)]:
                args: dict[str, Any] = {"nvtx_path": "/".join(span.path), "domain": domain,
                                        "kernels": span.kernels,
                                        "first_kernel_id": kernels[span.first].index,
                                        "last_kernel_id": kernels[span.last].index}
                args.update(span.attrs)
                trace.add_slice(lane, span.start, span.end - span.start, span.name, "nvtx",
                                args)
                n_ranges += 1
        pp = ranges.get((DEFAULT_DOMAIN, "push/pop"))
        if pp is None:
            pp = next((v for (d, kind), v in ranges.items() if kind == "push/pop"), None)
        evidence = cut_short(kernels, pp) if pp else None
        if evidence:
            meta.extra["ncu_partial"] = evidence
            inside, before = printable(evidence["range"]), printable(evidence["previous_range"])
            trace.warn(f"{run.path}: the report looks cut short: it ends inside NVTX range "
                       f"'{inside}' after {evidence['kernels_in_range']} kernels, "
                       f"the first {evidence['kernels_in_range']} of the "
                       f"{evidence['kernels_in_previous_range']} launched in "
                       f"'{before}' before it; a partially written report "
                       "(e.g. the profiled run was stopped) holds only what was profiled, so "
                       f"at least {evidence['missing_at_least']} kernels are missing")

    # -- devices, stream lanes, counters --------------------------------------------------
    devices: dict[Any, list[int]] = {}
    for pos, k in enumerate(kernels):
        devices.setdefault(k.device_id, []).append(pos)
    device_names = []
    rules_meta: list[dict[str, Any]] = []
    pm_interval = None
    for dev in sorted(devices, key=lambda d: (d is None, d if d is not None else 0)):
        positions = devices[dev]
        first = kernels[positions[0]]
        label = f"GPU {dev}" if dev is not None else "GPU"
        dname = next((kernels[p].device_name for p in positions if kernels[p].device_name), "")
        if dname and dname not in device_names:
            device_names.append(dname)
        cc = first.compute_capability
        desc = f"device {dev if dev is not None else '?'}"
        desc += f": {dname}" if dname else ""
        desc += f", compute capability {cc}" if cc else ""
        group = trace.add_track(f"{label}{SEP}{dname}" if dname else label, None, GROUP, order,
                                desc)
        order += 1
        lanes: dict[tuple[Any, Any], int] = {}
        keys = sorted({(kernels[p].context, kernels[p].stream) for p in positions},
                      key=lambda cs: (cs[0] is None, cs[0] or 0, cs[1] is None, cs[1] or 0))
        for rank, (ctx, stream) in enumerate(keys):
            lanes[(ctx, stream)] = trace.add_track(
                f"context {ctx} · stream {stream}", group, LANE, rank,
                f"Kernels of context {ctx}, stream {stream} on {label}, in profiling order. "
                + SERIAL_SENTENCE, nesting=False)
        rank = len(keys)
        for pos in positions:
            k = kernels[pos]
            args = _kernel_args(k, label, dname)
            if k.rules:
                for r in k.rules:
                    rules_meta.append({"kernel_index": k.index, "kernel": k.short_name,
                                       "rule": r.get("rule", ""),
                                       "message": r.get("message", ""),
                                       "estimated_speedup_pct": r.get("estimated_speedup_pct"),
                                       "speedup_type": r.get("speedup_type"),
                                       "type": r.get("type", ""),
                                       "section": r.get("section", "")})
            trace.add_slice(lanes[(k.context, k.stream)], starts[pos], ends[pos] - starts[pos],
                            k.short_name or k.name, k.workload, args)
        rank = _boundary_counters(trace, group, rank, kernels, positions, starts, ends)
        interval = _pm_counters(trace, group, rank, kernels, positions, starts, ends)
        pm_interval = pm_interval or interval

    # -- run metadata ----------------------------------------------------------------------
    meta.device = ", ".join(device_names) or ", ".join(
        _unnamed_device(dev, kernels[devices[dev][0]].compute_capability)
        for dev in sorted(devices, key=lambda d: (d is None, d if d is not None else 0)))
    extra = meta.extra
    extra["ncu_serialized"] = True
    extra[NO_BUBBLES] = NO_IDLE_REASON
    extra["timeline_note"] = " ".join([SERIAL_SENTENCE, *run.notes])
    extra["ncu_kernels"] = len(kernels)
    extra["tasks"] = len(kernels)
    extra["ncu_source"] = run.source
    extra["ncu_total_kernel_time_ns"] = ends[-1] if ends else 0
    extra["ncu_rules"] = rules_meta
    extra["ncu_nvtx_ranges"] = n_ranges
    extra["ncu_devices"] = [
        {"device_id": dev, "name": next((kernels[p].device_name for p in devices[dev]
                                         if kernels[p].device_name), ""),
         "compute_capability": kernels[devices[dev][0]].compute_capability,
         "kernels": len(devices[dev])}
        for dev in sorted(devices, key=lambda d: (d is None, d if d is not None else 0))]
    if run.library_version:
        extra["ncu_report_library_version"] = run.library_version
    if pm_interval is not None:
        extra["ncu_pm_sampling_interval_ns"] = pm_interval
    if run.metric_units:
        extra["ncu_metric_units"] = run.metric_units
    split_overlaps(trace)
    return trace


def _ids(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:5])
    return shown + (", …" if len(ids) > 5 else "")


def _kernel_args(k: Kernel, label: str, device_name: str) -> dict[str, Any]:
    a = k.args
    args: dict[str, Any] = {"id": k.index, "name": k.name, "short_name": k.short_name}
    for key in ("grid", "block"):
        if key in a:
            args[key] = a[key]
    for key in _KEY_ORDER:
        if key in a:
            args[key] = a[key]
            if key == "shared_memory_dynamic_bytes":
                s, d = a.get("shared_memory_static_bytes"), a.get("shared_memory_dynamic_bytes")
                if isinstance(s, int) and isinstance(d, int):
                    args["shared_memory_bytes"] = s + d
    args["device"] = device_name or label
    if k.device_id is not None:
        args["device_id"] = k.device_id
    if k.context is not None:
        args["context"] = k.context
    if k.stream is not None:
        args["stream"] = k.stream
    if k.compute_capability:
        args["compute_capability"] = k.compute_capability
    if k.workload != "kernel":
        args["workload_type"] = k.workload
    if k.nvtx:
        path = nvtx_path(k.nvtx)
        if path:
            args["nvtx_path"] = path
        se = [n for d in k.nvtx for n in d.start_end]
        if se:
            args["nvtx_start_end"] = se
    if k.nvtx_thread is not None:
        args["nvtx_thread_id"] = k.nvtx_thread
    if k.pm_interval_ns is not None:
        args["pm_sampling_interval_ns"] = k.pm_interval_ns
    if k.rules:
        args["rules"] = [{"rule": r.get("rule", ""), "type": r.get("type", ""),
                          "message": r.get("message", ""),
                          "estimated_speedup_pct": r.get("estimated_speedup_pct"),
                          "speedup_type": r.get("speedup_type"),
                          "section": r.get("section", "")} for r in k.rules]
    if k.metrics is not None:
        args["metrics"] = k.metrics
    return args


def _boundary_counters(trace: Trace, group: int, rank: int, kernels: list[Kernel],
                       positions: list[int], starts: list[int], ends: list[int]) -> int:
    """SM / DRAM throughput and achieved occupancy, one value per kernel, stepping at kernel
    boundaries; 0 where the device runs nothing on the serialized timeline."""
    for arg, title in BOUNDARY_COUNTERS:
        if not any(isinstance(kernels[p].args.get(arg), (int, float)) for p in positions):
            continue
        names = next(names for a, names, _ in KEY_METRICS if a == arg)
        c = trace.add_counter(title, group, "%", rank,
                              f"{title} of each kernel in % of peak ({' or '.join(names)}), "
                              "held for the kernel's span; 0 between this device's kernels "
                              "and for kernels without the metric. " + SERIAL_SENTENCE)
        rank += 1
        last_end = None
        for p in positions:
            v = kernels[p].args.get(arg)
            if last_end is not None and last_end != starts[p]:
                c.add(last_end, 0.0)
            v = float(v) if isinstance(v, (int, float)) else 0.0
            c.add(starts[p], v if math.isfinite(v) else 0.0)
            last_end = ends[p]
        if last_end is not None:
            c.add(last_end, 0.0)
    return rank


def _pm_counters(trace: Trace, group: int, rank: int, kernels: list[Kernel],
                 positions: list[int], starts: list[int], ends: list[int]) -> int | None:
    """PM-sampling timelines: one counter per sampled metric, samples at the kernel's start
    plus their offset from the workload start, kept while inside the kernel's span."""
    sampled = [p for p in positions if kernels[p].pm]
    if not sampled:
        return None
    interval = next((kernels[p].pm_interval_ns for p in sampled
                     if kernels[p].pm_interval_ns), None)
    sub = trace.add_track("PM sampling", group, GROUP, rank,
                          "Performance-monitor sampling timelines of each sampled kernel "
                          f"(interval {interval} ns as configured), at the kernel's serialized "
                          "start plus each sample's offset from the workload start; samples "
                          "outside the kernel's duration are dropped and the counter drops to "
                          "0 at the end of a sampled kernel that the next kernel does not "
                          "continue.")
    counters: dict[str, tuple[Counter, list[int]]] = {}
    for p in sampled:
        k = kernels[p]
        start, end = starts[p], ends[p]
        dur = end - start
        for s in k.pm:
            entry = counters.get(s.metric)
            if entry is None:
                about = f"{s.description}. " if s.description else ""
                c = trace.add_counter(s.title, sub, s.unit, len(counters),
                                      f"{about}{s.metric} ({s.unit or 'no unit'}), PM "
                                      f"sampling every {k.pm_interval_ns or '?'} ns")
                entry = counters[s.metric] = (c, [-1])
            c, last_end = entry
            pairs = sorted((r, v) for r, v in zip(s.rel_ns, s.values)
                           if 0 <= r < dur and math.isfinite(v))
            if last_end[0] >= 0 and (last_end[0] != start or not pairs or pairs[0][0] != 0):
                c.add(last_end[0], 0.0)
            for r, v in pairs:
                c.add(start + r, v)
            last_end[0] = end if pairs else -1
    for c, last_end in counters.values():
        if last_end[0] >= 0:
            c.add(last_end[0], 0.0)
    return interval


# NVIDIA's architecture of a compute capability (major, minor), for exports that give the
# capability but not the device's name (the details page and ``--metrics`` CSVs).
_ARCH = {(7, 0): "Volta", (7, 2): "Volta", (7, 5): "Turing", (8, 0): "Ampere",
         (8, 6): "Ampere", (8, 7): "Ampere", (8, 9): "Ada Lovelace", (9, 0): "Hopper",
         (10, 0): "Blackwell", (10, 1): "Blackwell", (10, 3): "Blackwell",
         (12, 0): "Blackwell", (12, 1): "Blackwell"}


def _unnamed_device(dev: Any, cc: Any) -> str:
    """``GPU 0: compute capability 8.6 (Ampere)`` for a device the export does not name."""
    label = f"GPU {dev}" if dev is not None else "GPU"
    if not cc:
        return label
    try:
        major, minor = (int(x) for x in str(cc).split(".", 1))
    except ValueError:
        return f"{label}: compute capability {cc}"
    arch = _ARCH.get((major, minor))
    return f"{label}: compute capability {cc}" + (f" ({arch})" if arch else "")
