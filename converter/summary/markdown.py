"""Markdown summary, shaped as a profile report: configuration, bottleneck and root cause,
top opportunities, ratings, lanes, critical path, time by label, tool-specific sections,
PyPTO's own figures, the comparison with a baseline, warnings."""

from __future__ import annotations

from typing import Any, Iterable

from ..analyses.places import findings, lane_label
from ..model import clock_skew_text

FINDINGS_SHOWN = 60             # findings listed under "In the trace" (all in the JSON)

def num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.1f}"
        return f"{v:,.{digits}f}"
    return str(v)


def us_(v: Any) -> str:
    return "n/a" if v is None else f"{num(v)} µs"


def span_text(at: dict[str, Any]) -> str:
    """A finding's interval in trace time: "1.901–12.160 µs"."""
    return f"{at['start_ns'] / 1000:,.3f}–{at['end_ns'] / 1000:,.3f} µs"


def where_cell(at: dict[str, Any] | None) -> str:
    """"#N 1.901–12.160 µs on AIV_34, HUB_80" (trace time), or "—"."""
    if not at:
        return "—"
    lanes = lane_label(at)
    return f"#{at['finding']} {span_text(at)}" + (f" on {lanes}" if lanes else "")


def findings_section(d: dict[str, Any]) -> list[str]:
    """"In the trace": every finding's interval, clock, lanes and slice."""
    found = findings(d)
    if not found:
        return []
    out = ["## In the trace", "",
           "Trace time: µs from the trace's time 0 (its first event, as the .pftrace and "
           "Chrome JSON count); source clock: the source's own time, in ns. "
           "`tracecvt open RUN --at N` opens finding N in the Perfetto UI (interval in view, "
           "lanes pinned, a note at its slice); `tracecvt open RUN --report` serves the HTML "
           "report with a link per finding.", ""]
    rows = []
    for what, at in found[:FINDINGS_SHOWN]:
        sl = at.get("slice")
        rows.append((at["finding"], what, span_text(at),
                     f"{at['clock']}: {at['clock_start_ns']}–{at['clock_end_ns']} ns",
                     lane_label(at, 3), f"{sl['name']} on {sl['lane']}" if sl else "—"))
    out += table(("#", "finding", "trace time", "source clock", "lanes", "slice"), rows)
    if len(found) > FINDINGS_SHOWN:
        out += ["", f"{len(found) - FINDINGS_SHOWN} more in the JSON summary."]
    out.append("")
    return out


SOURCE_IDLE_HEAD = ("the tool's idle lane", "lanes", "window", "the tool's idle",
                    "tracecvt's idle", "both idle", "agreement")
SOURCE_IDLE_NOTE = ("tracecvt's idle: the time none of the lanes has a task, over the window "
                    "both cover; agreement: the time both call idle over the larger total.")


def source_idle_rows(d: dict[str, Any]) -> list[list[str]]:
    return [[r["lane"], num(r["lanes"]), us_(r["window_us"]), us_(r["source_idle_us"]),
             us_(r["tracecvt_idle_us"]), us_(r["both_idle_us"]), pct_(r["agreement_pct"])]
            for r in d.get("source_idle") or []]


def source_idle_section(d: dict[str, Any]) -> list[str]:
    """The tool's own idle intervals (msprof's overlap analysis "Free") against tracecvt's."""
    rows = source_idle_rows(d)
    if not rows:
        return []
    return ["## The tool's idle intervals vs tracecvt's", "", *table(SOURCE_IDLE_HEAD, rows),
            "", SOURCE_IDLE_NOTE, ""]


def pct_(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f} %"


def esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(head: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    head = list(head)
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(esc(c) for c in r) + " |")
    return out


def change_cell(row: dict[str, Any]) -> str:
    if row["change"] is None:
        return "—" if row["previous"] is None or row["current"] is None else "n/a"
    sign = "+" if row["change"] > 0 else ""
    rel = f" ({sign}{row['change_pct']:.1f} %)" if row["change_pct"] is not None \
        and row["unit"] != "%" else ""
    mark = {True: " ✔", False: " ✘", None: ""}[row["improved"]]
    unit = f" {row['unit']}" if row["unit"] and row["unit"] != "%" else (
        " pp" if row["unit"] == "%" else "")
    return f"{sign}{num(row['change'])}{unit}{rel}{mark}"


