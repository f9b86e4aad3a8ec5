"""What bounds a run, in a fixed vocabulary, and what to turn to address it.

``bottlenecks(trace, a)`` labels the run with words from ``LABELS`` (each with the share of
time it covers and the figure behind it); ``annotate(trace, a)`` gives every opportunity its
label and the concrete knobs or documentation pages of the tool that made the run
(``actions``), taken from those tools' own documentation:

* PyPTO (0.2.0, ``hicann/pypto``): ``runtime_options`` / ``pass_options`` of
  ``@pypto.frontend.jit`` and the tile-shape calls, as its tuning guide
  ``docs/tutorials/debug/performance.md`` ("性能调优") prescribes them;
* PyPTO 3.0 (the simpler runtime, ``hw-native-sys/pypto``): the performance guide's pages
  ``docs/en/user/performance/01-task-granularity.md`` … ``05-memory.md``;
* Nsight Compute: the rule (or section) names of the report, e.g. ``AchievedOccupancy``,
  ``LaunchConfiguration``, and its Profiling Guide;
* msprof: the advice msprof op wrote for the run, and the Ascend C best-practice pages
  (block count, double buffering, transfers).

``findings.py`` gives each opportunity its label where it makes it (NCU's: the kernel's
bound class), and the actions only NCU's and msprof's advice know; ``annotate`` adds the
catalog's for the label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import Trace
from .bubbles import pct

if TYPE_CHECKING:
    from .full import Analysis

COMPUTE, MEMORY, DISPATCH = "compute", "memory", "scheduling/dispatch"
DEPENDENCY, CONTROL, LATENCY = "dependency", "control overhead", "latency"
LABELS = (COMPUTE, MEMORY, DISPATCH, DEPENDENCY, CONTROL, LATENCY)

PYPTO_GUIDE = "hicann/pypto docs/tutorials/debug/performance.md"
PYPTO3_GUIDE = "hw-native-sys/pypto docs/en/user/performance/"
NCU_GUIDE = "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html"
ASCENDC_PRACTICES = ("https://www.hiascend.com/document/detail/en/CANNCommunityEdition/900/"
                     "programug/Ascendcopdevg/atlas_ascendc_best_practices_10_0010.html")


def _act(tool: str, kind: str, name: str, ref: str, what: str) -> dict[str, str]:
    """One action: ``kind`` is "option" (a knob to set), "api" (a call), "doc" (a page),
    "rule" (a rule of the tool's report) or "advice" (the tool's own advice for the run)."""
    return {"tool": tool, "kind": kind, "name": name, "ref": ref, "what": what}


# -- the knobs, per tool and label ------------------------------------------------------------

_PYPTO = {
    DISPATCH: [
        _act("PyPTO", "option", "runtime_options stitch_function_max_num", PYPTO_GUIDE +
             " (Stitch 调优)", "root functions dispatched together: gaps in the swimlane "
             "mean it is too small; raise it step by step (default 128) while the "
             "end-to-end time falls"),
        _act("PyPTO", "option", "runtime_options device_sched_mode", "hicann/pypto "
             "docs/api/config/pypto-set_runtime_options.md", "scheduling policy of the "
             "AICPU: 1 = L2-affine (dispatch the newest ready subgraph first), 2 = fair, 3 "
             "= both"),
    ],
    COMPUTE: [
        _act("PyPTO", "api", "pypto.set_cube_tile_shapes / pypto.set_vec_tile_shapes",
             PYPTO_GUIDE + " (TileShape 调优)", "tile shapes set the number of tasks and "
             "their arithmetic intensity (cube: enable_multi_data_load, enable_split_k)"),
        _act("PyPTO", "option", "pass_options cube_l1_reuse_setting / cube_nbuffer_setting",
             PYPTO_GUIDE + " (合图调优)", "merge cube subgraphs that reload the same L1 "
             "data (L1Reuse) or are alike (CubeNBuffer)"),
    ],
    DEPENDENCY: [
        _act("PyPTO", "option", "pass_options sg_set_scope", PYPTO_GUIDE + " (深度方向合图)",
             "merge producer and consumer operations into one subgraph"),
        _act("PyPTO", "option", "pass_options vec_nbuffer_setting", PYPTO_GUIDE +
             " (Vector 广度方向合图)", "merge many small alike vector subgraphs (under "
             "~10 µs each) to cut scheduling and kernel head overhead"),
        _act("PyPTO", "api", "pypto.loop_unroll / fewer, larger loops", PYPTO_GUIDE +
             " (正确选择 loop 写法)", "larger root functions: static axes as Python for "
             "loops, merged loops, unrolled dynamic loops"),
    ],
}

_PYPTO3 = {
    DISPATCH: [
        _act("PyPTO 3.0", "doc", "Task granularity", PYPTO3_GUIDE + "01-task-granularity.md",
             "dispatch is not free: grow tasks (larger tiling, a loop inside the InCore "
             "function, merged InCore functions)"),
        _act("PyPTO 3.0", "option", "allow_early_resolve", PYPTO3_GUIDE +
             "02-runtime-overhead.md", "lets consumers pre-stage: cuts the pickup latency "
             "on the critical path"),
    ],
    DEPENDENCY: [
        _act("PyPTO 3.0", "option", "deps= / manual_scope / no_dep_args", PYPTO3_GUIDE +
             "03-dependencies.md", "remove serialization the runtime inferred; confirm "
             "with enable_dep_gen=True"),
    ],
    COMPUTE: [
        _act("PyPTO 3.0", "api", "pl.pipeline (double buffering)", PYPTO3_GUIDE +
             "04-incore.md", "overlap the next iteration's load with this one's compute"),
    ],
    MEMORY: [
        _act("PyPTO 3.0", "option", "ring_task_window / ring_heap / ring_dep_pool",
             PYPTO3_GUIDE + "05-memory.md", "size the runtime rings from the measured "
             "task_window_max / heap_max / dep_pool_max"),
    ],
    CONTROL: [
        _act("PyPTO 3.0", "doc", "Runtime overhead (mixed kernels, SPMD, syncall)",
             PYPTO3_GUIDE + "02-runtime-overhead.md", "fewer AICPU round-trips per task"),
    ],
}

# Nsight Compute: the rule (or section) of the report each health check belongs to.
NCU_CHECK_RULES = {
    "compute throughput": ("HighPipeUtilization", "ComputeWorkloadAnalysis"),
    "DRAM throughput": ("SOLBottleneck", "SpeedOfLight"),
    "achieved occupancy": ("AchievedOccupancy", "Occupancy"),
    "L2 hit rate": ("MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis"),
    "local spilling": ("MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis"),
    "waves per SM": ("LaunchConfiguration", "LaunchStats"),
}
NCU_BOUND_LABEL = {"memory-bound": MEMORY, "compute-bound": COMPUTE, "latency-bound": LATENCY}

MSPROF_PIPE_LABEL = {"cube": COMPUTE, "vector": COMPUTE, "scalar": CONTROL, "mte1": MEMORY,
                     "mte2": MEMORY, "mte3": MEMORY, "fixpipe": MEMORY}
_MSPROF = {
    DISPATCH: [_act("msprof", "doc", "Setting a Proper Number of Cores and Operator Kernel "
                    "Type", ASCENDC_PRACTICES, "numBlocks (block_dim) a multiple of the "
                    "cores, so every core has work in the last wave")],
    MEMORY: [_act("msprof", "doc", "Transferring a Large Data Block at a Time / Enabling "
                  "DoubleBuffer", ASCENDC_PRACTICES, "fewer, larger MTE transfers, "
                  "overlapped with compute")],
    COMPUTE: [_act("msprof", "doc", "Enabling DoubleBuffer", ASCENDC_PRACTICES,
                   "overlap data movement with the compute pipes")],
    CONTROL: [_act("msprof", "doc", "Header and tailer overhead optimization",
                   ASCENDC_PRACTICES, "less scalar (control) work around the compute")],
}

_CATALOG = {"pypto": _PYPTO, "simpler": _PYPTO3, "msprof": _MSPROF}


def catalog(trace: Trace, label: str) -> list[dict[str, str]]:
    """The knobs and pages of the run's tool for ``label`` (copies); the catalog is keyed
    by ``meta.format``, which every reader (and a reopened model file) sets."""
    return [dict(x) for x in _CATALOG.get(trace.meta.format, {}).get(label, ())]


# -- run-level labels ---------------------------------------------------------------------

def bottlenecks(trace: Trace, a: "Analysis") -> list[dict[str, Any]]:
    """The run's bottlenecks, most important first: {"label", "share_pct", "evidence"}."""
    out: list[dict[str, Any]] = []
    if a.ncu is not None and a.ncu.kernels:
        total = sum(k.duration for k in a.ncu.kernels) or 1
        time = {NCU_BOUND_LABEL[b]: t for b, t in a.ncu.bound_time().items()
                if b in NCU_BOUND_LABEL}
        for label, t in sorted(time.items(), key=lambda kv: -kv[1]):
            out.append({"label": label, "share_pct": round(100 * t / total, 2),
                        "evidence": f"{label}-bound kernels (Speed Of Light: compute and "
                                    "memory throughput against 60 % of peak)"})
        return out
    m = a.msprof_op
    if m is not None and m.dominant_bound:
        for pipe, n in sorted(m.bound_counts.items(), key=lambda kv: -kv[1]):
            out.append({"label": MSPROF_PIPE_LABEL.get(pipe, COMPUTE),
                        "share_pct": round(100 * n / len(m.blocks), 2),
                        "evidence": f"{n} of {len(m.blocks)} blocks bound by the {pipe} pipe"})
        if m.scalar_share_pct is not None and m.scalar_share_pct >= 30 and \
                all(o["label"] != CONTROL for o in out):
            out.append({"label": CONTROL, "share_pct": round(m.scalar_share_pct, 2),
                        "evidence": "scalar (control) pipe time / block time"})
        return _merged(out)
    b, cp = a.bubbles, a.critical_path
    if not b.computed or b.run is None:
        return out
    run = b.run
    if cp.computed and cp.length:
        wait = pct(cp.wait_time, cp.length) or 0.0
        lane = pct(cp.lane_order_time, cp.length) or 0.0
        task = pct(cp.task_time, cp.length) or 0.0
        if wait >= 30:
            out.append({"label": DISPATCH, "share_pct": round(wait, 2),
                        "evidence": "critical-path time waiting between a task becoming "
                                    "ready and starting"})
        if lane >= 40:
            out.append({"label": COMPUTE, "share_pct": round(lane, 2),
                        "evidence": "critical-path tasks that waited for their lane to free "
                                    "up (lanes saturated)"})
        if b.cause_model == "task graph" and run.wait and \
                2 * run.wait_predecessor >= run.wait and (run.bubble_rate_pct or 0) >= 20:
            out.append({"label": DEPENDENCY, "share_pct": round(run.bubble_rate_pct, 2),
                        "evidence": "bubble rate, mostly (half or more) waiting for "
                                    "predecessors"})
        if not out or (task >= 50 and all(o["label"] != COMPUTE for o in out)):
            out.append({"label": COMPUTE, "share_pct": round(task, 2),
                        "evidence": "critical-path time spent in tasks"})
        return sorted(out, key=lambda o: -(o["share_pct"] or 0))
    rate = run.bubble_rate_pct or 0.0
    if rate >= 20:
        out.append({"label": DISPATCH, "share_pct": round(rate, 2),
                    "evidence": "idle gaps between tasks (launch or host overhead)"})
    out.append({"label": COMPUTE, "share_pct": round(run.utilization_pct or 0.0, 2),
                "evidence": "lane utilization (no task graph: busy time is the cost)"})
    return sorted(out, key=lambda o: -(o["share_pct"] or 0))


