"""Nothing lost: a written .pftrace, read back the way Trace Processor reads it, holds every
slice, instant, counter sample and flow of the model with the same ns times (counted from the
trace's first timestamp, ``time_origin``), names, categories, args and tracks.

The writer puts each track on a packet sequence of its own, with ``TrackEventDefaults``
naming the track; ``conftest.resolve_packets`` documents how Trace Processor resolves it.
"""

from __future__ import annotations

import collections
import io
import json
import math
import sys
import time

from tracecvt.writers.flows import drawable
from tracecvt.model import RunMeta, Trace
from tracecvt.readers import find_runs
from tracecvt.writers.perfetto import time_origin, write_perfetto

from conftest import PYPTO, check_pftrace, decode_pftrace, event_name, resolve_packets


def _annotation_value(a, tables):
    """A DebugAnnotation's value as the model holds it (iids resolved on the sequence)."""
    if a.dict_entries:
        return {tables[3][e.name_iid].name if e.name_iid else e.name:
                _annotation_value(e, tables) for e in a.dict_entries}
    if a.array_values:
        return [_annotation_value(v, tables) for v in a.array_values]
    which = a.WhichOneof("value")
    if which == "string_value_iid":
        return tables[29][a.string_value_iid].str.decode()
    return getattr(a, which)


def _model_value(v, name=None):
    """A model arg value as the writer encodes it: a nested value (dict, list) as one line of
    text, operand lists (model.INPUTS / OUTPUTS) as "FP16[512,1024] tensor=22; ...", others
    as compact JSON."""
    if isinstance(v, (dict, list, tuple)):
        if name in ("inputs", "outputs") and isinstance(v, list) and all(
                isinstance(o, dict) and "dtype" in o and "shape" in o for o in v):
            return "; ".join(
                f"{o['dtype']}[{','.join(str(d) for d in o['shape'])}]"
                + "".join(f" {k}={x}" for k, x in o.items()
                          if k not in ("dtype", "shape") and x is not None) for o in v)
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)
    if isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < 1 << 64:
        return str(v)                       # no 64-bit field holds it: its exact digits
    if isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _with_lines(shared: dict | None, lines: dict) -> dict:
    """Shared args as the writer writes them: each declared line (model.ARG_LINES: lists of
    names) of the args present (not None) as one "name=value ..." string at the place of its
    first arg, unless an arg has the line's name."""
    lines = {ln: names for ln, names in lines.items() if isinstance(names, list)}
    out = {}
    for name, v in (shared or {}).items():
        line = next((ln for ln, names in lines.items() if name in names), None)
        if line is None or line in shared:
            out[name] = v
        elif line not in out:
            out[line] = " ".join(f"{n}={_model_value(shared[n], n)}" for n in lines[line]
                                 if shared.get(n) is not None)
    return out


def _counter_value(v):
    """A counter value as the writer encodes it: int64, else a double."""
    if isinstance(v, int) and -(1 << 63) <= v < 1 << 63:
        return v
    try:
        return float(v)
    except OverflowError:
        return sys.float_info.max if v > 0 else -sys.float_info.max


