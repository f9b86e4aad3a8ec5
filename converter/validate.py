"""``tracecvt validate TRACE``: structural checks of any Perfetto protobuf trace.

The checks follow what Trace Processor does when it imports the file, so that a trace that
passes shows every event it holds, drawn as written:

* every packet decodes completely;
* every ``track_uuid`` an event uses has a ``TrackDescriptor``, every ``parent_uuid`` exists,
  parent chains have no cycles and a re-emitted descriptor keeps its parent and kind;
* per track, BEGIN/END are balanced and properly nested and no slice ends before it begins
  (Trace Processor sorts events by time and an END closes the most recent open slice);
* interned ids (event names, categories, debug-annotation names and string values, source
  locations, log messages, ...) resolve within their sequence's current incremental state;
  packets that define or use them carry ``SEQ_NEEDS_INCREMENTAL_STATE`` (or clear the
  state), and no such packet comes before its sequence was cleared (Trace Processor drops it);
* every flow id has both ends, and no flow terminates before it starts;
* counter values are only on counter tracks, slices never are, counter values are finite.

Lenient where Trace Processor is lenient: several sequences, each with its own interned state,
``SEQ_INCREMENTAL_STATE_CLEARED`` restarting it, ``TrackEventDefaults`` supplying a
``track_uuid`` or extra counter tracks, events without a track (the sequence's legacy thread
track or the default track), descriptors re-emitted or written after their first use, events
out of timestamp order, flow ids carried on two events (an arrow without an explicit end),
legacy microsecond timestamps and sequence-scoped incremental clocks.

How it is fast: packets are parsed with a private copy of the perfetto package's schema in
which debug annotations are bytes (decoded once per distinct byte string) and the fields only
rare packets use are left out.  upb still parses every nested message with its real type (that
is the "decodes" check, in C); a packet or event holding one of the left-out fields shows it as
an unknown field and is re-read with the real schema.
"""

from __future__ import annotations

import gzip
import math
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from .cliopts import EXIT_ERROR, fail
from .model import INT64_END

EXIT_PROBLEMS = 1

SEQ_CLEARED = 1
SEQ_NEEDS = 2
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
BOOTTIME = 6                  # BuiltinClock BOOTTIME: the trace clock of proto traces

# InternedData field numbers of the tables that TrackEvent fields refer to.
I_CATEGORIES, I_NAMES, I_ARG_NAMES, I_SOURCE_LOCATIONS, I_CALLSTACKS = 1, 2, 3, 4, 7
I_LOG_BODIES, I_ARG_TYPE_NAMES, I_ARG_STRINGS, I_CORRELATION = 20, 27, 29, 43
TABLE_NAMES = {I_CATEGORIES: "category", I_NAMES: "event name", I_ARG_NAMES: "argument name",
               I_SOURCE_LOCATIONS: "source location", I_CALLSTACKS: "callstack",
               I_LOG_BODIES: "log message body", I_ARG_TYPE_NAMES: "argument type name",
               I_ARG_STRINGS: "argument string value", I_CORRELATION: "correlation id"}

CHUNK_BYTES = 64 << 20        # parse in pieces of about this size (bounded memory)

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
    "non-finite-counter-value": "NaN or infinite counter values",
    "timestamp-out-of-range": "timestamps above 2^63-1 (negative in Trace Processor)",
}
# Observations that do not fail validation (Trace Processor copes with them).
NOTES = {
    "non-packet-field": "top-level fields other than Trace.packet (ignored)",
    "descriptor-after-use": "tracks described only after their first event",
    "legacy-event": "events of unspecified type (legacy JSON-style phases, not checked)",
}

# Fields read only by the slow path: left out of the fast schema, so that their presence
# shows as an unknown field.
_RARE_PACKET_FIELDS = ("timestamp_clock_id", "incremental_state_cleared",
                       "previous_packet_dropped", "trace_packet_defaults", "clock_snapshot",
                       "thread_descriptor")
_RARE_EVENT_FIELDS = ("source_location_iid", "correlation_id_str_iid", "callstack_iid",
                      "extra_counter_track_uuids", "extra_counter_values",
                      "extra_double_counter_track_uuids", "extra_double_counter_values",
                      "flow_ids_old", "terminating_flow_ids_old", "timestamp_delta_us",
                      "timestamp_absolute_us", "log_message", "task_execution", "legacy_event")


