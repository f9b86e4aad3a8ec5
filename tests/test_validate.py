"""`tracecvt validate`: each check finds exactly the problem planted in a hand-built trace,
lenient cases pass, and real outputs (ours and the perfetto package's builder's) pass."""

from __future__ import annotations

import gzip
import json
import math

import pytest
from click.testing import CliRunner
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from tracecvt.validate import (NOTES, PROBLEMS, check_trace, validate, validate_bytes,
                                validate_path)

from conftest import PYPTO_RUNS, pypto_run_dir

pytestmark = pytest.mark.no_trace_check      # writes broken traces on purpose

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
END = pb.TrackEvent.TYPE_SLICE_END
INSTANT = pb.TrackEvent.TYPE_INSTANT
COUNTER = pb.TrackEvent.TYPE_COUNTER


class Builder:
    """A small trace in the shape tracecvt writes: one sequence, a process-like root track,
    two lanes and a counter track, interned names."""

    def __init__(self, seq: int = 1):
        self.trace = pb.Trace()
        self.seq = seq

    def packet(self, ts: int | None = None, flags: int = 0, seq: int | None = None):
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = self.seq if seq is None else seq
        if ts is not None:
            p.timestamp = ts
        if flags:
            p.sequence_flags = flags
        return p

    def clear(self, seq: int | None = None):
        return self.packet(flags=CLEARED, seq=seq)

    def track(self, uuid: int, name: str, parent: int = 0, counter: bool = False):
        p = self.packet()
        td = p.track_descriptor
        td.uuid = uuid
        td.name = name
        if parent:
            td.parent_uuid = parent
        if counter:
            td.counter.unit_name = "tasks"
        return p

    def intern_name(self, iid: int, name: str, seq: int | None = None):
        p = self.packet(flags=NEEDS, seq=seq)
        e = p.interned_data.event_names.add()
        e.iid, e.name = iid, name
        return p

    def event(self, ts: int, typ: int, track: int | None, name: str | None = None,
              name_iid: int = 0, flags: int | None = None, seq: int | None = None):
        p = self.packet(ts, NEEDS if flags is None and name_iid else (flags or 0), seq)
        te = p.track_event
        te.type = typ
        if track is not None:
            te.track_uuid = track
        if name is not None:
            te.name = name
        if name_iid:
            te.name_iid = name_iid
        return p

    def slice(self, ts: int, dur: int, track: int, name: str = "s"):
        b = self.event(ts, BEGIN, track, name)
        e = self.event(ts + dur, END, track)
        return b, e

    def clock_snapshot(self, *clocks: tuple, flags: int = 0, seq: int | None = None):
        """A ClockSnapshot of ``(clock_id, timestamp, is_incremental[, unit_multiplier_ns])``
        clocks."""
        p = self.packet(flags=flags, seq=seq)
        for clock in clocks:
            c = p.clock_snapshot.clocks.add()
            c.clock_id, c.timestamp, c.is_incremental = clock[:3]
            if len(clock) > 3:
                c.unit_multiplier_ns = clock[3]
        return p

    def clock_defaults(self, clock_id: int, flags: int, seq: int | None = None):
        """TracePacketDefaults: the sequence's timestamps are on ``clock_id``."""
        p = self.packet(flags=flags, seq=seq)
        p.trace_packet_defaults.timestamp_clock_id = clock_id
        return p

    def counter(self, ts: int, track: int, value: float):
        p = self.event(ts, COUNTER, track)
        p.track_event.double_counter_value = value
        return p

    def bytes(self) -> bytes:
        return self.trace.SerializeToString()


def base() -> Builder:
    b = Builder()
    b.clear()
    b.track(1, "device")
    b.track(2, "AIC_1", parent=1)
    b.track(3, "AIV_1", parent=1)
    b.track(4, "ReadyCount", parent=1, counter=True)
    b.intern_name(1, "task")
    return b