def ncu_kernel_table(kernels: list[dict[str, Any]]) -> tuple[list[str], list[list[str]], str]:
    """(head, rows, the healthy thresholds line) of the Nsight Compute kernel table; a value
    outside its healthy range is marked ✘."""
    f0 = kernels[0]["figures"]
    names = list(f0)

    def col(n: str) -> str:
        return n.removesuffix("_pct").removesuffix("_us").replace("_", " ")

    def cell(f: dict[str, Any]) -> str:
        return figure_cell(f["value"], f["unit"]) + (" ✘" if f["ok"] is False else "")
    rows = [[k["name"], k["bound"], *(cell(k["figures"][n]) for n in names),
             k.get("key_issue", "—")] for k in kernels]
    healthy = "Healthy: " + ", ".join(f"{col(n)} {f0[n]['healthy']}" for n in names
                                      if f0[n]["healthy"]) + " (✘: outside it)."
    return ["kernel", "bound", *map(col, names), "key issue"], rows, healthy


def figure_cell(v: Any, unit: str) -> str:
    if v is None:
        return "—"
    return f"{num(v)} {unit}".rstrip() if unit != "%" else f"{num(v, 1)} %"


def vs_baseline(rows: list[dict[str, Any]]) -> list[str]:
    return table(("figure", "previous", "current", "change"),
                 ((r["figure"], figure_cell(r["previous"], r["unit"]),
                   figure_cell(r["current"], r["unit"]), change_cell(r)) for r in rows))


def causes(graph: bool, start: bool = False) -> tuple[tuple[str, str], ...]:
    """(bubble cause, its key in a lane, kind or run row) of a run with or without a task
    graph (and with dispatch times: ``start``), in table order."""
    return ((("wait predecessor", "wait_predecessor_us"), ("wait schedule", "wait_schedule_us"))
            if graph else (("idle", "idle_us"),)) + (
        (("wait start", "wait_start_us"),) if start else ())


def _totals_row(name: str, k: dict[str, Any], graph: bool, start: bool = False) -> list[str]:
    """A lanes-table row of a kind's or the run's totals, up to the waits."""
    return [name, f"{k.get('lanes_used')} of {k.get('lanes')}", us_(k.get("duration_us")),
            pct_(k.get("utilization_pct")), pct_(k.get("bubble_rate_pct"))] + [
        us_(k.get(key)) for _, key in causes(graph, start)]


