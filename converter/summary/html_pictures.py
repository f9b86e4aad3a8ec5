"""The HTML summary's pictures, as inline SVG: per-lane utilization bars (busy, wait
predecessor, wait schedule / wait start / idle, tail, as shares of the run), bubble breakdown
by cause per lane kind, a busy/idle timeline strip per lane and the critical path as a strip
of segments (html.py puts them in the page)."""

from __future__ import annotations

from html import escape
from typing import Any

from .markdown import causes, num, pct_, us_

W = 920                           # picture width in px
PALETTE = ["#3b6fb6", "#3a9a5b", "#d08a2c", "#8d5ab8", "#c2464b", "#3aa3a8", "#8a8a3a",
           "#b8578f"]
CAUSE_COLORS = {"busy": None, "wait predecessor": "#e07a5f", "wait schedule": "#f2c14e",
                "idle": "#b0b7c3", "wait start": "#9c89b8", "tail": "#e9ecf1"}
STRIP_BINS = 240
MAX_STRIP_LANES = 160


def esc(v: Any) -> str:
    return escape(str(v), quote=True)


def kind_colors(kinds: list[str]) -> dict[str, str]:
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kinds)}


# -- data for the pictures ----------------------------------------------------------------

def visual(trace, analysis, bins: int = STRIP_BINS) -> dict[str, Any]:
    """Busy fraction per lane per time bin, and the critical path's segments, from the
    analysis' lanes (O(slices + bins touched))."""
    tl = analysis.timeline
    out: dict[str, Any] = {"lanes": [], "cp": [], "start": tl.start, "end": tl.end}
    if tl.start is None or not analysis.bubbles.computed:
        return out
    t0, span = tl.start, max(tl.end - tl.start, 1)
    slices = trace.slices
    width = span / bins
    for lane in tl.lanes[:MAX_STRIP_LANES]:
        busy = [0.0] * bins
        cur = t0
        for i in lane.slices:
            s = slices[i]
            a, b = s.ts, s.ts + s.dur
            if a < cur:
                a = cur
            if b <= a:
                continue
            cur = b
            ka = int((a - t0) / width)
            kb = min(int((b - t0) / width), bins - 1)
            if ka == kb:
                busy[ka] += b - a
                continue
            busy[ka] += t0 + (ka + 1) * width - a
            for k in range(ka + 1, kb):
                busy[k] += width
            busy[kb] += b - (t0 + kb * width)
        out["lanes"].append({"name": lane.name, "kind": lane.kind,
                             "busy": [min(1.0, v / width) for v in busy]})
    cp = analysis.critical_path
    if cp.computed:
        for seg in cp.segments[:4000]:
            s = slices[seg.slice]
            kind = tl.lanes[tl.lane_of[seg.slice]].kind
            out["cp"].append({"kind": seg.kind, "ts": seg.ts - t0, "dur": seg.dur,
                              "name": s.name if seg.kind == "task" else "wait schedule",
                              "lane": seg.lane, "lane_kind": kind})
    return out


# -- pictures -----------------------------------------------------------------------------

def _anchor(p: int) -> str:
    return "start" if p == 0 else ("end" if p == 100 else "middle")


def _ticks(left: float, bar: float, y: float, total_us: float) -> list[str]:
    """Axis labels at 0, 25, ... 100 % of ``total_us`` along a bar."""
    return [f'<text x="{left + bar * p / 100:.1f}" y="{y}" class="axis" '
            f'text-anchor="{_anchor(p)}">{num(total_us * p / 100, 1)} µs</text>'
            for p in range(0, 101, 25)]


def _svg(id_: str, width: float, height: float, label: str) -> str:
    """The opening tag of a picture."""
    return (f'<svg id="{id_}" class="chart" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{label}">')


def _fill(cause: str, kind: str, colors: dict[str, str]) -> str:
    """A part's colour: the lane kind's for busy time, the cause's for a bubble."""
    return colors.get(kind, PALETTE[0]) if cause == "busy" else CAUSE_COLORS[cause]


