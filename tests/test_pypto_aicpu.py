"""AICPU view of NPU runs (format reference sections 5.7 and 6), on synthetic fixtures.

No real ``machine_runtime_operator_trace*.json`` exists; the fixtures under
fixtures/pypto_npu/ were written from the format description (see their READMEs).  Expected
values are read from the fixture files with exact decimal arithmetic, never from the converter.
"""

from __future__ import annotations

import collections
import json
import random
import shutil
from decimal import Decimal

import pytest

from tracecvt.errors import InputError
from tracecvt.model import COUNTER, GROUP, LANE
from tracecvt.readers import find_runs

from conftest import FIXTURES

NPU = FIXTURES / "pypto_npu"
AICPU_DIR = NPU / "synthetic_from_format_doc"
AICPU_FILE = AICPU_DIR / "machine_runtime_operator_trace_0.json"
MERGED_DIR = NPU / "synthetic_merged_with_aicpu"
MERGED_FILE = MERGED_DIR / "merged_swimlane.json"


def load_events(path):
    """Events with ts/dur as exact decimals, as written in the file."""
    return json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]


def ns(value):
    """Exact integer ns of a decimal µs value; the fixtures lie on a 20 ns grid."""
    v = Decimal(value) * 1000
    assert v == v.to_integral_value(), value
    return int(v)


def process_name(events, pid):
    (name,) = [e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == pid]
    return name


def thread_names(events, pid):
    """{tid: name} of a process."""
    return {e["tid"]: e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}


def expected_slices(events, pid):
    """Multiset of (thread name, slice name, start ns, end ns) of the X events of ``pid``."""
    names = thread_names(events, pid)
    return collections.Counter(
        (names[e["tid"]], e["name"], ns(e["ts"]), ns(Decimal(e["ts"]) + Decimal(e["dur"])))
        for e in events if e["ph"] == "X" and e["pid"] == pid)


def model_slices(trace, lanes):
    lanes = set(lanes)
    return collections.Counter((trace.tracks[s.track].name, s.name, s.ts, s.ts + s.dur)
                               for s in trace.slices if s.track in lanes)


def root(trace, name):
    (r,) = [i for i in trace.roots if trace.tracks[i].name == name]
    return r


def descendants(trace, track, kind):
    out = []
    for c in trace.children(track):
        if trace.tracks[c].kind == kind:
            out.append(c)
        if trace.tracks[c].kind == GROUP:
            out += descendants(trace, c, kind)
    return out


def read_one(path):
    (src,) = find_runs(path)
    return src, src.read()


# -- machine_runtime_operator_trace_0.json ----------------------------------------------------

def test_fixture_is_marked_synthetic():
    for d in (AICPU_DIR, MERGED_DIR):
        readme = (d / "README.md").read_text()
        assert "NOT produced by PyPTO" in readme and "pypto.md" in readme


def test_aicpu_file_lanes_and_slices():
    events = load_events(AICPU_FILE)
    src, trace = read_one(AICPU_DIR)
    assert src.variant == "aicpu" and src.files == {"aicpu0": AICPU_FILE}
    group = root(trace, process_name(events, 0))
    assert process_name(events, 0) == "AICPU View"
    assert trace.roots == [group]
    lanes = trace.children(group)
    names = thread_names(events, 0)
    # One lane per thread, in tid order (which is not the alphabetical order here).
    assert [trace.tracks[i].name for i in lanes] == [names[t] for t in sorted(names)]
    assert [trace.tracks[i].name for i in lanes] != sorted(names.values())
    assert all(trace.tracks[i].kind == LANE for i in lanes)
    n_x = sum(1 for e in events if e["ph"] == "X")
    assert len(trace.slices) == n_x == 60
    assert model_slices(trace, lanes) == expected_slices(events, 0)
    # Category: the block's coreType.
    cats = collections.Counter((e["name"], e["cat"]) for e in events if e["ph"] == "X")
    assert collections.Counter((s.name, s.cat) for s in trace.slices) == cats


def test_aicpu_file_meta():
    events = load_events(AICPU_FILE)
    _, trace = read_one(AICPU_DIR)
    freqs = {e["freq"] for e in events if e["ph"] == "X"}
    assert freqs == {50}
    assert trace.meta.extra["aicpu_freq_mhz"] == 50
    assert str(AICPU_FILE) in trace.meta.source_files
    assert trace.meta.device == "Ascend NPU"
    assert not trace.meta.warnings, trace.meta.warnings


def test_single_file_input():
    (src,) = find_runs(AICPU_FILE)
    trace = src.read()
    assert len(trace.slices) == sum(1 for e in load_events(AICPU_FILE) if e["ph"] == "X")


