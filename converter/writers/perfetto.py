"""Perfetto protobuf writer (TrackEvent).

Layout of the written trace:

* sequence 1 clears incremental state and holds one TrackDescriptor per model track
  (uuid = index + 1) under its parent, with explicit child ordering and no merging of
  same-name siblings (overlap lanes share their core's name), then the instants;
* every track with slices or counter samples has a packet sequence of its own (ids from 2,
  the busiest tracks first so that most ids are one-byte varints).  Its first packet clears
  the sequence's incremental state and sets ``TracePacketDefaults``: ``track_event_defaults.
  track_uuid`` is the track (events omit ``track_uuid``) and ``timestamp_clock_id`` is the
  sequence-scoped clock 64, which the next packet's ``ClockSnapshot`` declares incremental and
  anchors at 0 together with BOOTTIME = 0 (the trace clock).  A packet's ``timestamp`` is then
  the delta from the previous packet of its sequence; Trace Processor adds it to the clock's
  last value (``ClockSynchronizer``'s ``ClockDomain::ToNs``) and maps the sum to BOOTTIME
  through the snapshot, so the absolute ns come back unchanged.  Events on a track are written
  in time order; the rare event that would go back in time is written with an absolute
  BOOTTIME timestamp (``timestamp_clock_id = 6``), which leaves the incremental clock alone;
* a slice is a BEGIN/END pair on its lane, emitted per lane in nesting order; flows ride on
  the BEGIN events (``flow_ids`` on the source, ``terminating_flow_ids`` on the destination;
  flow ids are global, not sequence-scoped);
* event names, categories, argument names and repeated string values are interned.  Each
  sequence defines, before its first use there, the entries it uses, and only those: what an
  iid means is the sequence's own business (within one process an iid means the same string
  everywhere; a second process numbers its strings its own way).  Packets that define or use
  them carry SEQ_NEEDS_INCREMENTAL_STATE;
* counters are TYPE_COUNTER events on counter tracks (negative ints as doubles: shorter, and
  the same value in Trace Processor, which keeps counter values as doubles); an int no 64-bit
  field holds is an arg's digits, or a counter's double;
* output is flushed in chunks, so memory does not grow with the trace (except in a forked
  process waiting for the derived tracks: it holds the source slices' packets until then);
* on a large trace a forked process may write some of the sequences (``write_perfetto``);
  they follow this process's, in the same layout.
"""

from __future__ import annotations

import collections
import os
import pickle
import shutil
import struct
import sys
import tempfile
from typing import IO, Any, Callable

from ..errors import OutputError, one_line
from ..forkpass import fork_pass

from ..model import COUNTER, INT64_END, INT64_MIN, UINT64_END, Trace
from .protowire import (_pack_double, _pack_fixed64, key_bytes, key_str, key_varint,
                        tag, varint)

SEQ_ID = 1                        # the descriptor (and instant) sequence
SEQ_CLEARED = 1
SEQ_NEEDS = 2
SEQ_CLOCK = 64                    # sequence-scoped incremental clock of the track sequences
BOOTTIME = 6                      # BuiltinClock BOOTTIME: Trace Processor's default trace clock

_PACKET = b"\x0a"                 # Trace.packet (1), length-delimited
_TS = b"\x40"                     # TracePacket.timestamp (8)
_SEQ = key_varint(10, SEQ_ID)     # TracePacket.trusted_packet_sequence_id (10)
_FLAGS_NEEDS = key_varint(13, SEQ_NEEDS)
_INTERNED = tag(12, 2)            # TracePacket.interned_data (12)
_TRACK_EVENT = tag(11, 2)         # TracePacket.track_event (11)
_TRACK_DESC = tag(60, 2)          # TracePacket.track_descriptor (60)
_ABS_CLOCK = key_varint(58, BOOTTIME)   # TracePacket.timestamp_clock_id (58)
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

_INT_VALUE = tag(4, 0)            # DebugAnnotation.int_value
_STRING_VALUE = tag(6, 2)         # DebugAnnotation.string_value
_STRING_IID = tag(17, 0)          # DebugAnnotation.string_value_iid

