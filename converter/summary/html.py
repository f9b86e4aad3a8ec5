"""Self-contained HTML summary: inline CSS, inline SVG pictures and a small inline script,
nothing loaded from the network.

Pictures: per-lane utilization bars (busy, wait predecessor, wait schedule / idle, tail, as
shares of the run), bubble breakdown by cause per lane kind, a busy/idle timeline strip per
lane, the critical path as a strip of segments (html_pictures.py), the top tasks, time by
label.  The script only adds hover tooltips and, when it ran to the end without an error,
sets ``data-rendered="ok"`` on ``<html>`` and appends ``<div id="render-status">`` (what the
headless-browser test looks for).
"""

from __future__ import annotations

import json
from typing import Any

from ..analyses.places import findings, lane_label
from ..model import clock_skew_text
from .html_pictures import (bubble_breakdown, cp_strip, esc, kind_colors, timeline_strip,
                            util_bars, visual)
from .markdown import (FINDINGS_SHOWN, SOURCE_IDLE_HEAD, SOURCE_IDLE_NOTE, change_cell,
                       figure_cell, ncu_kernel_table, num, pct_, source_idle_rows, span_text,
                       us_)

# -- where each finding is in the trace ---------------------------------------------------


def _open(at: dict[str, Any] | None, open_link) -> str:
    """A finding's link: to the Perfetto UI at its place where the report is served by
    ``tracecvt open --report`` (``open_link``), else to its row in "In the trace"."""
    if not at:
        return "—"
    n = at["finding"]
    if open_link is not None:
        return (f'<a class="pf-open" data-finding="{n}" href="{esc(open_link(at))}" '
                f'target="_blank" rel="noopener">#{n} in Perfetto</a>')
    return f'<a class="pf-open" data-finding="{n}" href="#finding-{n}">#{n}</a>'


def _findings(d: dict[str, Any], open_link) -> str:
    found = findings(d)
    rows = []
    for what, at in found[:FINDINGS_SHOWN]:
        n = at["finding"]
        sl = at.get("slice")
        rows.append([f'<span id="finding-{n}">{n}</span>', esc(what), esc(span_text(at)),
                     esc(f"{at['clock']}: {at['clock_start_ns']}–{at['clock_end_ns']} ns"),
                     esc(lane_label(at, 3)),
                     esc(f"{sl['name']} on {sl['lane']}") if sl else "—",
                     _open(at, open_link)])
    how = ("Each link opens the run's trace in the Perfetto UI with the finding's interval in "
           "view, its lanes pinned and a note at the start of its slice."
           if open_link is not None else
           f"To open a finding in the Perfetto UI: <code>tracecvt open RUN --at N</code> "
           f"(RUN: this run, {esc(d.get('run'))}), or <code>tracecvt open RUN --report</code> "
           "for this report with one-click links (a trace must be served over http for the "
           "UI to fetch it).")
    more = (f'<p class="note">{len(found) - FINDINGS_SHOWN} more in the JSON summary.</p>'
            if len(found) > FINDINGS_SHOWN else "")
    return ("<h2>In the trace</h2><p class=\"note\">Trace time: µs from the trace's time 0 "
            f"(its first event); clock: the source's own, in ns. {how}</p>"
            + _table(["#", "finding", "trace time", "source clock", "lanes", "slice", "open"],
                     rows, "findings", set(range(7))) + more)

# -- tables -------------------------------------------------------------------------------

def _ncu_kernels(kernels: list[dict[str, Any]]) -> str:
    """The Nsight Compute kernel table (30 kernels at most) and its healthy thresholds."""
    kernels = kernels[:30]
    if kernels and kernels[0].get("figures"):
        head, rows, healthy = ncu_kernel_table(kernels)
        return _table(head, rows) + f'<p class="note">{esc(healthy)}</p>'
    return _table(["kernel", "duration", "bound", "compute", "memory", "failed checks"],
                  [[k["name"], us_(k["duration_us"]), k["bound"],
                    pct_(k["compute_throughput_pct"]), pct_(k["memory_throughput_pct"]),
                    ", ".join(k["failed_checks"]) or "—"] for k in kernels])


