"""``.ncu-rep`` through NVIDIA's ``ncu_report`` module (optional: ``tracecvt[ncu]``).

Every result ("action") is read once, in report order: ``IRange.action_by_idx`` costs about a
millisecond per call (most of a large conversion), so nothing calls it twice.  The module is a
SWIG binding: objects derived from an action (metrics, timelines, NVTX state) are only used
while the action is referenced.

Everything that touches ``ncu_report`` runs in a forked child process (``isolate.call``): on a
corrupt report the native library can abort the process, which Python cannot catch.  The child
returns plain ``Kernel`` records; numbers are kept within what the trace can hold
(``metrics.bounded``), as a corrupt report can hold any bit pattern.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..base import ReadOptions
from . import container, isolate
from .kernels import Kernel, NvtxDomain, PmSeries
from .metrics import (BLOCK_DIMS, CC_MAJOR, CC_MINOR, CONTEXT_ID, DEVICE_ID, DEVICE_NAME,
                      GRID_DIMS, KEY_METRICS, PM_INTERVAL, RULE_TYPES, SPEEDUP_TYPES, STREAM_ID,
                      bounded, float_ns, int64, printable, render_message, to_kind)

INSTALL_HINT = ("reading .ncu-rep needs NVIDIA's ncu_report module: pip install "
                "'tracecvt[ncu]' (or convert a CSV export: ncu -i REPORT --csv --page raw)")

_WORKLOADS = {0: "kernel", 1: "range", 2: "cmdlist", 3: "graph", 4: "subgrid-schedule"}


@dataclass
class ReportInfo:
    library_version: str = ""
    producer_version: str = ""
    truncated_bytes: int | None = None
    ranges: int = 0
    metric_units: dict[str, str] = field(default_factory=dict)
    incomplete: list[int] = field(default_factory=list)   # results without name or metrics
    bad_metric_names: int = 0           # metric names that are not UTF-8 (skipped)
    bad_metric_results: list[int] = field(default_factory=list)   # ... in these results


def import_ncu_report():
    try:
        import ncu_report
    except ImportError:
        raise InputError(None, INSTALL_HINT) from None
    except Exception as e:  # the bundled shared library failed to load
        raise InputError(None, f"{INSTALL_HINT} (importing it failed: {type(e).__name__}: "
                         f"{e})") from None
    return ncu_report


def read_report(path: Path, options: ReadOptions) -> tuple[list[Kernel], ReportInfo]:
    try:
        import_ncu_report()             # here, so that a missing module is one clear line
    except InputError as e:
        raise InputError(path, e.message) from None
    info = ReportInfo()
    with container.plain_report(path) as plain:
        container.check_header(plain, path)
        info.truncated_bytes, info.producer_version = container.scan_records(plain)
        # ncu_report can abort the process on a corrupt report: it runs in a child process
        kernels, info = isolate.call(_read_plain, path, options, str(plain), path, info)
    if not kernels:
        cut = (f"; the file ends inside a record ({info.truncated_bytes} bytes missing)"
               if info.truncated_bytes else "")
        raise InputError(path, "corrupt or truncated Nsight Compute report: ncu_report finds "
                         f"no profiling results in it{cut}")
    return kernels, info


def _read_plain(options: ReadOptions, plain: str, path: Path,
                info: ReportInfo) -> tuple[list[Kernel], ReportInfo]:
    """Everything that touches ncu_report (run by ``isolate.call``): plain records out."""
    ncu_report = import_ncu_report()
    try:
        ctx = ncu_report.load_report(plain)
    except Exception as e:
        raise InputError(path, f"ncu_report cannot load it ({type(e).__name__}: "
                         f"{printable(str(e))[:300]})") from None
    try:
        info.library_version = str(ctx.get_version())
    except Exception:
        pass
    return _read_actions(ncu_report, ctx, path, options, info), info


def _read_actions(ncu_report, ctx, path: Path, options: ReadOptions,
                  info: ReportInfo) -> list[Kernel]:
    demangled_base = ncu_report.IAction.NameBase_DEMANGLED
    kernels: list[Kernel] = []
    info.ranges = ctx.num_ranges()
    total = sum(ctx.range_by_idx(r).num_actions() for r in range(info.ranges))
    stage = f"reading {path.name}"
    options.report(stage, 0, total)
    prev_nvtx: dict[str, tuple[str, ...]] = {}
    for r in range(info.ranges):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            if not action.name() and action.metric_by_name("gpu__time_duration.sum") is None:
                info.incomplete.append(len(kernels) + len(info.incomplete))
                continue
            k = _read_action(action, len(kernels) + len(info.incomplete), demangled_base,
                             options, info, prev_nvtx)
            kernels.append(k)
            if len(kernels) % 64 == 0:
                options.report(stage, len(kernels), total)
    options.report(stage, total, total)
    return kernels


def _read_action(a, index: int, demangled_base, options: ReadOptions, info: ReportInfo,
                 prev_nvtx: dict[str, tuple[str, ...]]) -> Kernel:
    get = a.metric_by_name

    def value(name: str) -> Any:
        m = get(name)
        if m is None or not m.has_value():
            return None
        return bounded(m.value())

    short = a.name()
    k = Kernel(index, a.name(demangled_base) or short, short)
    try:
        k.workload = _WORKLOADS.get(int(a.workload_type()), "kernel")
    except Exception:
        pass
    args = k.args
    for arg, names, kind in KEY_METRICS:
        for name in names:
            m = get(name)
            if m is not None and m.has_value():
                args[arg] = to_kind(m.value(), kind)
                break
    dims = [value(n) for n in GRID_DIMS]
    if None not in dims:
        args["grid"] = "({}, {}, {})".format(*dims)
    dims = [value(n) for n in BLOCK_DIMS]
    if None not in dims:
        args["block"] = "({}, {}, {})".format(*dims)
    k.device_id = int64(value(DEVICE_ID))
    k.context = int64(value(CONTEXT_ID))
    k.stream = int64(value(STREAM_ID))
    name = value(DEVICE_NAME)
    k.device_name = name if isinstance(name, str) else ""
    major, minor = value(CC_MAJOR), value(CC_MINOR)
    if major is not None and minor is not None:
        k.compute_capability = f"{major}.{minor}"
    _read_nvtx(a, k, prev_nvtx)
    rules = a.rule_results_as_dicts()
    if rules:
        k.rules = _rules(a, rules)
    interval = get(PM_INTERVAL)
    names = None
    if interval is not None and interval.has_value():
        k.pm_interval_ns = float_ns(float(interval.value()))
        names = _metric_names(a, index, info)
        k.pm = _pm_series(a, names)
    if options.all_metrics:
        k.metrics = _all_metrics(a, names if names is not None else
                                 _metric_names(a, index, info), info)
    return k


def _metric_names(a, index: int, info: ReportInfo) -> list[str]:
    """The action's metric names that can be asked for: a name with bytes that are not UTF-8
    (a corrupt report) comes back with surrogates, which metric_by_name refuses."""
    names = a.metric_names()
    good = [n for n in names if _utf8(n)]
    if len(good) != len(names):
        info.bad_metric_names += len(names) - len(good)
        if index not in info.bad_metric_results:
            info.bad_metric_results.append(index)
    return good


def _utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _read_nvtx(a, k: Kernel, prev: dict[str, tuple[str, ...]]) -> None:
    state = a.nvtx_state()
    if state is None:
        return
    for did in state.domains():
        d = state.domain_by_id(did)
        if d is None:
            continue
        dom = NvtxDomain(str(d.name()), tuple(d.push_pop_ranges()), {},
                         tuple(d.start_end_ranges()))
        before = prev.get(dom.name, ())
        common = 0
        for x, y in zip(before, dom.push_pop):
            if x != y:
                break
            common += 1
        # attributes only for the ranges this kernel opens (their first kernel)
        for level in range(common, len(dom.push_pop)):
            rg = d.push_pop_range(level)
            if rg is not None and rg.has_attributes():
                attrs = _range_attrs(rg)
                if attrs:
                    dom.attrs[level] = attrs
        prev[dom.name] = dom.push_pop
        k.nvtx.append(dom)


def _range_attrs(rg) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    try:
        if rg.message():
            attrs["message"] = str(rg.message())
        if rg.category():
            attrs["category"] = int(rg.category())
        if rg.color():
            attrs["color"] = f"#{int(rg.color()) & 0xFFFFFF:06x}"
        ptype = int(rg.payload_type())
        if ptype:
            if ptype in (rg.PayloadType_PAYLOAD_DOUBLE, rg.PayloadType_PAYLOAD_FLOAT):
                attrs["payload"] = float(rg.payload_as_double())
            elif ptype == rg.PayloadType_PAYLOAD_JSON:
                attrs["payload"] = str(rg.payload_as_string())
            else:
                attrs["payload"] = int(rg.payload_as_uint64())
    except Exception:
        pass
    return attrs


def _rules(a, results: list[dict]) -> list[dict[str, Any]]:
    order = {}
    try:
        order = {s.identifier(): s.order() for s in a.sections()}
    except Exception:
        pass
    out = []
    for d in results:
        msg = d.get("rule_message") or {}
        speed = d.get("speedup_estimation") or {}
        value = speed.get("speedup")
        out.append({
            "rule": d.get("rule_identifier", ""),
            "name": d.get("name", ""),
            "section": d.get("section_identifier", ""),
            "type": RULE_TYPES.get(msg.get("type"), str(msg.get("type", ""))),
            "title": msg.get("title", ""),
            "message": render_message(msg.get("message", "")),
            "estimated_speedup_pct": _float(value),
            "speedup_type": SPEEDUP_TYPES.get(speed.get("type")) if speed else None,
        })
    # the order of the report's sections, as the details page lists them
    out.sort(key=lambda r: order.get(r["section"], 1 << 30))
    return out


def _float(value: Any) -> float | None:
    try:
        return bounded(float(value))
    except (TypeError, ValueError, OverflowError):
        return None


def _pm_series(a, names) -> list[PmSeries]:
    pm_names = [n for n in names if n[:1].isupper() and "." in n]
    if not pm_names:
        return []
    get = a.metric_by_name
    timelines = a.timelines()
    out = []
    titles: dict[str, int] = {}
    for name in pm_names:
        m = get(name)
        if m is None or m.num_instances() == 0:
            continue
        aligned = timelines.aligned_metric(m)
        if aligned is None:
            continue
        n = aligned.num_instances()
        if not n or not aligned.has_correlation_ids():
            continue
        ids = aligned.correlation_ids()
        rel = [ids.as_uint64(i) for i in range(n)]
        values = [aligned.as_double(i) for i in range(n)]
        title = _pm_title(m, name)
        titles[title] = titles.get(title, 0) + 1
        out.append(PmSeries(name, title, str(m.unit()), rel, values,
                            _description(m)))
    for s in out:                    # the same title in two sampling groups: say which
        if titles[s.title] > 1:
            s.title = f"{s.title} ({s.metric.split('.', 1)[0]})"
    return out


def _pm_title(m, name: str) -> str:
    """The sampled metric's own name: ``TPC.TriageCompute.sm__cycles_active.avg`` ->
    ``sm__cycles_active.avg`` (the counter name starts at the first ``__`` component)."""
    parts = name.split(".")
    for i, p in enumerate(parts):
        if "__" in p:
            return ".".join(parts[i:])
    return name


def _description(m) -> str:
    try:
        return " ".join(str(m.description()).split())
    except Exception:
        return ""


def _all_metrics(a, names, info: ReportInfo) -> dict[str, Any]:
    get = a.metric_by_name
    units = info.metric_units
    out: dict[str, Any] = {}
    for name in names:
        m = get(name)
        if m is None or not m.has_value():
            continue
        v = m.value()
        if isinstance(v, int) and not isinstance(v, bool):
            v = bounded(v)              # beyond int64: a float (NaN stays, as the report has it)
            if v is None:
                continue
        if isinstance(v, float) and v == v and v.is_integer() and abs(v) < 2**53:
            v = int(v)
        out[name] = v
        if name not in units:
            units[name] = str(m.unit())
    return out