def good() -> Builder:
    b = base()
    b.event(100, BEGIN, 2, name_iid=1)
    b.event(150, BEGIN, 2, name_iid=1)        # nested child
    b.event(160, END, 2)
    b.event(200, END, 2)
    p = b.event(300, BEGIN, 3, name="x")
    p.track_event.terminating_flow_ids.append(7)
    b.event(400, END, 3)
    # the flow source sits on the first slice
    b.trace.packet[6].track_event.flow_ids.append(7)
    b.counter(100, 4, 3.0)
    b.counter(200, 4, 0.0)
    b.event(250, INSTANT, 3, name="mark")
    return b


def problems(data: bytes) -> dict:
    r = validate_bytes(data)
    return r.problems


def only(data: bytes, kind: str):
    """The report of ``data`` has exactly the problem ``kind``; returns that problem."""
    r = validate_bytes(data)
    assert set(r.problems) == {kind}, r.text()
    assert not r.ok
    return r.problems[kind]


# -- the good trace passes, and the counts are right ------------------------------------------

def test_good_trace_passes_with_counts():
    r = validate_bytes(good().bytes())
    assert r.ok, r.text()
    assert (r.packets, r.sequences, r.tracks, r.counter_tracks) == (15, 1, 4, 1)
    assert (r.slices, r.instants, r.flows, r.counter_samples) == (3, 1, 1, 2)
    assert r.notes == {}
    assert "ok: no problems found" in r.text()


def test_every_problem_kind_has_a_test():
    """Keeps this file honest: each PROBLEMS kind is planted by some test below."""
    src = open(__file__, encoding="utf-8").read()
    missing = [k for k in PROBLEMS if f'"{k}"' not in src.split("def test_every_problem", 1)[1]]
    assert not missing


# -- decoding ---------------------------------------------------------------------------------

def test_not_a_trace():
    p = only(b'{"traceEvents": []}', "not-a-trace")
    assert p.first_packet == -1 and "text" in p.message


def test_no_packets():
    only(b"", "no-packets")


def test_truncated_file_reports_the_cut_and_checks_the_rest():
    data = good().bytes()
    cut = data[:-5]
    r = validate_bytes(cut)
    assert set(r.problems) == {"truncated"}, r.text()
    assert r.problems["truncated"].first_packet == 14
    assert r.packets == 14               # every complete packet was still checked


def test_undecodable_packet():
    data = good().bytes()
    # A packet whose body is a track_event (field 11) that claims more bytes than it has.
    bad = b"\x0a\x04" + b"\x5a\x09\x48\x01"
    r = validate_bytes(data + bad)
    assert set(r.problems) == {"undecodable-packet"}, r.text()
    assert r.problems["undecodable-packet"].first_packet == 15
    assert r.packets == 16


def test_undecodable_nested_message_in_a_field_the_checks_do_not_read():
    te = pb.TrackEvent(type=INSTANT, track_uuid=3, name="ok").SerializeToString()
    te += b"\xaa\x01\x02\x10\xff"           # log_message (field 21): a varint cut short
    body = b"\x50\x01" + b"\x40" + _varint(500) + b"\x5a" + _varint(len(te)) + te
    data = good().bytes() + b"\x0a" + _varint(len(body)) + body
    p = only(data, "undecodable-packet")
    assert p.first_packet == 15


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# -- incremental state ------------------------------------------------------------------------

def test_needs_state_before_it_was_cleared_is_dropped():
    b = Builder()
    b.track(2, "lane")
    b.intern_name(1, "task")                 # NEEDS before any clear: dropped
    b.clear()
    p = only(b.bytes(), "state-not-cleared")
    assert p.first_packet == 1


def test_needs_state_after_a_lost_packet():
    b = good()
    p = b.packet(500)
    p.previous_packet_dropped = 1
    b.event(600, INSTANT, 3, name_iid=1)      # NEEDS, state invalid since the loss
    only(b.bytes(), "state-not-cleared")


