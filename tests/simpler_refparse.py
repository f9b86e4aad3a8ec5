"""The test's own parser of what the simpler runtime's tools print (critical_path_report.md,
the sched_overhead_analysis console report), independent of the project's
``tracecvt.analyses.simpler.reports``, and the agreement rule: the tool's number is the exact
value rounded to the digits it printed."""

from __future__ import annotations

import re
from fractions import Fraction

N = r"(-?\d+(?:\.\d+)?)"


def parse_cp(text: str) -> dict[str, str]:
    out: dict[str, str] = {}

    def grab(pattern: str, *keys: str) -> None:
        m = re.search(pattern, text, re.M)
        if m:
            out.update(zip(keys, m.groups()))

    grab(r"^- tasks: (\d+) \| happens-before edges: (\d+)$", "tasks", "edges")
    grab(rf"^- \*\*makespan\*\*: {N} ms$", "makespan_ms")
    grab(rf"^- \*\*static CPM path\*\*: {N} ms \({N}% of makespan\) over (\d+) tasks$",
         "cpm_ms", "cpm_pct", "cpm_tasks")
    grab(r"^- \*\*observed critical path\*\*: (\d+) tasks$", "observed_tasks")
    grab(rf"^  - compute: {N} ms \({N}%\)$", "compute_ms", "compute_pct")
    grab(rf"^  - stall \(runtime scheduling\): {N} ms \({N}%\)$", "stall_ms", "stall_pct")
    grab(r"compute\+stall = (\d+) ticks vs makespan (\d+) ticks \(exact\)", "tiling_ticks",
         "makespan_ticks")
    for kind, ms, p in re.findall(rf"^    - (data-wait|core-wait|front-gap): {N} ms \({N}%\)$",
                                  text, re.M):
        out[f"{kind}_ms"], out[f"{kind}_pct"] = ms, p
    fam_part = text.split("by kernel family")[1].split("### Observed")[0]
    for line in fam_part.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[1][:1].isdigit():
            f = cells[0]
            out.update({f"family {f} compute_ms": cells[1], f"family {f} pct":
                        cells[2].rstrip("%"), f"family {f} stall_ms": cells[3],
                        f"family {f} tasks": cells[4]})
    for line in text.split("### Observed critical path")[1].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].isdigit():
            i = cells[0]
            out.update({f"path {i} kernel": cells[1], f"path {i} task_us": cells[2],
                        f"path {i} compute_us": cells[3].split()[0],
                        f"path {i} stall_us": cells[4].split()[0], f"path {i} kind": cells[5]})
    return out


