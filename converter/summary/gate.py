"""``tracecvt compare --fail-on FIGURE:THRESHOLD``: a verdict on two runs' key figures.

FIGURE is a key figure's identifier: its name lower-cased with every run of other
characters as one ``_`` ("critical path wait" -> ``critical_path_wait``, "AIV utilization"
-> ``aiv_utilization``).  THRESHOLD is ``[+|-]N[%]``: a change of more than N (in the
figure's unit, or N % of the baseline's value) in the direction given counts as a regression
(``+``: an increase, ``-``: a decrease; no sign: the figure's worse direction).  A change of
more than N the other way is an improvement.  The verdict: ``regression`` when any figure
regressed (exit code 1), else ``improvement`` when any improved, else ``pass``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The identifiers of the key figures every run with a timeline (or kernels, or blocks) has;
# others: "<kind>_utilization", "<kind>_bubble_rate" per lane kind (aiv_utilization), a
# simpler run's scheduler figures (wait_start, pickup_latency_median, ...).
COMMON = ("makespan", "critical_path", "critical_path_wait", "busy_time", "utilization",
          "bubble_rate", "total_wait", "wait_schedule", "wait_predecessor", "tasks",
          "kernel_time", "memory_efficiency", "max_block_duration")


def ident(name: str) -> str:
    """A key figure's identifier."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@dataclass
class Gate:
    figure: str                   # identifier
    text: str                     # as given, "makespan:+5%"
    sign: int                     # +1: an increase regresses, -1: a decrease, 0: "better"
    limit: float
    relative: bool                # limit in % of the baseline's value


def parse_gate(text: str) -> Gate:
    """``FIGURE:THRESHOLD``; ValueError with the reason."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_]+)\s*:\s*([+-]?)\s*([0-9]+(?:\.[0-9]*)?)\s*(%?)\s*", text)
    if m is None:
        raise ValueError(f"{text!r}: expected FIGURE:THRESHOLD, e.g. makespan:+5% or "
                         "critical_path_wait:+10%")
    figure, sign, value, pct = m.groups()
    return Gate(figure.lower(), text.strip(), {"+": 1, "-": -1, "": 0}[sign], float(value),
                bool(pct))


def verdict(gates: list[Gate], base: dict[str, Any], cur: dict[str, Any]) -> dict[str, Any]:
    """The verdict of ``gates`` on two summaries' key figures; ValueError when a figure is
    in neither or is missing from one run, or has no worse direction and no sign."""
    from .compare import _change
    fa, fb = _figures(base), _figures(cur)
    checks = []
    for g in gates:
        if g.figure not in fa or g.figure not in fb:
            where = ("either run" if g.figure not in fa and g.figure not in fb else
                     "the baseline" if g.figure not in fa else "the current run")
            have = sorted(set(fa) & set(fb))
            raise ValueError(f"--fail-on {g.text}: no figure {g.figure!r} in {where} "
                             f"(both have: {', '.join(have) or 'none'})")
        name, a = fa[g.figure]
        b = fb[g.figure][1]
        sign = g.sign or {"lower": 1, "higher": -1}.get(a.get("better"), 0)
        if sign == 0:
            raise ValueError(f"--fail-on {g.text}: {g.figure} has no better direction; give "
                             "one: +N (an increase fails) or -N (a decrease fails)")
        prev, now = a["value"], b["value"]
        change, rel = _change(prev, now)
        if g.relative:
            moved = rel
            if moved is None:
                moved = 0.0 if change == 0 else float("inf") * (1 if change > 0 else -1)
        else:
            moved = change
        worse = moved * sign
        result = ("regression" if worse > g.limit else
                  "improvement" if -worse > g.limit else "pass")
        checks.append({"figure": g.figure, "name": name, "threshold": g.text.split(":", 1)[1],
                       "relative": g.relative, "unit": a.get("unit", ""),
                       "limit": g.limit, "fails_on": "increase" if sign > 0 else "decrease",
                       "previous": prev, "current": now, "change": round(change, 6),
                       "change_pct": None if rel is None else round(rel, 3),
                       "result": result})
    results = [c["result"] for c in checks]
    outcome = ("regression" if "regression" in results else
               "improvement" if "improvement" in results else "pass")
    return {"verdict": outcome, "line": _line(outcome, checks), "checks": checks}


def _figures(summary: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """identifier -> (printed name, {value, unit, better}) of a summary's key figures (schema
    3: ``key_figures.rows``, the names of the vs-baseline table)."""
    from ..analyses.key_figures import rows
    return {ident(name): (name, {"value": value, "unit": unit, "better": better})
            for name, value, unit, better in rows(summary.get("key_figures") or {})}


def _line(outcome: str, checks: list[dict[str, Any]]) -> str:
    def one(c):
        ch = (f"{c['change_pct']:+.1f} %" if c["relative"] and c["change_pct"] is not None
              else f"{c['change']:+g} {c['unit']}".rstrip())
        return f"{c['figure']} {ch} ({c['result']}, limit {c['threshold']})"
    picked = [c for c in checks if c["result"] == outcome] or checks
    return f"{outcome}: " + "; ".join(one(c) for c in picked)