def test_interned_data_without_needs_flag():
    b = base()
    p = b.packet()
    e = p.interned_data.event_names.add()
    e.iid, e.name = 2, "other"
    only(b.bytes(), "missing-needs-flag")


def test_event_using_iids_without_needs_flag():
    b = base()
    b.event(100, INSTANT, 2, name_iid=1, flags=0)
    only(b.bytes(), "missing-needs-flag")


def test_unresolved_name_iid():
    b = base()
    b.event(100, INSTANT, 2, name_iid=9)
    p = only(b.bytes(), "unresolved-iid")
    assert "event name iid 9" in p.message and p.first_packet == 6


def test_iid_defined_after_its_use_is_unresolved():
    b = base()
    b.event(100, INSTANT, 2, name_iid=2)
    b.intern_name(2, "late")
    only(b.bytes(), "unresolved-iid")


def test_clearing_state_forgets_iids():
    b = base()
    b.event(100, INSTANT, 2, name_iid=1)
    b.clear()
    b.event(200, INSTANT, 2, name_iid=1)     # defined before the clear only
    p = only(b.bytes(), "unresolved-iid")
    assert p.first_packet == 8


def test_iids_are_scoped_to_their_sequence():
    b = base()
    b.clear(seq=2)
    b.event(100, INSTANT, 2, name_iid=1, seq=2)     # iid 1 is defined on sequence 1 only
    p = only(b.bytes(), "unresolved-iid")
    assert "sequence 2" in p.message


def test_unresolved_category_and_nested_annotation_iids():
    b = base()
    p = b.event(100, INSTANT, 2, name="x", flags=NEEDS)
    p.track_event.category_iids.append(5)
    only(b.bytes(), "unresolved-iid")
    b = base()
    p = b.packet(flags=NEEDS)
    n = p.interned_data.debug_annotation_names.add()
    n.iid, n.name = 1, "inputs"
    p = b.event(100, INSTANT, 2, name="x", flags=NEEDS)
    a = p.track_event.debug_annotations.add()
    a.name_iid = 1
    inner = a.array_values.add().dict_entries.add()
    inner.name_iid = 1
    inner.string_value_iid = 3                     # no such interned string
    event = p
    p = only(b.bytes(), "unresolved-iid")
    assert "argument string value iid 3" in p.message
    # once defined, the same annotation bytes resolve (the cache must not hide that)
    q = b.packet(flags=NEEDS)
    s = q.interned_data.debug_annotation_string_values.add()
    s.iid, s.str = 3, b"FP16"
    b.trace.packet.add().CopyFrom(event)
    r = validate_bytes(b.bytes())
    assert r.problems["unresolved-iid"].count == 1


# -- tracks -----------------------------------------------------------------------------------

def test_event_on_undescribed_track():
    b = base()
    b.slice(100, 10, 99)
    p = only(b.bytes(), "unknown-track")
    assert "99" in p.message and p.count == 2 and p.first_packet == 6


def test_counter_on_undescribed_track():
    b = base()
    b.counter(100, 98, 1.0)
    only(b.bytes(), "unknown-track")


def test_unknown_parent():
    b = base()
    b.track(5, "orphan", parent=77)
    p = only(b.bytes(), "unknown-parent")
    assert "orphan" in p.message


def test_parent_cycle():
    b = base()
    b.track(5, "a", parent=6)
    b.track(6, "b", parent=5)
    only(b.bytes(), "track-cycle")


def test_conflicting_descriptor():
    b = base()
    b.track(3, "AIV_1", parent=2)             # was under 1
    only(b.bytes(), "conflicting-descriptor")
    b = base()
    b.track(3, "AIV_1", parent=1, counter=True)
    only(b.bytes(), "conflicting-descriptor")