def parse_so(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    m = re.search(rf"Total tasks: (\d+)\s+window: {N} us", text)
    if m:
        out["tasks"], out["window_us"] = m.groups()
    eng = {"C (AIC)": "aic", "V (AIV)": "aiv"}
    for name, v in re.findall(rf"(C \(AIC\)|V \(AIV\)) {N}%", text.split("System:")[0]):
        out[f"engine {eng[name]}_pct"] = v
    m = re.search(rf"all_overhead {N}%.*has_overhead {N}%", text)
    if m:
        out["all_overhead_pct"], out["has_overhead_pct"] = m.groups()
    part2 = text.split("Part 2:")[1].split("Part 3:")[0] if "Part 2:" in text else ""
    for line in part2.splitlines():
        cells = line.split()
        if len(cells) == 8 and cells[1] in ("(AIC)", "(AIV)"):
            ty = cells[1][1:-1].lower()
            for key, v in zip(("cores", "min_us", "mean_us", "max_us", "events", "per_event_us"),
                              cells[2:]):
                out[f"switch {ty} {key}"] = v.removesuffix("us")
        m = re.search(rf"\((AIC|AIV)\) switch split: {N}% during overhead, {N}% independent",
                      line)
        if m:
            ty = m.group(1).lower()
            out[f"switch {ty} overhead_pct"], out[f"switch {ty} independent_pct"] = m.groups()[1:]
        m = re.search(rf"bound: \[{N}, {N}\] us  \({N}% \.\. {N}% of makespan\)", line)
        if m:
            out.update(zip(("switch bound lower_us", "switch bound upper_us",
                            "switch bound lower_pct", "switch bound upper_pct"), m.groups()))
    m = re.search(r"-> ([A-Z/-]+(?: [A-Z/-]+)*) —", text)
    if m:
        out["verdict"] = m.group(1)
    for name, title in (("head", "Head OH"), ("tail", "Tail OH")):
        if f"{title} distribution" not in text:
            continue
        block = text.split(f"{title} distribution (N=")[1].split("Total:")[0] + "Total:" + \
            text.split(f"{title} distribution (N=")[1].split("Total:")[1].split("\n")[0]
        out[f"{name} N"] = block.split(")")[0]
        for p, v in re.findall(rf"P(\d+)\s+{N} us", block):
            out[f"{name} P{p}"] = v
        m = re.search(rf"Max:\s+{N} us\s+Mean:\s+{N} us\s+Total:\s+{N} us", block)
        out[f"{name} max"], out[f"{name} mean"], out[f"{name} total"] = m.groups()
    m = re.search(rf"path: (\d+) hops, span {N} us", text)
    if m:
        out["path hops"], out["path span_us"] = m.groups()
        m = re.search(rf"Compute \(exec\) on path : {N} us \({N}%\)", text)
        out["path exec_us"], out["path exec_pct"] = m.groups()
        m = re.search(rf"Scheduler injected     : {N} us \({N}%\)", text)
        out["path sched_us"], out["path sched_pct"] = m.groups()
        out["path other_us"] = re.search(rf"Other \(dep wait on path\): {N} us", text).group(1)
    return out


def parse_loop(text: str) -> dict[str, str]:
    if "Part 5:" not in text:
        return {}
    out: dict[str, str] = {"threads": re.search(r"(\d+) scheduler threads", text).group(1)}
    for t, loops, tasks, nsl, total in re.findall(
            rf"^  (T\d+|SUM) +(\d+) +(\d+) +(\d+) +{N}$", text, re.M):
        out.update({f"{t} loops": loops, f"{t} tasks": tasks, f"{t} ns_per_loop": nsl,
                    f"{t} total_us": total})
    out["finishes"] = re.search(r"FINs observed \(Complete phase\): (\d+)", text).group(1)
    for kind, word in (("complete", "Complete"), ("async_poll", "AsyncPoll"),
                       ("dispatch", "Dispatch"), ("idle", "Idle")):
        m = re.search(rf"^  {word} \(.*\) +{N} +{N}% +{N}$", text, re.M)
        out.update(zip((f"phase {kind} total_us", f"phase {kind} pct", f"phase {kind} avg_us"),
                       m.groups()))
    for key, word in (("fanout", "Fanout"), ("fanin", "Fanin")):
        m = re.search(rf"{word} .*total edges=(\d+), max_degree=(\d+), avg_degree={N}", text)
        out.update(zip((f"{key} edges", f"{key} max", f"{key} avg"), m.groups()))
    m = re.search(rf"Pop: hit=(\d+), miss=(\d+), hit_rate={N}%", text)
    out["pop hit"], out["pop miss"], out["pop rate_pct"] = m.groups()
    out["avg loop_ns"] = re.search(r"loop iteration: (\d+) ns", text).group(1)
    m = re.search(rf"Avg Tail OH = {N} us ~= {N} x", text)
    out["avg tail_us"], out["tail loops"] = m.groups()
    return out


def agrees(printed: str, value) -> bool:
    """The tool's number is ``value`` rounded to the digits it printed (ints and texts: equal)."""
    if isinstance(value, str) or not re.fullmatch(r"-?\d+(\.\d+)?", printed):
        return str(value) == printed
    digits = len(printed.split(".")[1]) if "." in printed else 0
    half = Fraction(1, 2 * 10 ** digits)
    return abs(Fraction(printed) - Fraction(value)) <= half + Fraction(1, 10 ** 9)
