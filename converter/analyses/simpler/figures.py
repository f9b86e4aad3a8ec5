"""The runtime tools' figures as they print them: one ``Figure`` per printed number, keyed
so the parsed reports (``reports.py``) line up with them, and compared at the tool's own
precision.  In the JSON summary each is a row ``{figure, value, unit, decimals}``: the value
a JSON number rounded as the tool prints it (text only for a verdict, a kernel or a stall
kind), so renderers print it back with ``decimals`` (``printed``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .cpm import KINDS, CpmResult
from .loop import ThreadLoop
from .overhead import PERCENTILES, Overhead


@dataclass
class Figure:
    key: str
    value: float | int | str      # exact value in the printed unit (str: a verdict)
    decimals: int | None = None   # printed digits after the point; None: an int or a text

    @property
    def printed(self) -> str:
        """The value as the tool prints it: the nearest double, formatted as Python formats
        it (a value exactly half-way between two printed numbers may show the other one
        than the tool's own float sums; ``agrees`` accepts both)."""
        if self.decimals is None:
            return str(self.value)
        return f"{float(self.value):.{self.decimals}f}"

    @property
    def number(self) -> float | int | str:
        """The printed value as a JSON number: an int where the tool prints no decimals,
        else the float of the printed digits; text stays text."""
        if isinstance(self.value, str):
            return self.value
        if self.decimals is None:
            return self.value if isinstance(self.value, int) else float(self.value)
        p = self.printed
        return int(p) if self.decimals == 0 else float(p)

    @property
    def unit(self) -> str | None:
        return unit_of(self.key)

    def row(self) -> dict[str, Any]:
        return {"figure": self.key, "value": self.number, "unit": self.unit,
                "decimals": self.decimals}

    def agrees(self, printed: str) -> bool:
        """Equal at the tool's rounding: the tool's number is this value rounded to its
        digits (a value exactly half-way may round either way in the tool's float sums)."""
        if self.decimals is None:
            return str(printed) == str(self.value)
        try:
            ref = float(printed)
        except ValueError:
            return False
        return abs(ref - float(self.value)) <= 0.5 * 10 ** -self.decimals + 1e-9 * max(
            1.0, abs(float(self.value)))


_UNITS = (("_ms", "ms"), ("_us", "µs"), ("_pct", "%"), (" pct", "%"), ("_ns", "ns"),
          ("ns_per_loop", "ns"), ("_ticks", "ticks"))
_DISTRIBUTION = re.compile(r"(head|tail) (P\d+|max|mean|total)")


def unit_of(key: str) -> str | None:
    """The unit of a figure, from its key (``…_us``: µs; a head/tail distribution's
    percentiles, max, mean and total: µs); None for counts, ratios and text."""
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return unit
    return "µs" if _DISTRIBUTION.fullmatch(key) else None


def printed(value: Any, decimals: int | None) -> str | None:
    """A figure's value (``Figure.number``, or a parsed reference) as the tool prints it."""
    if value is None or isinstance(value, str) or decimals is None:
        return value if value is None or isinstance(value, str) else str(value)
    return f"{float(value):.{decimals}f}"


def _ms(ns: int) -> Fraction:
    return Fraction(ns, 10 ** 6)


def _us(ns: int) -> Fraction:
    return Fraction(ns, 1000)


def _pct(part: int, whole: int) -> Fraction:
    return Fraction(100 * part, whole) if whole else Fraction(0)


def cpm_figures(r: CpmResult) -> list[Figure]:
    ms = r.makespan
    out = [Figure("tasks", r.tasks), Figure("edges", r.kept_edges),
           Figure("makespan_ms", _ms(ms), 3), Figure("cpm_ms", _ms(r.cpm_len), 3),
           Figure("cpm_pct", _pct(r.cpm_len, ms), 1), Figure("cpm_tasks", len(r.cpm_path)),
           Figure("observed_tasks", len(r.path)),
           Figure("compute_ms", _ms(r.compute), 3), Figure("compute_pct", _pct(r.compute, ms), 1),
           Figure("stall_ms", _ms(r.stall), 3), Figure("stall_pct", _pct(r.stall, ms), 1)]
    for kind in KINDS:
        v = r.stall_by_kind.get(kind, 0)
        if v:
            out += [Figure(f"{kind}_ms", _ms(v), 3), Figure(f"{kind}_pct", _pct(v, ms), 1)]
    out += [Figure("tiling_ticks", int(r.ticks(r.compute + r.stall))),
            Figure("makespan_ticks", int(r.ticks(ms)))]
    for fam, c, s, n in r.families():
        out += [Figure(f"family {fam} compute_ms", _ms(c), 3),
                Figure(f"family {fam} pct", _pct(c, ms), 1),
                Figure(f"family {fam} stall_ms", _ms(s), 3), Figure(f"family {fam} tasks", n)]
    for i, t in enumerate(r.path):
        out += [Figure(f"path {i} kernel", t.name), Figure(f"path {i} task_us", _us(t.dur), 1),
                Figure(f"path {i} compute_us", _us(t.compute), 1),
                Figure(f"path {i} stall_us", _us(t.stall), 1),
                Figure(f"path {i} kind", t.kind if t.stall else "")]
    return out


def overhead_figures(o: Overhead) -> list[Figure]:
    w = o.window
    out = [Figure("tasks", o.rows), Figure("window_us", _us(w), 1)]
    for ty, v in o.engines.items():
        out.append(Figure(f"engine {ty}_pct", _pct(v, w), 1))
    out += [Figure("all_overhead_pct", _pct(o.all_overhead, w), 1),
            Figure("has_overhead_pct", _pct(o.has_overhead, w), 1),
            Figure("verdict", o.verdict)]
    mins = {}
    for ty in o.engines:
        per = list(o.switch_cores.get(ty, {}).values())
        if not per:
            continue
        ev = o.switch_events.get(ty, [])
        mins[ty] = min(per)
        out += [Figure(f"switch {ty} cores", len(per)),
                Figure(f"switch {ty} min_us", _us(min(per)), 1),
                Figure(f"switch {ty} mean_us", Fraction(sum(per), 1000 * len(per)), 1),
                Figure(f"switch {ty} max_us", _us(max(per)), 1),
                Figure(f"switch {ty} events", len(ev)),
                Figure(f"switch {ty} per_event_us",
                       Fraction(sum(ev), 1000 * len(ev)) if ev else 0, 2)]
        ov, ind = o.switch_split.get(ty, [0, 0])
        if ov + ind > 0:
            out += [Figure(f"switch {ty} overhead_pct", _pct(ov, ov + ind), 0),
                    Figure(f"switch {ty} independent_pct", _pct(ind, ov + ind), 0)]
    if mins:
        lower, upper = min(mins.values()), sum(mins.values())
        out += [Figure("switch bound lower_us", _us(lower), 2),
                Figure("switch bound upper_us", _us(upper), 2),
                Figure("switch bound lower_pct", _pct(lower, w), 2),
                Figure("switch bound upper_pct", _pct(upper, w), 2)]
    for name, d in (("head", o.head), ("tail", o.tail)):
        if d is None or not d.n:
            continue
        out.append(Figure(f"{name} N", d.n))
        for p in PERCENTILES:
            out.append(Figure(f"{name} P{p}", _us(d.at(p)), 2))
        out += [Figure(f"{name} max", _us(d.values[-1]), 2),
                Figure(f"{name} mean", Fraction(d.total, 1000 * d.n), 2),
                Figure(f"{name} total", _us(d.total), 1)]
    if o.path is not None and o.path["span"] > 0:
        p = o.path
        span = p["span"]
        out += [Figure("path hops", p["hops"]), Figure("path span_us", _us(span), 1),
                Figure("path exec_us", _us(p["exec"]), 1),
                Figure("path exec_pct", _pct(p["exec"], span), 1),
                Figure("path sched_us", _us(p["sched"]), 1),
                Figure("path sched_pct", _pct(p["sched"], span), 1),
                Figure("path other_us", _us(max(0, span - p["exec"] - p["sched"])), 1)]
    return out


def loop_figures(loops: list[ThreadLoop], tail_mean_ns: Fraction | None) -> list[Figure]:
    if not loops:
        return []
    out = [Figure("threads", len(loops))]
    for t in loops:
        out += [Figure(f"T{t.thread} loops", t.loops), Figure(f"T{t.thread} tasks", t.completed),
                Figure(f"T{t.thread} ns_per_loop",
                       Fraction(t.total, t.loops) if t.loops else 0, 0),
                Figure(f"T{t.thread} total_us", _us(t.total), 1)]
    total = sum(t.total for t in loops)
    loops_n = sum(t.loops for t in loops)
    done = sum(t.completed for t in loops)
    avg = Fraction(total, loops_n) if loops_n else Fraction(0)
    out += [Figure("SUM loops", loops_n), Figure("SUM tasks", done),
            Figure("SUM ns_per_loop", avg, 0), Figure("SUM total_us", _us(total), 1),
            Figure("finishes", sum(t.finishes for t in loops))]
    for kind in ("complete", "async_poll", "dispatch", "idle"):
        v = sum(t.idle if kind == "idle" else t.work.get(kind, 0) for t in loops)
        out += [Figure(f"phase {kind} total_us", _us(v), 1),
                Figure(f"phase {kind} pct", _pct(v, total), 1),
                Figure(f"phase {kind} avg_us", Fraction(v, 1000 * done) if done else 0, 2)]
    fo = sum(t.fanout_edges for t in loops)
    fi = sum(t.fanin_edges for t in loops)
    out += [Figure("fanout edges", fo), Figure("fanout max", max(t.fanout_max for t in loops)),
            Figure("fanout avg", Fraction(fo, done) if done else 0, 1),
            Figure("fanin edges", fi), Figure("fanin max", max(t.fanin_max for t in loops)),
            Figure("fanin avg", Fraction(fi, done) if done else 0, 1)]
    hit = sum(t.pop_hit for t in loops)
    miss = sum(t.pop_miss for t in loops)
    out += [Figure("pop hit", hit), Figure("pop miss", miss),
            Figure("pop rate_pct", _pct(hit, hit + miss), 1),
            Figure("avg loop_ns", avg, 0)]
    if tail_mean_ns is not None:
        out += [Figure("avg tail_us", tail_mean_ns / 1000, 1),
                Figure("tail loops", tail_mean_ns / avg if avg else 0, 1)]
    return out


def _reference(text: str, like: Figure | None) -> float | int | str:
    """A number the tool printed, as a JSON number (text where the figure is text or the
    tool printed no number)."""
    if like is not None and isinstance(like.value, str):
        return text
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        return text


def _decimals(text: str) -> int | None:
    t = text.strip()
    return len(t.split(".", 1)[1]) if re.fullmatch(r"-?\d+\.\d+", t) else None


def compare(figures: list[Figure], reference: dict[str, str]) -> list[dict[str, Any]]:
    """Rows (figure, unit, decimals, tracecvt, reference, agrees) for every figure the tool
    printed, then tracecvt's figures the tool did not print (``agrees`` None: nothing to
    compare); values are JSON numbers at the printed precision (``decimals``)."""
    ours = {f.key: f for f in figures}
    rows = []
    for key, ref in reference.items():
        f = ours.get(key)
        agrees = f is not None and f.agrees(ref)
        row = {"figure": key, "unit": unit_of(key),
               "decimals": f.decimals if f is not None else _decimals(ref),
               "tracecvt": f.number if f else None, "reference": _reference(ref, f),
               "agrees": agrees}
        if agrees and f.printed != ref:
            row["half_way"] = True      # an exact tie the tool's float sum rounded the other way
        rows.append(row)
    for key, f in ours.items():
        if key not in reference:
            rows.append({"figure": key, "unit": f.unit, "decimals": f.decimals,
                         "tracecvt": f.number, "reference": None, "agrees": None})
    return rows
