"""Perfetto protobuf writer (TrackEvent).

Layout of the written trace:

* one packet sequence (id 1); the first packet clears incremental state, every packet that
  defines or uses interned ids carries SEQ_NEEDS_INCREMENTAL_STATE;
* one TrackDescriptor per model track (uuid = index + 1) under its parent, with explicit
  child ordering and no merging of same-name siblings (overlap lanes share their core's name);
* a slice is a BEGIN/END pair on its lane, emitted per lane in nesting order; flows ride on
  the BEGIN events (``flow_ids`` on the source, ``terminating_flow_ids`` on the destination);
* event names, categories, argument names and repeated string values are interned;
* counters are TYPE_COUNTER events on counter tracks;
* output is flushed in chunks, so memory does not grow with the trace.
"""

from __future__ import annotations

import collections
from typing import IO, Any, Callable

from ..model import COUNTER, GROUP, Trace
from .protowire import (_pack_double, _pack_fixed64, key_bytes, key_str, key_varint,
                        tag, varint)

SEQ_ID = 1
SEQ_CLEARED = 1
SEQ_NEEDS = 2

_PACKET = b"\x0a"                 # Trace.packet (1), length-delimited
_TS = b"\x40"                     # TracePacket.timestamp (8)
_SEQ = key_varint(10, SEQ_ID)     # TracePacket.trusted_packet_sequence_id (10)
_FLAGS_NEEDS = key_varint(13, SEQ_NEEDS)
_INTERNED = tag(12, 2)            # TracePacket.interned_data (12)
_TRACK_EVENT = tag(11, 2)         # TracePacket.track_event (11)
_TRACK_DESC = tag(60, 2)          # TracePacket.track_descriptor (60)
_BEGIN = key_varint(9, 1)         # TrackEvent.type
_END = key_varint(9, 2)
_INSTANT = key_varint(9, 3)
_COUNTER = key_varint(9, 4)
_TE_TRACK = tag(11, 0)            # TrackEvent.track_uuid
_TE_NAME_IID = tag(10, 0)         # TrackEvent.name_iid
_TE_NAME = tag(23, 2)             # TrackEvent.name (inline)
_TE_CAT_IID = tag(3, 0)           # TrackEvent.category_iids
_TE_DEBUG = tag(4, 2)             # TrackEvent.debug_annotations
_TE_FLOW = tag(47, 1)             # TrackEvent.flow_ids (fixed64)
_TE_TERM_FLOW = tag(48, 1)        # TrackEvent.terminating_flow_ids (fixed64)
_TE_INT = tag(30, 0)              # TrackEvent.counter_value
_TE_DOUBLE = tag(44, 1)           # TrackEvent.double_counter_value

# InternedData fields
_I_CATEGORY, _I_NAME, _I_ARG_NAME, _I_STRING = 1, 2, 3, 29

CHUNK_PACKETS = 20000


def _packet(body: bytes) -> bytes:
    return _PACKET + varint(len(body)) + body


class _Interner:
    """Per-sequence dictionaries; new entries are collected for the next packet."""

    def __init__(self) -> None:
        self.tables: dict[int, dict[Any, int]] = {
            _I_CATEGORY: {}, _I_NAME: {}, _I_ARG_NAME: {}, _I_STRING: {}}
        self.pending: list[bytes] = []

    def iid(self, table: int, text: str) -> int:
        d = self.tables[table]
        iid = d.get(text)
        if iid is None:
            iid = d[text] = len(d) + 1
            payload = key_varint(1, iid) + key_str(2, text)
            self.pending.append(key_bytes(table, payload))
        return iid

    def flush(self) -> bytes:
        if not self.pending:
            return b""
        data = b"".join(self.pending)
        self.pending.clear()
        return _INTERNED + varint(len(data)) + data


