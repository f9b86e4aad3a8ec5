"""Where a finding is in the trace: the interval and the lanes it is about, the slice to
mark, and the Perfetto UI deep-link parameters that show them.

A ``Place`` is made in model time (ns on the source's clock, ``Trace.meta.clock``);
``at_dict`` gives it in trace time too: ns from the trace's time 0 (``Trace.time_start()``,
what both writers subtract), which is the ``ts`` Trace Processor and the Perfetto UI see.
The deep-link parameters are those of Perfetto UI v58 (``ui/src/public/route_schema.ts``,
plugin ``dev.perfetto.DeeplinkQuerystring``, ``core/load_trace.ts``):

* ``visStart`` / ``visEnd``: raw trace timestamps (ns); the UI zooms so that this span
  takes the middle 80 % of the window (``panSpanIntoView(..., {align: 'zoom'})``, margin
  10 %), and only when both lie within the trace's bounds.  The span given is the window
  wanted (the finding's interval) shrunk by a tenth of its
  length at each end, so the window shows just that;
* ``startupCommands``: a JSON array of stable commands run once the trace is loaded:
  ``dev.perfetto.PinTracksByRegex`` and ``dev.perfetto.ExpandTracksByRegex`` with a regex
  matched against the track's path in the UI ("process > ... > thread", the UI adding pid
  and tid after the names) and the explicit ``"path"`` argument (without it the UI prompts);
  ``dev.perfetto.AddNoteAtTimestamp`` marks the finding's slice (its start, its name).

The links do not use ``ts`` + ``dur`` (select a slice): the v58 UI then scrolls to the
slice once its details are loaded, and when that comes within the 300 ms animation of the
``visStart``/``visEnd`` zoom it cancels the zoom (``timeline.animateToWindow``), leaving
the whole trace in view -- on a fast machine nearly every time.
"""

from __future__ import annotations

import heapq
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..model import Trace
from .bubbles import CAUSES, WAIT_SCHEDULE, us

if TYPE_CHECKING:
    from .critical_path import CriticalPath, Segment
    from .labels import LabelTable
    from .timeline import Timeline

PIN_LANES = 4                     # lanes a deep link pins at most


Selection = tuple[int, int, str, int]     # (ts, dur, name, track), model ns


@dataclass
class Place:
    """An interval [start, end] (model ns: the window a link shows), the lanes (track
    indexes) it is about, most important first, and the slice a link marks (its longest):
    (ts, dur, name, track), a slice of the model or one the derived tracks draw (a
    critical-path wait, a bubble)."""

    start: int
    end: int
    lanes: list[int] = field(default_factory=list)
    select: Selection | None = None

    @classmethod
    def of_slices(cls, trace: Trace, ids: list[int]) -> "Place | None":
        """The interval covering slices ``ids``, their lanes (by time on them), marking
        the longest."""
        if not ids:
            return None
        slices = trace.slices
        time: dict[int, int] = {}
        for i in ids:
            time[slices[i].track] = time.get(slices[i].track, 0) + slices[i].dur
        i = max(ids, key=lambda i: slices[i].dur)
        return cls(min(slices[i].ts for i in ids),
                   max(slices[i].ts + slices[i].dur for i in ids),
                   sorted(time, key=lambda t: -time[t]),
                   (slices[i].ts, slices[i].dur, slices[i].name, slices[i].track))


def of_segments(trace: Trace, segs: list["Segment"], start: int | None = None,
                end: int | None = None) -> Place | None:
    """The critical-path segments ``segs``: their span (or [start, end]), their lanes by
    time on them, the longest marked (as the critical-path lane draws it: a task from
    its first start to its end, a wait as "wait schedule")."""
    if not segs:
        return None
    slices = trace.slices
    time: dict[int, int] = {}
    for seg in segs:
        t = slices[seg.slice].track
        time[t] = time.get(t, 0) + seg.dur
    best = max(segs, key=lambda seg: seg.dur)
    return Place(min(seg.ts for seg in segs) if start is None else start,
                 max(seg.ts + seg.dur for seg in segs) if end is None else end,
                 sorted(time, key=lambda t: -time[t]),
                 (best.ts, best.dur, slices[best.slice].name if best.kind == "task"
                  else WAIT_SCHEDULE, slices[best.slice].track))


