"""The checks made once every packet was read: tracks, slice nesting, flows."""

from __future__ import annotations

from typing import Any

from .report import Report
from .schema import BEGIN


class TraceChecks:
    """End-of-trace checks of ``_Validator`` (which holds the state they read)."""

    report: Report
    index: int
    seqs: dict
    descriptors: dict[int, list]
    slice_events: dict[Any, list]
    instants: dict[Any, list]
    counter_uses: dict[Any, list]
    flows: dict[int, Any]

    # -- end of trace -----------------------------------------------------------------------
    def finish(self) -> Report:
        report = self.report
        report.packets = self.index
        report.sequences = len(self.seqs)
        if not self.index and "not-a-trace" not in report.problems:
            report.add("no-packets", -1, "no TracePacket in the file")
        self._check_tracks()
        self._check_slices()
        self._check_flows()
        return report

    def _check_tracks(self) -> None:
        report = self.report
        add = report.add
        desc = self.descriptors
        report.tracks = len(desc) - (0 in desc)     # the root descriptor holds no events
        report.counter_tracks = sum(1 for d in desc.values() if d[1])
        for uuid, (parent, _, index, name) in desc.items():
            if parent and parent not in desc:
                add("unknown-parent", index, f"track {uuid} ({name!r}): parent {parent}")
        # Cycles: follow parents with memoised results.
        state: dict[int, int] = {}            # 1: on the current path, 2: known acyclic
        for uuid in desc:
            path = []
            u = uuid
            while u in desc and state.get(u) is None:
                state[u] = 1
                path.append(u)
                u = desc[u][0]
                if not u:               # no parent (the root descriptor, uuid 0, has none)
                    u = None
                    break
            if u in desc and state.get(u) == 1:
                d = desc[u]
                add("track-cycle", d[2], f"track {u} ({d[3]!r}) is its own ancestor")
            for v in path:
                state[v] = 2
        # Every used uuid described, kinds matching.
        uses: dict[Any, list] = {}
        for key, evs in self.slice_events.items():
            uses[key] = [evs[0][2], len(evs), False]
        for key, (first, count) in self.instants.items():
            cur = uses.get(key)
            if cur is None:
                uses[key] = [first, count, False]
            else:
                cur[0], cur[1] = min(cur[0], first), cur[1] + count
            report.instants += count
        for uuid, (first, count, _) in uses.items():
            if uuid.__class__ is not int:
                continue
            d = desc.get(uuid)
            if d is None:
                add("unknown-track", first, f"track_uuid {uuid}", count)
            else:
                if d[1]:
                    add("slice-on-counter-track", first, f"track {uuid} ({d[3]!r})", count)
                if d[2] > first:
                    add("descriptor-after-use", first, f"track {uuid} ({d[3]!r}) described at "
                        f"packet {d[2]}")
        for uuid, (first, count) in self.counter_uses.items():
            if uuid.__class__ is not int:
                add("counter-on-non-counter-track", first,
                    "counter event on the sequence's default track", count)
                continue
            d = desc.get(uuid)
            if d is None:
                add("unknown-track", first, f"counter track_uuid {uuid}", count)
            elif not d[1]:
                add("counter-on-non-counter-track", first, f"track {uuid} ({d[3]!r})", count)
            elif d[2] > first:
                add("descriptor-after-use", first, f"track {uuid} ({d[3]!r}) described at "
                    f"packet {d[2]}")

    def _check_slices(self) -> None:
        report = self.report
        add = report.add
        for key, evs in self.slice_events.items():
            where = f"track {key}" if key.__class__ is int else f"{key[0]} track"
            begins = 0
            prev = -1 << 64
            in_order = True
            for ts, typ, _ in evs:
                if ts < prev:
                    in_order = False
                prev = ts
                if typ == BEGIN:
                    begins += 1
            report.slices += begins
            if in_order:
                unmatched, open_, _ = _pair(evs)
                self._report_balance(where, unmatched, open_)
                continue
            unmatched_f, open_f, pairs_f = _pair(evs)
            negative = [(b, e) for b, e in pairs_f if e[0] < b[0]]
            if negative:
                b, e = negative[0]
                add("negative-duration", e[2], f"{where}: slice begun at packet {b[2]} "
                    f"(ts {b[0]}) ends at ts {e[0]}", len(negative))
                continue
            ordered = sorted(evs, key=lambda ev: ev[0])      # stable: file order on ties
            unmatched, open_, pairs_s = _pair(ordered)
            self._report_balance(where, unmatched, open_)
            if not unmatched_f and not open_f:
                sorted_pairs = {(b[2], e[2]) for b, e in pairs_s}
                crossing = [(b, e) for b, e in pairs_f if (b[2], e[2]) not in sorted_pairs]
                if crossing:
                    b, e = min(crossing, key=lambda be: be[1][2])
                    add("improper-nesting", e[2], f"{where}: slice [{b[0]}, {e[0]}] (packets "
                        f"{b[2]}-{e[2]}) overlaps another slice without nesting",
                        len(crossing))

    def _report_balance(self, where: str, unmatched: list, open_: list) -> None:
        if unmatched:
            ts, _, index = unmatched[0]
            self.report.add("end-without-begin", index, f"{where}: SLICE_END at ts {ts}",
                            len(unmatched))
        if open_:
            ts, _, index = open_[0]
            self.report.add("unterminated-slice", index, f"{where}: SLICE_BEGIN at ts {ts}",
                            len(open_))

    def _check_flows(self) -> None:
        report = self.report
        add = report.add
        report.flows = len(self.flows)
        for fid, occ in self.flows.items():
            if occ.__class__ is tuple:
                ts, index, term = occ
                if term:
                    add("flow-end-without-start", index, f"flow {fid}: terminates at ts {ts} "
                        "and never starts")
                else:
                    add("flow-one-end", index, f"flow {fid}: starts at ts {ts} and has no "
                        "other end")
                continue
            # Trace Processor walks a flow id's events in time order: a plain id starts a
            # flow or continues it, a terminating id ends it.
            occ.sort(key=lambda o: (o[0], o[1]))
            open_at = None
            linked = False
            for ts, index, term in occ:
                if term:
                    if open_at is None:
                        add("flow-end-without-start", index,
                            f"flow {fid}: terminates at ts {ts} before any start")
                    else:
                        open_at, linked = None, False
                elif open_at is None:
                    open_at, linked = (ts, index), False
                else:
                    linked = True
            if open_at is not None and not linked:
                add("flow-one-end", open_at[1], f"flow {fid}: starts at ts {open_at[0]} and "
                    "has no other end")


def _pair(evs) -> tuple[list, list, list]:
    """Match BEGIN/END like Trace Processor: an END closes the most recent open BEGIN."""
    stack: list = []
    unmatched: list = []
    pairs: list = []
    for ev in evs:
        if ev[1] == BEGIN:
            stack.append(ev)
        elif stack:
            pairs.append((stack.pop(), ev))
        else:
            unmatched.append(ev)
    return unmatched, stack, pairs