def _table(head: list[str], rows: list[list[Any]], cls: str = "", raw: set[int] = frozenset()
           ) -> str:
    out = [f'<table class="{cls}"><thead><tr>'
           + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{c if k in raw else esc(c)}</td>"
                                    for k, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _change_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Key-figure rows (``compare_rows``) with the change marked better or worse."""
    out = []
    for r in rows:
        cls = {True: "good", False: "bad", None: ""}[r["improved"]]
        out.append([r["figure"], figure_cell(r["previous"], r["unit"]),
                    figure_cell(r["current"], r["unit"]),
                    f'<span class="{cls}">{esc(change_cell(r))}</span>'])
    return out


def _ratings(d: dict[str, Any]) -> str:
    out = ['<div class="ratings">']
    for r in d.get("ratings") or []:
        level = r["level"] or "none"
        value = pct_(r["value_pct"]) if r["value_pct"] is not None else "n/a"
        why = r["figure"] if r["level"] else f"not computable: {r['reason']}"
        out.append(f'<div class="rating lvl-{esc(level)}"><div class="r-title">{esc(r["title"])}'
                   f'</div><div class="r-level">{esc(r["level"] or "—")}</div>'
                   f'<div class="r-value">{esc(value)}</div><div class="r-why">{esc(why)}</div>'
                   f'<div class="r-thr">excellent … poor: {esc(r["thresholds"])}</div></div>')
    out.append("</div>")
    return "".join(out)


def _label_tables(d: dict[str, Any]) -> str:
    out = []
    for t in d.get("time_by_label") or []:
        rows = []
        for r in t["rows"][:15]:
            share = r["share_pct"] or 0.0
            bar = (f'<div class="sharebar"><span style="width:{min(share, 100):.1f}%"></span>'
                   f'</div> {esc(pct_(r["share_pct"]))}')
            rows.append([r["label"], num(r["count"]), us_(r["total_us"]), us_(r["mean_us"]),
                         us_(r["max_us"]), bar,
                         us_(r["critical_path_us"]) if r["critical_path_us"] else "—"])
        out.append(f"<h3>Time by {esc(t['title'])}</h3>")
        out.append(_table([t["title"], "count", "total", "mean", "max", "share",
                           "on critical path"], rows, "labels", {5}))
    return "".join(out)


CSS = """
:root{--fg:#1d2330;--mut:#5b6473;--bg:#f6f7fa;--card:#fff;--line:#e3e6ec}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1d2330;color:#fff;padding:18px 28px}header h1{margin:0;font-size:21px}
header .sub{color:#c8cfdb;margin-top:4px}main{padding:16px 24px;max-width:1000px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:14px 18px;margin:0 0 16px}h2{font-size:17px;margin:0 0 10px}h3{font-size:15px}
.lead{font-size:15px}.chart{display:block;max-width:100%;height:auto}
.grid{stroke:#e6e9ef;stroke-width:1}.axis{font-size:10px;fill:var(--mut)}
.label{font-size:12px;fill:var(--fg)}.tiny{font-size:7px;fill:var(--mut)}
.idle-bg{fill:#eef0f4}table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{color:var(--mut);font-weight:600}.ratings{display:flex;gap:10px;flex-wrap:wrap}
.rating{flex:1 1 200px;border-radius:8px;padding:10px;border:1px solid var(--line)}
.r-title{font-weight:600}.r-level{font-size:18px;text-transform:capitalize}
.r-value{font-size:20px;font-weight:700}.r-why,.r-thr{font-size:11px;color:var(--mut)}
.lvl-excellent{background:#e3f4e8}.lvl-good{background:#eef7e1}.lvl-fair{background:#fdf6dc}
.lvl-poor{background:#fdeadb}.lvl-critical{background:#fbe1e1}.lvl-none{background:#f0f1f4}
.sharebar{display:inline-block;width:80px;height:8px;background:#eef0f4;vertical-align:middle}
.sharebar span{display:block;height:8px;background:#3b6fb6}.note{color:var(--mut);font-size:12px}
.good{color:#1c7c3c}.bad{color:#b3261e}#tip{position:fixed;pointer-events:none;display:none;
background:#1d2330;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;z-index:9;
max-width:420px}footer{color:var(--mut);font-size:12px;padding:0 28px 24px}
"""

SCRIPT = """
(function(){
  var tip = document.getElementById("tip");
  document.querySelectorAll("[data-tip]").forEach(function(el){
    el.addEventListener("mousemove", function(ev){
      tip.textContent = el.getAttribute("data-tip");
      tip.style.display = "block";
      tip.style.left = (ev.clientX + 12) + "px";
      tip.style.top = (ev.clientY + 12) + "px";
    });
    el.addEventListener("mouseleave", function(){ tip.style.display = "none"; });
  });
  var need = %s;
  var missing = need.filter(function(id){ return !document.getElementById(id); });
  var status = document.createElement("div");
  status.id = "render-status";
  status.className = "note";
  status.textContent = missing.length ? "missing: " + missing.join(", ")
      : "rendered " + need.length + " sections, " + document.querySelectorAll("svg").length
        + " pictures";
  document.querySelector("footer").appendChild(status);
  document.documentElement.setAttribute("data-rendered", missing.length ? "missing" : "ok");
})();
"""


def render_html(d: dict[str, Any], trace=None, analysis=None, open_link=None) -> str:
    """The report; ``open_link(at)``: a finding's Perfetto UI link (``tracecvt open
    --report``, which serves the trace), else findings link to their rows."""
    v = visual(trace, analysis) if trace is not None and analysis is not None else {}
    bub = d.get("bubbles") or {}
    kinds = [k["name"] for k in bub.get("kinds") or []]
    colors = kind_colors(kinds)
    conf = d.get("configuration") or {}
    tool = " ".join(x for x in (conf.get("tool"), conf.get("tool_version")) if x)
    makespan = (d.get("time_span") or {}).get("makespan_us") or 0.0
    sections: list[tuple[str, str]] = []
    b = d.get("bottleneck") or {}
    sections.append(("bottleneck", f'<h2>Bottleneck and root cause</h2><p class="lead">'
                                   f'<b>{esc(b.get("summary", ""))}</b> '
                                   f'{esc(b.get("root_cause", ""))}</p>'
                                   + ("<p>Bottleneck labels: " + "; ".join(
                                       f"<b>{esc(x['label'])}</b> ({esc(pct_(x['share_pct']))})"
                                       for x in d.get("bottlenecks") or []) + "</p>"
                                      if d.get("bottlenecks") else "")))
    sections.append(("ratings", "<h2>Ratings</h2>" + _ratings(d)))
    opps = d.get("opportunities") or []
    sections.append(("opportunities", "<h2>Top 3 opportunities</h2>" + (_table(
        ["#", "opportunity", "estimated gain", "triggered by", "how estimated",
         "what to change", "in the trace"],
        [[k, esc(o["title"]), esc(us_(o["estimated_gain_us"]))
          if o["estimated_gain_us"] is not None else "not estimated", esc(o["metric"]),
          esc(o["estimate"]),
          esc("; ".join(f"{a['name']} ({a['tool']}: {a['ref']})"
                        for a in o.get("actions") or []) or "—"),
          _open(o.get("at"), open_link)] for k, o in enumerate(opps, 1)], "",
        set(range(7)))
        if opps else "<p>None found.</p>")))
    if d.get("vs_baseline") is not None:
        rows = _change_rows(d["vs_baseline"])
        base_run = esc((d.get("baseline") or {}).get("run"))
        sections.append(("baseline", f"<h2>vs baseline ({base_run})</h2>"
                         + _table(["figure", "previous", "current", "change"], rows, "", {3})))
    if bub.get("computed"):
        sections.append(("utilization", "<h2>Lane utilization</h2><p class=\"note\">Each "
                         "column is one lane, 100 % = the run's makespan: busy time, then its "
                         "bubbles by cause, then the time after its last task.</p>"
                         + util_bars(d, colors)))
        sections.append(("bubbles", "<h2>Bubbles by cause</h2>" + bubble_breakdown(d, colors)
                         + _table(["lanes", "used", "utilization", "bubble rate",
                                   "bottleneck", "key issue"],
                                  [[k["name"], f"{k['lanes_used']} of {k['lanes']}",
                                    pct_(k["utilization_pct"]), pct_(k["bubble_rate_pct"]),
                                    k.get("bottleneck", ""), k.get("key_issue", "")]
                                   for k in bub["kinds"]])))
        more = len(bub.get("lanes") or []) - len(v.get("lanes") or [])
        sections.append(("timeline", "<h2>Busy and idle per lane</h2>"
                         + timeline_strip(v, colors, makespan)
                         + (f'<p class="note">{more} more lanes not drawn.</p>' if more > 0
                            else "")))
    else:
        sections.append(("timeline", f"<h2>Lanes</h2><p>No bubble figures: "
                                     f"{esc(bub.get('reason'))}.</p>"))
    idle_rows = source_idle_rows(d)
    if idle_rows:
        sections.append(("source-idle", "<h2>The tool's idle intervals vs tracecvt's</h2>"
                         + _table(list(SOURCE_IDLE_HEAD), idle_rows)
                         + f'<p class="note">{esc(SOURCE_IDLE_NOTE)}</p>'))
    cp = d.get("critical_path") or {}
    if cp.get("computed"):
        body = (f"<p>{esc(us_(cp['length_us']))} from the run start to the last task's end: "
                f"{esc(num(cp['tasks']))} tasks ({esc(us_(cp['task_time_us']))}) and waits "
                f"({esc(us_(cp['wait_time_us']))}); longest dependency chain alone "
                f"{esc(us_(cp.get('graph_bound_us')))}.</p>"
                + cp_strip(v, colors, cp["length_us"] or 0.0)
                + (f'<p class="note">Caveat: {esc(cp["caveat"])}.</p>' if cp.get("caveat")
                   else "")
                + _table(["lane", "tasks on the path", "task time", "waits"],
                         [[r["lane"], num(r["tasks"]), us_(r["task_time_us"]),
                           us_(r["wait_time_us"])] for r in cp.get("by_lane") or []])
                + "<h3>Longest segments</h3>"
                + _table(["segment", "lane", "duration", "next depends via"],
                         [[s["name"], s["lane"], us_(s["duration_us"]), s["via"]]
                          for s in cp.get("longest_segments") or []]))
    else:
        body = f"<p>Not computed: {esc(cp.get('reason'))}.</p>"
    sections.append(("critical-path", "<h2>Critical path</h2>" + body))
    tops = d.get("top_tasks") or []
    sections.append(("top-tasks", "<h2>Top tasks</h2>" + _table(
        ["task", "lane", "label", "duration", "on critical path"],
        [[t["name"], t["lane"], t["label"], us_(t["duration_us"]),
          "yes" if t["on_critical_path"] else ""] for t in tops])))
    if d.get("time_by_label"):
        sections.append(("labels", "<h2>Time by label</h2>" + _label_tables(d)))
    ncu = d.get("ncu")
    if ncu:
        sections.append(("ncu", "<h2>Nsight Compute kernels</h2>" + (
            "<p>Kernels are replayed one at a time and laid end to end: no bubbles by "
            "construction.</p>" if ncu.get("serialized") else "") + _ncu_kernels(ncu["kernels"])
            + (_table(["kernel", "rule", "speedup", "advice"],
                      [[a["kernel"], a["rule"], pct_(a["estimated_speedup_pct"]),
                        (a["message"] or "")[:240]] for a in ncu["advice"][:15]])
               if ncu.get("advice") else "")))
    if findings(d):
        sections.append(("findings", _findings(d, open_link)))
    mop = d.get("msprof_op")
    if mop:
        sections.append(("msprof-op", "<h2>msprof op: blocks and pipes</h2>"
                         + (f"<p>{esc(mop['fill_note'])}.</p>" if mop.get("fill_note") else "")
                         + _table(["block", "duration", "bound pipe", "ratio"],
                                  [[b_["block"], us_(b_["duration_us"]),
                                    b_["bound_pipe"] or "n/a", num(b_["bound_ratio"])]
                                   for b_ in mop["blocks"][:48]])
                         + "".join(f"<p>roofline {esc(r.get('name', ''))}: "
                                   f"{esc(r.get('bound', ''))}</p>" for r in mop["roofline"])
                         + "".join(f"<p>advice: {esc(a)}</p>" for a in mop["advice"])))
    pc = d.get("pypto_check")
    if pc:
        items = "".join(f"<li>{esc(a)}</li>" for a in pc.get("anomalies") or [])
        sections.append(("pypto-check", "<h2>PyPTO's own figures (bubble_analysis.log)</h2>"
                         f"<p>{pc['cores_matching']} of {pc['cores_checked']} cores match "
                         f"within {pc['tolerance_us']} µs (or the integer-ns rounding bound)."
                         f"</p><ul>{items}</ul>"))
    if d.get("simpler"):
        from .simpler import html_section
        sections.append(("simpler", html_section(d["simpler"])))
    rows = [["device", conf.get("device") or "unknown"], ["tool", tool or "unknown"],
            ["tasks", num(conf.get("tasks"))], ["time span", us_(makespan)]]
    rows += [["clock skew", clock_skew_text(e)] for e in conf.get("clock_skew") or []]
    for sh in conf.get("shapes") or []:
        rows.append([f"shapes '{sh['label']}'", ", ".join(sh.get("inputs") or []) + " → "
                     + ", ".join(sh.get("outputs") or [])])
    for f in (conf.get("source_files") or [])[:6]:
        rows.append(["source", f])
    sections.append(("configuration", "<h2>Configuration</h2>" + _table(["", ""], rows)))
    warnings = d.get("warnings") or []
    if warnings:
        sections.append(("warnings", "<h2>Warnings</h2><ul>"
                         + "".join(f"<li>{esc(w)}</li>" for w in warnings[:30]) + "</ul>"))
    need = [sid for sid, _ in sections]
    need += [x for x in ("util-bars", "bubble-breakdown", "timeline-strip",
                         "critical-path-strip") if f'id="{x}"' in "".join(h for _, h in sections)]
    body = "".join(f'<section id="{sid}">{h}</section>' for sid, h in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>tracecvt · {esc(d['run'])}</title><style>{CSS}</style></head><body>"
            f"<header><h1>Profile report: {esc(d['run'])}</h1><div class=\"sub\">"
            f"{esc(tool or conf.get('format', ''))} · {esc(conf.get('device') or '')} · "
            f"{esc(us_(makespan))}</div></header><main>{body}</main>"
            f"<footer>made by tracecvt {esc(d.get('tracecvt_version', ''))} · self-contained, "
            "no network access needed</footer><div id=\"tip\"></div>"
            f"<script>{SCRIPT % json.dumps(need)}</script></body></html>\n")


def render_compare_html(c: dict[str, Any]) -> str:
    base, cur = c["baseline"], c["current"]
    sections = [("baseline", "<h2>Key figures</h2>" + _table(
        ["figure", "previous", "current", "change"], _change_rows(c["rows"]), "", {3}))]
    bl = "".join(f"<li><b>{who}</b>: {esc((d.get('bottleneck') or {}).get('summary', ''))} "
                 f"{esc((d.get('bottleneck') or {}).get('root_cause', ''))}</li>"
                 for who, d in (("previous", base), ("current", cur)))
    sections.append(("bottleneck", f"<h2>Bottleneck</h2><ul>{bl}</ul>"))
    if c.get("labels"):
        sections.append(("labels", "<h2>Time by label</h2>" + _table(
            ["label", "previous", "current", "change"],
            [[r["label"], us_(r["previous_total_us"]), us_(r["current_total_us"]),
              us_(r["change_us"]) if r["change_us"] is not None else "—"]
             for r in c["labels"]])))
    need = [sid for sid, _ in sections]
    body = "".join(f'<section id="{sid}">{h}</section>' for sid, h in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>tracecvt · {esc(cur['run'])} vs {esc(base['run'])}</title>"
            f"<style>{CSS}</style></head><body><header><h1>Comparison: {esc(cur['run'])} vs "
            f"{esc(base['run'])}</h1></header><main>{body}</main><footer>made by tracecvt "
            f"{esc(c.get('tracecvt_version', ''))}</footer><div id=\"tip\"></div>"
            f"<script>{SCRIPT % json.dumps(need)}</script></body></html>\n")