def read_back(data: bytes, origin: int = 0):
    """(slices, instants, counters, flow ids) of a written trace, in the model's ns (the
    trace's ns plus ``origin``, the writer's time 0).

    slices: track uuid -> [(ts, dur, name, categories, args, flow_ids, terminating ids)]
    sorted by (ts, -dur); instants: [(uuid, ts, name, categories, args)]; counters:
    uuid -> [(ts, value)] sorted by time (samples of one time in file order), the samples
    riding on slice events as extra counter values included.
    """
    pf = decode_pftrace(data)
    check_pftrace(pf)
    slices = collections.defaultdict(list)
    open_ = collections.defaultdict(list)
    instants = []
    counters = collections.defaultdict(list)
    for p, _, ts, uuid, tables in resolve_packets(pf):
        if not p.HasField("track_event"):
            continue
        ts += origin
        te = p.track_event
        extra = list(zip(te.extra_counter_track_uuids, te.extra_counter_values))
        # What Trace Processor v58 reads: one uuid per value, at most 8, none 0 (a 0 ends
        # its list), no doubles
        assert len(extra) == len(te.extra_counter_track_uuids) == len(te.extra_counter_values)
        assert len(extra) <= 8 and all(v != 0 for _, v in extra)
        assert not te.extra_double_counter_values
        for c, v in extra:
            counters[c].append((ts, v))
        if te.type == 4:
            counters[uuid].append((ts, te.double_counter_value if te.HasField(
                "double_counter_value") else te.counter_value))
            continue
        if te.type == 2:
            begin = open_[uuid].pop()
            # terminating ids on the END (a flow between slices starting together) join
            # the slice's own
            slices[uuid].append((begin[0], ts - begin[0], *begin[1:-1],
                                 begin[-1] + tuple(te.terminating_flow_ids)))
            assert not te.flow_ids
            continue
        cats = tuple(tables[1][c].name for c in te.category_iids)
        args = {tables[3][a.name_iid].name if a.name_iid else a.name:
                _annotation_value(a, tables) for a in te.debug_annotations}
        rest = (event_name(p, tables), cats, args, tuple(te.flow_ids),
                tuple(te.terminating_flow_ids))
        if te.type == 1:
            open_[uuid].append((ts, *rest))
        else:
            instants.append((uuid, ts, *rest[:3]))
    assert not any(open_.values())
    for lst in slices.values():
        lst.sort(key=lambda s: (s[0], -s[1]))
    for lst in counters.values():
        lst.sort(key=lambda s: s[0])
    return slices, instants, counters


def assert_same_as_model(trace: Trace, data: bytes) -> None:
    slices, instants, counters = read_back(data, time_origin(trace))
    lines = trace.meta.extra.get("arg_lines", {})
    # Slices, track by track, in the writer's order; flows by the ids on their ends.
    by_track = collections.defaultdict(list)
    for i, s in enumerate(trace.slices):
        by_track[s.track].append(i)
    flow_ends = collections.defaultdict(set)
    outgoing = collections.defaultdict(list)      # slice -> flow ids its BEGIN must carry
    ending = collections.defaultdict(list)        # slice -> terminating flow ids
    drawn = {}                                    # writers.flows: true direction only
    for fid, f in enumerate(trace.flows, 1):
        if not drawable(trace.slices[f.src], trace.slices[f.dst], "perfetto", f.name):
            continue
        drawn[fid] = f
        outgoing[f.src].append(fid)
        ending[f.dst].append(fid)
    for uuid, ids in by_track.items():
        ids.sort(key=lambda i: (trace.slices[i].ts, -trace.slices[i].dur))
        got = slices.pop(uuid + 1)
        assert len(got) == len(ids), trace.tracks[uuid]
        # Slices of the same start and duration nest in either order: within such a group,
        # each is matched to the read-back slice with its content and its flow ids.
        k = 0
        while k < len(ids):
            span = (trace.slices[ids[k]].ts, trace.slices[ids[k]].dur)
            j = k
            while j < len(ids) and (trace.slices[ids[j]].ts, trace.slices[ids[j]].dur) == span:
                j += 1
            pending = list(got[k:j])
            for i in ids[k:j]:
                s = trace.slices[i]
                want_args = {name: _model_value(v, name) for name, v in
                             {**_with_lines(s.shared_args, lines), **(s.args or {})}.items()
                             if v is not None}
                want = (s.ts, s.dur, s.name, (s.cat,) if s.cat else (), want_args)
                flows = (sorted(outgoing[i]), sorted(ending[i]))
                match = next((n for n, g in enumerate(pending)
                              if g[:5] == want and (sorted(g[5]), sorted(g[6])) == flows), None)
                assert match is not None, (s, flows, pending)
                g = pending.pop(match)
                for fid in g[5]:
                    flow_ends[fid].add((i, False))
                for fid in g[6]:
                    flow_ends[fid].add((i, True))
            k = j
    assert not slices
    assert len(flow_ends) == len(drawn)
    for fid, f in drawn.items():
        assert flow_ends[fid] == {(f.src, False), (f.dst, True)}
    want_instants = sorted(
        (i.track + 1, i.ts, i.name, (i.cat,) if i.cat else (),
         {k: _model_value(v, k) for k, v in (i.args or {}).items() if v is not None})
        for i in trace.instants)
    assert sorted(instants) == want_instants
    want_counters = {c.track + 1: sorted(((t, _counter_value(v))
                                          for t, v in zip(c.ts, c.values)), key=lambda s: s[0])
                     for c in trace.counters if c.ts}
    assert dict(counters) == want_counters


