"""What a PyPTO 3.0 user asks of a swimlane first (PyPTO docs/en/user/performance/
00-swimlane.md), each answered with the figure behind it:

1. Are the tasks too small?   kernel time (start -> end) against the head (dispatch -> start)
   and tail (end -> finish) overhead per function, the runtime converter's per-function
   statistics; at level 1, against the gaps on the cores while the next task was ready;
2. Is dispatch the bottleneck?   has_overhead (an idle core while ready work waits
   undispatched, sched_overhead_analysis Part 1) and the pickup latency (dispatch -> start);
3. Did the graph serialize?   the dependency chain alone (static CPM) against the makespan,
   and the average parallelism (kernel time / makespan: cores busy at once);
4. Is the kernel itself slow?   the kernels' share of the task latency (dispatch -> finish,
   the converter's Exec %) and the functions with the most kernel time.

Thresholds are tracecvt's and stated with each answer.
"""

from __future__ import annotations

from typing import Any

from ..bubbles import pct, us
from .cpm import CpmResult
from .overhead import Overhead
from .runs import Run

SMALL_RATIO = 1.0          # kernel time below head + tail overhead: the task is too small
SERIAL_PCT = 50.0          # the dependency chain alone is at least half of the makespan


def function_table(run: Run) -> list[dict[str, Any]]:
    """Per function (most kernel time first): rows, tasks, kernel time total and mean, mean
    head and tail overhead (level >= 2) and kernel / (head + tail)."""
    acc: dict[str, list] = {}
    for r in run.rows:
        a = acc.setdefault(r.function or f"func {r.func_id}", [0, set(), 0, 0, 0, 0])
        a[0] += 1
        a[1].add(r.task)
        a[2] += r.end - r.start
        if r.dispatch is not None and r.finish is not None:
            a[3] += r.start - r.dispatch
            a[4] += r.finish - r.end
            a[5] += 1
    out = []
    for name, (n, tasks, kern, head, tail, timed) in sorted(acc.items(),
                                                            key=lambda kv: -kv[1][2]):
        row: dict[str, Any] = {"function": name, "rows": n, "tasks": len(tasks),
                               "kernel_us": us(kern), "mean_kernel_us": us(kern / n)}
        if timed:
            row["mean_head_us"] = us(head / timed)
            row["mean_tail_us"] = us(tail / timed)
            row["kernel_per_overhead"] = round(kern / (head + tail), 3) if head + tail \
                else None
        out.append(row)
    return out


