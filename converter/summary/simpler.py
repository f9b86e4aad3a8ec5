"""The simpler (PyPTO 3.0) parts of a summary: the first four questions of PyPTO's swimlane
guide with the figures behind them, and the runtime tools' figures (``critical_path``,
``sched_overhead_analysis``) as tracecvt computes them, side by side with the tools' own
printed reports when the run has them (data: ``Analysis.to_dict()["simpler"]``)."""

from __future__ import annotations

from html import escape
from typing import Any

from ..analyses.simpler.figures import printed
from .markdown import table

TOOLS = (("critical_path", "critical_path (python -m simpler_setup.tools.critical_path)"),
         ("sched_overhead", "sched_overhead_analysis, Parts 1 to 4 and 6"),
         ("sched_loop", "sched_overhead_analysis, Part 5: scheduler loop"))
LABELS = {
    "tasks": "tasks", "edges": "happens-before edges", "makespan_ms": "makespan (ms)",
    "cpm_ms": "static CPM path (ms)", "cpm_pct": "static CPM, % of makespan",
    "cpm_tasks": "static CPM tasks", "observed_tasks": "observed path tasks",
    "compute_ms": "compute (ms)", "compute_pct": "compute (%)", "stall_ms": "stall (ms)",
    "stall_pct": "stall (%)", "tiling_ticks": "compute + stall (ticks)",
    "makespan_ticks": "makespan (ticks)", "window_us": "window (µs)",
    "all_overhead_pct": "all_overhead (%)", "has_overhead_pct": "has_overhead (%)",
}


def _label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    for unit, text in (("_ms", " (ms)"), ("_us", " (µs)"), ("_pct", " (%)"), ("_ns", " (ns)")):
        if key.endswith(unit):
            return key[: -len(unit)].replace("_", " ") + text
    return key.replace("_", " ")


def _rows(s: dict[str, Any], tool: str) -> tuple[list[tuple[str, str, str, str]], str]:
    """(figure, tracecvt, runtime's tool, agrees) rows without the per-task path listing,
    and a line about the listing."""
    comp = (s.get("comparisons") or {}).get(tool)
    ours = (s.get("figures") or {}).get(tool) or []
    if comp is None:
        rows = [(_label(f["figure"]), printed(f["value"], f["decimals"]), "", "")
                for f in ours if not f["figure"].startswith("path ") or tool != "critical_path"]
        listed = sum(1 for f in ours
                     if f["figure"].startswith("path ") and f["figure"].endswith(" kernel"))
        return rows, (f"Observed path: {listed} tasks (JSON summary: "
                      "simpler.figures.critical_path)." if tool == "critical_path" else "")
    rows = []
    path_rows = path_ok = 0
    for r in comp["rows"]:
        key = r["figure"]
        if tool == "critical_path" and key.startswith("path "):
            if r["agrees"] is not None:
                path_rows += 1
                path_ok += r["agrees"] is True
            continue
        mark = {True: "✔", False: "✘", None: "—"}[r["agrees"]]
        if r.get("half_way"):
            mark += " (exactly half-way: the tool's float sum rounds it the other way)"
        ours_text = printed(r["tracecvt"], r["decimals"])
        ref_text = printed(r["reference"], r["decimals"])
        rows.append((_label(key), ours_text if ours_text is not None else "—",
                     ref_text if ref_text is not None else "—", mark))
    line = (f"Observed path listing (kernel, task, compute, stall, stall kind per task): "
            f"{path_ok} of {path_rows} figures agree." if path_rows else "")
    return rows, line