def _tip(tip: str) -> str:
    """A hover tip's attribute and title, to close an element's opening tag with."""
    return f' data-tip="{esc(tip)}"><title>{esc(tip)}</title>'


def _shares(row: dict[str, Any], graph: bool) -> list[tuple[str, float]]:
    """(part, µs) of a lane or kind row: busy, then its bubbles by cause."""
    return [("busy", row["busy_us"] or 0.0)] + [
        (cause, row[key] or 0.0) for cause, key in causes(graph, "wait_start_us" in row)]


def util_bars(d: dict[str, Any], colors: dict[str, str]) -> str:
    bub = d["bubbles"]
    lanes = bub["lanes"]
    makespan = (d.get("time_span") or {}).get("makespan_us") or 0
    if not lanes or not makespan:
        return "<p>No lanes with tasks.</p>"
    n = len(lanes)
    h, top, left = 180, 10, 36
    col = max(2.0, min(24.0, (W - left - 40) / n))
    gap = 1 if col > 4 else 0
    width = left + col * n + 40
    if "wait_start_us" in lanes[0]:            # room for the legend's fourth cause
        width = max(width, 720)
    graph = bub.get("cause_model") == "task graph"
    parts = [_svg("util-bars", width, h + top + 46, "utilization per lane")]
    for p in (0, 25, 50, 75, 100):
        y = top + h - h * p / 100
        parts.append(f'<line x1="{left}" x2="{width - 40:.0f}" y1="{y:.1f}" y2="{y:.1f}" '
                     'class="grid"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="axis" '
                     f'text-anchor="end">{p}%</text>')
    for k, lane in enumerate(lanes):
        x = left + k * col
        shares = _shares(lane, graph)
        shares.append(("tail", lane["tail_us"] or 0.0))
        y = top + h
        tip = (f"{lane['name']}: utilization {pct_(lane['utilization_pct'])}, bubble rate "
               f"{pct_(lane['bubble_rate_pct'])}, busy {us_(lane['busy_us'])}, wait "
               f"{us_(lane['total_wait_us'])}")
        parts.append('<g class="lane-bar"' + _tip(tip))
        for cause, v in shares:
            bh = h * v / makespan
            if bh <= 0:
                continue
            y -= bh
            parts.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{col - gap:.2f}" '
                         f'height="{bh:.2f}" fill="{_fill(cause, lane["kind"], colors)}" '
                         f'class="c-{cause.replace(" ", "-")}"/>')
        parts.append("</g>")
    # kind labels under the columns
    start = 0
    for k in range(1, n + 1):
        if k == n or lanes[k]["kind"] != lanes[start]["kind"]:
            x = left + (start + k) / 2 * col
            parts.append(f'<text x="{x:.1f}" y="{top + h + 16}" class="axis" '
                         f'text-anchor="middle">{esc(lanes[start]["kind"])} '
                         f'({k - start})</text>')
            start = k
    parts.append(_legend(graph, colors, top + h + 30, left, "wait_start_us" in lanes[0]))
    parts.append("</svg>")
    return "".join(parts)


def _legend(graph: bool, colors: dict[str, str], y: int, x0: int, start: bool = False) -> str:
    items = [(f"busy ({k})", c) for k, c in colors.items()]
    items += [(cause, CAUSE_COLORS[cause]) for cause, _ in causes(graph, start)]
    items.append(("after the lane's last task", CAUSE_COLORS["tail"]))
    out = []
    x = x0
    for label, color in items:
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}" '
                   'stroke="#999" stroke-width="0.5"/>'
                   f'<text x="{x + 14}" y="{y + 9}" class="axis">{esc(label)}</text>')
        x += 22 + 6.2 * len(label)
    return "".join(out)