def _write(trace: Trace) -> bytes:
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    data = buf.getvalue()
    assert_time_order(data)
    return data


def assert_time_order(data: bytes) -> None:
    """The packets are in time order (Trace Processor then has nothing to sort): those
    without a time (track descriptors, sequence starts) first, then by timestamp."""
    times = [p.timestamp if p.HasField("timestamp") else -1
             for p in decode_pftrace(data).packet]
    assert times == sorted(times)
    assert sum(t >= 0 for t in times) > 0


def test_real_sample_round_trips_exactly():
    from tracecvt.convert import add_derived_tracks
    (src,) = find_runs(PYPTO / "ffn_large")
    trace = src.read()
    add_derived_tracks(trace)           # bubble lanes, counters, critical path as well
    assert trace.flows and trace.counters and any(s.shared_args for s in trace.slices)
    data = _write(trace)
    assert_same_as_model(trace, data)
    # Sequences: one for the descriptors, one per track with events.
    seqs = {p.trusted_packet_sequence_id for p in decode_pftrace(data).packet}
    used = {s.track for s in trace.slices} | {c.track for c in trace.counters if c.ts}
    assert len(seqs) == 1 + len(used)


def test_hand_built_model_round_trips_exactly():
    """Nesting, categories, nested args, instants, flows both ways, big gaps and a counter
    whose samples go back in time (written with absolute timestamps)."""
    t = Trace(RunMeta("rt", "test"))
    g = t.add_track("group")
    a = t.add_track("A", g)
    b = t.add_track("B", g, nesting=False)
    outer = t.add_slice(a, 1_000, 5_000_000_000, "outer", "cat1",
                        args={"k": 1, "nested": {"x": [1, 2.5, "a long string"], "e": {}},
                              "empty": [], "flag": True, "big": 1 << 63, "neg": -5})
    inner = t.add_slice(a, 2_000, 1_000, "inner", args={"s": "short"})
    t.add_slice(a, 3_000, 1_000, "inner", "cat2")         # back to back: starts as one ends
    late = t.add_slice(b, 10_000_000_000_000, 7, "late",
                       shared_args={"shared": "a long string"})
    early = t.add_slice(b, 500, 3, "early", shared_args={"shared": "a long string"})
    t.add_flow(outer, late)
    t.add_flow(late, early)                                # backward
    t.add_flow(inner, inner + 1)
    t.add_instant(a, 3_000, "mark", "cat1", {"why": "because of this"})
    t.add_instant(b, 0, "origin")
    c = t.add_counter("queue", g, unit="tasks")
    for ts, v in ((100, 1), (50, 2), (50, 3), (20_000_000, 0.5), (20_000_001, -7)):
        c.add(ts, v)
    t.add_counter("empty", g)
    data = _write(t)
    assert_same_as_model(t, data)


