"""Chrome JSON writer: hand-built models and the shared PyPTO samples, checked against the model.

Expectations are derived from the model and from the rules of Perfetto's JSON importer as read
in its source (sort order, slice stack, v1 flow binding, number parsing), never from earlier
output of the writer.
"""

from __future__ import annotations

import collections
import decimal
import gzip
import io
import json
import math
import random
import re
from fractions import Fraction

import orjson
import pytest

from tracecvt.writers.flows import drawable, not_drawn_warning
from tracecvt.fileio import atomic_output
from tracecvt.model import GROUP, LANE, Clock, RunMeta, Trace, split_overlaps
from tracecvt.readers import find_runs
from tracecvt.writers import chrome_events
from tracecvt.writers.chrome import EXACT_SPAN_NS, write_chrome

from conftest import PYPTO_MERGED_RUNS, REPO, pypto_run_dir

BASE = 1_700_000_000_123_456_789          # epoch ns, ~1.7e18


# -- helpers ------------------------------------------------------------------------------

def write(trace: Trace) -> bytes:
    buf = io.BytesIO()
    write_chrome(trace, buf)
    return buf.getvalue()


def events_of(data: bytes) -> tuple[dict, list[dict]]:
    doc = json.loads(data)
    return doc, doc["traceEvents"]


def to_ns(us: float, base: int) -> int:
    """What the brief promises: round(ts * 1000) + base is the model's ns."""
    return round(us * 1000) + base


def perfetto_strtod(s: str) -> float:
    """Perfetto's JSON number parser (json_parser.h StringToDouble): not correctly rounded."""
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    out, i = 0.0, 0
    while i < len(s) and s[i].isdigit():
        out = out * 10.0 + (ord(s[i]) - 48)
        i += 1
    if i < len(s) and s[i] == ".":
        i += 1
        frac, div = 0.0, 1.0
        while i < len(s) and s[i].isdigit():
            frac = frac * 10.0 + (ord(s[i]) - 48)
            div *= 10.0
            i += 1
        if div > 1.0:
            out += frac / div
    if i < len(s) and s[i] in "eE":
        i += 1
        exp_neg = s[i] == "-"
        if s[i] in "+-":
            i += 1
        e = float(s[i:])
        out = out / math.pow(10.0, e) if exp_neg else out * math.pow(10.0, e)
    return -out if neg else out


def perfetto_ns(literal) -> int:
    """Perfetto's CoerceToTs: integers x1000, doubles llround(x * 1000.0)."""
    if isinstance(literal, int):
        return literal * 1000
    if "." not in literal and "e" not in literal.lower():
        return int(literal) * 1000
    v = perfetto_strtod(literal) * 1000.0
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def literal_events(data: bytes) -> list[dict]:
    """traceEvents with every float kept as its exact literal text."""
    return json.loads(data, parse_float=lambda s: _Lit(s))["traceEvents"]


class _Lit(str):
    pass


def procs_and_threads(events):
    procs, psort, threads, tsort = {}, {}, {}, {}
    for e in events:
        if e["ph"] != "M":
            continue
        if e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["name"] == "process_sort_index":
            psort[e["pid"]] = e["args"]["sort_index"]
        elif e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["name"] == "thread_sort_index":
            tsort[(e["pid"], e["tid"])] = e["args"]["sort_index"]
    assert procs.keys() == psort.keys()
    assert threads.keys() == tsort.keys()
    return procs, psort, threads, tsort


class ModelLayout:
    """Process / thread positions the brief asks for, computed from the model alone."""

    def __init__(self, trace: Trace):
        self.procs: list[str | None] = []          # None = the synthetic process
        root_pos = {}
        for r in trace.children(None):
            if trace.tracks[r].kind == GROUP:
                root_pos[r] = len(self.procs)
                self.procs.append(trace.tracks[r].name)
            else:
                if None not in self.procs:
                    self.procs.append(None)
                root_pos[r] = self.procs.index(None)
        used = {s.track for s in trace.slices} | {i.track for i in trace.instants}
        self.threads: list[list[str]] = [[] for _ in self.procs]
        self.where: dict[int, tuple[int, int]] = {}   # track -> (process pos, thread pos)
        self.proc_of: dict[int, int] = {}
        root = None
        for index, depth in trace.walk():
            if depth == 0:
                root = index
            p = root_pos[root]
            self.proc_of[index] = p
            t = trace.tracks[index]
            if t.kind == LANE or index in used:
                self.where[index] = (p, len(self.threads[p]))
                self.threads[p].append(index)
        # Names that tell a process's threads apart: lanes of groups sharing a lane name with
        # another group get the group's name in front; repeats get " #2", " #3", ...
        tracks = trace.tracks
        for p, lanes in enumerate(self.threads):
            groups_of = collections.defaultdict(set)
            for i in lanes:
                groups_of[tracks[i].name].add(tracks[i].parent)
            clash = set().union(*(g for g in groups_of.values() if len(g) > 1))
            names, seen = [], collections.Counter()
            for i in lanes:
                n = tracks[i].name
                if tracks[i].parent in clash:
                    n = f"{tracks[tracks[i].parent].name} · {n}"
                seen[n] += 1
                names.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
            self.threads[p] = names


