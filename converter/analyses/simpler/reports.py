"""Parsers of what the runtime's tools print, keyed as ``figures.py`` keys tracecvt's own
figures: ``critical_path_report.md`` (one rank) and the ``sched_overhead_analysis`` console
report.  Every number is kept as printed (a string), so comparisons happen at the tool's
precision."""

from __future__ import annotations

import re

_NUM = r"(-?[\d.]+)"


def parse_critical_path_report(text: str) -> dict[str, str]:
    """The first rank of a ``critical_path_report.md``."""
    out: dict[str, str] = {}
    pats = {
        r"- tasks: (\d+) \| happens-before edges: (\d+)": ("tasks", "edges"),
        rf"\*\*makespan\*\*: {_NUM} ms": ("makespan_ms",),
        rf"\*\*static CPM path\*\*: {_NUM} ms \({_NUM}% of makespan\) over (\d+) tasks":
            ("cpm_ms", "cpm_pct", "cpm_tasks"),
        r"\*\*observed critical path\*\*: (\d+) tasks": ("observed_tasks",),
        rf"  - compute: {_NUM} ms \({_NUM}%\)": ("compute_ms", "compute_pct"),
        rf"  - stall \(runtime scheduling\): {_NUM} ms \({_NUM}%\)": ("stall_ms", "stall_pct"),
        r"compute\+stall = (\d+) ticks vs makespan (\d+) ticks": ("tiling_ticks",
                                                                  "makespan_ticks"),
    }
    for pat, keys in pats.items():
        m = re.search(pat, text)
        if m:
            out.update(zip(keys, m.groups()))
    for m in re.finditer(rf"^    - ([\w-]+): {_NUM} ms \({_NUM}%\)", text, re.M):
        out[f"{m.group(1)}_ms"] = m.group(2)
        out[f"{m.group(1)}_pct"] = m.group(3)
    section = text.split("by kernel family", 1)[-1].split("### Observed", 1)[0]
    for m in re.finditer(rf"^\| (\S+) \| {_NUM} \| {_NUM}% \| {_NUM} \| (\d+) \|$", section,
                         re.M):
        fam = m.group(1)
        out[f"family {fam} compute_ms"], out[f"family {fam} pct"] = m.group(2), m.group(3)
        out[f"family {fam} stall_ms"], out[f"family {fam} tasks"] = m.group(4), m.group(5)
    listing = text.split("### Observed critical path", 1)[-1]
    for m in re.finditer(rf"^\| (\d+) \| (\S+) \| {_NUM} \| {_NUM} \([\d.]+%\) \| "
                         rf"{_NUM} \([\d.]+%\) \| ([\w-]*) \|$", listing, re.M):
        i = m.group(1)
        out[f"path {i} kernel"], out[f"path {i} task_us"] = m.group(2), m.group(3)
        out[f"path {i} compute_us"], out[f"path {i} stall_us"] = m.group(4), m.group(5)
        out[f"path {i} kind"] = m.group(6)
    return out


_ENGINES = {"C (AIC)": "aic", "V (AIV)": "aiv", "MIX": "mix"}


