"""The packets of the Perfetto writer: the header sequence, slice, counter and instant
sequences, each built into ``chunk`` with its time in ``stamps`` (ns from the trace's time 0;
-1 for the packets without a time, which open a sequence or describe tracks), then written
in time order (``order``).

A ``SequenceWriter`` holds what a writing process needs: the interner and args encoder, the
flow ids per slice, the name fields, the sequence ids and the counts.  ``write_perfetto``
(this package's ``__init__``) decides which sequences each process writes.
"""

from __future__ import annotations

import collections
import struct
import sys
import tempfile
from array import array
from itertools import compress, islice, repeat
from typing import IO, Any, Callable, Iterator

import numpy as np

from ...model import INT64_END, INT64_MIN, UINT64_END, UNTRUSTED_FLOW, Trace
from ..protowire import _pack_double, _pack_fixed64, key_varint, varint
from ..flows import drawable
from ...heap import give_back
from ...same_work import copies_work, own_work
from ...slice_columns import by_track, forget_columns, kept_columns, refill
from .attributes import attributes_packet
from .flow_ids import add_flow_ids, flow_columns
from .keyed import KeyedFields
from .interning import _ArgEncoder, _Interner, _Sequence, arg_lines
from .order import send_part, time_origin, write_sorted
from .plain_lanes import PLAIN_FROM, begin_extras, plain_lane
from .riders import Riders, ride
from .times import (_COLUMNS_FROM, _end_packets, _lane_times, _one_after_another,
                    _timestamps, _ts_field)
from .tracks import Layout, _sequence_start
from .work_fields import own_id_fields, with_copies
from .wire import (_BEGIN, _COUNTER, _DTS, _END, _EXACT, _FLAGS_NEEDS, _I_CATEGORY, _I_NAME,
                   _INSTANT, _INTERNED, _LEN, _PACKET, _SEQ, _TE_CAT_IID,
                   _TE_DOUBLE, _TE_FLOW,
                   _TE_INT, _TE_NAME, _TE_NAME_IID, _TE_TERM_FLOW, _TE_TRACK, _TRACK_EVENT, _TS,
                   _TS3_LO, _TS4_MID, SEQ_CLEARED, SEQ_ID, _as_double, _len, _packet)

_PART_COUNTS = ("packets", "slices", "counter_samples", "flows_not_drawn",
                "flows_untrusted_not_drawn")


def _sequence_ids(by_track: dict[int, list[int]], counters: list, first: int) -> dict[int, int]:
    """Sequence ids from ``first`` for the tracks with slices or samples, the busiest first
    (so that most are one-byte varints)."""
    load = [(2 * len(ids), t) for t, ids in by_track.items()]
    load += [(len(c.ts), c.track) for c in counters if c.ts]
    return {t: n for n, (_, t) in enumerate(sorted(load, key=lambda lt: (-lt[0], lt[1])),
                                              first)}


# After a lane of these many slices, the heap's free pages go back to the system (the
# lane's arrays, hundreds of MB on a 1 M-task database's host threads).
GIVE_BACK_FROM = 1 << 16


def _spilled_every(pairs: Iterator, w: SequenceWriter) -> Iterator:
    """``pairs``, ``w``'s packets built so far spilled (``SequenceWriter.spill_due``)
    every ``chunk_packets`` of them: a counter of a million samples is not held whole."""
    it = iter(pairs)
    while True:
        block = list(islice(it, w.chunk_packets))
        if not block:
            return
        yield from block
        w.spill_due()