class _ArgEncoder:
    """Encodes args dicts into DebugAnnotation bytes, caching repeated (name, value) pairs."""

    MIN_INTERNED_STRING = 6

    def __init__(self, interner: _Interner):
        self.interner = interner
        self.cache: dict[Any, bytes] = {}
        self.keep: list[Any] = []   # keeps id()-cached objects alive

    def encode(self, args: dict[str, Any]) -> bytes:
        cache = self.cache
        parts = []
        for name, value in args.items():
            if value is None:
                continue
            try:
                key = (name, value.__class__, value)
                hash(key)
            except TypeError:
                key = (name, id(value))
                if key not in cache:
                    self.keep.append(value)
            enc = cache.get(key)
            if enc is None:
                body = key_varint(1, self.interner.iid(_I_ARG_NAME, name)) + self._value(value, True)
                enc = cache[key] = _TE_DEBUG + varint(len(body)) + body
            parts.append(enc)
        return b"".join(parts)

    def _value(self, value: Any, top: bool) -> bytes:
        # Trace Processor resolves name_iid and string_value_iid at any depth of nested
        # dict_entries/array_values (util/debug_annotation_parser.cc), so nested keys and
        # strings are interned like top-level ones.
        if isinstance(value, bool):
            return key_varint(2, int(value))
        if isinstance(value, int):
            if value >= 1 << 63:
                return key_varint(3, value)            # uint_value
            return key_varint(4, value)                # int_value (two's complement)
        if isinstance(value, float):
            return tag(5, 1) + _pack_double(value)
        if isinstance(value, str):
            if len(value) >= self.MIN_INTERNED_STRING:
                return key_varint(17, self.interner.iid(_I_STRING, value))
            return key_str(6, value)
        if isinstance(value, dict):
            entries = []
            for k, v in value.items():
                if v is None:
                    continue
                name = key_varint(1, self.interner.iid(_I_ARG_NAME, str(k)))
                entries.append(key_bytes(11, name + self._value(v, False)))
            return b"".join(entries) if entries else key_str(6, "{}")
        if isinstance(value, (list, tuple)):
            if not value:
                return key_str(6, "[]")
            return b"".join(key_bytes(12, self._value(v, False)) for v in value)
        return key_str(6, str(value))


def _track_descriptor(trace: Trace, index: int) -> bytes:
    t = trace.tracks[index]
    body = [key_varint(1, index + 1), key_str(2, t.name)]
    if t.parent is not None:
        body.append(key_varint(5, t.parent + 1))
    if t.description:
        body.append(key_str(14, t.description))
    if t.kind == COUNTER:
        counter = b""
        if t.unit:
            counter += key_str(6, t.unit)
        body.append(key_bytes(8, counter))
    if t.children:
        body.append(key_varint(11, 3))                  # child_ordering = EXPLICIT
    body.append(key_varint(12, t.order))                # sibling_order_rank
    body.append(key_varint(15, 2))                      # sibling_merge_behavior = NONE
    data = b"".join(body)
    return _packet(_SEQ + _TRACK_DESC + varint(len(data)) + data)


_LEN = [varint(i) for i in range(1 << 14)]


def _len(n: int) -> bytes:
    return _LEN[n] if n < 16384 else varint(n)