def test_reemitted_identical_descriptor_is_fine():
    b = good()
    b.track(2, "AIC_1", parent=1)
    assert validate_bytes(b.bytes()).ok


def test_descriptor_after_first_use_is_only_a_note():
    b = base()
    b.slice(100, 10, 5)
    b.track(5, "late lane", parent=1)
    r = validate_bytes(b.bytes())
    assert r.ok, r.text()
    assert "descriptor-after-use" in r.notes


# -- slices -----------------------------------------------------------------------------------

def test_end_without_begin():
    b = good()
    b.event(900, END, 3)
    p = only(b.bytes(), "end-without-begin")
    assert p.first_packet == 15


def test_unterminated_slice():
    b = good()
    b.event(900, BEGIN, 3, name="open")
    only(b.bytes(), "unterminated-slice")


def test_negative_duration():
    b = base()
    b.event(100, BEGIN, 2, name="a")
    b.event(90, END, 2)
    p = only(b.bytes(), "negative-duration")
    assert p.first_packet == 7


def test_improper_nesting():
    b = base()
    b.slice(0, 10, 2, "a")
    b.slice(5, 10, 2, "b")                    # overlaps a without nesting: [0,10] / [5,15]
    p = only(b.bytes(), "improper-nesting")
    assert p.count >= 1


def test_out_of_order_but_well_nested_slices_pass():
    b = base()
    b.slice(200, 10, 2, "later, written first")
    b.slice(100, 50, 2, "earlier")
    b.slice(110, 5, 2, "nested child, written last")
    assert validate_bytes(b.bytes()).ok


def test_slice_on_counter_track():
    b = base()
    b.slice(100, 10, 4)
    only(b.bytes(), "slice-on-counter-track")


def test_timestamp_out_of_range():
    b = base()
    b.event(1 << 63, INSTANT, 2, name="far")
    only(b.bytes(), "timestamp-out-of-range")


# -- flows ------------------------------------------------------------------------------------

def test_flow_with_one_end():
    b = base()
    p, _ = b.slice(100, 10, 2)
    p.track_event.flow_ids.append(42)
    p = only(b.bytes(), "flow-one-end")
    assert "42" in p.message


def test_terminating_flow_without_start():
    b = base()
    p, _ = b.slice(100, 10, 2)
    p.track_event.terminating_flow_ids.append(43)
    only(b.bytes(), "flow-end-without-start")


def test_flow_that_terminates_before_it_starts():
    b = base()
    p, _ = b.slice(100, 10, 2)
    p.track_event.terminating_flow_ids.append(44)
    q, _ = b.slice(200, 10, 3)
    q.track_event.flow_ids.append(44)
    r = validate_bytes(b.bytes())
    assert set(r.problems) == {"flow-end-without-start", "flow-one-end"}, r.text()


def test_flow_ids_on_two_begins_are_an_arrow():
    """Trace Processor draws a flow id on two BEGINs as an arrow from the earlier one."""
    b = base()
    p, _ = b.slice(200, 10, 2)
    p.track_event.flow_ids.append(45)
    q, _ = b.slice(100, 10, 3)
    q.track_event.flow_ids.append(45)
    assert validate_bytes(b.bytes()).ok


# -- counters ---------------------------------------------------------------------------------

def test_counter_on_a_slice_track():
    b = base()
    b.counter(100, 2, 1.0)
    only(b.bytes(), "counter-on-non-counter-track")


def test_extra_counter_values_on_a_slice_track_and_mismatched():
    b = base()
    p, _ = b.slice(100, 10, 2)
    p.track_event.extra_counter_track_uuids.append(3)
    p.track_event.extra_counter_values.append(5)
    only(b.bytes(), "counter-on-non-counter-track")
    b = base()
    p, _ = b.slice(100, 10, 2)
    p.track_event.extra_counter_track_uuids.append(4)
    p.track_event.extra_counter_values.extend([5, 6])
    only(b.bytes(), "extra-counter-mismatch")