class FileLayout:
    """The same positions as read back from the file."""

    def __init__(self, events):
        procs, psort, threads, tsort = procs_and_threads(events)
        order = sorted(procs, key=lambda pid: psort[pid])
        self.proc_names = [procs[p] for p in order]
        self.proc_pos = {pid: i for i, pid in enumerate(order)}
        self.thread_names = []
        self.where = {}
        for pid in order:
            mine = sorted((k for k in threads if k[0] == pid), key=lambda k: tsort[k])
            self.thread_names.append([threads[k] for k in mine])
            for pos, k in enumerate(mine):
                self.where[k] = (self.proc_pos[pid], pos)
        self.pids = set(procs)
        self.tids = [k[1] for k in threads]


def slice_keys_model(trace, ml):
    return collections.Counter(
        (ml.where[s.track], s.name, s.cat, s.ts, s.dur) for s in trace.slices)


def slice_keys_file(events, fl, base):
    return collections.Counter(
        (fl.where[(e["pid"], e["tid"])], e["name"], e.get("cat", ""), to_ns(e["ts"], base),
         round(e["dur"] * 1000)) for e in events if e["ph"] == "X")


PH_MAX = 1 << 62


def perfetto_flow_binding(events):
    """Bind v1 flows the way Perfetto's JSON importer does.

    Events are sorted by (ts, key, file position) with key = MAX - dur for X and MAX for the
    other phases (TraceSorter::SlowOperatorLess); X and thread-scoped i push onto the (pid, tid)
    stack after popping slices that ended (SliceTracker::MaybeCloseStack); s and f (bp e) bind
    to the top of the stack without popping (FlowTracker::Begin/End, GetTopmostSliceOnTrack).
    Returns {flow id: (source event index, destination event index)}.
    """
    rows = []
    for idx, e in enumerate(events):
        if e["ph"] in "XisfC":
            ts = perfetto_ns(e["ts"])
            key = PH_MAX - perfetto_ns(e["dur"]) if e["ph"] == "X" else PH_MAX
            rows.append((ts, key, idx))
    rows.sort()
    stacks = collections.defaultdict(list)
    src, out = {}, {}
    for ts, _key, idx in rows:
        e = events[idx]
        ph = e["ph"]
        if ph in "Xi":
            dur = perfetto_ns(e["dur"]) if ph == "X" else 0
            st = stacks[(e["pid"], e["tid"])]
            while st:
                s_ts, s_dur, _ = st[-1]
                end = s_ts + s_dur
                if end < ts or (end == ts and not (s_dur == 0 and dur == 0)):
                    st.pop()
                else:
                    break
            st.append((ts, dur, idx))
        elif ph in "sf":
            assert e["cat"] and e["name"]
            st = stacks.get((e["pid"], e["tid"]))
            top = st[-1][2] if st else None
            key = (e["id"], e["cat"], e["name"])
            if ph == "s":
                assert key not in src, "duplicate flow id"
                src[key] = top
            else:
                # An f processed before its s is dropped (flow_end_without_start).
                out[e["id"]] = (src[key], top) if key in src else (None, None)
    assert len(out) == len(src)
    return out


def check_flows(trace, data, skip=()):
    """Every flow a trace can draw (writers.flows.drawable) binds, under Perfetto's rules, to
    exactly the model's src and dst slices; the others are not written, and counted and
    reported.  Returns how many were left out."""
    lit = literal_events(data)
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    ml, fl = ModelLayout(trace), FileLayout(events)
    s_ev = [e for e in events if e["ph"] == "s"]
    f_ev = [e for e in events if e["ph"] == "f"]
    ids = [fid for fid, f in enumerate(trace.flows, 1)
           if drawable(trace.slices[f.src], trace.slices[f.dst], "chrome")]
    # Flow ids number the drawn flows in model order.
    drawn = dict(zip(range(1, len(ids) + 1), ids))
    assert len(s_ev) == len(f_ev) == len(ids)
    assert sorted(e["id"] for e in s_ev) == list(range(1, len(ids) + 1))
    assert all(e.get("bp") == "e" for e in f_ev)
    assert all(e["id"] < 2 ** 53 for e in s_ev)
    bound = perfetto_flow_binding(lit)

    def key_of(idx):
        e = events[idx]
        return (fl.where[(e["pid"], e["tid"])], e["name"], to_ns(e["ts"], base),
                round(e["dur"] * 1000))

    def key_model(i):
        s = trace.slices[i]
        return (ml.where[s.track], s.name, s.ts, s.dur)

    for fid, mi in drawn.items():
        if mi in skip:
            continue
        flow = trace.flows[mi - 1]
        s_idx, d_idx = bound[fid]
        assert s_idx is not None and d_idx is not None, f"flow {mi} did not bind"
        assert events[s_idx]["ph"] == "X" and events[d_idx]["ph"] == "X"
        assert key_of(s_idx) == key_model(flow.src), f"flow {mi} source"
        assert key_of(d_idx) == key_model(flow.dst), f"flow {mi} destination"
    # The arrow's start lies inside the source slice, its end at the destination's start.
    by_id = {e["id"]: e for e in s_ev}
    for fid, mi in drawn.items():
        s = trace.slices[trace.flows[mi - 1].src]
        t = to_ns(by_id[fid]["ts"], base)
        assert s.ts <= t <= max(s.ts, s.ts + s.dur - 1)
    for e in f_ev:
        assert to_ns(e["ts"], base) == trace.slices[trace.flows[drawn[e["id"]] - 1].dst].ts
    left_out = len(trace.flows) - len(ids)
    warned = [w for w in doc["metadata"]["warnings"] if "dependencies are not drawn" in w]
    if left_out:
        assert warned == [not_drawn_warning(left_out, len(trace.flows), "chrome json")]
    else:
        assert not warned
    return left_out