def of_label(trace: Trace, cp: "CriticalPath", table: "LabelTable", label: str
             ) -> Place | None:
    """The critical path's tasks labelled ``label`` in ``table``."""
    from .labels import _label, label_args
    arg = dict(label_args(trace)).get(table.key)
    slices = trace.slices

    def label_of(i: int) -> str:
        s = slices[i]
        return _label(s.all_args.get(arg), s.cat) if arg is not None else s.name
    return of_segments(trace, [seg for seg in cp.segments
                               if seg.kind == "task" and label_of(seg.slice) == label])


def of_gaps(trace: Trace, tl: "Timeline", gaps: list[tuple], start: int | None = None,
            end: int | None = None) -> Place | None:
    """Bubbles (``Bubbles.gaps`` entries): their span (or [start, end]), their lanes by
    bubble time, the largest marked (drawn on "<lane> · bubbles", named by cause)."""
    if not gaps:
        return None
    time: dict[int, int] = {}
    for g in gaps:
        t = tl.lanes[g[0]].track
        time[t] = time.get(t, 0) + g[2] - g[1]
    best = max(gaps, key=lambda g: g[2] - g[1])
    return Place(min(g[1] for g in gaps) if start is None else start,
                 max(g[2] for g in gaps) if end is None else end,
                 sorted(time, key=lambda t: -time[t]),
                 (best[1], best[2] - best[1], CAUSES[best[3]], tl.lanes[best[0]].track))


def largest_bubbles(trace: Trace, tl: "Timeline", gaps: list[tuple], origin: int,
                    n: int = 10) -> list[dict[str, Any]]:
    """The ``n`` longest bubbles: lane, cause, duration, the task after it (and the one it
    waits for), and where."""
    slices = trace.slices
    out = []
    for g in heapq.nlargest(n, gaps, key=lambda g: (g[2] - g[1], -g[1])):
        li, start, end, cause, nxt, by = g
        out.append({"lane": tl.lanes[li].name, "cause": CAUSES[cause],
                    "duration_us": us(end - start),
                    "before_task": slices[nxt].name if nxt >= 0 else None,
                    "waiting_for": slices[by].name if by >= 0 else None,
                    "at": at_dict(trace, of_gaps(trace, tl, [g]), origin)})
    return out


def _escape(text: str) -> str:
    """``text`` as a literal in a JavaScript RegExp (the UI's ``new RegExp(pattern)``)."""
    return re.sub(r"[.*+?^${}()|[\]\\/]", lambda m: "\\" + m.group(0), text)


def _lane_regex(trace: Trace, track: int) -> str:
    """A regex for the lane's path in the Perfetto UI: its top-level group (a process,
    "NAME PID"), any groups between, the lane (a thread, "NAME TID"; the writers may put
    the group's name in front, " · NAME", and "#2" after an overlap lane) and its bubble
    lane ("NAME · bubbles")."""
    tracks = trace.tracks
    root = track
    while tracks[root].parent is not None:
        root = tracks[root].parent
    lane = _escape(tracks[track].name)
    tail = f"(.* · )?{lane}( #\\d+)?( · bubbles)?( \\d+)?$"
    if root == track:
        return f"^(.+ > )?{tail}"
    return f"^{_escape(tracks[root].name)}( \\d+)? > (.+ > )?{tail}"


def _group_regex(trace: Trace, track: int) -> str:
    tracks = trace.tracks
    root = track
    while tracks[root].parent is not None:
        root = tracks[root].parent
    return f"^{_escape(tracks[root].name)}( \\d+)?$"