def test_extra_counter_values_trace_processor_loses():
    """A 0 ends an event's extra values for Trace Processor v58; more than 8 drop the event."""
    for values in ([5, 0], list(range(1, 10))):
        b = base()
        p, _ = b.slice(100, 10, 2)
        p.track_event.extra_counter_track_uuids.extend([4] * len(values))
        p.track_event.extra_counter_values.extend(values)
        only(b.bytes(), "extra-counter-lost")


def test_extra_counter_tracks_from_defaults():
    b = base()
    d = b.packet(flags=NEEDS)
    d.trace_packet_defaults.track_event_defaults.extra_counter_track_uuids.append(4)
    p, _ = b.slice(100, 10, 2)
    p.track_event.extra_counter_values.append(5)
    r = validate_bytes(b.bytes())
    assert r.ok, r.text()
    assert r.counter_samples == 1


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_counter_value(value):
    b = base()
    b.counter(100, 4, value)
    only(b.bytes(), "non-finite-counter-value")


# -- lenient where Trace Processor is ---------------------------------------------------------

def test_several_sequences_with_their_own_interning():
    b = good()
    b.clear(seq=2)
    b.intern_name(1, "other name, same iid", seq=2)
    b.event(1000, BEGIN, 3, name_iid=1, seq=2)
    b.event(1100, END, 3, seq=2)
    r = validate_bytes(b.bytes())
    assert r.ok, r.text()
    assert r.sequences == 2


def test_track_uuid_from_track_event_defaults():
    b = base()
    p = b.packet(flags=CLEARED)
    p.trace_packet_defaults.track_event_defaults.track_uuid = 3
    b.intern_name(1, "task")
    b.event(100, BEGIN, None, name="a")
    b.event(110, END, None)
    b.counter(100, 4, 1.0)
    r = validate_bytes(b.bytes())
    assert r.ok, r.text()
    assert r.slices == 1


def test_defaults_pointing_at_a_missing_track_are_caught():
    b = base()
    p = b.packet(flags=CLEARED)
    p.trace_packet_defaults.track_event_defaults.track_uuid = 1234
    b.event(100, INSTANT, None, name="a")
    only(b.bytes(), "unknown-track")


def test_legacy_thread_track_without_uuid():
    b = Builder()
    b.clear()
    p = b.packet()
    p.thread_descriptor.pid = 10
    p.thread_descriptor.tid = 11
    p.thread_descriptor.reference_timestamp_us = 1000
    for delta, typ in ((5, BEGIN), (3, BEGIN), (1, END), (10, END)):
        e = b.packet()
        e.track_event.type = typ
        e.track_event.timestamp_delta_us = delta
        if typ == BEGIN:
            e.track_event.name = "legacy"
    r = validate_bytes(b.bytes())
    assert r.ok, r.text()
    assert r.slices == 2


def test_legacy_delta_timestamps_catch_negative_durations():
    b = Builder()
    b.clear()
    p = b.packet()
    p.thread_descriptor.pid = 10
    p.thread_descriptor.tid = 11
    p.thread_descriptor.reference_timestamp_us = 1000
    for delta, typ in ((5, BEGIN), (-2, END)):
        e = b.packet()
        e.track_event.type = typ
        e.track_event.timestamp_delta_us = delta
    only(b.bytes(), "negative-duration")


def test_incremental_sequence_clock():
    b = base()
    b.clock_snapshot((64, 1000, True, 1), flags=NEEDS)
    b.clock_defaults(64, flags=NEEDS)
    # Deltas from 1000: begin at 1010, end at 1015.  Read as absolute values (10, 5) the
    # slice would end before it begins.
    b.event(10, BEGIN, 2, name="a")
    b.event(5, END, 2)
    assert validate_bytes(b.bytes()).ok
    # A timestamped packet that is no event advances the clock too: a BEGIN on track 3 at
    # 1015 + 100 (a descriptor packet) + 0 = 1115 is ended by an END another sequence (with
    # absolute times) puts on that track at 1100: negative.  Without the descriptor's delta
    # the BEGIN would be at 1015 and the slice fine.
    d = b.packet(100)
    d.track_descriptor.uuid, d.track_descriptor.name = 5, "marker"
    b.event(0, BEGIN, 3, name="c")
    b.clear(seq=2)
    b.event(1100, END, 3, seq=2)
    p = only(b.bytes(), "negative-duration")
    assert "ts 1115" in p.message