# -- hand-built models --------------------------------------------------------------------

def build_model() -> Trace:
    """Nested groups, overlap lanes with equal names, nested slices, instants, counters, flows,
    top-level lanes and counters, awkward epoch timestamps."""
    tr = Trace(RunMeta("hand-built", "test", tool="unit", tool_version="1.2",
                       device="Ascend (test)", clock=Clock("test-clk", "cycle", Fraction(5, 9)),
                       source_files=["a.json", "b.bin"], warnings=["w1"]))
    tr.meta.extra["tasks"] = 7
    stray = tr.add_track("stray lane", order=5)                          # top level lane
    dev = tr.add_track("Device 0", kind=GROUP)
    cores = tr.add_track("Cores", dev, GROUP)
    core0 = tr.add_track("core0", cores, nesting=False)
    core1 = tr.add_track("core1", cores, nesting=False)
    pipes = tr.add_track("Pipes", cores, GROUP)
    mte = tr.add_track("MTE", pipes)
    host = tr.add_track("Host", kind=GROUP, order=0)                     # displayed first
    main = tr.add_track("main", host)

    s = {}
    # Overlapping tasks on core0 -> split into extra lanes named "core0".
    s["a"] = tr.add_slice(core0, BASE + 0, 1000, "task a", "task", {"n": 1})
    s["b"] = tr.add_slice(core0, BASE + 500, 1000, "task b", "task")
    s["c"] = tr.add_slice(core0, BASE + 1100, 100, "task c", "task")
    s["d"] = tr.add_slice(core0, BASE + 2000, 1, "tiny", "task")          # dur 1
    s["z"] = tr.add_slice(core0, BASE + 3000, 0, "zero", "task")          # dur 0
    s["e"] = tr.add_slice(core1, BASE + 123456789012345, 7, "far", "task")
    s["f"] = tr.add_slice(core1, BASE + 1, 999, "one ns", "task")
    s["g"] = tr.add_slice(mte, BASE + 10, 20, "copy", "dma")
    # Call stack on main: parent with children, a child at the same start, an instant inside.
    s["p"] = tr.add_slice(main, BASE + 100, 10000, "parent", "cpu")
    s["k1"] = tr.add_slice(main, BASE + 200, 300, "child1", "cpu")
    s["k2"] = tr.add_slice(main, BASE + 600, 300, "child2", "cpu")
    s["q"] = tr.add_slice(main, BASE + 20000, 5000, "leaf with instant", "cpu")
    s["r"] = tr.add_slice(main, BASE + 30000, 5000, "same-start parent", "cpu")
    s["r1"] = tr.add_slice(main, BASE + 30000, 10, "same-start child", "cpu")
    s["t"] = tr.add_slice(stray, BASE + 40000, 10, "stray slice")
    tr.add_instant(main, BASE + 21000, "mark", "cpu", {"why": "test"})
    tr.add_instant(core1, BASE + 50, "tick")
    # Flows: leaf -> x, parent (children) -> x, dur 0 / dur 1 ends, across processes.
    tr.add_flow(s["a"], s["d"])
    tr.add_flow(s["c"], s["e"], "dep", {"bytes": 64})
    tr.add_flow(s["d"], s["z"])
    tr.add_flow(s["z"], s["t"])
    tr.add_flow(s["p"], s["q"])
    tr.add_flow(s["q"], s["e"])
    tr.add_flow(s["f"], s["r"])                       # dst has a child at the same start
    tr.add_flow(s["k1"], s["k2"])
    tr.add_flow(s["g"], s["e"])
    tr.add_flow(s["t"], s["g"])                       # backward in time: reported, not bound
    # Counters: in a nested group, a duplicate name, and one at top level.
    c1 = tr.add_counter("Ready", cores, "tasks")
    for i, v in enumerate([0, 3, 1, 2]):
        c1.add(BASE + i * 1000 + 7, v)
    c2 = tr.add_counter("Ready", pipes, "tasks")
    c2.add(BASE + 5, 1.5)
    c3 = tr.add_counter("Clock (MHz)", None, "MHz")
    c3.add(BASE + 9, 1800.0)
    c3.add(BASE + 123456789012345 + 7, 1850.25)
    split_overlaps(tr)
    return tr