# InternedData fields
_I_CATEGORY, _I_NAME, _I_ARG_NAME, _I_STRING = 1, 2, 3, 29

CHUNK_PACKETS = 20000


def _packet(body: bytes) -> bytes:
    return _PACKET + varint(len(body)) + body


class _Interner:
    """Trace-wide iids: one (iid, InternedData entry) per string and table.

    ``collect`` receives the entry of every string looked up, so an encoder can tell which
    entries a fragment it builds depends on."""

    def __init__(self) -> None:
        self.tables: dict[int, dict[Any, tuple[int, bytes]]] = {
            _I_CATEGORY: {}, _I_NAME: {}, _I_ARG_NAME: {}, _I_STRING: {}}
        self.collect: list[bytes] = []

    def entry(self, table: int, text: str) -> tuple[int, bytes]:
        """(iid, InternedData entry) of ``text`` in ``table``; not collected."""
        d = self.tables[table]
        hit = d.get(text)
        if hit is None:
            iid = len(d) + 1
            hit = d[text] = (iid, key_bytes(table, key_varint(1, iid) + key_str(2, text)))
        return hit

    def iid(self, table: int, text: str) -> int:
        """The iid of ``text`` in ``table``; its entry goes to ``collect``."""
        hit = self.entry(table, text)
        self.collect.append(hit[1])
        return hit[0]


class _Sequence:
    """A packet sequence being written: its id field and the interned entries it defined."""

    __slots__ = ("field", "defined", "pending", "seen")

    def __init__(self, seq_id: int):
        self.field = key_varint(10, seq_id)
        self.defined: set[bytes] = set()    # InternedData entries defined on this sequence
        self.pending: list[bytes] = []      # entries to define on the next packet
        self.seen: set[bytes] = set()       # encoded fragments whose entries are defined

    def use(self, deps) -> None:
        defined = self.defined
        for entry in deps:
            if entry not in defined:
                defined.add(entry)
                self.pending.append(entry)

    def flush(self) -> bytes:
        if not self.pending:
            return b""
        data = b"".join(self.pending)
        self.pending.clear()
        return _INTERNED + varint(len(data)) + data