def test_declared_arg_lines_become_one_arg(tmp_path):
    """model.ARG_LINES: the declared args of a slice's shared args are one "name=value ..."
    string arg at the place of the first, in the declared order, in Trace Processor too;
    own args and an instant's stay apart, a line named like a shared arg is not made; the
    Chrome JSON keeps every arg and leaves the declaration out."""
    from tracecvt.model import ARG_LINES
    from tracecvt.writers.chrome import write_chrome
    from tp_helper import rows, trace_processor
    t = Trace(RunMeta("lines", "test"))
    t.meta.extra[ARG_LINES] = {"call": ["label", "hash", "magic"], "bad": 5}
    a = t.add_track("A")
    shared = {"hash": 1 << 63, "magic": None, "op": "x", "label": "gelu"}
    t.add_slice(a, 0, 10, "one", shared_args=shared, args={"task": 1})
    t.add_slice(a, 20, 10, "two", shared_args={**shared, "magic": [1, 2]}, args={"task": 2})
    t.add_slice(a, 40, 10, "three", shared_args={"call": "own", "label": "keeps"},
                args={"hash": 7})
    t.add_instant(a, 60, "mark", args={"magic": 5})
    t.add_slice(a, 70, 10, "four", shared_args=shared, args={"task": 4})
    data = _write(t)
    assert_same_as_model(t, data)
    # A line is interned from its first use: its text is written once for two slices.
    assert data.count(b"label=gelu hash=9223372036854775808") == 2     # one, two
    path = tmp_path / "t.pftrace"
    path.write_bytes(data)
    with trace_processor(path) as tp:
        got = rows(tp, "select coalesce(s.name, i.name) as name, a.key, a.display_value as v "
                       "from args a left join slice s using(arg_set_id) "
                       "left join instant i using(arg_set_id) "
                       "where a.key like 'debug.%' order by name, a.id")
    by = collections.defaultdict(dict)
    for r in got:
        by[r["name"]][r["key"][6:]] = r["v"]
    assert by == {
        "one": {"call": "label=gelu hash=9223372036854775808", "op": "x", "task": "1"},
        "four": {"call": "label=gelu hash=9223372036854775808", "op": "x", "task": "4"},
        "two": {"call": "label=gelu hash=9223372036854775808 magic=[1,2]", "op": "x",
                "task": "2"},
        "three": {"call": "own", "label": "keeps", "hash": "7"},
        "mark": {"magic": "5"}}
    out = tmp_path / "t.json"
    with open(out, "wb") as f:
        write_chrome(t, f)
    doc = json.loads(out.read_bytes())
    assert ARG_LINES not in json.dumps(doc.get("metadata", {}))
    two = next(e for e in doc["traceEvents"] if e.get("name") == "two" and e["ph"] == "X")
    assert two["args"] == {"hash": 1 << 63, "op": "x", "label": "gelu", "task": 2,
                           "magic": [1, 2]}


def test_timestamps_count_from_the_first_one_without_clock_snapshots():
    """The encoding itself: events omit track_uuid, their times are ns from the trace's first
    timestamp on the default clock, and no ClockSnapshot is written (the Perfetto UI would
    list every snapshot as a row of a "System / Clock Snapshots" group)."""
    t = Trace(RunMeta("d", "test"))
    lane = t.add_track("lane", nesting=False)
    for k in range(10):
        t.add_slice(lane, 1_700_000_000_000_000_000 + 100 * k, 50, "task")
    pf = decode_pftrace(_write(t))
    events = [p for p in pf.packet if p.HasField("track_event")]
    assert not any(p.track_event.HasField("track_uuid") for p in events)
    assert not any(p.HasField("clock_snapshot") or p.timestamp_clock_id for p in pf.packet)
    assert [p.timestamp for p in events] == [x for k in range(10) for x in (100 * k,
                                                                           100 * k + 50)]
    resolved = [ts for p, _, ts, _, _ in resolve_packets(pf) if p.HasField("track_event")]
    assert resolved == [p.timestamp for p in events]


def test_two_process_write_holds_the_same_trace(monkeypatch):
    """With workers=2 a forked process writes part of the sequences; read back, the trace
    is the same model, and every sequence is still written once."""
    from tracecvt.convert import add_derived_tracks
    from tracecvt.writers import perfetto
    (src,) = find_runs(PYPTO / "ffn_large")
    trace = src.read()
    add_derived_tracks(trace)
    forks = []
    real_fork = perfetto.fork_pass
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "fork_pass", lambda fn: forks.append(1) or real_fork(fn))
    buf = io.BytesIO()
    counts = write_perfetto(trace, buf, None, workers=2)
    data = buf.getvalue()
    assert forks == [1]
    assert_time_order(data)         # the forked process's packets merged in by time
    assert_same_as_model(trace, data)
    one = io.BytesIO()
    assert write_perfetto(trace, one, None, workers=1) == counts
    packets = decode_pftrace(data).packet
    assert len(packets) == counts["packets"] == len(decode_pftrace(one.getvalue()).packet)
    starts = collections.Counter(p.trusted_packet_sequence_id for p in packets
                                 if p.sequence_flags & 1)
    assert set(starts.values()) == {1}      # each sequence starts (is written) once