@pytest.fixture(scope="module")
def model():
    tr = build_model()
    return tr, write(tr)


def test_overlap_lanes_exist_in_model(model):
    tr, _ = model
    names = [tr.tracks[i].name for i, _ in tr.walk()]
    assert names.count("core0") == 2          # split_overlaps made an equal-name lane


def test_processes_and_threads_in_display_order(model):
    tr, data = model
    _, events = events_of(data)
    ml, fl = ModelLayout(tr), FileLayout(events)
    assert fl.proc_names == [n if n is not None else tr.meta.name for n in ml.procs]
    assert fl.proc_names == ["Host", "Device 0", "hand-built"]
    assert fl.thread_names == ml.threads
    assert fl.thread_names[1] == ["core0", "core0 #2", "core1", "MTE"]
    # pids 1..N in display order; tids unique over the file and never equal to a pid.
    procs, psort, _, _ = procs_and_threads(events)
    assert sorted(procs) == list(range(1, len(procs) + 1))
    assert sorted(procs, key=psort.get) == sorted(procs)
    assert len(set(fl.tids)) == len(fl.tids)
    assert not set(fl.tids) & fl.pids


def test_slices_exact(model):
    tr, data = model
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    assert base == tr.time_span()[0] == BASE
    ml, fl = ModelLayout(tr), FileLayout(events)
    assert slice_keys_file(events, fl, base) == slice_keys_model(tr, ml)
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == len(tr.slices)
    by_name = {e["name"]: e for e in xs}
    for s in tr.slices:
        assert by_name[s.name].get("args") == s.args
    # The far slice: 123456789012345 ns after the base, exact.
    far = by_name["far"]
    assert to_ns(far["ts"], base) == BASE + 123456789012345
    assert to_ns(by_name["one ns"]["ts"], base) == BASE + 1


def test_instants(model):
    tr, data = model
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    ml, fl = ModelLayout(tr), FileLayout(events)
    got = collections.Counter((fl.where[(e["pid"], e["tid"])], e["name"], e.get("cat", ""),
                               to_ns(e["ts"], base), json.dumps(e.get("args")))
                              for e in events if e["ph"] == "i")
    want = collections.Counter((ml.where[i.track], i.name, i.cat, i.ts, json.dumps(i.args))
                               for i in tr.instants)
    assert got == want
    assert all(e["s"] == "t" for e in events if e["ph"] == "i")


def test_counters(model):
    tr, data = model
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    ml, fl = ModelLayout(tr), FileLayout(events)
    cs = [e for e in events if e["ph"] == "C"]
    assert len(cs) == sum(len(c) for c in tr.counters)
    got = collections.Counter((fl.proc_pos[e["pid"]], to_ns(e["ts"], base), e["args"]["value"])
                              for e in cs)
    want = collections.Counter((ml.proc_of[c.track], t, v)
                               for c in tr.counters for t, v in zip(c.ts, c.values))
    assert got == want
    # One counter track per model counter: equal names in one process must not merge.
    names = {(e["pid"], e["name"]) for e in cs}
    assert len(names) == len(tr.counters)
    assert all("tid" not in e for e in cs)


def test_flows_bind_like_perfetto(model):
    tr, data = model
    # A destination with a child starting at the same ns is ambiguous in JSON v1: Perfetto
    # binds the f event to the shortest slice starting there (the child).  Every other flow
    # must bind to exactly its model slices.
    (amb,) = [fid for fid, f in enumerate(tr.flows, 1)
              if tr.slices[f.dst].name == "same-start parent"]
    assert check_flows(tr, data, skip={amb}) == 1          # the stray -> copy flow
    _, events = events_of(data)
    s_idx, d_idx = perfetto_flow_binding(literal_events(data))[amb]   # (before stray -> copy)
    assert events[s_idx]["name"] == tr.slices[tr.flows[amb - 1].src].name
    assert events[d_idx]["name"] == "same-start child"        # the documented limitation