def _write_trace(path, events):
    path.write_text(json.dumps({"traceEvents": events}))


def test_exact_ns_at_1ghz(tmp_path):
    """At 1 GHz and ~2.4e12 µs, (ts + dur) * 1000 in floats misses the end by 1 ns for some
    events; ticks / freq must give it exactly."""
    rng = random.Random(7)
    cases = []
    while len(cases) < 20:
        k = rng.randrange(2_300_000_000_000_000, 2_500_000_000_000_000)
        d = rng.randrange(1, 10**7)
        ts, dur = k / 1000, d / 1000
        if round((ts + dur) * 1000) != k + d:
            cases.append((k, d, ts, dur))
    events = [{"name": "process_name", "ph": "M", "pid": 0, "cat": "__metadata",
               "args": {"name": "AICPU View", "type": "aicpu"}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "cat": "__metadata",
               "args": {"name": "AICPU-CTRL-0"}}]
    for i, (k, d, ts, dur) in enumerate(cases):
        events.append({"name": f"M_{i}", "cat": "AICPU-CTRL", "ph": "X", "pid": 0, "tid": 0,
                       "ts": ts, "dur": dur, "freq": 1000})
    path = tmp_path / "machine_runtime_operator_trace_0.json"
    _write_trace(path, events)
    _, trace = read_one(tmp_path)
    got = {s.name: (s.ts, s.ts + s.dur) for s in trace.slices}
    assert got == {f"M_{i}": (k, k + d) for i, (k, d, _, _) in enumerate(cases)}
    assert trace.meta.extra["aicpu_freq_mhz"] == 1000


@pytest.mark.parametrize("name", ["machine_runtime_operator_trace_3.json", "npu_swimlane.json"])
def test_merged_file_with_the_aicpu_view_first_is_merged_under_any_name(tmp_path, name):
    """Content decides, not the name (5.7: gen_perfetto prepends the AICPU view to the
    merged file, so "Machine View" is far in): under an AICPU trace's name or any other, the
    file is a merged run, found in its folder as it is as a file, read as the named one is;
    an AICPU trace beside it (any name) joins that run."""
    shutil.copy(MERGED_FILE, tmp_path / name)
    shutil.copy(AICPU_FILE, tmp_path / "phases.json")
    (by_folder,) = find_runs(tmp_path)
    assert by_folder.files == {"merged": tmp_path / name, "aicpu0": tmp_path / "phases.json"}
    (by_file,) = find_runs(tmp_path / name)
    assert by_file.files == {"merged": tmp_path / name}
    (named,) = find_runs(MERGED_DIR)
    expected = named.read()
    for src in (by_folder, by_file):
        trace = src.read()
        assert collections.Counter((s.ts, s.dur, s.name) for s in trace.slices) == \
            collections.Counter((s.ts, s.dur, s.name) for s in expected.slices)
        assert len(trace.flows) == len(expected.flows) == 5