class _ArgEncoder:
    """Encodes args dicts into DebugAnnotation bytes, caching repeated (name, value) pairs
    together with the interned entries each encoding uses."""

    MIN_INTERNED_STRING = 6

    def __init__(self, interner: _Interner):
        self.interner = interner
        self.cache: dict[Any, tuple[bytes, tuple]] = {}
        self.keep: list[Any] = []   # keeps id()-cached objects alive
        self.names: dict[str, tuple[bytes, bytes]] = {}   # arg name: name part, its entry
        self.once: set[tuple] = set()                     # string args seen once

    def _name_part(self, name: str) -> tuple[bytes, bytes]:
        """(``name_iid`` field, its InternedData entry) of an arg name."""
        hit = self.names.get(name)
        if hit is None:
            iid, entry = self.interner.entry(_I_ARG_NAME, name)
            hit = self.names[name] = (key_varint(1, iid), entry)
        return hit

    def _str_pair(self, name: str, value: str, intern: bool) -> tuple[bytes, tuple]:
        """A top-level string arg, built directly (the same bytes as the general path)."""
        head, entry = self._name_part(name)
        if intern and len(value) >= self.MIN_INTERNED_STRING:
            iid, string_entry = self.interner.entry(_I_STRING, value)
            body = head + _STRING_IID + varint(iid)
            return _TE_DEBUG + varint(len(body)) + body, (entry, string_entry)
        b = value.encode("utf-8", "surrogatepass")
        body = head + _STRING_VALUE + varint(len(b)) + b
        return _TE_DEBUG + varint(len(body)) + body, (entry,)

    def pair(self, name: Any, value: Any) -> tuple[bytes, tuple] | None:
        """(DebugAnnotation bytes, the InternedData entries they use) of one arg, or None
        for a None value.  Repeated pairs come from a cache; ints are encoded directly (per
        slice ids such as taskId are all different)."""
        cls = value.__class__
        if name.__class__ is str:
            if cls is int and 0 <= value < INT64_END:
                head, entry = self._name_part(name)
                body = head + _INT_VALUE + (_LEN[value] if value < 16384
                                            else varint(value))
                return _TE_DEBUG + _LEN[len(body)] + body, (entry,)
            if cls is str:
                key = (name, str, value)
                hit = self.cache.get(key)
                if hit is None:
                    # A string is interned from its second use on: the first may be its
                    # only one (e.g. a bubble's "waiting_for"), and inline is then smaller.
                    if key not in self.once:
                        self.once.add(key)
                        return self._str_pair(name, value, False)
                    hit = self.cache[key] = self._str_pair(name, value, True)
                return hit
        if value is None:
            return None
        try:
            key = (name, cls, value)
            hash(key)
        except TypeError:
            key = (name, id(value))
            if key not in self.cache:
                self.keep.append(value)
        hit = self.cache.get(key)
        if hit is None:
            collect = self.interner.collect
            collect.clear()
            body = key_varint(1, self.interner.iid(_I_ARG_NAME, name)) + self._value(value, True)
            hit = self.cache[key] = (_TE_DEBUG + varint(len(body)) + body, tuple(collect))
        return hit

    def encode_all(self, args: dict[str, Any]) -> tuple[bytes, tuple]:
        """A whole args dict: (bytes, the entries they use, in order of first use)."""
        parts = []
        deps: dict[bytes, None] = {}
        pair = self.pair
        for name, value in args.items():
            hit = pair(name, value)
            if hit is not None:
                parts.append(hit[0])
                for entry in hit[1]:
                    deps[entry] = None
        return b"".join(parts), tuple(deps)

    def encode(self, args: dict[str, Any], seq: _Sequence) -> bytes:
        """A slice's own args, defining on ``seq`` the entries they use."""
        seen = seq.seen
        parts = []
        pair = self.pair
        for name, value in args.items():
            hit = pair(name, value)
            if hit is None:
                continue
            enc = hit[0]
            if enc not in seen:
                seen.add(enc)
                seq.use(hit[1])
            parts.append(enc)
        return b"".join(parts)

    def _value(self, value: Any, top: bool) -> bytes:
        # Trace Processor resolves name_iid and string_value_iid at any depth of nested
        # dict_entries/array_values (util/debug_annotation_parser.cc), so nested keys and
        # strings are interned like top-level ones.
        if isinstance(value, bool):
            return key_varint(2, int(value))
        if isinstance(value, int):
            if not INT64_MIN <= value < UINT64_END:
                return key_str(6, str(value))          # beyond 64 bits: its exact digits
            if value >= INT64_END:
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


def _sequence_start(seq: _Sequence, track_index: int) -> list[bytes]:
    """The two packets that open a track's sequence: state cleared + defaults, then the
    ClockSnapshot anchoring its incremental clock at BOOTTIME 0."""
    defaults = key_varint(58, SEQ_CLOCK) + key_bytes(11, key_varint(11, track_index + 1))
    first = _packet(seq.field + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)
                    + key_bytes(59, defaults))
    clocks = (key_bytes(1, key_varint(1, SEQ_CLOCK) + key_varint(2, 0) + key_varint(3, 1))
              + key_bytes(1, key_varint(1, BOOTTIME) + key_varint(2, 0)))
    snapshot = _packet(seq.field + key_bytes(6, clocks))
    return [first, snapshot]


_EXACT = 1 << 53                 # ints of at most this magnitude are exact as doubles


def _as_double(value: Any) -> float:
    """A counter value as a double (an int too large for one: the largest double, with its
    sign; Trace Processor takes no infinite counter values)."""
    try:
        return float(value)
    except OverflowError:
        return sys.float_info.max if value > 0 else -sys.float_info.max


_LEN = ([bytes((i,)) for i in range(128)]                  # varint(i) for i < 2^14
        + [bytes((i & 0x7F | 0x80, i >> 7)) for i in range(128, 1 << 14)])
_DTS = [_TS + v for v in _LEN]     # timestamp field of the small deltas


def _len(n: int) -> bytes:
    return _LEN[n] if n < 16384 else varint(n)