def test_a_failing_second_process_is_a_one_line_error(monkeypatch):
    import pytest

    from tracecvt.errors import OutputError
    from tracecvt.writers import perfetto
    trace = Trace(RunMeta("t", "test"))
    lanes = [trace.add_track(f"lane {i}") for i in range(2)]
    for lane in lanes:
        for k in range(3):
            trace.add_slice(lane, 10 * k, 5, f"s{k}")
    c = trace.add_counter("c", None, "")
    c.add(0, "not a number")            # the writer cannot encode this value
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "_halves",
                        lambda s, c: ((s, []), ([], c)))   # the counter goes to the child
    with pytest.raises(OutputError) as e:
        write_perfetto(trace, io.BytesIO(), None, workers=2)
    assert "second process failed: ValueError: could not convert string to float" \
        in str(e.value)
    assert "\n" not in str(e.value)


def _enriched_pair(monkeypatch, enrich):
    """(trace enriched by a two-process write, its bytes, forks made, the one-process
    counts of the same enriched trace)."""
    from tracecvt.writers import perfetto
    (src,) = find_runs(PYPTO / "ffn_large")
    trace = src.read()
    forks = []
    real_fork = perfetto.fork_pass
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "fork_pass", lambda fn: forks.append(1) or real_fork(fn))
    buf = io.BytesIO()
    counts = write_perfetto(trace, buf, None, workers=2, enrich=enrich)
    one = io.BytesIO()
    alone = write_perfetto(trace, one, None, workers=1)
    # Packets may differ: a counter sample rides on a slice event only where one process
    # writes both (SequenceWriter.ride), so each way has its own share of sample packets.
    assert {k: v for k, v in alone.items() if k != "packets"} == {
        k: v for k, v in counts.items() if k != "packets"}
    assert_time_order(buf.getvalue())
    return trace, buf.getvalue(), forks


def test_source_sequences_are_written_while_the_derived_tracks_are_made(monkeypatch):
    """workers=2 with enrich: a forked process writes the run's own sequences while the
    analyses run here; the critical-path marks the analyses put on source slices reach it."""
    from tracecvt.convert import add_derived_tracks
    trace, data, forks = _enriched_pair(monkeypatch, add_derived_tracks)
    assert forks == [1]
    assert any(t.derived for t in trace.tracks)
    marked = [s for s in trace.slices if s.args and "critical_path_step" in s.args]
    assert marked and not any(trace.tracks[s.track].derived for s in marked)
    assert_same_as_model(trace, data)           # the marks included


def test_an_enrich_that_adds_to_source_tracks_is_written_by_one_process(monkeypatch):
    """A slice added to an existing track would need its sequence in both processes: the
    part already started is dropped and this process writes everything."""
    def enrich(trace):
        trace.add_slice(trace.slices[0].track, trace.slices[0].ts, 1, "added")
    trace, data, forks = _enriched_pair(monkeypatch, enrich)
    assert len(forks) == 2                      # the dropped part, then the halves' split
    assert_same_as_model(trace, data)


def test_ints_beyond_64_bits_keep_their_digits_or_become_doubles():
    """Args: an int no 64-bit field holds is written as its exact digits; counters: as a
    double (no varint longer than 64 bits is ever written)."""
    trace = Trace(RunMeta("t", "test"))
    lane = trace.add_track("lane")
    trace.add_slice(lane, 0, 5, "s", "", {"big": 1 << 64, "low": -(1 << 63) - 1,
                                           "top": (1 << 64) - 1, "bottom": -(1 << 63)})
    c = trace.add_counter("c", None, "")
    for i, v in enumerate([1 << 63, -(1 << 63) - 1, 10 ** 400, -(1 << 62), 3]):
        c.add(i, v)
    data = _write(trace)
    assert_same_as_model(trace, data)
    slices, _, counters = read_back(data)
    assert slices[lane + 1][0][4] == {"big": str(1 << 64), "low": str(-(1 << 63) - 1),
                                      "top": (1 << 64) - 1, "bottom": -(1 << 63)}
    assert [v for _, v in counters[c.track + 1]] == [2.0 ** 63, -(2.0 ** 63),
                                                     sys.float_info.max, -(1 << 62), 3]