def view_span(start: int, end: int) -> tuple[int, int]:
    """(visStart, visEnd) that make the UI's window the interval [start, end] (trace ns):
    the UI pads the span it is given by a quarter of it (10 % of the window each side)."""
    length = end - start
    if length < 10:
        return start, end
    pad = -(-length // 10)
    return start + pad, end - pad


def perfetto_params(trace: Trace, place: Place, origin: int) -> dict[str, Any]:
    """The deep-link parameters (typed) for ``place``."""
    vs, ve = view_span(place.start - origin, place.end - origin)
    out: dict[str, Any] = {"vis_start_ns": vs, "vis_end_ns": ve}
    lanes = place.lanes[:PIN_LANES]
    commands = [{"id": "dev.perfetto.PinTracksByRegex",
                 "args": [_lane_regex(trace, t), "path"]} for t in lanes]
    groups = list(dict.fromkeys(_group_regex(trace, t) for t in lanes
                                if trace.tracks[t].parent is not None))
    commands += [{"id": "dev.perfetto.ExpandTracksByRegex", "args": [g, "path"]}
                 for g in groups]
    sel = place.select
    if sel is not None:
        commands.append({"id": "dev.perfetto.AddNoteAtTimestamp",
                         "args": [str(sel[0] - origin),
                                  f"{sel[2]} on {trace.tracks[sel[3]].name}"]})
    if commands:
        out["startup_commands"] = commands
    return out


# The UI's route arguments (their names in the link) of perfetto_params' keys.
ROUTE_ARGS = {"vis_start_ns": "visStart", "vis_end_ns": "visEnd",
              "startup_commands": "startupCommands"}


def encode_params(params: dict[str, Any]) -> str:
    """``params`` (perfetto_params' typed keys) as the UI's route arguments
    (``ROUTE_ARGS``: ``&``-joined, URL-encoded; startupCommands as compact JSON), to append
    after ``#!/?url=...&``."""
    parts = []
    for key, arg in ROUTE_ARGS.items():
        if key not in params:
            continue
        v = params[key]
        if key == "startup_commands":
            v = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        parts.append(f"{arg}={urllib.parse.quote(str(v), safe='')}")
    return "&".join(parts)


def at_dict(trace: Trace, place: Place | None, origin: int) -> dict[str, Any] | None:
    """The summary's ``at`` of a finding: trace-time ns, source-clock ns, lanes, the slice
    to mark and the deep-link parameters."""
    if place is None:
        return None
    tracks = trace.tracks
    sel = place.select
    params = perfetto_params(trace, place, origin)
    return {
        "start_ns": place.start - origin, "end_ns": place.end - origin,
        "clock": trace.meta.clock.name,
        "clock_start_ns": place.start, "clock_end_ns": place.end,
        "lanes": [trace.path(t) for t in place.lanes],
        "slice": None if sel is None else {
            "name": sel[2], "lane": tracks[sel[3]].name, "ts_ns": sel[0] - origin,
            "dur_ns": sel[1]},
        "perfetto": {**params, "query": encode_params(params)},
    }


# -- the summary's findings, numbered ----------------------------------------------------

def _places(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what, its ``at`` dict) of every finding of a summary dict, in the order they are
    numbered: opportunities, the critical path, its longest segments (the longest waits
    among them), the largest bubbles, the NCU kernel rows."""
    for key in ("opportunities", "more_opportunities"):
        for o in data.get(key) or []:
            yield o.get("title") or "opportunity", o.get("at")
    cp = data.get("critical_path") or {}
    if cp.get("computed"):
        yield "critical path", cp.get("at")
        for s in cp.get("longest_segments") or []:
            yield f"critical path {s.get('kind')}: {s.get('name')} on {s.get('lane')}", \
                s.get("at")
    for b in (data.get("bubbles") or {}).get("largest") or []:
        yield f"bubble: {b.get('cause')} on {b.get('lane')}", b.get("at")
    for k in (data.get("ncu") or {}).get("kernels") or []:
        yield f"kernel {k.get('name')}", k.get("at")


def number_findings(data: dict[str, Any]) -> None:
    """Give every finding's ``at`` its number (``finding``: 1, 2, ...): what
    ``tracecvt open RUN --at N`` opens."""
    n = 0
    for _, at in _places(data):
        if at is not None:
            n += 1
            at["finding"] = n


def findings(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(what, at) of every numbered finding, in number order."""
    return [(what, at) for what, at in _places(data) if at is not None]


def lane_label(at: dict[str, Any], limit: int = 2) -> str:
    """The lanes of an ``at`` for people: the lanes' own names, "(+N)" for more."""
    names = [p.rsplit(" / ", 1)[-1] for p in at.get("lanes") or []]
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" (+{more})" if more > 0 else "")


__all__ = ["Place", "at_dict", "encode_params", "findings", "lane_label", "number_findings",
           "perfetto_params", "view_span"]