def write_perfetto(trace: Trace, out: IO[bytes],
                   progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write ``trace`` as a Perfetto protobuf trace to the binary stream ``out``."""
    interner = _Interner()
    args_enc = _ArgEncoder(interner)
    chunk: list[bytes] = []
    append = chunk.append
    counts = {"packets": 0, "slices": 0, "instants": 0, "flows": len(trace.flows),
              "counter_samples": 0, "tracks": len(trace.tracks)}

    def flush() -> None:
        if chunk:
            out.write(b"".join(chunk))
            counts["packets"] += len(chunk)
            chunk.clear()

    # First packet: clears incremental state for the sequence.
    append(_packet(_SEQ + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)))
    for index, _depth in trace.walk():
        append(_track_descriptor(trace, index))

    # Flow ids per slice: outgoing on the source BEGIN, terminating on the destination BEGIN.
    # A flow whose destination starts before (or with) its source would reach Trace Processor
    # end first and be dropped; giving both ends a plain flow id keeps it as an arrow between the
    # two slices (drawn from the earlier one).
    flow_bytes: dict[int, bytes] = {}
    slices = trace.slices
    backward = 0
    for fid, flow in enumerate(trace.flows, 1):
        b = _pack_fixed64(fid)
        src, dst = flow.src, flow.dst
        flow_bytes[src] = flow_bytes.get(src, b"") + _TE_FLOW + b
        d, s0 = slices[dst].ts, slices[src].ts
        if d <= s0:     # equal starts too: Trace Processor may meet the destination first
            backward += d < s0
            flow_bytes[~dst] = flow_bytes.get(~dst, b"") + _TE_FLOW + b
        else:
            flow_bytes[~dst] = flow_bytes.get(~dst, b"") + _TE_TERM_FLOW + b
    counts["flows_backward"] = backward

    track_bytes = [_TE_TRACK + varint(i + 1) for i in range(len(trace.tracks))]
    names: dict[str, bytes] = {}
    cats: dict[str, bytes] = {"": b""}
    shared_cache: dict[int, bytes] = {}
    ts_cache: dict[int, bytes] = {}
    pending = interner.pending

    # Names used once are written inline: interning them would only add an entry.
    repeated = collections.Counter(s.name for s in trace.slices)
    repeated.update(i.name for i in trace.instants)

    def name_field(name: str) -> bytes:
        if repeated[name] > 1:
            enc = names[name] = _TE_NAME_IID + varint(interner.iid(_I_NAME, name))
            return enc
        return _TE_NAME + _len(len(b := name.encode("utf-8", "surrogatepass"))) + b

    def cat_field(cat: str) -> bytes:
        enc = cats[cat] = _TE_CAT_IID + varint(interner.iid(_I_CATEGORY, cat))
        return enc

    def ts_field(ts: int) -> bytes:
        enc = ts_cache[ts] = _TS + varint(ts)
        return enc

    encode_args = args_enc.encode
    slices = trace.slices
    by_track: dict[int, list[int]] = {}
    for i, s in enumerate(slices):
        lst = by_track.get(s.track)
        if lst is None:
            by_track[s.track] = [i]
        else:
            lst.append(i)
    head = _SEQ + _FLAGS_NEEDS
    done = 0
    for track_id, ids in by_track.items():
        ids.sort(key=lambda i: (slices[i].ts, -slices[i].dur))
        tb = track_bytes[track_id]
        begin_prefix = _BEGIN + tb
        end_event = _END + tb
        end_tail = _SEQ + _TRACK_EVENT + _len(len(end_event)) + end_event
        stack: list[int] = []   # open slice ends, innermost last
        for i in ids:
            s = slices[i]
            ts = s.ts
            while stack and stack[-1] <= ts:
                end = stack.pop()
                body = (ts_cache.get(end) or ts_field(end)) + end_tail
                append(_PACKET + _len(len(body)) + body)
            event = begin_prefix + (names.get(s.name) or name_field(s.name))
            if s.cat:
                event += cats.get(s.cat) or cat_field(s.cat)
            sh = s.shared_args
            if sh is not None:
                enc = shared_cache.get(id(sh))
                if enc is None:
                    enc = shared_cache[id(sh)] = encode_args(sh)
                event += enc
            if s.args:
                event += encode_args(s.args)
            fb = flow_bytes.get(i)
            if fb is not None:
                event += fb
            fb = flow_bytes.get(~i)
            if fb is not None:
                event += fb
            if pending:
                body = b"".join(((ts_cache.get(ts) or ts_field(ts)), head, interner.flush(),
                                 _TRACK_EVENT, _len(len(event)), event))
            else:
                body = b"".join(((ts_cache.get(ts) or ts_field(ts)), head,
                                 _TRACK_EVENT, _len(len(event)), event))
            append(_PACKET + _len(len(body)) + body)
            stack.append(ts + s.dur)
            done += 1
            if len(chunk) >= CHUNK_PACKETS:
                flush()
                if progress:
                    progress(done)
        while stack:
            end = stack.pop()
            body = (ts_cache.get(end) or ts_field(end)) + end_tail
            append(_PACKET + _len(len(body)) + body)
    counts["slices"] = done

    for inst in trace.instants:
        event = _INSTANT + track_bytes[inst.track] + (names.get(inst.name)
                                                       or name_field(inst.name))
        if inst.cat:
            event += cats.get(inst.cat) or cat_field(inst.cat)
        if inst.args:
            event += encode_args(inst.args)
        body = b"".join((_TS, varint(inst.ts), head, interner.flush(),
                         _TRACK_EVENT, _len(len(event)), event))
        append(_PACKET + _len(len(body)) + body)
        counts["instants"] += 1

    small = _LEN
    for counter in trace.counters:
        tb = _COUNTER + track_bytes[counter.track]
        int_prefix = tb + _TE_INT
        dbl_prefix = tb + _TE_DOUBLE
        for ts, value in zip(counter.ts, counter.values):
            if value.__class__ is int:
                event = int_prefix + (small[value] if 0 <= value < 16384 else varint(value))
            else:
                event = dbl_prefix + _pack_double(value)
            body = (ts_cache.get(ts) or ts_field(ts)) + _SEQ + _TRACK_EVENT \
                + small[len(event)] + event
            append(_PACKET + small[len(body)] + body)
        counts["counter_samples"] += len(counter.ts)
        if len(chunk) >= CHUNK_PACKETS:
            flush()
            if progress:
                progress(done)
    flush()
    return counts