def bubble_breakdown(d: dict[str, Any], colors: dict[str, str]) -> str:
    bub = d["bubbles"]
    kinds = bub["kinds"]
    makespan = (d.get("time_span") or {}).get("makespan_us") or 0
    if not kinds or not makespan:
        return "<p>No bubble figures.</p>"
    graph = bub.get("cause_model") == "task graph"
    row, left, bar = 26, 150, W - 150 - 120
    height = row * len(kinds) + 40
    parts = [_svg("bubble-breakdown", W, height, "bubbles by cause")]
    for k, kind in enumerate(kinds):
        total = (kind["lanes_used"] or 0) * makespan
        if not total:
            continue
        y = 6 + k * row
        what = "pseudo-core" if kind.get("pseudo_core") else f"{kind['lanes_used']} lanes"
        parts.append(f'<text x="{left - 8}" y="{y + 15}" class="label" text-anchor="end">'
                     f'{esc(kind["name"])} ({esc(what)})</text>')
        shares = _shares(kind, graph)
        used = sum(v for _, v in shares)
        shares.append(("tail", max(total - used, 0.0)))
        x = float(left)
        for cause, v in shares:
            w = bar * v / total
            if w <= 0:
                continue
            tip = f"{kind['name']} {cause}: {us_(v)} ({100 * v / total:.1f} % of lane time)"
            parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="20" '
                         f'fill="{_fill(cause, kind["name"], colors)}"{_tip(tip)}</rect>')
            x += w
        parts.append(f'<text x="{left + bar + 8}" y="{y + 15}" class="label">'
                     f'{pct_(kind["bubble_rate_pct"])} bubbles</text>')
    parts.append(_legend(graph, {k["name"]: colors.get(k["name"], PALETTE[0])
                                 for k in kinds}, height - 22, left,
                         "wait_start_us" in kinds[0]))
    parts.append("</svg>")
    return "".join(parts)


def timeline_strip(v: dict[str, Any], colors: dict[str, str], makespan_us: float) -> str:
    lanes = v.get("lanes") or []
    if not lanes:
        return "<p>No timeline.</p>"
    row, left = 8, 90
    bar = W - left - 10
    height = row * len(lanes) + 24
    bins = len(lanes[0]["busy"])
    bw = bar / bins
    parts = [_svg("timeline-strip", W, height, "busy and idle per lane")]
    for k, lane in enumerate(lanes):
        y = k * row
        color = colors.get(lane["kind"], PALETTE[0])
        if k % max(1, len(lanes) // 24) == 0 or len(lanes) <= 24:
            parts.append(f'<text x="{left - 6}" y="{y + row - 1}" class="tiny" '
                         f'text-anchor="end">{esc(lane["name"])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{bar}" height="{row - 1}" '
                     'class="idle-bg"/>')
        busy = lane["busy"]
        j = 0
        while j < bins:
            level = round(busy[j] * 4) / 4
            if level <= 0:
                j += 1
                continue
            start = j
            while j < bins and round(busy[j] * 4) / 4 == level:
                j += 1
            parts.append(f'<rect x="{left + start * bw:.2f}" y="{y}" '
                         f'width="{(j - start) * bw:.2f}" height="{row - 1}" fill="{color}" '
                         f'fill-opacity="{level:.2f}"/>')
    parts += _ticks(left, bar, len(lanes) * row + 14, makespan_us)
    parts.append("</svg>")
    return "".join(parts)


def cp_strip(v: dict[str, Any], colors: dict[str, str], length_us: float) -> str:
    segs = v.get("cp") or []
    if not segs:
        return ""
    left, bar = 10, W - 20
    span = max(sum(s["dur"] for s in segs), 1)
    origin = segs[0]["ts"]
    parts = [_svg("critical-path-strip", W, 54, "critical path")]
    for s in segs:
        x = left + bar * (s["ts"] - origin) / span
        w = max(bar * s["dur"] / span, 0.5 if s["dur"] else 0)
        if w <= 0:
            continue
        fill = _fill("busy" if s["kind"] == "task" else "wait schedule", s["lane_kind"], colors)
        tip = f"{s['name']} on {s['lane']}: {us_(s['dur'] / 1000)}"
        parts.append(f'<rect x="{x:.2f}" y="6" width="{w:.2f}" height="24" fill="{fill}" '
                     f'class="cp-{s["kind"]}"{_tip(tip)}</rect>')
    parts += _ticks(left, bar, 46, length_us)
    parts.append("</svg>")
    return "".join(parts)