def markdown_questions(s: dict[str, Any]) -> list[str]:
    out = ["## First questions (PyPTO 3.0 swimlane guide)", ""]
    out += table(["question", "answer", "because"],
                 [(q["question"], f"**{q['answer']}**", q["because"].replace("|", "/"))
                  for q in s.get("questions") or []])
    out += ["", "Rules: " + "; ".join(f"{q['question'].rstrip('?').lower()}: {q['rule']}"
                                      for q in s.get("questions") or []) + ".", ""]
    funcs = s.get("functions") or []
    if funcs:
        out += ["Time by function (kernel = start → end; head = dispatch → start; tail = end "
                "→ finish):", ""]
        out += table(
            ["function", "rows", "tasks", "kernel", "mean kernel", "mean head", "mean tail",
             "kernel / (head + tail)"],
            [(f["function"], f["rows"], f["tasks"], f"{f['kernel_us']} µs",
              f"{f['mean_kernel_us']} µs",
              f"{f['mean_head_us']} µs" if "mean_head_us" in f else "—",
              f"{f['mean_tail_us']} µs" if "mean_tail_us" in f else "—",
              f.get("kernel_per_overhead") if f.get("kernel_per_overhead") is not None
              else "—") for f in funcs[:15]])
        out.append("")
    return out


def markdown_tools(s: dict[str, Any]) -> list[str]:
    out = ["## The simpler runtime's own analyses", ""]
    comps = s.get("comparisons") or {}
    if comps:
        agree = sum(c["agree"] for c in comps.values())
        total = sum(c["compared"] for c in comps.values())
        out += [f"tracecvt recomputes the runtime tools' figures from the same records; "
                f"{agree} of {total} figures the tools printed agree at the tools' own "
                "precision.", ""]
    else:
        out += ["tracecvt recomputes the runtime tools' figures from the same records (put "
                "the tools' reports beside the run to compare them here).", ""]
    for note in s.get("notes") or []:
        out.append(f"- {note}")
    if s.get("notes"):
        out.append("")
    for tool, title in TOOLS:
        rows, line = _rows(s, tool)
        if not rows:
            continue
        out += [f"### {title}", ""]
        if tool in comps:
            # by hand: table() would write the unnamed mark column's header as "|  |"
            out += ["| figure | tracecvt | runtime's tool | |", "|---|---|---|---|"]
            out += [f"| {a} | {b} | {c} | {m} |" for a, b, c, m in rows]
        else:
            out += table(["figure", "tracecvt"], [r[:2] for r in rows])
        out.append("")
        if line:
            out += [line, ""]
    return out


def html_section(s: dict[str, Any]) -> str:
    """The questions and the tools' figures as the body of an HTML section."""
    parts = ['<h2>First questions (PyPTO 3.0 swimlane guide)</h2>',
             "<table><tr><th>question</th><th>answer</th><th>because</th></tr>"]
    for q in s.get("questions") or []:
        parts.append(f"<tr><td>{escape(q['question'])}</td><td><b>{escape(q['answer'])}</b>"
                     f"</td><td>{escape(q['because'])}</td></tr>")
    parts.append("</table>")
    funcs = s.get("functions") or []
    if funcs:
        parts.append("<h3>Time by function</h3><table><tr><th>function</th><th>rows</th>"
                     "<th>tasks</th><th>kernel µs</th><th>mean kernel µs</th>"
                     "<th>mean head µs</th><th>mean tail µs</th>"
                     "<th>kernel / (head + tail)</th></tr>")
        for f in funcs[:15]:
            cells = (f["function"], f["rows"], f["tasks"], f["kernel_us"], f["mean_kernel_us"],
                     f.get("mean_head_us", "—"), f.get("mean_tail_us", "—"),
                     f.get("kernel_per_overhead") if f.get("kernel_per_overhead") is not None
                     else "—")
            parts.append("<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in cells)
                         + "</tr>")
        parts.append("</table>")
    parts.append("<h2>The simpler runtime's own analyses</h2>")
    for note in s.get("notes") or []:
        parts.append(f"<p>{escape(note)}</p>")
    comps = s.get("comparisons") or {}
    for tool, title in TOOLS:
        rows, line = _rows(s, tool)
        if not rows:
            continue
        parts.append(f"<h3>{escape(title)}</h3><table><tr><th>figure</th><th>tracecvt</th>"
                     + ("<th>runtime's tool</th><th></th>" if tool in comps else "") + "</tr>")
        for a, b, c, m in rows:
            cells = [a, b] + ([c, m] if tool in comps else [])
            parts.append("<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in cells)
                         + "</tr>")
        parts.append("</table>")
        if line:
            parts.append(f"<p>{escape(line)}</p>")
    return "".join(parts)