def parse_sched_overhead(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """(Parts 1, 3, 4 and 6; Part 5) of a ``sched_overhead_analysis`` report, keyed as
    ``overhead_figures`` and ``loop_figures``."""
    oh: dict[str, str] = {}
    loop: dict[str, str] = {}
    m = re.search(rf"Total tasks: (\d+)\s+window: {_NUM} us", text)
    if m:
        oh["tasks"], oh["window_us"] = m.groups()
    m = re.search(r"Per-engine overhead: (.*)", text)
    if m:
        for em in re.finditer(rf"(C \(AIC\)|V \(AIV\)|MIX) {_NUM}%", m.group(1)):
            oh[f"engine {_ENGINES[em.group(1)]}_pct"] = em.group(2)
    m = re.search(rf"all_overhead {_NUM}%.*has_overhead {_NUM}%", text)
    if m:
        oh["all_overhead_pct"], oh["has_overhead_pct"] = m.groups()
    m = re.search(r"  -> (SCHEDULER-BOUND|PARTIALLY SCHEDULER-LIMITED|COMPUTE/DEPENDENCY-BOUND)",
                  text)
    if m:
        oh["verdict"] = m.group(1)
    for m in re.finditer(rf"^  (C \(AIC\)|V \(AIV\)|MIX)\s+(\d+)\s+{_NUM}us\s+{_NUM}us\s+"
                         rf"{_NUM}us\s+(\d+)\s+{_NUM}us$", text, re.M):
        ty = _ENGINES[m.group(1)]
        for key, v in zip(("cores", "min_us", "mean_us", "max_us", "events", "per_event_us"),
                          m.groups()[1:]):
            oh[f"switch {ty} {key}"] = v
    for m in re.finditer(rf"(C \(AIC\)|V \(AIV\)|MIX) switch split: {_NUM}% during overhead, "
                         rf"{_NUM}% independent", text):
        ty = _ENGINES[m.group(1)]
        oh[f"switch {ty} overhead_pct"], oh[f"switch {ty} independent_pct"] = m.groups()[1:]
    m = re.search(rf"makespan switch bound: \[{_NUM}, {_NUM}\] us\s+\({_NUM}% \.\. {_NUM}%",
                  text)
    if m:
        for key, v in zip(("lower_us", "upper_us", "lower_pct", "upper_pct"), m.groups()):
            oh[f"switch bound {key}"] = v
    for name, title in (("head", "Head OH"), ("tail", "Tail OH")):
        part = text.split(f"{title} distribution (N=", 1)
        if len(part) < 2:
            continue
        body = part[1]
        oh[f"{name} N"] = body.split(")", 1)[0]
        for pm in re.finditer(rf"^\s+P(\d+)\s+{_NUM} us", body.split("Max:", 1)[0], re.M):
            oh[f"{name} P{pm.group(1)}"] = pm.group(2)
        mm = re.search(rf"Max:\s+{_NUM} us\s+Mean:\s+{_NUM} us\s+Total:\s+{_NUM} us", body)
        if mm:
            oh[f"{name} max"], oh[f"{name} mean"], oh[f"{name} total"] = mm.groups()
    m = re.search(rf"Makespan-determining path: (\d+) hops, span {_NUM} us", text)
    if m:
        oh["path hops"], oh["path span_us"] = m.groups()
        for key, pat in (("exec", r"Compute \(exec\) on path"), ("sched", r"Scheduler injected")):
            mm = re.search(rf"{pat}\s*: {_NUM} us \({_NUM}%\)", text)
            if mm:
                oh[f"path {key}_us"], oh[f"path {key}_pct"] = mm.groups()
        mm = re.search(rf"Other \(dep wait on path\): {_NUM} us", text)
        if mm:
            oh["path other_us"] = mm.group(1)
    if "Part 5:" not in text:
        return oh, loop
    m = re.search(r"(\d+) scheduler threads", text)
    if m:
        loop["threads"] = m.group(1)
    for tm in re.finditer(rf"^  (T\d+|SUM)\s+(\d+)\s+(\d+)\s+(\d+)\s+{_NUM}$", text, re.M):
        t = tm.group(1)
        loop[f"{t} loops"], loop[f"{t} tasks"] = tm.group(2), tm.group(3)
        loop[f"{t} ns_per_loop"], loop[f"{t} total_us"] = tm.group(4), tm.group(5)
    m = re.search(r"FINs observed \(Complete phase\): (\d+)", text)
    if m:
        loop["finishes"] = m.group(1)
    for kind, label in (("complete", "Complete"), ("async_poll", "AsyncPoll"),
                        ("dispatch", "Dispatch"), ("idle", "Idle")):
        pm = re.search(rf"^  {label} \(.*?\)\s+{_NUM}\s+{_NUM}%\s+{_NUM}$", text, re.M)
        if pm:
            loop[f"phase {kind} total_us"], loop[f"phase {kind} pct"], \
                loop[f"phase {kind} avg_us"] = pm.groups()
    for key, label in (("fanout", "Fanout"), ("fanin", "Fanin")):
        fm = re.search(rf"{label} .*?total edges=(\d+), max_degree=(\d+), avg_degree={_NUM}",
                       text)
        if fm:
            loop[f"{key} edges"], loop[f"{key} max"], loop[f"{key} avg"] = fm.groups()
    m = re.search(rf"Pop: hit=(\d+), miss=(\d+), hit_rate={_NUM}%", text)
    if m:
        loop["pop hit"], loop["pop miss"], loop["pop rate_pct"] = m.groups()
    m = re.search(r"Avg scheduler loop iteration: (\d+) ns", text)
    if m:
        loop["avg loop_ns"] = m.group(1)
    m = re.search(rf"Avg Tail OH = {_NUM} us ~= {_NUM} x", text)
    if m:
        loop["avg tail_us"], loop["tail loops"] = m.groups()
    return oh, loop
