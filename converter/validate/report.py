"""The report of ``tracecvt validate``: the problem kinds, the notes, their counts and text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What each problem kind means; the order is the order of the report.
PROBLEMS = {
    "not-a-trace": "the file is not a Perfetto protobuf trace",
    "no-packets": "the trace holds no packets",
    "truncated": "the file ends inside a packet",
    "undecodable-packet": "packets that do not decode as TracePacket",
    "state-not-cleared": "packets needing incremental state before their sequence cleared it "
                         "(Trace Processor drops them)",
    "missing-needs-flag": "packets defining or using interned ids without "
                          "SEQ_NEEDS_INCREMENTAL_STATE",
    "unresolved-iid": "interned ids not defined in their sequence's current state",
    "unknown-track": "events on a track_uuid without a TrackDescriptor",
    "unknown-parent": "TrackDescriptors whose parent_uuid has no descriptor",
    "track-cycle": "TrackDescriptors whose parent chain loops",
    "conflicting-descriptor": "a track_uuid described again with another parent or kind",
    "end-without-begin": "SLICE_END events with no open slice on their track",
    "unterminated-slice": "SLICE_BEGIN events never ended",
    "negative-duration": "slices that end before they begin",
    "improper-nesting": "slices that overlap without nesting (drawn with other bounds)",
    "flow-one-end": "flow ids that appear on a single event",
    "flow-end-without-start": "terminating flow ids with no earlier start",
    "counter-on-non-counter-track": "counter values on a track without a CounterDescriptor",
    "slice-on-counter-track": "slices or instants on a counter track",
    "extra-counter-mismatch": "extra counter values whose count differs from their track uuids",
    "extra-counter-lost": "extra counter values Trace Processor does not read (a 0, which ends "
                          "an event's list, or more than 8 on one event, which drops it)",
    "non-finite-counter-value": "NaN or infinite counter values",
    "timestamp-out-of-range": "timestamps above 2^63-1 (negative in Trace Processor)",
}
# Observations that do not fail validation (Trace Processor copes with them).
NOTES = {
    "non-packet-field": "top-level fields other than Trace.packet (ignored)",
    "descriptor-after-use": "tracks described only after their first event",
    "legacy-event": "events of unspecified type (legacy JSON-style phases, not checked)",
}


@dataclass
class Problem:
    kind: str
    message: str            # what the first occurrence was
    first_packet: int       # index of the first offending packet (0-based), -1: whole file
    count: int = 1


@dataclass
class Report:
    path: str | None = None
    size: int = 0
    packets: int = 0
    sequences: int = 0
    tracks: int = 0
    counter_tracks: int = 0
    slices: int = 0
    instants: int = 0
    counter_samples: int = 0
    flows: int = 0
    problems: dict[str, Problem] = field(default_factory=dict)
    notes: dict[str, Problem] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, packet: int, message: str, count: int = 1) -> None:
        table = self.problems if kind in PROBLEMS else self.notes
        p = table.get(kind)
        if p is None:
            table[kind] = Problem(kind, message, packet, count)
        else:
            p.count += count
            if 0 <= packet < p.first_packet:
                p.first_packet, p.message = packet, message

    def counts(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("packets", "sequences", "tracks", "counter_tracks",
                                              "slices", "instants", "counter_samples", "flows")}

    def to_dict(self) -> dict[str, Any]:
        def rows(table, order):
            return [{"kind": p.kind, "count": p.count, "first_packet": p.first_packet,
                     "message": p.message} for p in _in_order(table, order)]
        return {"path": self.path, "size": self.size, "ok": self.ok, **self.counts(),
                "problems": rows(self.problems, PROBLEMS), "notes": rows(self.notes, NOTES)}

    def text(self) -> str:
        name = self.path or "trace"
        lines = [f"{name}: {self.packets:,} packets on {self.sequences} sequence"
                 f"{'' if self.sequences == 1 else 's'}; {self.tracks:,} tracks "
                 f"({self.counter_tracks:,} counter), {self.slices:,} slices, "
                 f"{self.instants:,} instants, {self.flows:,} flows, "
                 f"{self.counter_samples:,} counter samples"]
        for title, table, order in (("problem", self.problems, PROBLEMS),
                                    ("note", self.notes, NOTES)):
            for p in _in_order(table, order):
                where = f"packet {p.first_packet}" if p.first_packet >= 0 else "file"
                lines.append(f"  {title}: {p.kind} x{p.count:,}: first at {where}: {p.message}")
        lines.append("ok: no problems found" if self.ok else
                     f"FAILED: {sum(p.count for p in self.problems.values()):,} problems of "
                     f"{len(self.problems)} kinds")
        return "\n".join(lines)


def _in_order(table: dict[str, Problem], order: dict[str, str]) -> list[Problem]:
    """The problems (or notes) of ``table`` in the order of ``order`` (PROBLEMS or NOTES)."""
    rank = {kind: i for i, kind in enumerate(order)}
    return sorted(table.values(), key=lambda p: rank[p.kind])