def write_perfetto(trace: Trace, out: IO[bytes],
                   progress: Callable[[int], None] | None = None,
                   workers: int = 1,
                   enrich: Callable[[Trace], Any] | None = None) -> dict[str, int]:
    """Write ``trace`` as a Perfetto protobuf trace to the binary stream ``out``.

    ``enrich(trace)``, if given, is called before anything is written: it may add tracks,
    slices on its new tracks, counters and instants, and give existing slices new args
    (replacing their ``args`` / ``shared_args`` dicts, never changing them in place); the
    derived tracks are added this way.

    With ``workers`` > 1 on a large trace (and where processes can be forked), a forked
    process writes part of the track sequences into an unnamed temporary file, appended at
    the end: with ``enrich``, the trace's own sequences (its counters at once, its slices
    once ``enrich`` has run here, with the args it gave them) while this process runs
    ``enrich`` and writes the rest; without, about half of the sequences by cost.  Sequences
    are independent (each defines the interned entries it uses), so the trace means the
    same either way.
    """
    parallel = workers > 1 and hasattr(os, "fork")
    if enrich is not None and not (parallel and _cost(trace) >= PARALLEL_MIN_COST):
        enrich(trace)
        enrich = None
    interner = _Interner()
    args_enc = _ArgEncoder(interner)
    chunk: list[bytes] = []
    append = chunk.append
    counts = {"packets": 0, "slices": 0, "instants": 0, "flows": len(trace.flows),
              "counter_samples": 0, "tracks": len(trace.tracks), "flows_backward": 0}

    sink = [out, progress]          # where packets go and who hears of progress (a forked
                                    # second part writes elsewhere, silently)

    def flush(report: bool = False) -> None:
        """Write the packets in ``chunk``; with ``report``, tell how many slices are done."""
        if chunk:
            sink[0].write(b"".join(chunk))
            counts["packets"] += len(chunk)
            chunk.clear()
        if report and sink[1]:
            sink[1](done)

    def write_header() -> None:
        """Sequence 1: clears incremental state, describes every track."""
        append(_packet(_SEQ + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)))
        for index, _depth in trace.walk():
            append(_track_descriptor(trace, index))
        counts["tracks"] = len(trace.tracks)

    # Flow ids per slice: outgoing on the source BEGIN, terminating on the destination BEGIN.
    # A flow whose destination starts before (or with) its source would reach Trace Processor
    # end first and be dropped; giving both ends a plain flow id keeps it as an arrow between the
    # two slices (drawn from the earlier one).  Each process fills them for its own slices.
    flow_bytes: dict[int, bytes] = {}
    slices = trace.slices

    def flows_of(tracks: set[int] | None) -> None:
        """``flow_bytes`` of the slices on ``tracks`` (None: all); counts the backward flows
        that end there."""
        backward = 0
        for fid, flow in enumerate(trace.flows, 1):
            src, dst = flow.src, flow.dst
            here_src = tracks is None or slices[src].track in tracks
            here_dst = tracks is None or slices[dst].track in tracks
            if not (here_src or here_dst):
                continue
            b = _pack_fixed64(fid)
            if here_src:
                flow_bytes[src] = flow_bytes.get(src, b"") + _TE_FLOW + b
            if here_dst:
                d, s0 = slices[dst].ts, slices[src].ts
                if d <= s0:     # equal starts too: Trace Processor may meet the destination first
                    backward += d < s0
                    flow_bytes[~dst] = flow_bytes.get(~dst, b"") + _TE_FLOW + b
                else:
                    flow_bytes[~dst] = flow_bytes.get(~dst, b"") + _TE_TERM_FLOW + b
        counts["flows_backward"] += backward

    by_track = trace.slices_by_track()
    # Sequence ids: the tracks with the most packets get the small (one-byte) ids.
    seq_ids = _sequence_ids(by_track, trace.counters, SEQ_ID + 1)

    # Names used once are written inline: interning them would only add an entry.  Each
    # process counts the names it writes (``count_names``).
    repeated: collections.Counter = collections.Counter()

    def count_names(units: list[tuple[int, list[int]]], instants: bool) -> None:
        repeated.update(slices[i].name for _, ids in units for i in ids)
        if instants:
            repeated.update(i.name for i in trace.instants)

    names: dict[str, tuple[bytes, bytes | None]] = {}
    cats: dict[str, tuple[bytes, bytes]] = {}

    def name_field(name: str) -> tuple[bytes, bytes | None]:
        if repeated[name] > 1:
            iid, entry = interner.entry(_I_NAME, name)
            hit = names[name] = (_TE_NAME_IID + varint(iid), entry)
        else:
            b = name.encode("utf-8", "surrogatepass")
            hit = names[name] = (_TE_NAME + _len(len(b)) + b, None)
        return hit

    def cat_field(cat: str) -> tuple[bytes, bytes]:
        iid, entry = interner.entry(_I_CATEGORY, cat)
        hit = cats[cat] = (_TE_CAT_IID + varint(iid), entry)
        return hit

    encode_args = args_enc.encode
    encode_all = args_enc.encode_all
    shared_cache: dict[int, tuple[bytes, tuple]] = {}
    dts = _DTS
    done = 0

    def write_slices(units: list[tuple[int, list[int]]], record: dict | None = None) -> None:
        """The sequences of ``units`` (track, slice ids).  With ``record``, every BEGIN's
        place in ``chunk`` is kept (``record[i]``) and nothing is flushed, so that packets
        can be built again (``begin_again``) before they are written."""
        nonlocal done
        limit = CHUNK_PACKETS if record is None else sys.maxsize   # recording: no flush
        # The timestamp step below (delta on the sequence clock, or an absolute BOOTTIME
        # stamp when time goes back) is written inline for ENDs, BEGINs and counter samples
        # on purpose: it runs once per packet (about a million on the largest runs), where a
        # call costs more than the step itself.
        for track_id, ids in units:
            starts = [slices[i].ts for i in ids]
            if not all(map(int.__lt__, starts, starts[1:])):    # a sort only when not in order
                ids.sort(key=lambda i: (slices[i].ts, -slices[i].dur))
                starts = [slices[i].ts for i in ids]
            # One last step (id -1) at a time past every end: the END step closes what is open.
            starts.append(UINT64_END)
            seq = _Sequence(seq_ids[track_id])
            for p in _sequence_start(seq, track_id):
                append(p)
            seqb = seq.field
            defined = seq.defined
            pending = seq.pending
            seen = seq.seen
            head = seqb + _FLAGS_NEEDS
            end_tail = seqb + _TRACK_EVENT + _len(len(_END)) + _END
            last = 0                # the sequence clock's value (snapshot: 0)
            stack: list[int] = []   # open slice ends, innermost last
            for i, ts in zip([*ids, -1], starts):
                while stack and stack[-1] <= ts:
                    end = stack.pop()
                    d = end - last
                    if d >= 0:
                        last = end
                        body = (dts[d] if d < 16384 else _TS + varint(d)) + end_tail
                    else:
                        body = _TS + varint(end) + _ABS_CLOCK + end_tail
                    append(_PACKET + _LEN[len(body)] + body)      # END bodies are short
                if i < 0:
                    break
                s = slices[i]
                hit = names.get(s.name) or name_field(s.name)
                event = _BEGIN + hit[0]
                if hit[1] is not None and hit[1] not in defined:
                    defined.add(hit[1])
                    pending.append(hit[1])
                if s.cat:
                    hit = cats.get(s.cat) or cat_field(s.cat)
                    event += hit[0]
                    if hit[1] not in defined:
                        defined.add(hit[1])
                        pending.append(hit[1])
                sh = s.shared_args
                if sh is not None:
                    hit = shared_cache.get(id(sh))
                    if hit is None:
                        hit = shared_cache[id(sh)] = encode_all(sh)
                    enc = hit[0]
                    if enc not in seen:
                        seen.add(enc)
                        seq.use(hit[1])
                    event += enc
                if s.args:
                    event += encode_args(s.args, seq)
                fb = flow_bytes.get(i)
                if fb is not None:
                    event += fb
                fb = flow_bytes.get(~i)
                if fb is not None:
                    event += fb
                d = ts - last
                if d >= 0:
                    last = ts
                    tsb = dts[d] if d < 16384 else _TS + varint(d)
                else:
                    tsb = _TS + varint(ts) + _ABS_CLOCK
                if pending:
                    flushed = tuple(pending)
                    pending.clear()
                    data = b"".join(flushed)
                    body = b"".join((tsb, head, _INTERNED, varint(len(data)), data,
                                     _TRACK_EVENT, _len(len(event)), event))
                else:
                    flushed = ()
                    body = b"".join((tsb, head, _TRACK_EVENT, _len(len(event)), event))
                if record is not None:
                    record[i] = (len(chunk), tsb, head, flushed)
                append(_PACKET + _len(len(body)) + body)
                stack.append(ts + s.dur)
                done += 1
                if len(chunk) >= limit:
                    flush(report=True)

    def begin_again(i: int, place: tuple) -> None:
        """Build slice ``i``'s BEGIN packet (recorded by ``write_slices`` at ``place``) again
        from its current args, defining on its sequence every interned entry it uses: those
        it defined there already, and its own (again, if need be: an iid keeps its string)."""
        pos, tsb, head, flushed = place
        s = slices[i]
        deps = []
        hit = names.get(s.name) or name_field(s.name)
        event = _BEGIN + hit[0]
        if hit[1] is not None:
            deps.append(hit[1])
        if s.cat:
            hit = cats.get(s.cat) or cat_field(s.cat)
            event += hit[0]
            deps.append(hit[1])
        for d in (s.shared_args, s.args):
            if d:
                enc, entries = encode_all(d)
                event += enc
                deps.extend(entries)
        event += flow_bytes.get(i, b"") + flow_bytes.get(~i, b"")
        data = b"".join(dict.fromkeys((*flushed, *deps)))
        body = b"".join((tsb, head, _INTERNED, varint(len(data)), data,
                         _TRACK_EVENT, _len(len(event)), event))
        chunk[pos] = _PACKET + _len(len(body)) + body

    def write_counters(units: list) -> None:
        small = _LEN
        for counter in units:
            seq = _Sequence(seq_ids[counter.track])
            for p in _sequence_start(seq, counter.track):
                append(p)
            tail = seq.field + _TRACK_EVENT
            last = 0
            small_ints: dict[int, bytes] = {}   # small int value: all of its body but the ts
            for ts, value in zip(counter.ts, counter.values):
                if value.__class__ is int:
                    # Counts (busy lanes, ready tasks) repeat a few small values: their bytes
                    # are built once per sequence (ints only: 1.0 and -0.0 would find 1 and 0).
                    rest = small_ints.get(value)
                    if rest is None:
                        if 0 <= value < INT64_END or INT64_MIN <= value < -_EXACT:
                            event = _COUNTER + _TE_INT + (small[value] if 0 <= value < 16384
                                                          else varint(value))
                        else:
                            # Negative ints too: a negative int64 varint takes 10 bytes, the
                            # double 8, and Trace Processor stores every counter value as a
                            # double either way; ints beyond int64 have no other way in.
                            event = _COUNTER + _TE_DOUBLE + _pack_double(_as_double(value))
                        rest = tail + small[len(event)] + event
                        if 0 <= value < 16384:
                            small_ints[value] = rest
                else:
                    try:
                        event = _COUNTER + _TE_DOUBLE + _pack_double(value)
                    except struct.error:        # not a number struct takes as it is
                        event = _COUNTER + _TE_DOUBLE + _pack_double(_as_double(value))
                    rest = tail + small[len(event)] + event
                d = ts - last
                if d >= 0:
                    last = ts
                    body = (dts[d] if d < 16384 else _TS + varint(d)) + rest
                else:
                    body = _TS + varint(ts) + _ABS_CLOCK + rest
                append(_PACKET + small[len(body)] + body)
            counts["counter_samples"] += len(counter.ts)
            if len(chunk) >= CHUNK_PACKETS:
                flush(report=True)

    def write_instants() -> None:
        # Instants: on sequence 1, with absolute timestamps and explicit tracks.
        seq1 = _Sequence(SEQ_ID)
        head1 = _SEQ + _FLAGS_NEEDS
        for inst in trace.instants:
            hit = names.get(inst.name) or name_field(inst.name)
            event = _INSTANT + _TE_TRACK + varint(inst.track + 1) + hit[0]
            if hit[1] is not None:
                seq1.use((hit[1],))
            if inst.cat:
                hit = cats.get(inst.cat) or cat_field(inst.cat)
                event += hit[0]
                seq1.use((hit[1],))
            if inst.args:
                event += encode_args(inst.args, seq1)
            body = b"".join((_TS, varint(inst.ts), head1, seq1.flush(),
                             _TRACK_EVENT, _len(len(event)), event))
            append(_PACKET + _len(len(body)) + body)
            counts["instants"] += 1

    # -- helpers of the parts written by a forked process ------------------------------
    def _to_part(part_out: IO[bytes]) -> None:
        """In the forked process (forked before anything was written or counted): write into
        ``part_out``, report nothing."""
        assert not chunk and not done and not any(counts[k] for k in _PART_COUNTS)
        sink[:] = [part_out, None]

    def _part_counts() -> dict[str, int]:
        flush()
        sink[0].flush()
        counts["slices"] = done
        return {k: counts[k] for k in _PART_COUNTS}

    def _append_part(helper, part_out: IO[bytes]) -> None:
        result = helper.result()
        if result is None:
            raise OutputError("writing part of the trace in a second process failed: "
                              f"{one_line(helper.error)}")
        part_out.seek(0)
        shutil.copyfileobj(part_out, out, 1 << 20)
        for key in _PART_COUNTS:
            counts[key] += result[key]

    def _write_enriched() -> dict[str, int]:
        """While ``enrich`` runs here, a forked process writes the trace's own sequences:
        its counters, then its slices, held until the news from here arrive (the slices
        whose args ``enrich`` replaced, built again) and the counters ``enrich`` added,
        which it writes too; this process writes the header and the slices ``enrich``
        added.  Should ``enrich`` change what the forked process writes otherwise, that
        part is dropped and this process writes everything."""
        n_slices, n_flows, n_tracks = len(slices), len(trace.flows), len(trace.tracks)
        samples = [len(c.ts) for c in counter_units]
        before = [(s.args, s.shared_args) for s in slices]
        news_r, news_w = os.pipe()

        def own_part() -> dict[str, int] | None:
            os.close(news_w)
            _to_part(part_out)
            flows_of(None)
            count_names(slice_units, False)
            write_counters(counter_units)
            flush()
            places: dict[int, tuple] = {}
            write_slices(slice_units, places)
            with os.fdopen(news_r, "rb") as r:
                news = pickle.loads(r.read())   # from this program, not the input
            if news is None:
                return None                     # the parent writes everything itself
            changed, counters, ids = news
            for i, (a, sh) in changed.items():
                slices[i].args = a
                slices[i].shared_args = sh
                begin_again(i, places[i])
            seq_ids.update(ids)
            write_counters(counters)
            return _part_counts()

        part_out = tempfile.TemporaryFile()
        helper = fork_pass(own_part)
        os.close(news_r)
        if helper is None:
            os.close(news_w)
            part_out.close()
            enrich(trace)
            return write_perfetto(trace, out, progress, workers)
        news = None
        try:
            try:
                enrich(trace)
                added = slices[n_slices:]
                if (len(trace.flows) == n_flows and len(slices) >= n_slices
                        and all(s.track >= n_tracks for s in added)
                        and [len(c.ts) for c in counter_units] == samples):
                    changed = {i: (s.args, s.shared_args)
                               for i, s in enumerate(slices[:n_slices])
                               if s.args is not before[i][0]
                               or s.shared_args is not before[i][1]}
                    own = {id(c) for c in counter_units}
                    new_counters = [c for c in trace.counters if c.ts and id(c) not in own]
                    new_units: dict[int, list[int]] = {}
                    for i in range(n_slices, len(slices)):
                        new_units.setdefault(slices[i].track, []).append(i)
                    seq_ids.update(_sequence_ids(new_units, new_counters,
                                                 max(seq_ids.values(), default=SEQ_ID) + 1))
                    news = (changed, new_counters,
                            {c.track: seq_ids[c.track] for c in new_counters})
            finally:
                with os.fdopen(news_w, "wb") as w:
                    w.write(pickle.dumps(news, protocol=pickle.HIGHEST_PROTOCOL))
            if news is None:                    # enrich changed what the part writes
                helper.abandon()
                return write_perfetto(trace, out, progress, workers)
            count_names(list(new_units.items()), True)
            write_header()
            write_instants()
            write_slices(list(new_units.items()))
            flush()
            counts["slices"] = done
            _append_part(helper, part_out)
        finally:
            helper.abandon()
            part_out.close()
        return counts

    slice_units = list(by_track.items())
    counter_units = [c for c in trace.counters if c.ts]
    if enrich is not None:
        return _write_enriched()
    # What each process writes: the slice sequences (BEGIN + END per slice, the heavier
    # packets) and the counter sequences, balanced by an estimate of their cost.
    mine: tuple[list, list] = (slice_units, counter_units)
    theirs: tuple[list, list] = ([], [])
    if parallel and _cost(trace) >= PARALLEL_MIN_COST:
        mine, theirs = _halves(slice_units, counter_units)
    helper = None
    if theirs[0] or theirs[1]:
        def second_part() -> dict[str, int]:
            _to_part(part_out)
            flows_of({t for t, _ in theirs[0]})
            count_names(theirs[0], False)
            write_slices(theirs[0])
            write_counters(theirs[1])
            return _part_counts()

        part_out = tempfile.TemporaryFile()
        helper = fork_pass(second_part)
        if helper is None:                      # cannot fork after all: write it here
            mine = (slice_units, counter_units)
            part_out.close()
    try:
        flows_of({t for t, _ in mine[0]} if helper is not None else None)
        count_names(mine[0], True)
        write_header()
        write_slices(mine[0])
        write_instants()
        write_counters(mine[1])
        flush()
        counts["slices"] = done
        if helper is not None:
            _append_part(helper, part_out)
    finally:
        if helper is not None:
            helper.abandon()
            part_out.close()
    return counts