class SequenceWriter:
    """Writes the sequences of ``trace`` into ``out`` in chunks of ``chunk_packets``."""

    def __init__(self, trace: Trace, out: IO[bytes], progress: Callable[[int], None] | None,
                 chunk_packets: int, like: SequenceWriter | None = None):
        """``like``: a writer of the same trace, made before the trace changed, whose
        columns, work ids, lanes, sequence ids and time origin this one takes rather than
        making them again (a second part's writer, in the same process: ``write_perfetto``).
        The correlation fields and sequence ids, which a writer changes in place, are
        copied; a lane's list of ids may be ordered in place by the writer that writes the
        lane (neither writes a lane the other does); the rest is only read until both are
        done."""
        self.trace = trace
        self.slices = trace.slices
        self.chunk_packets = chunk_packets
        self.interner = _Interner()
        self.args_enc = _ArgEncoder(self.interner, arg_lines(trace.meta.extra))
        self.chunk: list[bytes] = []
        self.append = self.chunk.append
        self.stamps = array("q")            # per packet of ``chunk``: its time, or -1
        self.stamp = self.stamps.append
        self.next_report = chunk_packets    # progress is told every chunk_packets packets
        # The packets built before the last report, laid end to end in a file (made at the
        # first spill; their lengths in ``spilled``) rather than held as objects until the
        # end: a 1 M-task database holds millions.  A forked part does not spill (its
        # packets may be built again in place: ``begin_again``).
        self.spilling = True
        self.spill: IO[bytes] | None = None
        self.spilled = array("i")           # (a packet's length is below 2 GiB)
        # A part's packets built a lane at a time, kept as built (``_add``): the place of
        # the first in ``chunk``, their bytes end to end, each one's length.
        self.blocks: list[tuple[int, bytes, np.ndarray]] = []
        self.counts = {"packets": 0, "slices": 0, "instants": 0, "flows": len(trace.flows),
                       "counter_samples": 0, "tracks": len(trace.tracks), "flows_not_drawn": 0,
                       "flows_untrusted_not_drawn": 0}
        # Where packets go and who hears of progress (a second part writes into its own
        # file; forked, silently: ``to_part``).
        self.sink: list[Any] = [out, progress]
        # Flow ids per slice (writers.flows): outgoing on the source BEGIN (key i),
        # terminating on the destination BEGIN (key ~i), or on its END when both start at one
        # ns (``end_flow_bytes``); a flow whose destination starts before its source is not
        # written (Trace Processor would draw it reversed).  Each process fills them for its
        # own slices.
        self.flow_bytes = KeyedFields()
        self.end_flow_bytes = KeyedFields()
        if like is not None:
            self.cols, self.flow_cols, self.own_work, self.own_fields, self.copied = \
                like.cols, like.flow_cols, like.own_work, like.own_fields, like.copied
            self.work = list(like.work)
            self.by_track = like.by_track
            self.seq_ids = dict(like.seq_ids)
            self.base = like.base
        else:
            self._derive(trace)
        # Names used once are written inline: interning them would only add an entry.  Each
        # process counts the names it writes (``count_names``).
        self.repeated: collections.Counter = collections.Counter()
        self.names: dict[str, tuple[bytes, bytes | None]] = {}
        self.cats: dict[str, tuple[bytes, bytes]] = {}
        self.shared_cache: dict[int, tuple[bytes, tuple]] = {}
        self.done = 0
        # Counter samples riding on slice events of the same time (``ride``): the extra
        # counter fields per BEGIN (by slice id) and per END (by track, then end time), and
        # per counter (by id) the times of its samples that ride.
        self.riders = Riders()
        self.rides: dict[int, Any] = {}     # id(counter) -> numpy bools: which ride

    def _derive(self, trace: Trace) -> None:
        """What the writer reads of the whole trace: its columns, work ids, lanes and
        sequence ids, and the time origin."""
        # The slices' tracks and times as columns (None where a time is outside ±2^62: each
        # slice is then taken as it is), and the flows' ends as columns, made here: a forked
        # process does not read the flows again (reading an object writes its reference
        # count: a page copied).
        self.cols = kept_columns(self.slices)
        self.flow_cols = flow_columns(trace.flows, len(self.slices)) \
            if self.cols is not None and trace.flows else None
        # TrackEvent.correlation_id per slice that is one piece of work with slices on other
        # tracks (``same_work.work_ids``: the run's own slices and the analyses' copies of
        # them, ``model.COPIES``), on its BEGIN; from the whole trace, so both processes know
        # them.
        self.own_work = own_work(trace, None if self.cols is None else self.cols.track)
        self.own_fields = own_id_fields(self.own_work, len(self.slices))
        self.copied = copies_work(trace, self.own_work)
        self.work = with_copies(self.own_fields, self.copied, len(self.slices))
        # (each track's slice ids an ``array("q")``, or a list where the columns are not
        # made; both are read alike)
        self.by_track = by_track(self.cols.track, packed=True) if self.cols is not None \
            else trace.slices_by_track()
        # Sequence ids: the tracks with the most packets get the small (one-byte) ids.
        self.seq_ids = _sequence_ids(self.by_track, trace.counters, SEQ_ID + 1)
        self.base = time_origin(trace, self.cols)

    def report(self) -> None:
        """Tell how many slices are done; the next time, ``chunk_packets`` packets later.
        The packets built so far go to the spill file first (``_spill``)."""
        if self.spilling and len(self.chunk) >= self.chunk_packets:
            self._spill()
        self.next_report = len(self.chunk) + self.chunk_packets
        if self.sink[1]:
            self.sink[1](self.done)

    def _spill(self) -> None:
        """The packets built so far, laid end to end in the spill file (made now if need
        be), their lengths kept; ``chunk`` emptied (``stamps`` keeps their times)."""
        if self.spill is None:
            self.spill = tempfile.TemporaryFile()
        self.spill.write(b"".join(self.chunk))
        self.spilled.extend(map(len, self.chunk))
        self.chunk.clear()

    def _add(self, data: bytes, lengths: np.ndarray, stamps: np.ndarray) -> None:
        """Packets built elsewhere (``plain_lanes``): their bytes end to end, each one's
        length and stamp (int64 arrays); straight into the spill file where this process
        spills."""
        if self.spilling:
            self._spill()
            self.spill.write(data)
            self.spilled.frombytes(lengths.astype(np.dtype(self.spilled.typecode)).tobytes())
        else:
            # (a part: the bytes kept as they are, each packet's place in ``chunk`` held
            # by None, where ``begin_again`` may put it built again; ``send_part`` writes
            # them)
            self.blocks.append((len(self.chunk), data, lengths))
            self.chunk.extend(repeat(None, len(lengths)))
        self.stamps.frombytes(stamps.astype(np.int64).tobytes())

    def write_sorted(self, part: tuple[Any, Any, Any] | None = None,
                     forks: bool = False) -> None:
        """Write every packet built here (those spilled first), and those of a second
        ``part``, in time order (``order.write_sorted``; ``forks``: a forked process may
        cut out half of a large merge)."""
        # (the part's come with its counts)
        self.counts["packets"] += len(self.spilled) + len(self.chunk)
        self.release()
        give_back()         # (what was let go, before the merge's buffer: heap.py)
        try:
            write_sorted(self.sink[0].write, self.chunk, self.stamps, part, self.chunk_packets,
                         (self.spill, self.spilled) if self.spilled else None,
                         self.sink[0] if forks else None)
        finally:
            if self.spill is not None:
                self.spill.close()

    def release(self) -> None:
        """Let go of what only building packets needs (the flow, rider and correlation
        fields per slice, the caches, the columns), so that merging the packets in time
        order does not hold them too: on a 1 M-task database, its peak memory 3.9 -> 3.5
        GB."""
        for table in (self.flow_bytes, self.end_flow_bytes, self.riders,
                      self.work, self.own_fields, self.names, self.cats, self.shared_cache,
                      self.rides):
            table.clear()
        self.args_enc.clear()
        self.own_work = self.copied = self.cols = self.flow_cols = None
        forget_columns(self.slices)     # (those of the conversion, too)
        for ids in self.by_track.values():  # (this writer's own: the callers' units hold
            del ids[:]                      # them too)

    def write_header(self) -> None:
        """Sequence 1: clears incremental state, gives the run's facts
        (``attributes``), describes every track."""
        layout = Layout(self.trace, self.base)
        packets = [_packet(_SEQ + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)),
                   attributes_packet(self.trace, self.base), *layout.descriptors()]
        self.chunk.extend(packets)
        self.stamps.extend([-1] * len(packets))
        self.counts["tracks"] = len(self.trace.tracks) - len(layout.hidden)

    def flows_of(self, tracks: set[int] | None) -> None:
        """``flow_bytes`` of the slices on ``tracks`` (None: all); counts the flows not
        drawn whose destination is there.  A column at a time (``slice_columns``), else
        (a time outside int64, a flow end that is no slice's index) one flow at a time."""
        flows = self.trace.flows
        if not flows:
            return
        if self.flow_cols is None or self.cols is None:     # (None: times past ±2^62)
            self._flows_each(tracks)
        else:
            out, untrusted = add_flow_ids(self.flow_cols, self.cols, tracks,
                                          self.flow_bytes, self.end_flow_bytes)
            self.counts["flows_not_drawn"] += out
            self.counts["flows_untrusted_not_drawn"] += untrusted

    def _flows_each(self, tracks: set[int] | None) -> None:
        """``flows_of``, one flow at a time."""
        slices = self.slices
        flow_bytes: dict[int, bytes] = {}
        end_bytes: dict[int, bytes] = {}
        not_drawn = untrusted = 0
        for fid, flow in enumerate(self.trace.flows, 1):
            src, dst = flow.src, flow.dst
            here_src = tracks is None or slices[src].track in tracks
            here_dst = tracks is None or slices[dst].track in tracks
            if not (here_src or here_dst):
                continue
            d = slices[dst]
            s0 = slices[src].ts
            if (d.ts <= s0 or flow.name) and not drawable(slices[src], d, "perfetto",
                                                          flow.name):
                not_drawn += here_dst
                untrusted += here_dst and flow.name == UNTRUSTED_FLOW
                continue
            b = _pack_fixed64(fid)
            if here_src:
                flow_bytes[src] = flow_bytes.get(src, b"") + _TE_FLOW + b
            if here_dst:
                if d.ts == s0:      # one ns: terminate on the destination's END
                    end_bytes[dst] = end_bytes.get(dst, b"") + _TE_TERM_FLOW + b
                else:
                    flow_bytes[~dst] = flow_bytes.get(~dst, b"") + _TE_TERM_FLOW + b
        self.flow_bytes.add_dict(flow_bytes)
        self.end_flow_bytes.add_dict(end_bytes)
        self.counts["flows_not_drawn"] += not_drawn
        self.counts["flows_untrusted_not_drawn"] += untrusted

    def ride(self, units: list[tuple[int, list[int]]], counters: list) -> None:
        """Let the samples of ``counters`` ride on the events of the slices of ``units``
        (``riders.ride``): before a fork that splits them, or where both are written."""
        ride(self.slices, units, counters, self.riders, self.rides, self.cols)

    def count_names(self, units: list[tuple[int, list[int]]], instants: bool) -> None:
        slices = self.slices
        self.repeated.update(slices[i].name for _, ids in units for i in ids)
        if instants:
            self.repeated.update(i.name for i in self.trace.instants)

    def name_field(self, name: str) -> tuple[bytes, bytes | None]:
        if self.repeated[name] > 1:
            iid, entry = self.interner.entry(_I_NAME, name)
            hit = self.names[name] = (_TE_NAME_IID + varint(iid), entry)
        else:
            b = name.encode("utf-8", "surrogatepass")
            hit = self.names[name] = (_TE_NAME + _len(len(b)) + b, None)
        return hit

    def cat_field(self, cat: str) -> tuple[bytes, bytes]:
        iid, entry = self.interner.entry(_I_CATEGORY, cat)
        hit = self.cats[cat] = (_TE_CAT_IID + varint(iid), entry)
        return hit

    def write_slices(self, units: list[tuple[int, list[int]]], record: dict | None = None) -> None:
        """The sequences of ``units`` (track, slice ids).  With ``record``, every BEGIN's
        place in ``chunk`` is kept (``record[i]``), so that packets can be built again
        (``begin_again``) before they are written."""
        slices, chunk, append, stamp = self.slices, self.chunk, self.append, self.stamp
        seq_ids, names, cats = self.seq_ids, self.names, self.cats
        name_field, cat_field = self.name_field, self.cat_field
        shared_cache, end_flow_bytes, riders = self.shared_cache, self.end_flow_bytes, \
            self.riders
        encode_args, encode_all = self.args_enc.encode, self.args_enc.encode_all
        dts, ts_lo, ts_mid, ts_hi = _DTS, _TS3_LO, _TS4_MID, _LEN
        base = self.base
        done = self.done
        # (recording where packets are spilled would move them: silent then; a part does
        # not spill, ``to_part``, and tells its progress where it has someone to tell)
        quiet = record is not None and self.spilling
        limit = sys.maxsize if quiet else self.next_report
        # The packets of plain ENDs and the timestamp fields of BEGINs are made per track, a
        # column at a time (``_end_packets``, ``_timestamps``: on long runs most times take
        # five bytes, past the inline steps); the timestamp of an END that carries more is
        # written inline, on purpose: a call would cost more than the step itself.
        cols = self.cols
        for track_id, ids in units:
            times = _lane_times(cols, ids) if cols is not None and \
                len(ids) >= min(_COLUMNS_FROM, PLAIN_FROM) else None
            seq = _Sequence(seq_ids[track_id])
            append(_sequence_start(seq, track_id))
            stamp(-1)
            if times is not None and len(ids) >= PLAIN_FROM and \
                    (record is None or not self.spilling):
                made = plain_lane(self, track_id, ids, *times, seq, record, len(chunk))
                if made is not None:                # (a lane of plain slices)
                    for piece in made:
                        self._add(*piece)
                    done += len(ids)
                    if len(ids) >= GIVE_BACK_FROM:
                        give_back()                 # (its arrays, let go: heap.py)
                    if not quiet:
                        self.done = done
                        self.report()
                        limit = self.next_report
                    continue
            if times is not None:                   # (as lists for the loop's steps)
                starts, ends = times[0].tolist(), times[1].tolist()
            else:
                starts = [slices[i].ts for i in ids]
                if not all(map(int.__lt__, starts, starts[1:])):    # sorted only if need be
                    ordered = sorted(ids, key=lambda i: (slices[i].ts, -slices[i].dur))
                    refill(ids, np.array(ordered, dtype=np.int64))
                    starts = [slices[i].ts for i in ids]
                ends = [slices[i].ts + slices[i].dur for i in ids]
            seqb = seq.field
            defined = seq.defined
            pending = seq.pending
            seen = seq.seen
            head = seqb + _FLAGS_NEEDS
            end_tail = seqb + _TRACK_EVENT + _len(len(_END)) + _END
            # The whole packet of every plain END (no flows, no riding samples), a column at
            # a time (``columns``).
            end_pk = _end_packets(ends, base, end_tail)
            begin_ts = _timestamps(starts, base)
            # A lane whose slices each end before the next begins: every END right after
            # its BEGIN (those that carry more through the stack below, as on other lanes).
            flat = _one_after_another(ends, starts)
            # One last step (id -1) at a time past every end: the END step closes what is open.
            starts.append(UINT64_END)
            stack: list[int] = []   # open slice ends, innermost last
            kstack: list[int] = []  # their places in ``ids`` (``end_pk``)
            marks: list[tuple[int, int]] = []   # (depth, slice) of open slices with END flows
            at_end = riders.end_dict(track_id)  # counter samples riding on ENDs, by time
            end_flows = end_flow_bytes.subset(ids) if end_flow_bytes else {}   # by slice
            # what each BEGIN carries after its args (flows, riders, correlation), by place
            extras = begin_extras(self, ids, np.array(ids, dtype=np.int64))
            for k, (i, ts) in enumerate(zip([*ids, -1], starts)):
                while stack and stack[-1] <= ts:
                    end = stack.pop()
                    d = end - base
                    stamp(d)
                    extra = at_end.pop(end, None) if at_end else None
                    if extra is None and not (marks and marks[-1][0] == len(stack)):
                        append(end_pk[kstack.pop()])        # a plain END: made already
                        continue
                    kstack.pop()
                    if d < 16384:
                        body = dts[d]
                    elif d < 2097152:       # three bytes, inline: most times of a run
                        body = ts_lo[d & 127] + ts_hi[d >> 7]
                    elif d < 268435456:     # four bytes: runs past 2.1 ms
                        body = ts_lo[d & 127] + ts_mid[(d >> 7) & 127] + ts_hi[d >> 14]
                    else:                   # runs past 268 ms
                        body = _ts_field(d)
                    if marks and marks[-1][0] == len(stack):     # an END with flows
                        ev = _END + end_flows[marks.pop()[1]]
                        if extra is not None:
                            ev += extra
                        body += seqb + _TRACK_EVENT + _len(len(ev)) + ev
                        append(_PACKET + _len(len(body)) + body)
                        continue
                    ev = _END + extra
                    body += seqb + _TRACK_EVENT + _len(len(ev)) + ev
                    append(_PACKET + _len(len(body)) + body)
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
                        hit = shared_cache[id(sh)] = encode_all(sh, True)
                    enc = hit[0]
                    if enc not in seen:
                        seen.add(enc)
                        seq.use(hit[1])
                    event += enc
                if s.args:
                    event += encode_args(s.args, seq)
                fb = extras[k]
                if fb:
                    event += fb
                d = ts - base
                tsb = begin_ts[k]
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
                stamp(d)
                if flat and i not in end_flows and (at_end is None or ends[k] not in at_end):
                    append(end_pk[k])
                    stamp(ends[k] - base)
                else:
                    stack.append(ends[k])
                    kstack.append(k)
                    if end_flows and i in end_flows:
                        marks.append((len(stack) - 1, i))
                done += 1
                if len(chunk) >= limit:
                    self.done = done
                    self.report()
                    limit = self.next_report
        self.done = done

    def begin_again(self, ids: list[int], places: dict[int, tuple]) -> None:
        """Build the BEGIN packet of each slice of ``ids`` (recorded by ``write_slices`` at
        ``places[i]``) again from its current args, in that order, defining on its sequence
        every interned entry it uses: those it defined there already, and its own (again,
        if need be: an iid keeps its string).  What each carries after its args is looked
        up for all of them at once (``begin_extras``)."""
        names, cats = self.names, self.cats
        name_field, cat_field = self.name_field, self.cat_field
        encode_all = self.args_enc.encode_all
        extras = begin_extras(self, ids, np.array(ids, dtype=np.int64))
        for i, extra in zip(ids, extras):
            pos, tsb, head, flushed = places[i]
            s = self.slices[i]
            if tsb is None:                     # (``plain_lanes``: made here)
                tsb = _ts_field(s.ts - self.base)
            deps = []
            hit = names.get(s.name) or name_field(s.name)
            event = _BEGIN + hit[0]
            if hit[1] is not None:
                deps.append(hit[1])
            if s.cat:
                hit = cats.get(s.cat) or cat_field(s.cat)
                event += hit[0]
                deps.append(hit[1])
            for d, shared in ((s.shared_args, True), (s.args, False)):
                if d:
                    enc, entries = encode_all(d, shared)
                    event += enc
                    deps.extend(entries)
            event += extra
            data = b"".join(dict.fromkeys((*flushed, *deps)))
            body = b"".join((tsb, head, _INTERNED, varint(len(data)), data,
                             _TRACK_EVENT, _len(len(event)), event))
            self.chunk[pos] = _PACKET + _len(len(body)) + body

    def write_counters(self, units: list) -> None:
        append, seq_ids, counts = self.append, self.seq_ids, self.counts
        stamp = self.stamp
        small = _LEN
        dts, ts_lo, ts_mid, ts_hi = _DTS, _TS3_LO, _TS4_MID, _LEN
        base = self.base
        rides = self.rides
        for counter in units:
            counts["counter_samples"] += len(counter.ts)
            pairs = zip(counter.ts, counter.values)
            rode = rides.get(id(counter))
            if rode is not None:            # those samples are written already (``ride``)
                if rode.all():
                    continue
                keep = (~rode).tolist()
                pairs = zip(compress(counter.ts, keep), compress(counter.values, keep))
            seq = _Sequence(seq_ids[counter.track])
            append(_sequence_start(seq, counter.track))
            stamp(-1)
            tail = seq.field + _TRACK_EVENT
            small_ints: dict[int, bytes] = {}   # small int value: all of its body but the ts
            for ts, value in _spilled_every(pairs, self):
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
                d = ts - base
                if d < 16384:
                    body = dts[d] + rest
                elif d < 2097152:
                    body = ts_lo[d & 127] + ts_hi[d >> 7] + rest
                elif d < 268435456:     # four bytes: runs past 2.1 ms
                    body = ts_lo[d & 127] + ts_mid[(d >> 7) & 127] + ts_hi[d >> 14] + rest
                else:                   # runs past 268 ms
                    body = _ts_field(d) + rest
                append(_PACKET + small[len(body)] + body)
                stamp(d)
            self.spill_due()

    def spill_due(self) -> None:
        """``report`` where ``chunk_packets`` packets were built since the last one."""
        if len(self.chunk) >= self.next_report:
            self.report()

    def write_instants(self) -> None:
        # Instants: on sequence 1, with absolute timestamps and explicit tracks.
        names, cats, append = self.names, self.cats, self.append
        name_field, cat_field, encode_args = self.name_field, self.cat_field, self.args_enc.encode
        seq1 = _Sequence(SEQ_ID)
        head1 = _SEQ + _FLAGS_NEEDS
        # In time order: the first use of an interned name in time defines it (the packets
        # are written in time order, ``write_sorted``).
        for inst in sorted(self.trace.instants, key=lambda i: i.ts):
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
            body = b"".join((_TS, varint(inst.ts - self.base), head1, seq1.flush(),
                             _TRACK_EVENT, _len(len(event)), event))
            append(_PACKET + _len(len(body)) + body)
            self.stamp(inst.ts - self.base)
            self.counts["instants"] += 1


    # -- helpers of a second part (written by a forked process, or first, here) ----------
    def to_part(self, part_out: IO[bytes],
                progress: Callable[[int], None] | None = None) -> None:
        """In the forked process (forked before anything was built or counted), or in a
        part's own writer: write into ``part_out`` (in the order built: the parent sorts),
        tell ``progress`` (a forked process: nobody) the slices done, spill nothing (its
        packets may be built again in place: ``begin_again``)."""
        assert not self.chunk and not self.done and not any(self.counts[k]
                                                             for k in _PART_COUNTS)
        self.sink[:] = [part_out, progress]
        self.spilling = False

    def part_counts(self) -> dict[str, Any]:
        """The part's counts, its packets' bytes and number; its packets go to
        ``part_out``, then their stamps and lengths (``order.send_part``; ``_part`` reads
        them)."""
        self.counts["packets"] += len(self.chunk)
        self.counts["slices"] = self.done
        result: dict[str, Any] = {k: self.counts[k] for k in _PART_COUNTS}
        out = self.sink[0]
        stamps, lengths = send_part(out, self.chunk, self.stamps, self.chunk_packets,
                                    self.blocks)
        # (their stamps and lengths after them in the file: read into their arrays there,
        # not copied through a pipe and a pickle)
        result["packet_bytes"], result["part_packets"] = sum(lengths), len(lengths)
        out.write(stamps)
        out.write(lengths)
        out.flush()
        return result