def test_flow_start_position(model):
    tr, data = model
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    starts = {e["id"]: to_ns(e["ts"], base) for e in events if e["ph"] == "s"}
    # Leaves (nothing else on their thread starts inside them) bind 1 ns before their end;
    # slices with children or instants inside, and slices of 0 or 1 ns, at their start.
    # The stray -> copy flow (backward in time) is not written.
    at_end = {"task a", "task c", "child1", "copy"}
    at_start = {"tiny", "zero", "parent", "leaf with instant", "one ns"}
    for fid, flow in enumerate(tr.flows[:-1], 1):
        s = tr.slices[flow.src]
        assert s.name in at_end | at_start
        want = s.ts + s.dur - 1 if s.name in at_end else s.ts
        assert starts[fid] == want, s.name
    assert {e["name"] for e in events if e["ph"] in "sf"} == {"flow", "dep"}
    assert {e["cat"] for e in events if e["ph"] in "sf"} == {"flow"}
    assert [e["args"] for e in events if e["ph"] == "s" and e["name"] == "dep"] == [{"bytes": 64}]


def test_metadata(model):
    tr, data = model
    doc, _ = events_of(data)
    assert list(doc) == ["traceEvents", "displayTimeUnit", "metadata"]
    assert doc["displayTimeUnit"] == "ns"
    m = doc["metadata"]
    assert m["name"] == "hand-built" and m["format"] == "test"
    assert m["tool"] == "unit" and m["tool_version"] == "1.2"
    assert m["device"] == "Ascend (test)"
    assert m["clock"]["name"] == "test-clk" and m["clock"]["unit"] == "cycle"
    # typed: a JSON number, and exactly as the fraction's integers
    assert m["clock"]["ns_per_unit"] == 5 / 9
    assert (m["clock"]["ns_per_unit_numerator"], m["clock"]["ns_per_unit_denominator"]) == (5, 9)
    assert m["source_files"] == ["a.json", "b.bin"]
    assert m["warnings"][0] == "w1"                  # the model's own, then the writer's
    assert len(m["warnings"]) == 2 and "1 of 10 dependencies are not drawn" in m["warnings"][1]
    assert tr.meta.warnings == ["w1"]
    assert m["base_time_ns"] == BASE
    assert m["extra"] == {"tasks": 7}


def test_compact_single_line(model):
    _, data = model
    assert b"\n" not in data and b"\r" not in data
    assert data.startswith(b'{"traceEvents":[{"ph":"M"')
    assert data == orjson.dumps(orjson.loads(data))      # nothing but compact separators
    assert min(data) >= 0x20                              # no raw control bytes at all


def test_return_counts(model):
    tr, data = model
    counts = write_chrome(tr, io.BytesIO())
    _, events = events_of(data)
    ph = collections.Counter(e["ph"] for e in events)
    assert counts["slices"] == ph["X"] == len(tr.slices)
    assert counts["instants"] == ph["i"] == len(tr.instants)
    assert counts["flows"] == ph["s"] == ph["f"] == len(tr.flows) - 1     # one backward
    assert counts["flows_not_drawn"] == 1
    assert counts["counter_samples"] == ph["C"]
    assert counts["events"] == len(events)
    assert counts["bytes"] == len(data)
    assert counts["tracks"] == len(tr.tracks)


# -- precision ----------------------------------------------------------------------------

def _one_lane(offsets, base=BASE, durs=None):
    tr = Trace(RunMeta("prec", "test"))
    lane = tr.add_track("lane")
    for k, off in enumerate(offsets):
        tr.add_slice(lane, base + off, durs[k] if durs else 1, f"s{k}")
    return tr


def _check_exact(tr, data):
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    xs = [e for e in events if e["ph"] == "X"]
    lit = [e for e in literal_events(data) if e["ph"] == "X"]
    want = sorted((s.ts, s.dur) for s in tr.slices)
    # 1. what the brief asks: round(ts * 1000) after a correctly rounding parse
    assert sorted((to_ns(e["ts"], base), round(e["dur"] * 1000)) for e in xs) == want
    # 2. the literal text is exactly (ns - base) / 1000
    def exact(text):
        v = decimal.Decimal(text) * 1000
        assert v == v.to_integral_value(), text
        return int(v)
    assert sorted((exact(e["ts"]) + base, exact(e["dur"])) for e in lit) == want
    # 3. Perfetto's own (non correctly rounding) parser + llround
    assert sorted((perfetto_ns(e["ts"]) + base, perfetto_ns(e["dur"])) for e in lit) == want


def test_awkward_timestamps_exact():
    offsets = [0, 1, 2, 3, 7, 999, 1000, 1001, 123456789012345, 123456789012344,
               10 ** 15 + 1, EXACT_SPAN_NS - 1, EXACT_SPAN_NS - 1001, (1 << 50) + 1]
    durs = [1, 1, 999, 1001, 123456789012345, 0, 3, 1, 7, 1, 2, 0, 1000, (1 << 50) - 3]
    tr = _one_lane(offsets, durs=durs)
    data = write(tr)
    _check_exact(tr, data)
    doc, _ = events_of(data)
    assert doc["metadata"]["base_time_ns"] == BASE
    assert doc["metadata"]["warnings"] == []          # the whole span is below 2**51 ns


