"""Which dependencies a trace can draw in their true direction (both writers).

Trace Processor directs every flow from the slice that starts first (its FlowTracker orders
the two ends by their slices' starts), and binds a terminating flow id only after the flow's
start has been met.  A dependency whose successor starts before its predecessor (a source's
quirk can make them, the reader then marks them ``model.UNTRUSTED_FLOW``; or two clocks that
differ: a device task starting before the host call that launched it) can therefore only be
drawn backwards, from the successor to the predecessor, whatever event carries its ends
(checked with trace_processor: an ``f`` or terminating id bound inside the successor after
the predecessor's start still comes out reversed).  The writers leave such flows out, count
them (``flows_not_drawn``) and say so in a warning, with the clock skew the reader measured
where it did (``model.CLOCK_SKEW``); the destination's args name the predecessor where the
reader marked it (``model.UNTRUSTED_PREDECESSORS``).  The .pftrace also
leaves out the untrusted flows it could draw: its flows have no name to mark them by.

* ``.pftrace``: the source's ``flow_ids`` ride on its BEGIN; the destination's
  ``terminating_flow_ids`` on its BEGIN when it starts later, on its END when both start at the
  same ns (Trace Processor may meet two BEGINs at one ns in either order; the destination's
  END comes after the source's BEGIN as long as the destination lasts).
* Chrome JSON: ``s`` at the source's end (minus 1 ns) or start, ``f`` at the destination's
  start (``writers.chrome``); a destination starting with its source gets its ``f`` right
  after the ``s`` in the file, which is the order Perfetto keeps for events at one ts.
"""

from __future__ import annotations

import numpy as np

from ..model import (CLOCK_SKEW, UNTRUSTED_FLOW, UNTRUSTED_PREDECESSORS, Slice, Trace,
                     clock_skew_text)


def drawable(src: Slice, dst: Slice, writer: str, name: str = "") -> bool:
    """True when ``writer`` ("perfetto" or "chrome") draws the flow src -> dst, named
    ``name``, as it is.  A .pftrace flow carries no name: an untrusted dependency
    (``model.UNTRUSTED_FLOW``) would look like any other arrow there, so it is left out (its
    successor's args name it); Chrome JSON draws it under its own name and category."""
    if writer == "perfetto" and name == UNTRUSTED_FLOW:
        return False
    if dst.ts > src.ts:
        return True
    if dst.ts < src.ts:
        return False
    return dst.dur > 0 if writer == "perfetto" else True


def drawable_columns(src_ts: np.ndarray, dst_ts: np.ndarray, dst_end: np.ndarray,
                     writer: str, untrusted: np.ndarray | None = None) -> np.ndarray:
    """``drawable`` a column at a time: per flow (its source's start, its destination's
    start and end; ``untrusted``: named ``model.UNTRUSTED_FLOW``), whether ``writer`` draws
    it."""
    if writer != "perfetto":
        return dst_ts >= src_ts
    ok = (dst_ts > src_ts) | ((dst_ts == src_ts) & (dst_end > dst_ts))
    return ok if untrusted is None else ok & ~untrusted


def not_drawn_warning(n: int, total: int, what: str, untrusted: int = 0,
                      skew: list | None = None) -> str:
    """The writer's line on the ``n`` dependencies it left out, ``untrusted`` of them
    untrusted (``model.UNTRUSTED_FLOW``, which only a .pftrace leaves out); ``skew``: the
    run's ``model.CLOCK_SKEW`` entries, the reason real runs have reversed ones.  Each kind
    is named only when some are left out."""
    because = "".join(f"; {clock_skew_text(e)}, times kept as recorded" for e in skew or ())
    parts = []
    if untrusted:
        parts.append(f"{untrusted} untrusted (a .pftrace flow cannot carry a name; the "
                     f"successors' args.{UNTRUSTED_PREDECESSORS} name them)")
    if n > untrusted:
        parts.append(f"{n - untrusted} whose successor starts before their predecessor "
                     "(Perfetto directs every flow from the slice that starts first: it would "
                     "draw them reversed)" + because)
    return f"{what}: {n} of {total} dependencies are not drawn: " + "; ".join(parts)


def not_drawn(trace: Trace, writer: str) -> tuple[int, int]:
    """(flows ``writer`` leaves out, how many of them are untrusted, ``model.UNTRUSTED_FLOW``:
    a .pftrace leaves every one out, a Chrome JSON those it leaves out for their times):
    when they are all untrusted, its warning shares their cause (``RunMeta.causes``)."""
    slices = trace.slices
    n = len(slices)
    out = untrusted = 0
    for f in trace.flows:
        if 0 <= f.src < n and 0 <= f.dst < n and \
                not drawable(slices[f.src], slices[f.dst], writer, f.name):
            out += 1
            untrusted += f.name == UNTRUSTED_FLOW
    return out, untrusted


def not_drawn_lines(trace: Trace, writer: str, what: str,
                    counted: tuple[int, int] | None = None) -> tuple[str | None, str | None]:
    """The warning about the flows ``writer`` leaves out of ``what`` (None when it draws
    them all), and its cause: the untrusted flows' (``RunMeta.causes[UNTRUSTED_FLOW]``)
    when they are all it leaves out; the run's clock skew (``model.CLOCK_SKEW``) when the
    device tasks that start before their launch are all it leaves out.  ``counted``:
    ``not_drawn(trace, writer)`` where the writer has counted it (a pass over every flow
    less)."""
    out, untrusted = counted if counted is not None else not_drawn(trace, writer)
    if not out:
        return None, None
    skew = trace.meta.extra.get(CLOCK_SKEW)
    # (only a .pftrace leaves them out for being untrusted; a Chrome JSON draws them)
    line = not_drawn_warning(out, len(trace.flows), what,
                             untrusted if writer == "perfetto" else 0, skew=skew)
    if untrusted == out:
        return line, trace.meta.causes.get(UNTRUSTED_FLOW)
    if not untrusted and isinstance(skew, list) and skew and \
            out == sum(e.get("tasks_before_launch", 0) for e in skew):
        return line, "; ".join(clock_skew_text(e) for e in skew)
    return line, None