def test_repeated_counter_values_keep_their_type_and_sign():
    """Small int counter values are encoded once per sequence and reused: an equal float
    (1.0, -0.0, 0.0) or a bool must still be written as what it is."""
    trace = Trace(RunMeta("t", "test"))
    c = trace.add_counter("c", None, "")
    values = [1, 1.0, 1, 0, -0.0, 0, 0.0, True, 1, 16383, 16384, 16383]
    for i, v in enumerate(values):
        c.add(i * 10, v)
    data = _write(trace)
    assert_same_as_model(trace, data)
    got = [v for _, v in read_back(data)[2][c.track + 1]]
    assert [(type(v), math.copysign(1, v)) for v in got] == [
        (int, 1), (float, 1), (int, 1), (int, 1), (float, -1), (int, 1), (float, 1),
        (float, 1), (int, 1), (int, 1), (int, 1), (int, 1)]
    assert got == [1, 1.0, 1, 0, 0.0, 0, 0.0, 1.0, 1, 16383, 16384, 16383]


def test_repeated_small_int_args_keep_their_type_on_every_sequence():
    """Small int args are built once per name and value and reused, on any sequence: an
    equal float or a bool is still written as what it is, and each sequence defines the
    arg name it uses."""
    trace = Trace(RunMeta("t", "test"))
    values = [1, 1.0, True, 0, -0.0, 16383, 16384, 1, 0]
    lanes = [trace.add_track(f"lane {k}") for k in range(2)]
    for lane in lanes:
        for i, v in enumerate(values):
            trace.add_slice(lane, i * 10, 5, "s", "", {"n": v, "m": i})
    data = _write(trace)
    assert_same_as_model(trace, data)
    slices = read_back(data)[0]
    for lane in lanes:
        got = [s[4]["n"] for s in slices[lane + 1]]
        assert got == [1, 1.0, 1, 0, 0.0, 16383, 16384, 1, 0]
        assert [(type(v), math.copysign(1, v)) for v in got] == [
            (int, 1), (float, 1), (bool, 1), (int, 1), (float, -1), (int, 1), (int, 1),
            (int, 1), (int, 1)]
        assert [s[4]["m"] for s in slices[lane + 1]] == list(range(len(values)))


def test_two_process_write_into_a_gzip_stream(monkeypatch):
    """The other process's part is appended through the output stream, so a .pftrace.gz
    holds the whole trace."""
    import gzip

    from tracecvt.convert import add_derived_tracks
    from tracecvt.writers import perfetto
    (src,) = find_runs(PYPTO / "matmul_add")
    trace = src.read()
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz:
        write_perfetto(trace, gz, None, workers=2, enrich=add_derived_tracks)
    assert_same_as_model(trace, gzip.decompress(buf.getvalue()))


def test_one_time_origin_for_both_writers():
    """A slice starts at the same time in the .pftrace (ns) and in the Chrome JSON (us from
    metadata.base_time_ns): both count from the model's first timestamp, and an epoch-based
    run (torch_npu) starts near 0, not at its epoch ns."""
    import json

    from conftest import SAMPLES
    from tracecvt.writers.chrome import write_chrome
    for path in (PYPTO / "ffn_medium",
                 SAMPLES / "msprof/msinsight/test/data/pytorch/text/level2/rank0_ascend_pt"):
        trace = find_runs(path)[0].read()
        pf = decode_pftrace(_write(trace))
        buf = io.BytesIO()
        write_chrome(trace, buf)
        doc = json.loads(buf.getvalue())
        assert doc["metadata"]["base_time_ns"] == time_origin(trace) == trace.time_span()[0]
        json_starts = collections.Counter(round(e["ts"] * 1000) for e in doc["traceEvents"]
                                          if e["ph"] == "X")
        pf_starts = collections.Counter(ts for p, _, ts, _, _ in resolve_packets(pf)
                                        if p.HasField("track_event") and p.track_event.type == 1)
        assert pf_starts == json_starts
        assert 0 <= min(pf_starts) and max(pf_starts) < 10**12     # not epoch ns (~1.7e18)