def test_random_offsets_exact_up_to_2_51():
    rng = random.Random(1234)
    offsets = [0] + [rng.randrange(1 << k, 1 << (k + 1)) for k in range(51) for _ in range(40)]
    offsets.append(EXACT_SPAN_NS - 1)
    durs = [rng.randrange(0, 1 << rng.randrange(1, 51)) for _ in offsets]
    tr = _one_lane(offsets, durs=durs)
    _check_exact(tr, write(tr))


def test_warns_when_span_exceeds_exact_range():
    tr = _one_lane([0, EXACT_SPAN_NS + 5])
    doc, _ = events_of(write(tr))
    assert any("cannot keep exact ns" in w for w in doc["metadata"]["warnings"])
    assert tr.meta.warnings == []                     # the model is not modified


def test_base_is_smallest_timestamp_over_all_kinds():
    tr = Trace(RunMeta("b", "test"))
    g = tr.add_track("g", kind=GROUP)
    lane = tr.add_track("l", g)
    tr.add_slice(lane, BASE + 100, 10, "s")
    tr.add_instant(lane, BASE + 50, "i")
    c = tr.add_counter("c", g)
    c.add(BASE + 20, 1)
    doc, events = events_of(write(tr))
    base = doc["metadata"]["base_time_ns"]
    assert base == BASE + 20
    assert min(e["ts"] for e in events if "ts" in e) == 0
    assert {e["ph"]: to_ns(e["ts"], base) for e in events if e["ph"] != "M"} == \
        {"X": BASE + 100, "i": BASE + 50, "C": BASE + 20}


# -- hostile values -----------------------------------------------------------------------

def test_big_ints_and_odd_types():
    tr = Trace(RunMeta("ints", "test"))
    g = tr.add_track("g", kind=GROUP)
    lane = tr.add_track("l", g)
    args = {"u64max": 2 ** 64 - 1, "u64": 2 ** 63, "i64min": -2 ** 63,
            "over": 2 ** 64, "under": -2 ** 63 - 1, "huge": 10 ** 40,
            "nested": {"list": [2 ** 70, 1, {"deep": -(2 ** 80)}], "ok": 5},
            "float": 1.5, "frac": Fraction(1, 4), "set": {3}, "bytes": b"\xffab",
            7: "int key", None: "none key", "tuple": (1, 2 ** 65)}
    tr.add_slice(lane, 0, 10, "big", args=args)
    tr.add_slice(lane, 20, 10, "plain", args={"n": 1})
    c = tr.add_counter("c", g)
    c.add(0, 2 ** 66)
    c.add(5, 3)
    data = write(tr)
    _, events = events_of(data)
    a = next(e for e in events if e["ph"] == "X" and e["name"] == "big")["args"]
    assert a["u64max"] == 2 ** 64 - 1 and a["u64"] == 2 ** 63 and a["i64min"] == -2 ** 63
    assert a["over"] == str(2 ** 64) and a["under"] == str(-2 ** 63 - 1)
    assert a["huge"] == str(10 ** 40)
    assert a["nested"] == {"list": [str(2 ** 70), 1, {"deep": str(-(2 ** 80))}], "ok": 5}
    assert a["float"] == 1.5 and a["frac"] == 0.25 and a["set"] == [3]
    assert a["bytes"] == "\\xffab"
    assert a["7"] == "int key" and a["None"] == "none key"
    assert a["tuple"] == [1, str(2 ** 65)]
    assert next(e for e in events if e["ph"] == "X" and e["name"] == "plain")["args"] == {"n": 1}
    assert [e["args"]["value"] for e in events if e["ph"] == "C"] == [str(2 ** 66), 3]
    assert args["over"] == 2 ** 64                    # the model is not modified


def test_nesting_deeper_than_orjson_allows():
    deep: dict = {"leaf": 1}
    for _ in range(300):
        deep = {"d": deep}
    tr = Trace(RunMeta("deep", "test"))
    lane = tr.add_track("l")
    tr.add_slice(lane, 0, 10, "deep", args={"x": deep})
    tr.add_slice(lane, 20, 10, "fine", args={"x": 1})
    _, events = events_of(write(tr))
    x = {e["name"]: e for e in events if e["ph"] == "X"}
    assert set(x["deep"]["args"]) == {"unserializable_args"}      # the slice itself is kept
    assert x["deep"]["dur"] == 0.01 and x["fine"]["args"] == {"x": 1}


