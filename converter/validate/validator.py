"""The packet loop of the validator: what every packet defines, uses and holds."""

from __future__ import annotations

import math
from typing import Any

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from ..model import INT64_END
from .checks import TraceChecks
from .packets import _Sequence, _split
from .report import Report
from .schema import (BEGIN, BOOTTIME, CHUNK_BYTES, COUNTER, END, I_ARG_NAMES, I_ARG_STRINGS,
                     I_ARG_TYPE_NAMES, I_CALLSTACKS, I_CATEGORIES, I_CORRELATION, I_LOG_BODIES,
                     I_NAMES, I_SOURCE_LOCATIONS, INSTANT, SEQ_CLEARED, SEQ_NEEDS, TABLE_NAMES,
                     _schema)


class _Validator(TraceChecks):
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
            elif typ == COUNTER or typ == INSTANT:
                table = counter_uses if typ == COUNTER else instants
                use = table.get(key)
                if use is None:
                    table[key] = [index, 1]
                else:
                    use[1] += 1
                if typ == COUNTER:
                    report.counter_samples += 1
                    dval = te.double_counter_value
                    if not -inf < dval < inf:
                        add("non-finite-counter-value", index, f"value {dval} on track {uuid}")
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
            # Trace Processor v58 counts an event's extra values up to the first 0, and its
            # tokenizer rejects an event with more than 8
            if len(values) > 8:
                add("extra-counter-lost", index, f"{len(values)} {what} on one event")
            elif 0 in values:
                add("extra-counter-lost", index, f"a 0 among the {what}")
            uses = self.counter_uses
            for uuid in ids:
                use = uses.get(uuid)
                if use is None:
                    uses[uuid] = [index, 1]
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