def test_malformed_aicpu_file(tmp_path):
    path = tmp_path / "machine_runtime_operator_trace_0.json"
    text = AICPU_FILE.read_text()
    mid = text.index("},", len(text) // 2) + 2          # between two events
    path.write_text(text[:mid] + "}}garbage" + text[mid:])
    (src,) = find_runs(tmp_path)
    with pytest.raises(InputError) as err:
        src.read()
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_truncated_aicpu_file_keeps_the_events_before_the_cut(tmp_path):
    """Cut short (issue 7): the complete events before the cut are read, with a warning."""
    path = tmp_path / "machine_runtime_operator_trace_0.json"
    text = AICPU_FILE.read_text()
    path.write_text(text[: len(text) // 2])
    (src,) = find_runs(tmp_path)
    trace = src.read()
    assert any("cut short" in w and str(path) in w for w in trace.meta.warnings)
    assert 0 < len(trace.slices) < len(find_runs(AICPU_FILE)[0].read().slices)


# -- merged_swimlane.json with the AICPU view prepended (5.7) ----------------------------------

def test_merged_fixture_shape():
    """What makes the fixture realistic: pid 0 first, indent 2, a long AICPU prefix, and pid 0
    tid 1 colliding with the pid 1 / tid 1 counter track."""
    text = MERGED_FILE.read_text()
    assert text.startswith('{\n  "traceEvents": [\n    {')
    assert b"Machine View" not in MERGED_FILE.read_bytes()[:4096]
    events = load_events(MERGED_FILE)
    assert events[0]["pid"] == 0 and process_name(events, 0) == "AICPU View"
    assert process_name(events, 1) == "Machine View"
    assert 1 in thread_names(events, 0)
    assert any(e["ph"] == "C" and e["pid"] == 1 and e["tid"] == 1 for e in events)
    # The AICPU part is the AICPU trace file's events, as gen_perfetto writes both.
    assert [e for e in events if e["pid"] == 0] == load_events(AICPU_FILE)


@pytest.mark.parametrize("where", [MERGED_DIR, MERGED_FILE])
def test_merged_keeps_processes_apart(where):
    events = load_events(MERGED_FILE)
    src, trace = read_one(where)
    assert src.variant == "merged"
    aicpu = root(trace, "AICPU View")
    (machine,) = [r for r in trace.roots if r != aicpu]
    aicpu_lanes = trace.children(aicpu)
    machine_lanes = descendants(trace, machine, LANE)
    names0, names1 = thread_names(events, 0), thread_names(events, 1)
    assert [trace.tracks[i].name for i in aicpu_lanes] == [names0[t] for t in sorted(names0)]
    assert sorted(trace.tracks[i].name for i in machine_lanes) == sorted(names1.values())
    assert model_slices(trace, aicpu_lanes) == expected_slices(events, 0)
    assert model_slices(trace, machine_lanes) == expected_slices(events, 1)
    n_x = sum(1 for e in events if e["ph"] == "X")
    assert len(trace.slices) == n_x
    # The pid 0 / tid 1 thread holds exactly its own events.
    (sched1,) = [i for i in aicpu_lanes if trace.tracks[i].name == names0[1]]
    assert sorted(s.name for s in trace.slices if s.track == sched1) == \
        sorted(e["name"] for e in events if e["ph"] == "X" and e["pid"] == 0 and e["tid"] == 1)
    # The pid 1 / tid 1 counters stay in the Machine View.
    counters = descendants(trace, machine, COUNTER)
    c_events = collections.Counter(e["name"] for e in events if e["ph"] == "C")
    assert sorted(trace.tracks[i].name for i in counters) == sorted(c_events)
    assert not descendants(trace, aicpu, COUNTER)
    by_track = {c.track: c for c in trace.counters}
    for i in counters:
        c = by_track[i]
        expected = [(ns(e["ts"]), e["args"]["size"]) for e in events
                    if e["ph"] == "C" and e["name"] == trace.tracks[i].name]
        assert list(zip(c.ts, c.values)) == expected
    # Every flow binds to a task slice.
    assert len(trace.flows) == sum(1 for e in events if e["ph"] == "s")
    assert not trace.meta.warnings, trace.meta.warnings


def test_merged_and_aicpu_file_together(tmp_path):
    """An NPU directory holds both files; the AICPU events must not be doubled."""
    shutil.copy(MERGED_FILE, tmp_path)
    shutil.copy(AICPU_FILE, tmp_path)
    events = load_events(MERGED_FILE)
    src, trace = read_one(tmp_path)
    assert src.variant == "merged" and "aicpu0" in src.files
    aicpu = root(trace, "AICPU View")
    assert len(trace.roots) == 2
    assert model_slices(trace, trace.children(aicpu)) == expected_slices(events, 0)
    assert len(trace.slices) == sum(1 for e in events if e["ph"] == "X")
    assert trace.meta.extra["aicpu_freq_mhz"] == 50
    assert trace.meta.extra["aicpu_duplicate_slices_skipped"] == {
        str(tmp_path / AICPU_FILE.name): sum(1 for e in events if e["ph"] == "X" and e["pid"] == 0)}
    assert not trace.meta.warnings, trace.meta.warnings


def test_two_overlapping_aicpu_dumps(tmp_path):
    """Dumps _0 and _1 share events: the union is kept once, the new ones are added."""
    events = load_events(AICPU_FILE)
    meta = [e for e in events if e["ph"] == "M"]
    xs = [e for e in events if e["ph"] == "X"]
    first, second = xs[:40], xs[20:]

    def plain(evs):
        return [{k: (float(v) if isinstance(v, Decimal) else v) for k, v in e.items()}
                for e in evs]
    _write_trace(tmp_path / "machine_runtime_operator_trace_0.json", plain(meta + first))
    _write_trace(tmp_path / "machine_runtime_operator_trace_1.json", plain(meta + second))
    src, trace = read_one(tmp_path)
    assert sorted(src.files) == ["aicpu0", "aicpu1"]
    assert trace.roots == [root(trace, "AICPU View")]
    lanes = trace.children(trace.roots[0])
    assert model_slices(trace, lanes) == expected_slices(events, 0)
    assert trace.meta.extra["aicpu_duplicate_slices_skipped"] == {
        str(tmp_path / "machine_runtime_operator_trace_1.json"): 20}