def test_control_characters_and_surrogates():
    nasty = "a\x00b\x01\x1f\t\n\r\"\\/\u2028\u2029\x7f é 中"
    tr = Trace(RunMeta("ctl\ud800", "test", device="dev\udcff"))
    g = tr.add_track("grp " + nasty, kind=GROUP)
    lane = tr.add_track("lane\ud800x", g)
    tr.add_slice(lane, 0, 5, nasty, nasty, {nasty: nasty, "lone": "x\udc80y",
                                              "k\ud801": 1, "pair": "\ud83d\ude00"})
    tr.add_slice(lane, 10, 5, "lone\udfff", "cat")
    tr.add_instant(lane, 2, "i" + nasty)
    data = write(tr)
    assert b"\n" not in data and min(data) >= 0x20
    doc, events = events_of(data)                     # strict JSON parse succeeds
    x = [e for e in events if e["ph"] == "X"]
    first = next(e for e in x if e["ts"] == 0)
    assert first["name"] == nasty and first["cat"] == nasty
    assert first["args"][nasty] == nasty
    assert first["args"]["lone"] == "x\\udc80y"
    assert first["args"]["k\\ud801"] == 1
    assert first["args"]["pair"] == "\U0001F600"       # a surrogate pair is one character
    assert next(e for e in x if e["ts"] != 0)["name"] == "lone\\udfff"
    assert next(e for e in events if e["ph"] == "i")["name"] == "i" + nasty
    _, _, threads, _ = procs_and_threads(events)
    assert list(threads.values()) == ["lane\\ud800x"]
    assert doc["metadata"]["name"] == "ctl\\ud800" and doc["metadata"]["device"] == "dev\\udcff"
    procs, _, _, _ = procs_and_threads(events)
    assert list(procs.values()) == ["grp " + nasty]


# -- streaming ----------------------------------------------------------------------------