def _merged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per label (shares added, evidence joined), largest share first."""
    by: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["label"] in by:
            s = by[r["label"]]
            s["share_pct"] = round((s["share_pct"] or 0) + (r["share_pct"] or 0), 2)
            s["evidence"] += "; " + r["evidence"]
        else:
            by[r["label"]] = dict(r)
    return sorted(by.values(), key=lambda o: -(o["share_pct"] or 0))


# -- opportunities ------------------------------------------------------------------------

def annotate(trace: Trace, a: "Analysis") -> None:
    """Add to every opportunity of ``a`` the knobs and pages of the run's tool for its label
    (``catalog``); NCU's name the report's own rules instead (``findings`` gives them)."""
    for o in a.opportunities:
        if not o.source.startswith("ncu"):
            o.actions += catalog(trace, o.bottleneck)


def ncu_rule_actions(rule: str) -> list[dict[str, str]]:
    """An NCU rule result's opportunity: the rule itself."""
    return [_act("Nsight Compute", "rule", rule, NCU_GUIDE,
                 "the report's own rule result for this kernel")]


def ncu_check_actions(failed: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Failed health checks (``ncu_bounds.KernelBound.failed``): the NCU rules (or
    sections) behind them, once each."""
    seen = set()
    out = []
    for c in failed:
        rule, section = NCU_CHECK_RULES.get(c["check"], ("", ""))
        if rule and rule not in seen:
            seen.add(rule)
            out.append(_act("Nsight Compute", "rule" if rule != section else "doc", rule,
                            f"{NCU_GUIDE} ({section} section)",
                            f"{c['check']} {c['threshold']} failed"))
    return out


def msprof_advice_actions(text: str) -> list[dict[str, str]]:
    """An advice line msprof op wrote."""
    return [_act("msprof", "advice", text[:120], "visualize_data.bin (msprof op)", text)]
