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

from ..model import UNTRUSTED_FLOW, UNTRUSTED_PREDECESSORS, Slice, clock_skew_text


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


def not_drawn_warning(n: int, total: int, what: str, perfetto: bool = False,
                      skew: list | None = None) -> str:
    """The writer's line on the dependencies it left out; ``skew``: the run's
    ``model.CLOCK_SKEW`` entries, the reason real runs have such dependencies."""
    because = "".join(f"; {clock_skew_text(e)}, times kept as recorded" for e in skew or ())
    return (f"{what}: {n} of {total} dependencies are not drawn: "
            + ("the untrusted ones (a .pftrace flow cannot carry a name) and " if perfetto
               else "")
            + "those whose successor starts before their predecessor (Perfetto directs every "
            "flow from the slice that starts first: it would draw them reversed)" + because
            + f"; the successors' args.{UNTRUSTED_PREDECESSORS} name the untrusted ones")