def test_processes_carry_their_display_order_as_sort_index():
    """Every top-level group is a process numbered in display order (the run's own groups
    first, tracecvt's analysis last), and carries that number as ``legacy_sort_index`` (the
    Chrome JSON's process_sort_index), by which newer Perfetto UIs order processes."""
    from tracecvt.convert import add_derived_tracks
    (src,) = find_runs(PYPTO / "ffn_medium")
    trace = src.read()
    add_derived_tracks(trace)
    procs = [p.track_descriptor.process for p in decode_pftrace(_write(trace)).packet
             if p.HasField("track_descriptor") and p.track_descriptor.HasField("process")]
    assert [p.pid for p in procs] == list(range(1, len(procs) + 1))
    assert [p.legacy_sort_index for p in procs] == [p.pid for p in procs]
    by_name = {t.name: t for t in trace.tracks if t.parent is None}
    assert [by_name[p.process_name].derived for p in procs] == sorted(
        by_name[p.process_name].derived for p in procs)
    assert len(procs) >= 2 and by_name[procs[-1].process_name].derived


def test_large_news_do_not_wait_for_the_forked_process(monkeypatch, tmp_path):
    """News larger than a pipe holds (64 KiB: an enrich that gives 12,000 slices new args)
    reach the forked process without holding this one: the forked process writes its
    slices only once this one has gone on to write its own (told by a file), which a news
    write that waits for the reader never lets happen."""
    from tracecvt.writers import perfetto
    from tracecvt.writers.perfetto import events
    trace = Trace(RunMeta("t", "test"))
    lanes = [trace.add_track(f"lane {i}", nesting=False) for i in range(4)]
    for k in range(12_000):
        trace.add_slice(lanes[k % 4], 10 * k, 5, "s", args={"k": k})
    went_on = tmp_path / "went_on"
    real_header, real_slices = events.SequenceWriter.write_header, \
        events.SequenceWriter.write_slices

    def header(self):
        went_on.touch()                 # this process is past sending its news
        return real_header(self)

    def slices(self, units, record=None):
        if record is not None:          # the forked process's own slices
            for _ in range(200):
                if went_on.exists():
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("the parent never went on")
        return real_slices(self, units, record)

    def enrich(t):
        for s in t.slices:
            s.args = {**s.args, "marked": "yes"}
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(events.SequenceWriter, "write_header", header)
    monkeypatch.setattr(events.SequenceWriter, "write_slices", slices)
    buf = io.BytesIO()
    counts = write_perfetto(trace, buf, None, workers=2, enrich=enrich)
    assert counts["slices"] == 12_000
    assert_same_as_model(trace, buf.getvalue())     # every slice with its new args


def test_the_writing_process_takes_own_sequences_where_the_forked_one_has_more(monkeypatch):
    """An enriched two-process write of a run whose own slices cost more than the analyses
    (many args, as an msprof database's tasks): this process takes some of the last own
    sequences (``share``), and the trace still holds every slice, flow and sample once,
    as a one-process write of the same trace does."""
    from tracecvt.writers import perfetto
    from tracecvt.writers.perfetto import share
    trace = Trace(RunMeta("t", "test"))
    lanes = [trace.add_track(f"stream {i}", nesting=False) for i in range(6)]
    for k in range(6000):
        trace.add_slice(lanes[k % 6], 10 * k, 5, f"task {k % 7}",
                        args={f"pmu_{j}": k + j for j in range(12)})
    for k in range(0, 5990, 2):         # from streams 0, 2, 4 to 1, 3, 5
        trace.add_flow(k, k + 7)
    c = trace.add_counter("c")
    for k in range(0, 60_000, 10):      # at every slice's start: most ride on its BEGIN
        c.add(k, k % 7)
    took = []
    real_taken = share.taken
    monkeypatch.setattr(share, "taken", lambda *a: took.append(real_taken(*a)) or took[-1])
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)

    def enrich(t):              # a little analysis: one derived lane of a few slices
        lane = t.add_track("derived", derived=True)
        for k in range(10):
            t.add_slice(lane, 1000 * k, 100, "mark")
    buf = io.BytesIO()
    counts = write_perfetto(trace, buf, None, workers=2, enrich=enrich)
    assert took and took[0] > 0
    one = io.BytesIO()
    alone = write_perfetto(trace, one, None, workers=1)
    assert {k: v for k, v in alone.items() if k != "packets"} == {
        k: v for k, v in counts.items() if k != "packets"}
    assert_time_order(buf.getvalue())
    assert_same_as_model(trace, buf.getvalue())