class _Recorder(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.sizes = []

    def write(self, b):
        self.sizes.append(len(b))
        return super().write(b)


def _many(n, bad_every=0):
    tr = Trace(RunMeta("many", "test"))
    g = tr.add_track("g", kind=GROUP)
    lanes = [tr.add_track(f"l{i}", g) for i in range(8)]
    for k in range(n):
        args = {"k": k, "h": 2 ** 63 + k}
        if bad_every and k % bad_every == 0:
            args["bad"] = 2 ** 64 + k
        tr.add_slice(lanes[k % 8], 1000 * k, 900, f"n{k % 50}", "c", args)
    for k in range(1, n, 3):
        tr.add_flow(k - 1, k)
    return tr


def test_streamed_in_bounded_chunks():
    tr = _many(60000)
    rec = _Recorder()
    counts = write_chrome(tr, rec)
    data = rec.getvalue()
    assert len(rec.sizes) >= 60000 // chrome_events.BATCH_EVENTS
    assert max(rec.sizes) < len(data) / 4             # no single giant string
    _, events = events_of(data)
    assert counts["slices"] == sum(1 for e in events if e["ph"] == "X") == 60000


@pytest.mark.parametrize("batch", [1, 3, 7, 10000])
def test_batch_size_does_not_change_output(monkeypatch, batch):
    tr = _many(500, bad_every=37)                     # some events need the slow path
    ref = write(tr)
    monkeypatch.setattr(chrome_events, "BATCH_EVENTS", batch)
    assert write(tr) == ref
    _, events = events_of(ref)
    bad = [e["args"]["bad"] for e in events if e["ph"] == "X" and "bad" in e["args"]]
    assert sorted(bad) == sorted(str(2 ** 64 + k) for k in range(0, 500, 37))
    check_flows(tr, ref)


def test_progress_reports_slices():
    tr = _many(25000)
    seen = []
    write_chrome(tr, io.BytesIO(), progress=seen.append)
    assert seen and seen[-1] == 25000 and seen == sorted(seen)


def test_empty_trace():
    data = write(Trace(RunMeta("empty", "test")))
    doc = json.loads(data)
    assert doc["traceEvents"] == [] and doc["metadata"]["base_time_ns"] == 0


def test_gzip_output(tmp_path, model):
    tr, data = model
    path = tmp_path / "t.json.gz"
    with atomic_output(path, gzip_level=6) as out:
        write_chrome(tr, out)
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert gzip.decompress(raw) == data


# -- real samples -------------------------------------------------------------------------

def read_sample(name: str) -> Trace:
    (src,) = find_runs(pypto_run_dir(name))[:1]
    if not (REPO / "converter/readers/pypto/bubble_log.py").exists():
        src.files.pop("bubble_log", None)
    return src.read()


@pytest.fixture(scope="module", params=PYPTO_MERGED_RUNS)
def sample(request):
    trace = read_sample(request.param)
    return request.param, trace, write(trace)


def test_sample_counts_and_exact_times(sample):
    name, tr, data = sample
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    assert base == tr.time_span()[0]
    ph = collections.Counter(e["ph"] for e in events)
    assert ph["X"] == len(tr.slices), name
    drawn = sum(drawable(tr.slices[f.src], tr.slices[f.dst], "chrome") for f in tr.flows)
    assert ph["s"] == ph["f"] == drawn, name
    assert ph["C"] == sum(len(c) for c in tr.counters), name
    assert ph["i"] == len(tr.instants), name
    ml, fl = ModelLayout(tr), FileLayout(events)
    assert slice_keys_file(events, fl, base) == slice_keys_model(tr, ml)
    # Every X's ts is exact, and its args survive, shared ones included (uint64 hashes too).
    by_key = collections.defaultdict(list)
    for s in tr.slices:
        by_key[(ml.where[s.track], s.ts, s.name)].append(s.all_args or None)
    for e in events:
        if e["ph"] == "X":
            k = (fl.where[(e["pid"], e["tid"])], to_ns(e["ts"], base), e["name"])
            assert e.get("args") in by_key[k]
    tasks = [e for e in events if e["ph"] == "X" and e.get("cat") in ("task", "hub", "fake")]
    assert tasks and all("rootHash" in e["args"] and "seqNo" in e["args"] for e in tasks), name


def test_sample_threads_in_display_order(sample):
    name, tr, data = sample
    _, events = events_of(data)
    ml, fl = ModelLayout(tr), FileLayout(events)
    assert fl.proc_names == [n if n is not None else tr.meta.name for n in ml.procs]
    assert fl.thread_names == ml.threads
    lanes = [tr.tracks[i].name for i, _ in tr.walk() if tr.tracks[i].kind == LANE]
    # Overlap lanes are named like their lane, with " #2", " #3", ... in the file.
    assert [re.sub(r" #\d+$", "", n) for p in fl.thread_names for n in p] == lanes
    assert len(set(fl.tids)) == len(fl.tids)


def test_sample_counters(sample):
    name, tr, data = sample
    doc, events = events_of(data)
    base = doc["metadata"]["base_time_ns"]
    got = collections.Counter((e["name"], to_ns(e["ts"], base), e["args"]["value"])
                              for e in events if e["ph"] == "C")
    want = collections.Counter((tr.tracks[c.track].name, t, v)
                               for c in tr.counters for t, v in zip(c.ts, c.values))
    assert got == want


def test_sample_flows_bind(sample):
    name, tr, data = sample
    left_out = check_flows(tr, data)
    # Cross-check against the model alone: exactly the flows whose destination starts
    # before their source are left out (PyPTO's untrusted HUB dependencies among them).
    assert left_out == sum(1 for f in tr.flows if tr.slices[f.dst].ts < tr.slices[f.src].ts)
    assert write_chrome(tr, io.BytesIO())["flows_not_drawn"] == left_out


def test_sample_compact_and_gzip(sample, tmp_path):
    name, tr, data = sample
    assert b"\n" not in data
    assert data == orjson.dumps(orjson.loads(data))
    path = tmp_path / f"{name}.json.gz"
    with atomic_output(path, gzip_level=6) as out:
        write_chrome(tr, out)
    unzipped = gzip.decompress(path.read_bytes())
    assert unzipped == data
    assert json.loads(unzipped) == json.loads(data)
    meta = json.loads(unzipped)["metadata"]
    assert meta["name"] == tr.meta.name and meta["source_files"] == tr.meta.source_files


@pytest.mark.parametrize("dst_ts, drawn", [(500, True),     # starts inside the source
                                           (100, True),     # starts with it
                                           (50, False)])    # starts before it
def test_flows_into_a_running_source_bind_or_are_reported(dst_ts, drawn):
    """A destination starting before the source's end point still binds (its "s" moves to
    the source's start; one starting with the source gets its "f" right after the "s");
    one starting before the source cannot be drawn from it: not written, counted, warned.
    (Before issue 17 the first two were silently lost in Perfetto.)"""
    tr = Trace(RunMeta("late", "test"))
    a = tr.add_track("A", nesting=False)
    b = tr.add_track("B", nesting=False)
    src = tr.add_slice(a, 100, 1000, "src")
    dst = tr.add_slice(b, dst_ts, 1000, "dst")
    tr.add_flow(src, dst)
    data = write(tr)
    doc, events = events_of(data)
    assert check_flows(tr, data) == (0 if drawn else 1)
    if drawn:
        s_idx, d_idx = perfetto_flow_binding(literal_events(data))[1]
        assert (events[s_idx]["name"], events[d_idx]["name"]) == ("src", "dst")
    else:
        assert not [e for e in events if e["ph"] in "sf"]
        assert write_chrome(tr, io.BytesIO())["flows_not_drawn"] == 1


def test_not_drawn_warning_names_only_the_kinds_left_out():
    """The line names each kind of dependency left out with its count, and only those:
    no 'untrusted' where none is left out (a Chrome JSON draws them all)."""
    reversed_only = not_drawn_warning(3, 10, "chrome json")
    assert reversed_only.startswith("chrome json: 3 of 10 dependencies are not drawn: 3 whose "
                                    "successor starts before their predecessor")
    assert "untrusted" not in reversed_only
    both = not_drawn_warning(3, 10, "a .pftrace", untrusted=2)
    assert "2 untrusted (a .pftrace flow cannot carry a name" in both
    assert "; 1 whose successor starts before" in both
    assert "whose successor" not in not_drawn_warning(2, 10, "a .pftrace", untrusted=2)