def test_incremental_clock_is_mapped_to_boottime_through_its_snapshot():
    """A snapshot pairing the sequence clock (1000) with BOOTTIME (50000): a delta of 10 is
    BOOTTIME 50010, as Trace Processor converts it.  Another sequence ends that slice at
    BOOTTIME 50005: negative.  Read without the mapping (the clock's own value, 1010) the
    slice would look fine."""
    b = base()
    b.clear(seq=2)
    b.clock_snapshot((64, 1000, True), (6, 50000, False), seq=2)
    b.clock_defaults(64, flags=NEEDS, seq=2)
    b.event(10, BEGIN, 2, name="a", seq=2)
    b.event(50005, END, 2)
    p = only(b.bytes(), "negative-duration")
    assert "ts 50010" in p.message


def test_incremental_clock_goes_on_after_a_clear():
    """Clearing the incremental state does not reset a sequence clock (Trace Processor keeps
    clocks in its ClockSynchronizer, outside the sequence state): after the clear the next
    delta counts from the clock's last value, here 1000 + 50 + 0 + 10 = 1060, not 10."""
    b = base()
    b.clear(seq=2)
    b.clock_snapshot((64, 1000, True), (6, 1000, False), seq=2)
    for delta, typ in ((50, BEGIN), (0, END), (10, BEGIN)):
        if typ == BEGIN:
            b.clock_defaults(64, flags=CLEARED, seq=2)
        b.event(delta, typ, 2, name="a" if typ == BEGIN else None, seq=2)
    # The last BEGIN is at 1060; an END at 1055 on sequence 1 makes the slice negative.  With
    # a reset clock the BEGIN would sit at 10 and the slice would look fine.
    b.event(1055, END, 2)
    p = only(b.bytes(), "negative-duration")
    assert "ts 1060" in p.message


def test_trace_from_the_perfetto_package_builder():
    """A trace written the way the perfetto package documents it (TraceProtoBuilder),
    with interning, a counter track and a flow."""
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder
    builder = TraceProtoBuilder()
    seq = 7
    p = builder.add_packet()
    p.trusted_packet_sequence_id = seq
    p.sequence_flags = CLEARED
    p.track_descriptor.uuid = 100
    p.track_descriptor.process.pid = 1234
    p.track_descriptor.process.process_name = "app"
    p = builder.add_packet()
    p.trusted_packet_sequence_id = seq
    p.track_descriptor.uuid = 101
    p.track_descriptor.parent_uuid = 100
    p.track_descriptor.thread.pid = 1234
    p.track_descriptor.thread.tid = 5678
    p.track_descriptor.thread.thread_name = "main"
    p = builder.add_packet()
    p.trusted_packet_sequence_id = seq
    p.track_descriptor.uuid = 102
    p.track_descriptor.parent_uuid = 100
    p.track_descriptor.name = "memory"
    p.track_descriptor.counter.unit = pb.CounterDescriptor.UNIT_SIZE_BYTES
    p = builder.add_packet()
    p.trusted_packet_sequence_id = seq
    p.sequence_flags = NEEDS
    n = p.interned_data.event_names.add()
    n.iid, n.name = 1, "work"
    for ts, typ, flow in ((1000, BEGIN, "out"), (1500, END, None), (2000, BEGIN, "in"),
                          (2600, END, None)):
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        p.sequence_flags = NEEDS
        p.timestamp = ts
        p.track_event.type = typ
        p.track_event.track_uuid = 101
        if typ == BEGIN:
            p.track_event.name_iid = 1
        if flow == "out":
            p.track_event.flow_ids.append(1)
        elif flow == "in":
            p.track_event.terminating_flow_ids.append(1)
    for ts, v in ((1000, 1 << 20), (2000, 3 << 20)):
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        p.timestamp = ts
        p.track_event.type = COUNTER
        p.track_event.track_uuid = 102
        p.track_event.counter_value = v
    r = validate_bytes(builder.serialize())
    assert r.ok, r.text()
    assert (r.tracks, r.slices, r.flows, r.counter_samples) == (3, 2, 1, 2)