def answer(run: Run, cpm: CpmResult | None, oh: Overhead | None, makespan: int,
           gaps_ns: int | None) -> list[dict[str, Any]]:
    rows = run.rows
    kern = sum(r.end - r.start for r in rows)
    funcs = function_table(run)
    out = []
    # 1. too small
    if run.has_dispatch:
        head = sum(r.start - r.dispatch for r in rows)
        tail = sum(r.finish - r.end for r in rows)
        small = [f["function"] for f in funcs if f.get("kernel_per_overhead") is not None
                 and f["kernel_per_overhead"] < SMALL_RATIO]
        ratio = kern / (head + tail) if head + tail else None
        verdict = "yes" if ratio is not None and ratio < SMALL_RATIO else (
            "partly" if small else "no")
        text = (f"mean kernel {us(kern / len(rows))} µs against mean head "
                f"{us(head / len(rows))} µs + tail {us(tail / len(rows))} µs overhead per task"
                + (f"; kernel time is {ratio:.2f} x the overhead" if ratio is not None else "")
                + (f"; functions whose kernels are shorter than their overhead: "
                   f"{', '.join(small[:6])}" if small else ""))
        figs = {"kernel_us": us(kern), "head_us": us(head), "tail_us": us(tail),
                "kernel_per_overhead": round(ratio, 3) if ratio is not None else None}
    else:
        ratio = kern / gaps_ns if gaps_ns else None
        verdict = "yes" if ratio is not None and ratio < SMALL_RATIO else "no"
        text = (f"level {run.level}: no dispatch/finish times; kernel time {us(kern)} µs "
                f"against {us(gaps_ns or 0)} µs of gaps on their cores while the next task "
                "was ready (bubbles: wait schedule)")
        figs = {"kernel_us": us(kern), "gaps_us": us(gaps_ns or 0)}
    out.append({"question": "Are the tasks too small?", "answer": verdict, "because": text,
                "figures": figs,
                "rule": f"yes when kernel time < {SMALL_RATIO:g} x (head + tail) overhead"})
    # 2. dispatch
    if oh is not None:
        has = oh.pct(oh.has_overhead)
        picks = sorted(r.start - r.dispatch for r in rows)
        median = picks[len(picks) // 2]
        verdict = {"SCHEDULER-BOUND": "yes", "PARTIALLY SCHEDULER-LIMITED": "partly"}.get(
            oh.verdict, "no")
        text = (f"has_overhead {has:.1f} % of the makespan (an idle core while ready work "
                f"waited undispatched: {oh.verdict}); pickup latency (dispatch -> start) "
                f"median {us(median)} µs, mean {us(sum(picks) / len(picks))} µs")
        figs = {"has_overhead_pct": round(has, 3),
                "engines_pct": {k: round(oh.pct(v), 3) for k, v in oh.engines.items()},
                "pickup_median_us": us(median), "pickup_mean_us": us(sum(picks) / len(picks))}
    else:
        verdict, figs = "unknown", {}
        text = f"level {run.level}: dispatch times are not recorded below level 2"
    out.append({"question": "Is dispatch the bottleneck?", "answer": verdict, "because": text,
                "figures": figs, "rule": "the runtime's verdict: has_overhead >= 25 % yes, "
                                         ">= 8 % partly"})
    # 3. serialized
    if cpm is not None and makespan:
        share = pct(cpm.cpm_len, cpm.makespan) or 0.0
        par = kern / makespan
        chain = len(cpm.cpm_path)
        verdict = "yes" if share >= SERIAL_PCT and chain > 1 else "no"
        text = (f"the dependency chain alone (static CPM, {chain} tasks) takes "
                f"{us(cpm.cpm_len)} µs = {share:.1f} % of the makespan; on average "
                f"{par:.2f} cores ran kernels at once"
                + ("; no chain is longer than one task: the longest task alone sets it"
                   if chain == 1 else ""))
        figs = {"cpm_us": us(cpm.cpm_len), "cpm_pct": share, "parallelism": round(par, 3),
                "makespan_us": us(cpm.makespan)}
    else:
        verdict, text, figs = "unknown", "no tasks with AICore rows", {}
    out.append({"question": "Did the graph serialize?", "answer": verdict, "because": text,
                "figures": figs,
                "rule": f"yes when the static CPM path (two tasks or more) is >= {SERIAL_PCT:g} % "
                        "of the makespan"})
    # 4. kernel slow
    top = ", ".join(f"{f['function']} ({f['kernel_us']} µs, {f['rows']} rows)"
                    for f in funcs[:3])
    if run.has_dispatch:
        lat = sum(r.finish - r.dispatch for r in rows)
        share = pct(kern, lat) or 0.0
        has = oh.pct(oh.has_overhead) if oh is not None else 0.0
        verdict = "yes" if share >= 80 and has < 8 else "no"
        text = (f"kernels are {share:.1f} % of the task latency (dispatch -> finish); "
                f"most kernel time: {top}")
        figs = {"exec_pct": share, "kernel_us": us(kern), "latency_us": us(lat)}
        rule = "yes when kernels are >= 80 % of the task latency and dispatch is no bottleneck"
    else:
        share = pct(kern, kern + (gaps_ns or 0)) or 0.0
        verdict = "yes" if share >= 80 else "no"
        text = (f"kernels are {share:.1f} % of their time plus the gaps while ready; most "
                f"kernel time: {top}")
        figs = {"busy_pct": share, "kernel_us": us(kern)}
        rule = "yes when kernels are >= 80 % of kernel time + ready gaps"
    out.append({"question": "Is the kernel itself slow?", "answer": verdict, "because": text,
                "figures": figs, "rule": rule})
    return out
