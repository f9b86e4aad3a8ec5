"""The run's key figures (summary JSON ``key_figures``): what a baseline comparison compares.

Every key is an identifier with its unit in the name (``busy_time_us``, ``utilization_pct``);
figures of a lane kind and of a label are rows of the lists ``kinds`` and ``label_totals``,
whose names (``kind``, ``table``, ``label``) are data in values.  ``rows`` flattens them, in
one fixed order, into the printed figures of the vs-baseline table: (name, value, unit,
better).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from .bubbles import us

if TYPE_CHECKING:
    from .full import Analysis

# key, printed name, unit, which direction is better ("" = neither)
RUN = (("tasks", "tasks", "", ""),
       ("makespan_us", "makespan", "µs", "lower"),
       ("busy_time_us", "busy time", "µs", "lower"),
       ("utilization_pct", "utilization", "%", "higher"),
       ("bubble_rate_pct", "bubble rate", "%", "lower"),
       ("total_wait_us", "total wait", "µs", "lower"),
       ("wait_schedule_us", "wait schedule", "µs", "lower"),
       ("wait_predecessor_us", "wait predecessor", "µs", "lower"))
# a row of ``kinds``: the lane kind's figures, printed "<kind> utilization", ...
KIND = (("utilization_pct", "utilization", "%", "higher"),
        ("bubble_rate_pct", "bubble rate", "%", "lower"))
PATH = (("critical_path_us", "critical path", "µs", "lower"),
        ("critical_path_wait_us", "critical path wait", "µs", "lower"),
        ("kernel_time_us", "kernel time", "µs", "lower"),
        ("memory_efficiency_pct", "memory efficiency", "%", "higher"),
        ("max_block_duration_us", "max block duration", "µs", "lower"))
# a row of ``label_totals``: printed "<table> '<label>' total", µs, lower is better
# simpler (PyPTO 3.0) runs
SIMPLER = (("wait_start_us", "wait start", "µs", "lower"),
           ("has_overhead_pct", "has_overhead", "%", "lower"),
           ("pickup_latency_median_us", "pickup latency median", "µs", "lower"),
           ("tail_oh_mean_us", "tail OH mean", "µs", "lower"),
           ("static_cpm_share_pct", "static CPM share", "%", ""),
           ("scheduler_loop_ns", "scheduler loop", "ns", "lower"))
FIXED = RUN + PATH + SIMPLER


def key_figures(a: "Analysis") -> dict[str, Any]:
    """The key figures of ``a`` (simpler's are added by ``Analysis.key_figures``); a figure
    that cannot be computed is left out."""
    out: dict[str, Any] = {}

    def put(key, value):
        if value is not None:
            out[key] = value

    b = a.bubbles
    put("tasks", a.configuration.get("tasks"))
    if b.computed and b.run is not None:
        r = b.run
        put("makespan_us", us(r.makespan))
        put("busy_time_us", us(r.busy))
        put("utilization_pct", r.utilization_pct)
        put("bubble_rate_pct", r.bubble_rate_pct)
        put("total_wait_us", us(r.wait))
        if b.cause_model == "task graph":
            put("wait_schedule_us", us(r.wait_schedule))
            put("wait_predecessor_us", us(r.wait_predecessor))
        kinds = [{"kind": k.name, "utilization_pct": k.utilization_pct,
                  "bubble_rate_pct": k.bubble_rate_pct} for k in b.kinds]
        if kinds:
            out["kinds"] = kinds
    cp = a.critical_path
    if cp.computed:
        put("critical_path_us", us(cp.length))
        put("critical_path_wait_us", us(cp.wait_time))
    if a.ncu is not None:
        put("kernel_time_us", us(sum(k.duration for k in a.ncu.kernels)))
        put("memory_efficiency_pct", a.ncu.memory_efficiency_pct)
    if a.msprof_op is not None and a.msprof_op.blocks:
        durs = [b_["duration_us"] for b_ in a.msprof_op.blocks if b_["duration_us"]]
        if durs:
            put("max_block_duration_us", round(max(durs), 3))
    totals = [{"table": t.title, "label": row.label, "total_us": us(row.total)}
              for t in a.labels[:1] for row in t.rows[:8]]
    if totals:
        out["label_totals"] = totals
    return out


def rows(kf: dict[str, Any]) -> Iterator[tuple[str, Any, str, str]]:
    """(printed name, value, unit, better) of each figure of ``kf`` (schema 3
    ``key_figures``), in the vs-baseline table's order; null figures left out."""
    def fixed(spec):
        for key, name, unit, better in spec:
            if kf.get(key) is not None:
                yield name, kf[key], unit, better

    yield from fixed(RUN)
    for k in kf.get("kinds") or ():
        for key, name, unit, better in KIND:
            if k.get(key) is not None:
                yield f"{k['kind']} {name}", k[key], unit, better
    yield from fixed(PATH)
    for t in kf.get("label_totals") or ():
        yield f"{t['table']} '{t['label']}' total", t["total_us"], "µs", "lower"
    yield from fixed(SIMPLER)