def test_share_evens_out_the_estimates():
    from tracecvt.writers.perfetto.share import contest, taken
    assert contest([5, 1, 9, 2, 3]) == [1, 3, 4]        # from the back, what fits in 10
    assert contest([30]) == []
    assert taken([2, 3], own=20, here=10) == 2           # 15 and 15
    assert taken([2, 3], own=20, here=16) == 1           # 19 and 17: a 2 more would not help
    assert taken([4], own=10, here=9) == 0


def test_share_counts_the_pages_the_forked_process_copies():
    """A slice whose args are a dict costs the forked process ``FORK_US`` more (it copies
    the pages of the objects it reads); rows of a table (read from columns) and no args
    cost it nothing more.  What a contested sequence costs it more moves with the
    sequence, so the writing process takes a sequence it would not take on the writing
    cost alone."""
    from tracecvt.arg_rows import ArgTable
    from tracecvt.writers.perfetto.share import FORK_US, fork_costs, own_cost, taken
    trace = Trace(RunMeta("t", "test"))
    table = ArgTable(("a", "b"))
    lanes = {kind: trace.add_track(kind, nesting=False) for kind in ("dict", "row", "none",
                                                                     "half")}
    for k in range(300):
        trace.add_slice(lanes["dict"], k, 1, "s", args={"a": k, "b": 1})
        trace.add_slice(lanes["row"], k, 1, "s", args=table.add((k, 1)))
        trace.add_slice(lanes["none"], k, 1, "s")
        trace.add_slice(lanes["half"], k, 1, "s", args={"a": k} if k % 2 else None)
    units = list(trace.slices_by_track().items())
    more = dict(zip((t for t, _ in units), fork_costs(trace.slices, units)))
    assert more[lanes["dict"]] == 300 * FORK_US
    assert more[lanes["row"]] == more[lanes["none"]] == 0
    assert more[lanes["half"]] == 150 * FORK_US          # the first 64 tell for the rest
    assert own_cost([10.0, 20.0], 0, 0, [1.0, 2.0]) == own_cost([10.0, 20.0], 0, 0) + 3.0
    # four sequences of 2, each 1 more in the forked process: with that counted (10 + 4
    # against 5), two move (8 against 9); on the writing cost alone, one (8 against 7)
    forked = [1.0] * 4
    assert taken([2] * 4, own=10, here=5) == 1
    assert taken([2] * 4, own=own_cost([], 0, 0, forked) + 10, here=5, forked=forked) == 2
    # what a sequence costs the forked process more moves with it: moving this one would
    # leave the processes further apart (19.5 against 14) than they are (17.5 against 20)
    assert taken([2], own=20, here=17.5) == 1
    assert taken([2], own=20, here=17.5, forked=[4.0]) == 0


def test_share_estimates_weigh_what_an_arg_costs_to_write():
    from tracecvt.writers.perfetto.share import start_cost, taken, units_cost
    assert taken([2, 3], own=20, here=10, start=4) == 1  # the first moves 3 and costs 4 more
    assert start_cost(1000, 500) > start_cost(1000, 0) > 0
    trace = Trace(RunMeta("t", "test"))
    values = [None, 7, "same", f"new", [1, 2]]
    lanes = {}
    for v in values:
        lane = trace.add_track(repr(v), nesting=False)
        lanes[repr(v)] = lane
        for k in range(100):
            trace.add_slice(lane, k, 1, "s",
                            args={"a": f"new {k}" if v == "new" else v})
    calls = trace.add_track("calls", nesting=True)
    for k in range(100):
        trace.add_slice(calls, k, 1, "s", args={"a": 7})
    units = list(trace.slices_by_track().items())
    cost = dict(zip((t for t, _ in units),
                    units_cost(trace.slices, trace.tracks, units)))
    by = {name: cost[lane] for name, lane in lanes.items()}
    # nothing < a cached string < a number < a new string < a nested value (made text)
    assert by["None"] < by["'same'"] < by["7"] < by["'new'"] < by["[1, 2]"]
    assert cost[calls] > by["7"]                           # a lane of calls, the same args