def render_markdown(d: dict[str, Any]) -> str:
    out: list[str] = []
    conf = d.get("configuration") or {}
    out.append(f"# Profile report: {d['run']}")
    out.append("")
    tool = " ".join(x for x in (conf.get("tool"), conf.get("tool_version")) if x)
    out.append(f"{tool or conf.get('format', '')} · {conf.get('device') or 'device unknown'}"
               f" · made by tracecvt {d.get('tracecvt_version', '')}")
    out.append("")
    # -- configuration ------------------------------------------------------------------
    out.append("## Configuration")
    out.append("")
    rows = [("device", conf.get("device") or "unknown"),
            ("tool", tool or "unknown"),
            ("format", conf.get("format", "")),
            ("tasks", num(conf.get("tasks"))),
            ("time span", us_((d.get("time_span") or {}).get("makespan_us")))]
    lanes = conf.get("lanes") or []
    if lanes:
        rows.append(("lanes", ", ".join(f"{k['kind']}: {k['used']} of {k['lanes']} used"
                                        for k in lanes)))
    for key in ("op_name", "block_dim", "core_count", "device_name", "compute_capability",
                "chip", "soc"):
        if conf.get(key) not in (None, ""):
            rows.append((key.replace("_", " "), num(conf[key])))
    for e in conf.get("clock_skew") or []:
        rows.append(("clock skew", clock_skew_text(e)))
    for sh in conf.get("shapes") or []:
        ins = ", ".join(sh.get("inputs") or [])
        outs = ", ".join(sh.get("outputs") or [])
        rows.append((f"shapes '{sh['label']}'", f"{ins} → {outs}"))
    files = conf.get("source_files") or []
    if files:
        rows.append(("source", "; ".join(f"`{f}`" for f in files[:4])
                     + (f" (+{len(files) - 4})" if len(files) > 4 else "")))
    out += table(("", ""), rows)
    out.append("")
    # -- bottleneck -----------------------------------------------------------------------
    b = d.get("bottleneck") or {}
    out.append("## Bottleneck and root cause")
    out.append("")
    out.append(f"**{b.get('summary', '')}** {b.get('root_cause', '')}".strip())
    out.append("")
    if d.get("bottlenecks"):
        out.append("Bottleneck labels: " + "; ".join(
            f"**{x['label']}** ({pct_(x['share_pct'])}: {x['evidence']})"
            for x in d["bottlenecks"]) + ".")
        out.append("")
    if d.get("simpler"):
        from .simpler import markdown_questions
        out += markdown_questions(d["simpler"])
    # -- opportunities --------------------------------------------------------------------
    out.append("## Top 3 opportunities")
    out.append("")
    opps = d.get("opportunities") or []
    if opps:
        out += table(("#", "opportunity", "estimated gain", "triggered by", "in the trace"),
                     ((k, o["title"], us_(o["estimated_gain_us"])
                       if o["estimated_gain_us"] is not None else "not estimated",
                       o["metric"], where_cell(o.get("at"))) for k, o in enumerate(opps, 1)))
        out.append("")
        out.append("Gains: " + "; ".join(f"({k}) {o['estimate']}"
                                         for k, o in enumerate(opps, 1)) + ".")
        for k, o in enumerate(opps, 1):
            if o.get("actions"):
                out.append("")
                out.append(f"What to change for ({k}), {o.get('bottleneck')}: " + "; ".join(
                    f"`{a['name']}` ({a['tool']}, {a['ref']})" for a in o["actions"]) + ".")
    else:
        out.append("None found.")
    out.append("")
    # -- vs baseline ----------------------------------------------------------------------
    if d.get("vs_baseline") is not None:
        base = d.get("baseline") or {}
        out.append(f"## vs baseline ({base.get('run')})")
        out.append("")
        out += vs_baseline(d["vs_baseline"])
        out.append("")
        out.append("✔ better, ✘ worse; pp = percentage points.")
        out.append("")
    # -- ratings --------------------------------------------------------------------------
    out.append("## Ratings")
    out.append("")
    out += table(("rating", "level", "value", "levels (excellent / good / fair / poor)",
                  "figure"),
                 ((r["title"], r["level"] or "—",
                   pct_(r["value_pct"]) if r["value_pct"] is not None
                   else f"not computable: {r['reason']}", r["thresholds"], r["figure"])
                  for r in d.get("ratings") or []))
    out.append("")
    # -- lanes ----------------------------------------------------------------------------
    bub = d.get("bubbles") or {}
    out.append("## Lanes")
    out.append("")
    if not bub.get("computed"):
        out.append(f"No bubble figures: {bub.get('reason')}.")
        out.append("")
    else:
        graph = bub.get("cause_model") == "task graph"
        start = "wait_start_us" in (bub.get("run") or {})
        head = ["lanes", "used", "duration", "utilization", "bubble rate"]
        head += [cause for cause, _ in causes(graph, start)]
        head += ["bottleneck", "key issue"]
        rows = [_totals_row(k["name"] + (" (pseudo-core)" if k.get("pseudo_core") else ""),
                            k, graph, start) + [k["bottleneck"], k["key_issue"]]
                for k in bub.get("kinds") or []]
        rows.append(_totals_row("**all (run)**", bub.get("run") or {}, graph, start)
                    + ["", ""])
        out += table(head, rows)
        out.append("")
        out.append("Utilization = busy time / (lanes used × run makespan); bubble rate = "
                   "total wait / Σ lane spans (run start to each lane's last task). "
                   + ("Wait predecessor: inputs not ready; wait schedule: ready but not "
                      "dispatched." if graph else "Every gap is idle (no task graph).")
                   + (" Wait start: dispatched, not yet started." if start else ""))
        out.append("")
        worst = sorted((l for l in bub.get("lanes") or [] if l.get("total_wait_us")),
                       key=lambda l: -(l["total_wait_us"] or 0))[:10]
        if worst:
            out.append("Lanes with the most bubble time:")
            out.append("")
            waits = causes(graph, start) if graph or start else ()   # (idle: the total)
            hd = ["lane", "tasks", "busy", "total wait", *(name for name, _ in waits),
                  "utilization", "bubble rate"]
            rows = []
            for l in worst:
                r = [l["name"], num(l["tasks"]), us_(l["busy_us"]), us_(l["total_wait_us"])]
                r += [us_(l[key]) for _, key in waits]
                r += [pct_(l["utilization_pct"]), pct_(l["bubble_rate_pct"])]
                rows.append(r)
            out += table(hd, rows)
            out.append("")
    out += source_idle_section(d)
    # -- critical path --------------------------------------------------------------------
    cp = d.get("critical_path") or {}
    out.append("## Critical path")
    out.append("")
    if not cp.get("computed"):
        out.append(f"Not computed: {cp.get('reason')}.")
    else:
        out.append(f"{us_(cp['length_us'])} from the run start to the last task's end: "
                   f"{num(cp['tasks'])} tasks ({us_(cp['task_time_us'])}) and waits "
                   f"({us_(cp['wait_time_us'])}). Tasks that waited for their lane: "
                   f"{us_(cp.get('lane_order_us'))}. Longest dependency chain on its own "
                   f"(unlimited lanes, no waits): {us_(cp.get('graph_bound_us'))}.")
        if cp.get("caveat"):
            out.append("")
            out.append(f"Caveat: {cp['caveat']}.")
        out.append("")
        out += table(("lane", "tasks on the path", "task time", "waits"),
                     ((r["lane"], num(r["tasks"]), us_(r["task_time_us"]),
                       us_(r["wait_time_us"])) for r in cp.get("by_lane") or []))
        out.append("")
        out.append("Longest segments:")
        out.append("")
        out += table(("segment", "lane", "duration", "next depends via"),
                     ((s["name"], s["lane"], us_(s["duration_us"]), s["via"] or "")
                      for s in cp.get("longest_segments") or []))
    out.append("")
    # -- labels ---------------------------------------------------------------------------
    for t in d.get("time_by_label") or []:
        out.append(f"## Time by {t['title']}")
        out.append("")
        out += table((t["title"], "count", "total", "mean", "max", "share",
                      "on critical path"),
                     ((r["label"], num(r["count"]), us_(r["total_us"]), us_(r["mean_us"]),
                       us_(r["max_us"]), pct_(r["share_pct"]),
                       us_(r["critical_path_us"]) if r["critical_path_us"] else "—")
                      for r in t["rows"][:15]))
        if len(t["rows"]) > 15:
            out.append("")
            out.append(f"{len(t['rows']) - 15} more rows in the JSON summary.")
        out.append("")
    tops = d.get("top_tasks") or []
    if tops:
        out.append("## Top tasks")
        out.append("")
        out += table(("task", "lane", "label", "duration", "on critical path"),
                     ((t["name"], t["lane"], t["label"], us_(t["duration_us"]),
                       "yes" if t["on_critical_path"] else "") for t in tops))
        out.append("")
    # -- NCU / msprof op ------------------------------------------------------------------
    ncu = d.get("ncu")
    if ncu:
        out.append("## Nsight Compute kernels")
        out.append("")
        if ncu.get("serialized"):
            out.append("Nsight Compute replays kernels one at a time and lays them end to "
                       "end: the timeline has no idle time by construction, so no bubbles are "
                       "reported.")
            out.append("")
        kernels = ncu["kernels"][:30]
        if kernels and kernels[0].get("figures"):       # the kernel table (schema 2)
            head, rows, healthy = ncu_kernel_table(kernels)
            out += table(head, rows)
            out.append("")
            out.append(healthy)
        else:
            out += table(("kernel", "duration", "bound", "compute", "memory", "failed checks"),
                         ((k["name"], us_(k["duration_us"]), k["bound"],
                           pct_(k["compute_throughput_pct"]), pct_(k["memory_throughput_pct"]),
                           ", ".join(k["failed_checks"]) or "—") for k in kernels))
        out.append("")
        if ncu.get("advice"):
            out.append("NCU advice, by estimated speedup:")
            out.append("")
            out += table(("kernel", "rule", "speedup", "advice"),
                         ((a["kernel"], a["rule"], pct_(a["estimated_speedup_pct"]),
                           (a["message"] or "")[:200]) for a in ncu["advice"][:15]))
            out.append("")
    mop = d.get("msprof_op")
    if mop:
        out.append("## msprof op: blocks and pipes")
        out.append("")
        if mop.get("fill_note"):
            out.append(f"Cores: {mop['fill_note']}.")
            out.append("")
        counts = ", ".join(f"{p}: {n}" for p, n in (mop.get("bound_counts") or {}).items())
        out.append(f"Bound pipe per block: {counts or 'n/a'}.")
        out.append("")
        out += table(("block", "duration", "bound pipe", "ratio"),
                     ((b_["block"], us_(b_["duration_us"]), b_["bound_pipe"] or "n/a",
                       num(b_["bound_ratio"])) for b_ in mop["blocks"][:24]))
        out.append("")
        for r in mop.get("roofline") or []:
            out.append(f"- roofline {r.get('name', '')}: {r.get('bound', '')}")
        for a in mop.get("advice") or []:
            out.append(f"- advice: {a}")
        out.append("")
    # -- PyPTO check ----------------------------------------------------------------------
    pc = d.get("pypto_check")
    if pc:
        out.append("## PyPTO's own figures (bubble_analysis.log)")
        out.append("")
        out.append(f"{pc['cores_matching']} of {pc['cores_checked']} cores match PyPTO's "
                   f"Work / Total Wait / Wait Schedule / Wait Predecessor Times within "
                   f"{pc['tolerance_us']} µs (or the integer-ns rounding bound).")
        out.append("")
        for a in pc.get("anomalies") or []:
            out.append(f"- {a}")
        odd = [c for c in pc["cores"] if c["status"] != "match" or c["reasons"]][:12]
        if odd:
            out.append("")
            out += table(("core", "status", "PyPTO total / schedule / predecessor",
                          "tracecvt total / schedule / predecessor", "why"),
                         ((c["core"], c["status"],
                           " / ".join(num(c["log"][k]) for k in
                                      ("total_wait_us", "wait_schedule_us",
                                       "wait_predecessor_us")),
                           " / ".join(num(c["tracecvt"][k]) for k in
                                      ("total_wait_us", "wait_schedule_us",
                                       "wait_predecessor_us")) if c["tracecvt"] else "—",
                           "; ".join(c["reasons"]) or "rounding")
                          for c in odd))
        out.append("")
    if d.get("simpler"):
        from .simpler import markdown_tools
        out += markdown_tools(d["simpler"])
    out += findings_section(d)
    warnings = d.get("warnings") or []
    if warnings:
        out.append("## Warnings")
        out.append("")
        for w in warnings[:30]:
            out.append(f"- {w}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_compare_markdown(c: dict[str, Any]) -> str:
    base, cur = c["baseline"], c["current"]
    out = [f"# Comparison: {cur['run']} vs {base['run']}", "",
           f"Baseline (previous): {base['run']}; current: {cur['run']}; made by tracecvt "
           f"{c.get('tracecvt_version', '')}", ""]
    if c.get("verdict"):
        out += [f"**Verdict: {c['verdict']['line']}**", ""]
    out += ["## Key figures", ""]
    out += vs_baseline(c["rows"])
    out.append("")
    out.append("✔ better, ✘ worse; pp = percentage points.")
    out.append("")
    out.append("## Bottleneck")
    out.append("")
    for who, d in (("previous", base), ("current", cur)):
        b = d.get("bottleneck") or {}
        labels = ", ".join(f"{x['label']} ({pct_(x['share_pct'])})"
                           for x in d.get("bottlenecks") or [])
        out.append(f"- {who}: {b.get('summary', '')} {b.get('root_cause', '')}".rstrip()
                   + (f" Labels: {labels}." if labels else ""))
    out.append("")
    ra = {r["key"]: r for r in base.get("ratings") or []}
    rows = []
    for r in cur.get("ratings") or []:
        p = ra.get(r["key"], {})
        rows.append((r["title"], f"{p.get('level') or '—'} ({pct_(p.get('value_pct'))})",
                     f"{r['level'] or '—'} ({pct_(r['value_pct'])})"))
    if rows:
        out.append("## Ratings")
        out.append("")
        out += table(("rating", "previous", "current"), rows)
        out.append("")
    if c.get("labels"):
        out.append(f"## Time by {c['labels'][0]['table']}")
        out.append("")
        out += table(("label", "previous", "current", "change", "tasks"),
                     ((r["label"], us_(r["previous_total_us"]), us_(r["current_total_us"]),
                       (("+" if (r["change_us"] or 0) > 0 else "") + us_(r["change_us"]))
                       if r["change_us"] is not None else "—",
                       f"{num(r['previous_count'])} → {num(r['current_count'])}")
                      for r in c["labels"]))
        out.append("")
    return "\n".join(out).rstrip() + "\n"