def _build_fast_schema():
    """(Trace, TracePacket) classes of the fast schema (see the module docstring)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    fdp.name = "tracecvt_validate_fast.proto"
    messages = {m.name: m for m in fdp.message_type}
    real = {"TracePacket": pb.TracePacket, "TrackEvent": pb.TrackEvent}

    def drop(msg, names) -> None:
        numbers = {real[msg.name].DESCRIPTOR.fields_by_name[n].number for n in names}
        kept = [f for f in msg.field if f.number not in numbers]
        used = sorted({f.oneof_index for f in kept if f.HasField("oneof_index")})
        decls = [msg.oneof_decl[i] for i in used]
        remap = {old: new for new, old in enumerate(used)}
        fields = []
        for f in kept:
            f = F.FromString(f.SerializeToString())
            if f.HasField("oneof_index"):
                f.oneof_index = remap[f.oneof_index]
            fields.append(f)
        decls = [type(d).FromString(d.SerializeToString()) for d in decls]
        del msg.field[:]
        msg.field.extend(fields)
        del msg.oneof_decl[:]
        msg.oneof_decl.extend(decls)

    event = messages["TrackEvent"]
    drop(event, _RARE_EVENT_FIELDS)
    for f in event.field:
        if f.name == "debug_annotations":
            f.type = F.TYPE_BYTES
            f.ClearField("type_name")
    drop(messages["TracePacket"], _RARE_PACKET_FIELDS)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("perfetto.protos.Trace")),
            get(pool.FindMessageTypeByName("perfetto.protos.TracePacket")))


_SCHEMA: dict[str, Any] = {}


def _schema() -> dict[str, Any]:
    if not _SCHEMA:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
        _SCHEMA["pb"] = pb
        _SCHEMA["trace"], _SCHEMA["packet"] = _build_fast_schema()
    return _SCHEMA


# -- the report -----------------------------------------------------------------------------

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


# -- splitting the file into packets ---------------------------------------------------------

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]       # IndexError at the end of data
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _split(data: bytes, report: Report) -> list[tuple[int, int, int]]:
    """(header start, payload start, end) of every packet; other top-level fields are
    skipped with a note."""
    spans: list[tuple[int, int, int]] = []
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        try:
            key, pos = _varint(data, pos)
            fnum, wt = key >> 3, key & 7
            if fnum == 0 or wt in (3, 4, 6, 7):
                raise ValueError(f"invalid field key 0x{key:x}")
            if wt == 2:
                length, pos = _varint(data, pos)
                if pos + length > n:
                    report.add("truncated", len(spans),
                               f"byte {start}: a {length}-byte "
                               f"{'packet' if fnum == 1 else 'field'} but only {n - pos} bytes "
                               "remain")
                    break
                if fnum == 1:
                    spans.append((start, pos, pos + length))
                pos += length
            elif wt == 0:
                _, pos = _varint(data, pos)
            else:
                pos += 8 if wt == 1 else 4
                if pos > n:
                    raise IndexError
            if fnum != 1 or wt != 2:
                report.add("non-packet-field", len(spans),
                           f"byte {start}: field {fnum} (wire type {wt})")
        except IndexError:
            report.add("truncated", len(spans),
                       f"byte {start}: the file ends inside a field header")
            break
        except ValueError as e:
            if not spans:
                head = data[:40]
                text = head.isascii() and all(32 <= c < 127 or c in (9, 10, 13) for c in head)
                hint = f" (the file starts with text: {head.decode()[:24]!r})" if text else ""
                report.add("not-a-trace", -1, f"byte {start}: {e}{hint}")
            else:
                report.add("truncated", len(spans),
                           f"byte {start}: garbage after the last packet ({e})")
            break
    return spans


# -- the checks -----------------------------------------------------------------------------

class _Sequence:
    """Incremental state of one packet sequence, as Trace Processor keeps it."""

    _generations = 0

    __slots__ = ("valid", "cleared", "generation", "tables", "default_uuid", "default_counters",
                 "default_double_counters", "default_clock", "thread", "clocks", "clock_last",
                 "legacy_ref_us")

    def __init__(self) -> None:
        self.valid = False                  # usable: cleared, and no packet lost since
        self.cleared = False
        _Sequence._generations += 1
        self.generation = _Sequence._generations    # unique id of the current state
        self.tables: dict[int, set] = {}    # InternedData field number -> iids
        self.default_uuid = 0
        self.default_counters: tuple = ()
        self.default_double_counters: tuple = ()
        self.default_clock = 0
        self.thread: Any = None             # legacy ThreadDescriptor (pid, tid)
        # clock id -> (incremental, ns/unit, ns to add to map it to BOOTTIME, the trace clock)
        self.clocks: dict[int, tuple[bool, int, int]] = {}
        self.clock_last: dict[int, int] = {}
        self.legacy_ref_us = 0

    def clear(self) -> None:
        self.valid = self.cleared = True
        _Sequence._generations += 1
        self.generation = _Sequence._generations
        self.tables = {}
        self.default_uuid = 0
        self.default_counters = self.default_double_counters = ()
        self.default_clock = 0
        # Not clock_last: Trace Processor keeps clocks outside the incremental state, so an
        # incremental clock goes on from its last value after a clear.


class _Validator:
    def __init__(self, report: Report):
        s = _schema()
        self.pb = s["pb"]
        self.Trace = s["trace"]
        self.Packet = s["packet"]
        self.report = report
        self.seqs: dict[int, _Sequence] = {}
        self.descriptors: dict[int, list] = {}      # uuid -> [parent, is_counter, first, name]
        self.slice_events: dict[Any, list] = {}     # track key -> [(ts, type, packet)]
        self.instants: dict[Any, list] = {}         # track key -> [first packet, count]
        self.counter_uses: dict[Any, list] = {}     # track key -> [first packet, count]
        self.flows: dict[int, Any] = {}             # id -> (ts, packet, term) or a list of them
        self.annotation_iids: dict[bytes, list] = {}    # bytes -> [iids used, generation]
        self.index = 0

    # -- driving ----------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if len(data) <= CHUNK_BYTES and self._parse_chunk(data):
            if data and not self.index:
                _split(data, self.report)        # parsed, yet no packet: say what it is
            return
        spans = _split(data, self.report)
        i = 0
        while i < len(spans):
            j, size = i, 0
            while j < len(spans) and (size < CHUNK_BYTES or j == i):
                size += spans[j][2] - spans[j][0]
                j += 1
            # Packets i..j-1 (and any skipped top-level field between them) as one Trace.
            if not self._parse_chunk(data[spans[i][0]:spans[j - 1][2]]):
                for _, a, b in spans[i:j]:
                    self._parse_one(data[a:b])
            i = j

    def _parse_chunk(self, chunk: bytes) -> bool:
        try:
            trace = self.Trace.FromString(chunk)
        except DecodeError:
            return False
        self._run(trace.packet)
        return True

    def _parse_one(self, raw: bytes) -> None:
        try:
            packet = self.Packet.FromString(raw)
        except DecodeError as e:
            self.report.add("undecodable-packet", self.index,
                            f"{len(raw)} bytes: {e or 'invalid protobuf wire data'}")
            self.index += 1
            return
        self._run((packet,))

    # -- the packet loop --------------------------------------------------------------------
    def _run(self, packets) -> None:
        report = self.report
        add = report.add
        seqs = self.seqs
        slice_events = self.slice_events
        counter_uses = self.counter_uses
        instants = self.instants
        flows = self.flows
        ann_cache = self.annotation_iids
        ann_iids = self._annotation_iids
        unresolved = self._unresolved
        real_packet = self.pb.TracePacket.FromString
        unknown = UnknownFieldSet
        inf = math.inf
        index = self.index - 1
        last_seq_id = None
        seq = _Sequence()
        for p in packets:
            index += 1
            seq_id = p.trusted_packet_sequence_id
            if seq_id != last_seq_id:
                seq = seqs.get(seq_id)
                if seq is None:
                    seq = seqs[seq_id] = _Sequence()
                last_seq_id = seq_id
            flags = p.sequence_flags
            kind = p.WhichOneof("data")
            te = p.track_event if kind == "track_event" else None
            real = None
            if len(unknown(p)) or (te is not None and len(unknown(te))):
                # A field only the real schema reads: re-read the whole packet with it.
                try:
                    real = real_packet(p.SerializeToString())
                except DecodeError as e:
                    add("undecodable-packet", index, f"a nested message does not decode ({e})")
                    continue
                if flags & SEQ_CLEARED or real.incremental_state_cleared:
                    seq.clear()
                elif real.previous_packet_dropped:
                    seq.valid = False
            elif flags & SEQ_CLEARED:
                seq.clear()
            if flags & SEQ_NEEDS and not seq.valid:
                add("state-not-cleared", index, f"sequence {seq_id}: SEQ_NEEDS_INCREMENTAL_STATE "
                    + ("before any SEQ_INCREMENTAL_STATE_CLEARED" if not seq.cleared
                       else "after a lost packet (previous_packet_dropped)"))
                continue
            if p.HasField("interned_data"):
                self._intern(seq, p.interned_data, flags, index)
            if real is not None:
                self._packet_extras(seq, real)
            ts = p.timestamp
            has_ts = ts or p.HasField("timestamp")
            if has_ts and seq.clocks:
                # Sequence-scoped clocks: every timestamped packet advances an incremental one.
                ts = self._clock_ts(seq, (real.timestamp_clock_id if real else 0)
                                    or seq.default_clock, ts)
            if te is None:
                if kind == "track_descriptor":
                    self._descriptor(p.track_descriptor, index)
                continue
            # -- a TrackEvent ---------------------------------------------------------------
            rare = real.track_event if real is not None else None
            if not has_ts:
                ts = self._legacy_ts(seq, rare) if rare is not None else 0
            if ts >= INT64_END:
                add("timestamp-out-of-range", index, f"timestamp {ts}")
            typ = te.type
            # Interned ids this event uses.
            uses = False
            name_iid = te.name_iid
            if name_iid:
                uses = True
                if name_iid not in seq.tables.get(I_NAMES, ()):
                    unresolved(seq_id, I_NAMES, name_iid, index)
            cats = te.category_iids
            if cats:
                uses = True
                table = seq.tables.get(I_CATEGORIES, ())
                for c in cats:
                    if c not in table:
                        unresolved(seq_id, I_CATEGORIES, c, index)
            anns = te.debug_annotations
            if anns:
                # An annotation verified in this generation of the sequence's state stays
                # valid (the tables only grow until the next clear): one lookup per repeat.
                gen = seq.generation
                for b in anns:
                    entry = ann_cache.get(b)
                    if entry is None:
                        try:
                            entry = ann_iids(b)
                        except DecodeError as e:
                            add("undecodable-packet", index, f"a debug annotation: {e}")
                            continue
                    if entry[1] != gen:
                        used = entry[0]
                        if used:
                            tables = seq.tables
                            ok = True
                            for t, i in used:
                                if i not in tables.get(t, ()):
                                    unresolved(seq_id, t, i, index)
                                    ok = False
                            if ok:
                                entry[1] = gen
                        else:
                            entry[1] = gen
                    if entry[0]:
                        uses = True
            if rare is not None and self._rare_iids(seq, seq_id, rare, index):
                uses = True
            if uses and not flags & (SEQ_NEEDS | SEQ_CLEARED):
                add("missing-needs-flag", index, f"sequence {seq_id}: an event uses interned ids")
            # The track.
            uuid = te.track_uuid
            if not uuid and not te.HasField("track_uuid"):
                uuid = seq.default_uuid
            key = uuid if uuid else (("thread", seq.thread) if seq.thread is not None
                                     else ("default",))
            if typ == BEGIN or typ == END:
                lst = slice_events.get(key)
                if lst is None:
                    slice_events[key] = [(ts, typ, index)]
                else:
                    lst.append((ts, typ, index))
            elif typ == COUNTER:
                use = counter_uses.get(key)
                if use is None:
                    counter_uses[key] = [index, 1]
                else:
                    use[1] += 1
                report.counter_samples += 1
                dval = te.double_counter_value
                if not -inf < dval < inf:
                    add("non-finite-counter-value", index, f"value {dval} on track {uuid}")
            elif typ == INSTANT:
                use = instants.get(key)
                if use is None:
                    instants[key] = [index, 1]
                else:
                    use[1] += 1
            elif typ == 0:
                add("legacy-event", index, "TYPE_UNSPECIFIED"
                    + (" with legacy_event" if rare is not None and rare.HasField("legacy_event")
                       else ""))
            if rare is not None:        # extra counter values are rare fields
                self._extra_counters(seq, rare, index)
            # Flows.
            fids = te.flow_ids
            tfids = te.terminating_flow_ids
            if rare is not None and (rare.flow_ids_old or rare.terminating_flow_ids_old):
                fids = list(fids) + list(rare.flow_ids_old)
                tfids = list(tfids) + list(rare.terminating_flow_ids_old)
            if fids or tfids:       # rare: iterating two empty fields costs ~0.4 us a packet
                for ids, terminating in ((fids, False), (tfids, True)):
                    for fid in ids:
                        end = (ts, index, terminating)
                        cur = flows.get(fid)
                        if cur is None:
                            flows[fid] = end
                        elif cur.__class__ is tuple:
                            flows[fid] = [cur, end]
                        else:
                            cur.append(end)
        self.index = index + 1

    # -- per-packet helpers -----------------------------------------------------------------
    def _unresolved(self, seq_id: int, table: int, iid: int, index: int) -> None:
        self.report.add("unresolved-iid", index,
                        f"sequence {seq_id}: {TABLE_NAMES.get(table, f'table {table}')} iid "
                        f"{iid} is not defined")

    def _intern(self, seq: _Sequence, interned, flags: int, index: int) -> None:
        if not flags & (SEQ_NEEDS | SEQ_CLEARED):
            self.report.add("missing-needs-flag", index, "a packet defines interned data")
        tables = seq.tables
        for fd, entries in interned.ListFields():
            table = tables.get(fd.number)
            if table is None:
                table = tables[fd.number] = set()
            table.update(e.iid for e in entries)

    def _packet_extras(self, seq: _Sequence, real) -> None:
        """Fields only some packets have (read from the real schema)."""
        if real.HasField("trace_packet_defaults"):
            d = real.trace_packet_defaults
            seq.default_clock = d.timestamp_clock_id
            ted = d.track_event_defaults
            seq.default_uuid = ted.track_uuid
            seq.default_counters = tuple(ted.extra_counter_track_uuids)
            seq.default_double_counters = tuple(ted.extra_double_counter_track_uuids)
        if real.HasField("clock_snapshot"):
            clocks = real.clock_snapshot.clocks
            # Trace Processor maps a clock to the trace clock through a snapshot holding both:
            # boottime_at_snapshot + (value - clock_at_snapshot), in ns.
            boot = next((c.timestamp * (c.unit_multiplier_ns or 1) for c in clocks
                         if c.clock_id == BOOTTIME), None)
            for c in clocks:
                mult = c.unit_multiplier_ns or 1
                offset = 0 if boot is None else boot - c.timestamp * mult
                seq.clocks[c.clock_id] = (c.is_incremental, mult, offset)
                if c.is_incremental:
                    seq.clock_last[c.clock_id] = c.timestamp
        if real.HasField("thread_descriptor"):
            td = real.thread_descriptor
            seq.thread = (td.pid, td.tid)
            seq.legacy_ref_us = td.reference_timestamp_us

    def _annotation_iids(self, raw: bytes) -> list:
        """[(table, iid) pairs a DebugAnnotation uses at any depth, generation verified in]
        cached by its bytes."""
        ann = self.pb.DebugAnnotation.FromString(raw)
        used = []
        todo = [ann]
        while todo:
            a = todo.pop()
            if a.name_iid:
                used.append((I_ARG_NAMES, a.name_iid))
            if a.string_value_iid:
                used.append((I_ARG_STRINGS, a.string_value_iid))
            if a.proto_type_name_iid:
                used.append((I_ARG_TYPE_NAMES, a.proto_type_name_iid))
            todo.extend(a.dict_entries)
            todo.extend(a.array_values)
        out = self.annotation_iids[raw] = [tuple(dict.fromkeys(used)), 0]
        return out

    def _rare_iids(self, seq: _Sequence, seq_id: int, te, index: int) -> bool:
        """Interned ids in the less common TrackEvent fields; True when there are any."""
        used = [(I_SOURCE_LOCATIONS, te.source_location_iid),
                (I_CORRELATION, te.correlation_id_str_iid), (I_CALLSTACKS, te.callstack_iid)]
        if te.HasField("log_message"):
            used += [(I_SOURCE_LOCATIONS, te.log_message.source_location_iid),
                     (I_LOG_BODIES, te.log_message.body_iid)]
        if te.HasField("task_execution"):
            used.append((I_SOURCE_LOCATIONS, te.task_execution.posted_from_iid))
        any_used = False
        for table, iid in used:
            if iid:
                any_used = True
                if iid not in seq.tables.get(table, ()):
                    self._unresolved(seq_id, table, iid, index)
        return any_used

    @staticmethod
    def _legacy_ts(seq: _Sequence, te) -> int:
        """TrackEvent.timestamp_absolute_us / timestamp_delta_us (legacy thread sequences)."""
        if te.HasField("timestamp_absolute_us"):
            seq.legacy_ref_us = te.timestamp_absolute_us
        elif te.HasField("timestamp_delta_us"):
            seq.legacy_ref_us += te.timestamp_delta_us
        else:
            return 0
        return seq.legacy_ref_us * 1000

    @staticmethod
    def _clock_ts(seq: _Sequence, clock: int, ts: int) -> int:
        """Timestamps of a sequence-scoped clock: deltas and units resolved."""
        spec = seq.clocks.get(clock)
        if spec is None:
            return ts
        incremental, mult, offset = spec
        if incremental:
            ts = seq.clock_last[clock] = seq.clock_last.get(clock, 0) + ts
        return ts * mult + offset

    def _extra_counters(self, seq: _Sequence, te, index: int) -> None:
        """extra_counter_values / extra_double_counter_values: values for other counter
        tracks, named by the event's uuids or its sequence's TrackEventDefaults."""
        add = self.report.add
        for explicit, values, defaults, what in (
                (te.extra_counter_track_uuids, te.extra_counter_values, seq.default_counters,
                 "extra_counter_values"),
                (te.extra_double_counter_track_uuids, te.extra_double_counter_values,
                 seq.default_double_counters, "extra_double_counter_values")):
            if not values and not explicit:
                continue
            ids = explicit or defaults
            if len(ids) != len(values):
                add("extra-counter-mismatch", index,
                    f"{len(values)} {what} for {len(ids)} track uuids")
            for uuid in ids:
                use = self.counter_uses.get(uuid)
                if use is None:
                    self.counter_uses[uuid] = [index, 1]
                else:
                    use[1] += 1
            self.report.counter_samples += min(len(ids), len(values))
        for v in te.extra_double_counter_values:
            if not -math.inf < v < math.inf:
                add("non-finite-counter-value", index, f"extra double counter value {v}")

    def _descriptor(self, td, index: int) -> None:
        uuid = td.uuid
        is_counter = td.HasField("counter")
        parent = td.parent_uuid
        name = td.name or td.static_name or td.atrace_name
        cur = self.descriptors.get(uuid)
        if cur is None:
            self.descriptors[uuid] = [parent, is_counter, index, name]
        elif (parent and cur[0] and parent != cur[0]) or cur[1] != is_counter:
            what = (f"parent {cur[0]} -> {parent}" if cur[1] == is_counter else
                    f"{'counter' if cur[1] else 'non-counter'} -> "
                    f"{'counter' if is_counter else 'non-counter'}")
            self.report.add("conflicting-descriptor", index,
                            f"track {uuid} ({name!r}) described again: {what}")
        elif parent and not cur[0]:
            cur[0] = parent

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
        report.tracks = len(desc)
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
                if not u:
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


# -- entry points ---------------------------------------------------------------------------

def validate_bytes(data: bytes, path: str | None = None) -> Report:
    """Validate a Perfetto protobuf trace held in memory (gzipped or not)."""
    report = Report(path=path, size=len(data))
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            report.add("truncated", -1, f"corrupt gzip data ({e})")
            # Validate what decompresses.
            data = _gunzip_prefix(data)
    v = _Validator(report)
    v.feed(data)
    return v.finish()


def _gunzip_prefix(data: bytes) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def validate_path(path: str | Path) -> Report:
    """Validate the trace file at ``path``; OSError when it cannot be read."""
    data = Path(path).read_bytes()
    return validate_bytes(data, str(path))


def check_trace(trace: bytes | str | Path) -> Report:
    """Validate a trace given as bytes or as a path (the library entry point)."""
    if isinstance(trace, (bytes, bytearray, memoryview)):
        return validate_bytes(bytes(trace))
    return validate_path(trace)


@click.command("validate")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(trace: Path, as_json: bool) -> None:
    """Check a Perfetto protobuf trace (ours or another tool's).

    Decodes every packet and checks tracks, slice nesting, interned ids and sequence flags,
    flows and counters.  Prints the counts and each problem with its first offending packet;
    exit code 0 when none was found, 1 when problems were found, 2 when TRACE cannot be read.
    """
    try:
        if trace.is_dir():
            raise IsADirectoryError(21, "is a directory")
        report = validate_path(trace)
    except OSError as e:
        fail(f"{trace}: cannot read: {e.strerror or e}")
        sys.exit(EXIT_ERROR)
    if as_json:
        import orjson
        click.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(report.text())
    if not report.ok:
        sys.exit(EXIT_PROBLEMS)


if __name__ == "__main__":  # pragma: no cover - `python -m tracecvt.validate TRACE`
    validate()