def test_gzipped_trace_is_read():
    assert validate_bytes(gzip.compress(good().bytes())).ok


def test_problem_counts_and_first_packet():
    b = base()
    for i in range(5):
        b.event(100 + i, INSTANT, 2, name_iid=9 + i)
    p = only(b.bytes(), "unresolved-iid")
    assert p.count == 5 and p.first_packet == 6


# -- real outputs -----------------------------------------------------------------------------

@pytest.mark.parametrize("run", PYPTO_RUNS)
def test_our_outputs_of_every_sample_pass(run, tmp_path):
    from tracecvt.convert import convert_source
    from tracecvt.readers import ReadOptions, find_runs
    (src,) = find_runs(pypto_run_dir(run))
    out = tmp_path / "t.pftrace"
    result = convert_source(src, "perfetto", out, False, ReadOptions())
    r = validate_path(out)
    assert r.ok, r.text()
    assert r.slices == result.counts["slices"]
    assert r.flows == result.counts["flows"]
    assert r.counter_samples == result.counts["counter_samples"]
    assert r.tracks == result.counts["tracks"]


# -- the command ------------------------------------------------------------------------------

def test_command_ok_and_problems(tmp_path):
    ok = tmp_path / "ok.pftrace"
    ok.write_bytes(good().bytes())
    r = CliRunner().invoke(validate, [str(ok)])
    assert r.exit_code == 0, r.output
    assert "ok: no problems found" in r.output and "3 slices" in r.output
    bad = tmp_path / "bad.pftrace"
    b = good()
    b.event(900, END, 3)
    bad.write_bytes(b.bytes())
    r = CliRunner().invoke(validate, [str(bad)])
    assert r.exit_code == 1
    assert "end-without-begin" in r.output and "packet 15" in r.output
    r = CliRunner().invoke(validate, [str(bad), "--json"])
    doc = json.loads(r.output)
    assert doc["ok"] is False and doc["problems"][0]["kind"] == "end-without-begin"


def test_command_unreadable_is_one_line_exit_2(tmp_path):
    r = CliRunner().invoke(validate, [str(tmp_path / "missing.pftrace")])
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and "missing.pftrace" in r.output
    r = CliRunner().invoke(validate, [str(tmp_path)])
    assert r.exit_code == 2


def test_check_trace_accepts_bytes_and_paths(tmp_path):
    f = tmp_path / "t.pftrace"
    f.write_bytes(good().bytes())
    assert check_trace(f).ok and check_trace(str(f)).ok and check_trace(good().bytes()).ok


def test_note_kinds_documented():
    assert set(NOTES) == {"non-packet-field", "descriptor-after-use", "legacy-event"}


def test_command_registers_on_a_group(tmp_path):
    """What converter/cli.py will do: main.add_command(validate)."""
    import click
    group = click.Group()
    group.add_command(validate)
    f = tmp_path / "t.pftrace"
    f.write_bytes(good().bytes())
    r = CliRunner().invoke(group, ["validate", str(f)])
    assert r.exit_code == 0 and "ok: no problems found" in r.output
    assert "validate" in CliRunner().invoke(group, ["--help"]).output