def _sequence_ids(by_track: dict[int, list[int]], counters: list, first: int) -> dict[int, int]:
    """Sequence ids from ``first`` for the tracks with slices or samples, the busiest first
    (so that most are one-byte varints)."""
    load = [(2 * len(ids), t) for t, ids in by_track.items()]
    load += [(len(c.ts), c.track) for c in counters if c.ts]
    return {t: n for n, (_, t) in enumerate(sorted(load, key=lambda lt: (-lt[0], lt[1])),
                                              first)}


_SLICE_COST = 4                  # a slice's two packets cost about four counter samples


def _cost(trace: Trace) -> int:
    """Writing cost estimate, in counter samples."""
    return _SLICE_COST * len(trace.slices) + sum(len(c.ts) for c in trace.counters)


PARALLEL_MIN_COST = 200_000      # about 0.1 s of writing: below it, a fork does not pay
_PART_COUNTS = ("packets", "slices", "counter_samples", "flows_backward")


def _halves(slice_units: list, counter_units: list) -> tuple[tuple[list, list],
                                                              tuple[list, list]]:
    """Split the sequences between two processes by estimated cost (as ``_cost``), heaviest
    first onto the lighter side; each side keeps the sequences in their original order."""
    items = [(_SLICE_COST * len(ids), 0, k) for k, (_, ids) in enumerate(slice_units)]
    items += [(len(c.ts), 1, k) for k, c in enumerate(counter_units)]
    items.sort(key=lambda x: (-x[0], x[1], x[2]))
    load = [0, 0]
    side: dict[tuple[int, int], int] = {}
    for cost, kind, k in items:
        p = 0 if load[0] <= load[1] else 1
        load[p] += cost
        side[(kind, k)] = p
    halves = tuple(([u for k, u in enumerate(slice_units) if side[(0, k)] == p],
                    [u for k, u in enumerate(counter_units) if side[(1, k)] == p])
                   for p in (0, 1))
    return halves[0], halves[1]


