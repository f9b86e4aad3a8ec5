"""The Perfetto writer on small hand-built models: how flows are marked so Trace Processor
keeps every arrow whatever order it meets the two ends in."""

from __future__ import annotations

import io

from tracecvt.model import RunMeta, Trace
from tracecvt.writers.perfetto import write_perfetto

from conftest import check_pftrace, decode_pftrace, resolve_packets


def _flow_marks(data: bytes) -> dict[int, tuple[list[int], list[int]]]:
    """slice start ts -> (flow_ids, terminating_flow_ids) of its BEGIN event."""
    out = {}
    for p, _, ts, _, _ in resolve_packets(decode_pftrace(data)):
        if p.HasField("track_event") and p.track_event.type == 1:
            te = p.track_event
            out[ts] = (list(te.flow_ids), list(te.terminating_flow_ids))
    return out


def _two_lane_trace(src_ts: int, dst_ts: int) -> Trace:
    t = Trace(RunMeta("flows", "test"))
    a = t.add_track("A", nesting=False)
    b = t.add_track("B", nesting=False)
    s = t.add_slice(a, src_ts, 10, "src")
    d = t.add_slice(b, dst_ts, 10, "dst")
    t.add_flow(s, d)
    return t


def _write(trace: Trace) -> tuple[bytes, dict]:
    out = io.BytesIO()
    counts = write_perfetto(trace, out)
    data = out.getvalue()
    check_pftrace(decode_pftrace(data))
    return data, counts


def test_forward_flow_terminates_on_the_destination():
    data, counts = _write(_two_lane_trace(100, 200))
    marks = _flow_marks(data)
    # Times start at the trace's first timestamp (100 ns in the model).
    assert marks[0] == ([1], []) and marks[100] == ([], [1])
    assert counts["flows_not_drawn"] == 0


def test_flow_between_slices_starting_together_terminates_on_the_destination_end():
    # Trace Processor may meet two BEGINs at one ns in either order: the flow starts on the
    # source's BEGIN and terminates on the destination's END, which comes after it.
    data, counts = _write(_two_lane_trace(100, 100))
    assert sorted(_flow_marks_all(data)) == [([], []), ([1], [])]
    ends = [(list(p.track_event.flow_ids), list(p.track_event.terminating_flow_ids))
            for p in decode_pftrace(data).packet
            if p.HasField("track_event") and p.track_event.type == 2]
    assert sorted(ends) == [([], []), ([], [1])]
    assert counts["flows_not_drawn"] == 0


def test_backward_flow_is_counted_and_not_written():
    # Trace Processor directs a flow from the slice that starts first: it could only draw it
    # reversed.
    data, counts = _write(_two_lane_trace(200, 100))
    assert sorted(_flow_marks_all(data)) == [([], []), ([], [])]
    assert counts["flows_not_drawn"] == 1


def _flow_marks_all(data: bytes) -> list[tuple[list[int], list[int]]]:
    return [(list(p.track_event.flow_ids), list(p.track_event.terminating_flow_ids))
            for p in decode_pftrace(data).packet
            if p.HasField("track_event") and p.track_event.type == 1]


def test_counters_only_in_a_group_below_a_top_level_group_of_counters():
    """A top-level group of counters only is the row of its first counter with samples
    (``tracks._counter_rows``); where that counter sits in a group below, that group does not
    take the same counter as its own row (``_sub_rows``): the counter would be its own
    ancestor (a database whose every table but its counters was unreadable, found by the
    fuzzing run)."""
    from tracecvt.model import GROUP
    from tracecvt.validate import validate_bytes
    t = Trace(RunMeta("counters", "test"))
    npu = t.add_track("NPU 0", kind=GROUP)
    freq = t.add_track("AI Core Freq", npu, kind=GROUP)
    for name, parent in (("AI Core Freq", freq), ("MHz too", freq), ("HBM", npu)):
        c = t.add_counter(name, parent, "MHz")
        c.add(0, 1.0)
        c.add(10, 2.0)
    buf = io.BytesIO()
    write_perfetto(t, buf)
    report = validate_bytes(buf.getvalue())
    assert report.ok, report.text()
    tracks = {p.track_descriptor.uuid: p.track_descriptor
              for p in decode_pftrace(buf.getvalue()).packet if p.HasField("track_descriptor")}
    for uuid in tracks:         # every parent chain ends
        seen, u = set(), uuid
        while u in tracks and tracks[u].parent_uuid:
            assert u not in seen, f"track {uuid} is its own ancestor"
            seen.add(u)
            u = tracks[u].parent_uuid


def _mixed_flows_trace(seed: int, far: bool = False) -> Trace:
    """Flows forward, backward, between slices starting together (one of them lasting 0
    ns) and untrusted ones of each kind, on four lanes; ``far``: times past ±2^62 (the
    writer then takes each slice and flow as it is)."""
    import random
    from tracecvt.model import UNTRUSTED_FLOW
    rng = random.Random(seed)
    t = Trace(RunMeta("flows", "test"))
    lanes = [t.add_track(f"L{k}", nesting=False) for k in range(4)]
    base = (1 << 62) + 5 if far else 1000
    ids = []
    for lane in lanes:
        at = base
        for _ in range(30):
            at += rng.choice((0, 0, 5, 10))
            ids.append(t.add_slice(lane, at, rng.choice((0, 3, 7)), "s"))
            at += 7
    for _ in range(150):
        a, b = rng.sample(ids, 2)
        t.add_flow(a, b, name=UNTRUSTED_FLOW if rng.random() < 0.3 else "")
    return t


def test_the_writer_counts_the_untrusted_flows_it_leaves_out_as_not_drawn_does():
    """The warning's figures come from the writer's counts (``convert.write_run``): they
    are ``writers.flows.not_drawn``'s, whichever way the flows are written (a column at a
    time, one at a time, in one or two processes)."""
    import tracecvt.writers.perfetto as wp
    from tracecvt.analyses import add_derived
    from tracecvt.writers.flows import not_drawn
    for seed in range(6):
        for far in (False, True):
            expected = not_drawn(_mixed_flows_trace(seed, far), "perfetto")
            assert expected[1] and expected[0] > expected[1]
            counts = write_perfetto(_mixed_flows_trace(seed, far), io.BytesIO())
            assert (counts["flows_not_drawn"], counts["flows_untrusted_not_drawn"]) == \
                expected
    low = wp.OVERLAP_MIN_COST, wp.PARALLEL_MIN_COST
    try:
        wp.OVERLAP_MIN_COST = wp.PARALLEL_MIN_COST = 0     # (two processes, these small)
        for enrich in (None, add_derived):
            trace = _mixed_flows_trace(7)
            expected = not_drawn(trace, "perfetto")
            counts = write_perfetto(trace, io.BytesIO(), workers=2, enrich=enrich)
            assert (counts["flows_not_drawn"], counts["flows_untrusted_not_drawn"]) == \
                expected
    finally:
        wp.OVERLAP_MIN_COST, wp.PARALLEL_MIN_COST = low
