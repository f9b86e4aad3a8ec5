"""merged_swimlane.json -> model -> .pftrace, checked against the input file itself."""

from __future__ import annotations

import ast
import collections
import gzip
import io
import json
import re

import pytest

from tracecvt.model import SOURCE_BINDING, UNTRUSTED_FLOW
from tracecvt.readers import find_runs
from tracecvt.writers.perfetto import time_origin, write_perfetto

from conftest import (PYPTO_MERGED_RUNS, check_pftrace, decode_pftrace, lanes_in_display_order,
                      pftrace_counts, pypto_run_dir, pypto_sim_dir, resolve_packets)


def load_merged(name):
    path = next(pypto_sim_dir(name).glob("merged_swimlane.json*"))
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return json.loads(raw)["traceEvents"]


def convert(name):
    (src,) = find_runs(pypto_run_dir(name))
    assert src.variant == "merged"
    trace = src.read()
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    return trace, decode_pftrace(buf.getvalue())


def expected_lane_order(names):
    def key(n):
        kind = 0 if n.startswith("AIC_") else 1 if n.startswith("AIV_") else 2
        return kind, int(n.rsplit("_", 1)[1])
    return sorted(set(names), key=key)


@pytest.fixture(scope="module", params=PYPTO_MERGED_RUNS)
def run(request):
    name = request.param
    events = load_merged(name)
    trace, pf = convert(name)
    return name, events, trace, pf


def test_counts_match_input(run):
    name, events, trace, pf = run
    ph = collections.Counter(e["ph"] for e in events)
    counts = pftrace_counts(pf)
    assert counts["begin"] == counts["end"] == ph["X"], name
    assert ph["s"] == ph["f"] == len(trace.flows)
    # every flow id drawn appears on exactly two events, its source and its destination;
    # those whose destination starts before their source are not drawn (writers.flows)
    # (and the untrusted ones: a .pftrace flow has no name to mark them by)
    back = sum(1 for f in trace.flows if f.name == UNTRUSTED_FLOW
               or trace.slices[f.dst].ts < trace.slices[f.src].ts)
    ids = collections.Counter()
    for p in pf.packet:
        if p.HasField("track_event"):
            ids.update(p.track_event.flow_ids)
            ids.update(p.track_event.terminating_flow_ids)
    assert len(ids) == ph["s"] - back and set(ids.values()) <= {2}
    assert counts["counter"] == ph["C"]
    # single-device-task runs are clean; multi-seqNo runs report PyPTO's HUB quirk
    late = [w for w in trace.meta.warnings if "cannot be bound to the execution" in w]
    rebound = [w for w in trace.meta.warnings if "re-bound to the HUB executions" in w]
    negative = [w for w in trace.meta.warnings if "negative wait times" in w]
    multiseq = name in ("softmax_multiseq", "ffn_medium")
    assert len(late) == len(rebound) == (1 if multiseq else 0)
    log = next(pypto_sim_dir(name).glob("bubble_analysis.log")).read_text()
    has_negative = any(line.split(":")[-1].strip().startswith("-") for line in log.splitlines()
                       if "Wait" in line and "Time:" in line)
    assert len(negative) == (1 if has_negative else 0)
    assert len(trace.meta.warnings) == len(late) + len(rebound) + len(negative), \
        trace.meta.warnings


def test_backward_dependencies_are_counted_from_the_input():
    events = load_merged("ffn_medium")
    trace, pf = convert("ffn_medium")
    src = {e["id"]: e for e in events if e["ph"] == "s"}
    back = sum(1 for e in events if e["ph"] == "f" and e["ts"] < src[e["id"]]["ts"] - 0.001)
    assert back == 96
    assert trace.meta.extra["flows_out_of_order"] == back
    # they are untrusted (with 64 more PyPTO bound to another device task's HUB) and not
    # drawn: every flow id written ends on a terminating id
    untrusted = [f for f in trace.flows if f.name == UNTRUSTED_FLOW]
    assert len(untrusted) == 160
    n_term = sum(len(p.track_event.terminating_flow_ids) for p in pf.packet
                 if p.HasField("track_event"))
    n_out = sum(len(p.track_event.flow_ids) for p in pf.packet if p.HasField("track_event"))
    assert n_term == n_out == len(trace.flows) - len(untrusted)


def test_timestamps_equal_input_in_ns(run):
    name, events, trace, pf = run
    want_begin = collections.Counter(round(e["ts"] * 1000) for e in events if e["ph"] == "X")
    want_end = collections.Counter(round((e["ts"] + e["dur"]) * 1000)
                                   for e in events if e["ph"] == "X")
    # Times as Trace Processor computes them, plus the writer's time 0 (the first timestamp).
    got_begin, got_end = collections.Counter(), collections.Counter()
    got_counter = collections.Counter()
    origin = time_origin(trace)
    for p, _, ts, _, _ in resolve_packets(pf):
        if p.HasField("track_event"):
            ts += origin
            if p.track_event.type == 1:
                got_begin[ts] += 1
            elif p.track_event.type == 2:
                got_end[ts] += 1
            elif p.track_event.type == 4:
                got_counter[ts] += 1
            # counter samples riding on a slice event (SequenceWriter.ride)
            got_counter[ts] += len(p.track_event.extra_counter_values)
    assert got_begin == want_begin
    assert got_end == want_end
    want_counter = collections.Counter(round(e["ts"] * 1000) for e in events if e["ph"] == "C")
    assert got_counter == want_counter


def test_structure_and_interning(run):
    name, events, trace, pf = run
    check_pftrace(pf)


def test_lane_names_and_order(run):
    name, events, trace, pf = run
    thread_names = [e["args"]["name"] for e in events
                    if e["ph"] == "M" and e["name"] == "thread_name"]
    # Overlap lanes repeat their core's name right after it, with " #2", " #3", ...: collapse
    # them for the order check.
    lanes = [re.sub(r" #\d+$", "", n) for n in lanes_in_display_order(pf)]
    collapsed = [n for i, n in enumerate(lanes) if i == 0 or lanes[i - 1] != n]
    assert collapsed == expected_lane_order(thread_names)
    # (the first counter of the "Counters" group is the group's row: "Counters · <name>")
    counters = {n.split(" · ", 1)[-1] for n in lanes_in_display_order(pf, "counter")}
    assert counters == {e["name"] for e in events if e["ph"] == "C"}


def test_flows_connect_the_input_tasks(run):
    """Each s/f pair joins the slice ending at s (+0.0001 us) to the slice starting at f."""
    name, events, trace, pf = run
    tid_name = {e["tid"]: e["args"]["name"] for e in events
                if e["ph"] == "M" and e["name"] == "thread_name"}
    src = {e["id"]: e for e in events if e["ph"] == "s"}
    want = collections.Counter()
    for f in (e for e in events if e["ph"] == "f"):
        s = src[f["id"]]
        want[(tid_name[s["tid"]], round((s["ts"] + 0.0001) * 1000),
              tid_name[f["tid"]], round(f["ts"] * 1000))] += 1
    got = collections.Counter()
    for fl in trace.flows:       # as PyPTO bound them (tracecvt re-binds some: hub_binding)
        src, dst = (fl.args or {}).get(SOURCE_BINDING, (fl.src, fl.dst))
        a, b = trace.slices[src], trace.slices[dst]
        got[(trace.tracks[a.track].name, a.ts + a.dur, trace.tracks[b.track].name, b.ts)] += 1
    assert got == want


def test_task_args_come_from_the_hints(run):
    name, events, trace, pf = run
    by_key = {(s.args["seqNo"], s.args["taskId"], s.ts): s for s in trace.slices}
    names = {k: s.name for k, s in by_key.items()}
    cats = {k: s.cat for k, s in by_key.items()}
    by_key = {k: s.all_args for k, s in by_key.items()}
    for e in events:
        if e["ph"] != "X":
            continue
        a = e["args"]
        s = by_key[(a["seqNo"], a["taskId"], round(e["ts"] * 1000))]
        s = type("S", (), {"args": s})
        assert names[(a["seqNo"], a["taskId"], round(e["ts"] * 1000))] == e["name"]
        assert f"rootHash:{s.args['rootHash']}," in a["event-hint"]
        assert f"leafHash:{s.args['leafHash']}," in a["event-hint"]
        assert f"callOpMagic:{s.args['callOpMagic']}," in a["event-hint"]
        for key, hint in (("inputs", "ioperand-hint"), ("outputs", "ooperand-hint")):
            if not a[hint]:
                assert key not in s.args
                continue
            literal = ast.literal_eval(a[hint])
            assert [op["tensor"] for op in s.args[key]] == [next(iter(d)) for d in literal]
            assert [op["shape"] for op in s.args[key]] == \
                [next(iter(d.values()))["shape"] for d in literal]
        # Fake tasks are category "fake"; the name's rootIndex-psgId and an operand's bytes
        # are not repeated as args.
        assert (cats[(a["seqNo"], a["taskId"], round(e["ts"] * 1000))] == "fake") == (
            a["color"].startswith("fake"))
        assert not {"fake", "rootIndex", "psgId", "input_bytes", "output_bytes"} & s.args.keys()
        assert s.args["exec_stats"]["avg_us"] == float(
            a["execution-hint"].split("Average Execution Time:")[1].split()[0])


def test_operand_bytes_from_dtype():
    trace, _ = convert("tiny_add")
    s = next(s for s in trace.slices if s.args["taskId"] == 1)
    s = type("S", (), {"args": s.all_args})
    # two FP32 64x64 inputs, one FP32 64x64 output
    assert s.args["inputs"][0]["dtype"] == "FP32"
    assert [op["bytes"] for op in s.args["inputs"]] == [64 * 64 * 4] * 2
    assert [op["bytes"] for op in s.args["outputs"]] == [64 * 64 * 4]


def test_multiseq_fake_tasks_are_kept_and_flagged():
    trace, pf = convert("softmax_multiseq")
    fake = [s for s in trace.slices if s.cat == "fake"]
    assert len(fake) == 24
    assert {trace.tracks[s.track].name for s in fake} == {"Fake Core_0"}
    assert all(s.dur == 1000 for s in fake)      # PyPTO gives fake tasks exactly 1 us


def test_flows_are_declared_a_task_graph():
    """The analyses split bubbles by cause only where the reader says its flows are task
    dependencies; the PyPTO reader does, on both paths."""
    for variant in (None, "pypto-raw"):
        (src,) = find_runs(pypto_run_dir("matmul_add"), variant)
        assert src.read().meta.extra["task_graph"] is True


@pytest.mark.parametrize("name", PYPTO_MERGED_RUNS)
def test_typed_decoding_equals_general_json_parse(name):
    """The fast typed decoder (msgspec) and the general path (orjson, which also mends cut
    files) must give the same events: same floats to the last bit, same args, same order."""
    from tracecvt.readers.pypto.merged import Event, as_event, load_events
    path = next(pypto_sim_dir(name).glob("merged_swimlane.json*"))
    typed = load_events(path)
    general = [as_event(e) for e in load_events(path, typed=False)]
    assert all(e.__class__ is Event for e in typed)
    assert len(typed) == len(general) == len(load_merged(name))
    assert typed == general
    assert [e.ts.hex() if isinstance(e.ts, float) else e.ts for e in typed] == \
        [e.ts.hex() if isinstance(e.ts, float) else e.ts for e in general]


def test_typed_decoding_falls_back_on_what_it_cannot_type(tmp_path):
    """Non-object events and invalid UTF-8 leave the typed decoder to the general path."""
    from tracecvt.readers.pypto.merged import Event, load_events
    p = tmp_path / "t.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "ts": 1.5, "dur": 2, "name": "a"}, 7]}')
    events = load_events(p)
    assert events[0] == Event("X", 1.5, 2, None, None, "a") and events[1] == 7
    p.write_bytes(b'[{"ph": "X", "ts": 1, "name": "\xc1"}]')
    from tracecvt.errors import InputError
    with pytest.raises(InputError, match="t.json: malformed JSON"):
        load_events(p)


@pytest.mark.parametrize("name", PYPTO_MERGED_RUNS)
def test_reading_with_a_second_process_gives_the_same_model(name, monkeypatch):
    """workers=2: a forked process reads counters and flows while this one reads the rest;
    the model must be exactly the one a single process reads (every field, every arg, the
    sharing of args dicts, the warnings)."""
    from tracecvt.modelfile.compare import model_differences
    from tracecvt.readers import ReadOptions
    from tracecvt.readers.pypto import merged
    (src,) = find_runs(pypto_run_dir(name))
    one = src.read(ReadOptions(workers=1))
    forks = []
    real = merged.fork_series_pass
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(merged, "fork_series_pass", lambda d: forks.append(1) or real(d))
    two = src.read(ReadOptions(workers=2))
    assert forks == [1]
    assert model_differences(one, two) == []
    assert one.flows and one.counters


def test_a_failing_second_reader_process_is_replaced_by_this_one(monkeypatch):
    """The helper cannot decode what it reads: the pass runs here, nothing is lost, and the
    trace says what happened."""
    from tracecvt.modelfile.compare import model_differences
    from tracecvt.readers import ReadOptions
    from tracecvt.readers.pypto import merged
    (src,) = find_runs(pypto_run_dir("ffn_large"))
    one = src.read(ReadOptions(workers=1))
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(merged, "_LIGHT_DECODER", None)     # the child fails on .decode
    two = src.read(ReadOptions(workers=2))
    assert [w for w in two.meta.warnings if w not in one.meta.warnings] == [
        f"{src.files['merged']}: the second process reading counters and flows failed "
        "(AttributeError: 'NoneType' object has no attribute 'decode'); read them here "
        "instead"]
    two.meta.warnings = list(one.meta.warnings)
    assert model_differences(one, two) == []


def test_a_file_only_the_general_parser_reads_needs_no_warning_about_the_helper(
        tmp_path, monkeypatch):
    """A non-object event: neither process can decode the file typed; the helper says so
    and this process collects counters and flows itself, without a warning about it."""
    from tracecvt.modelfile.compare import model_differences
    from tracecvt.readers import ReadOptions
    from tracecvt.readers.pypto import merged
    doc = json.loads((pypto_sim_dir("matmul_add") / "merged_swimlane.json").read_bytes())
    doc["traceEvents"].insert(5, 7)
    path = tmp_path / "merged_swimlane.json"
    path.write_text(json.dumps(doc))
    (src,) = find_runs(path)
    one = src.read(ReadOptions(workers=1))
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    two = src.read(ReadOptions(workers=2))
    assert any("1 events skipped: not an object" in w for w in two.meta.warnings)
    assert not any("second process" in w for w in two.meta.warnings)
    assert model_differences(one, two) == [] and two.flows and two.counters


def test_a_phase_the_skimming_decoder_does_not_know_gives_the_same_model(tmp_path, monkeypatch):
    """With a helper, this process skims (counters and flows left empty, one struct per known
    phase); an unknown phase makes it decode the file whole instead: nothing changes."""
    from tracecvt.modelfile.compare import model_differences
    from tracecvt.readers import ReadOptions
    from tracecvt.readers.pypto import merged
    doc = json.loads((pypto_sim_dir("matmul_add") / "merged_swimlane.json").read_bytes())
    doc["traceEvents"].insert(7, {"ph": "P", "ts": 1.0, "pid": 1, "tid": 1002, "name": "p"})
    path = tmp_path / "merged_swimlane.json"
    path.write_text(json.dumps(doc))
    (src,) = find_runs(path)
    one = src.read(ReadOptions(workers=1))
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    skims = []
    real = merged.decode_events

    def spy(*a, **k):
        skims.append(k.get("skim"))
        return real(*a, **k)
    monkeypatch.setattr(merged, "decode_events", spy)
    two = src.read(ReadOptions(workers=2))
    assert skims == [True]
    assert any("1 events skipped: event phase 'P'" in w for w in two.meta.warnings)
    assert model_differences(one, two) == [] and two.flows and two.counters


def test_skimming_decodes_every_phase_the_main_pass_reads(tmp_path):
    """Instants of any spelling ("i", "I", "n") are skimmed, not a reason to decode whole."""
    from tracecvt.readers.pypto import merged
    doc = [{"ph": ph, "ts": 1.0, "pid": 1, "tid": 1, "name": ph} for ph in "iIn"]
    doc += [{"ph": "C", "ts": 1.0, "pid": 1, "name": "c", "args": {"v": 1}}]
    path = tmp_path / "merged_swimlane.json"
    path.write_text(json.dumps(doc))
    events = merged.decode_events(path, path.read_bytes(), skim=True)
    assert all(isinstance(e, merged._Tagged) for e in events)
    assert [e.ph for e in events] == ["i", "I", "n", "C"]


def test_a_cut_file_is_decoded_typed_once_before_the_general_path(monkeypatch):
    """A file cut short is malformed for every typed decoder: after the first fails, the
    general path reads it (and says what was lost), without a second full typed decode."""
    from tracecvt.readers.pypto import merged
    path = pypto_sim_dir("matmul_add") / "merged_swimlane.json"
    data = path.read_bytes()
    cut = data[:len(data) // 2]
    calls = []
    typed = merged._typed_events

    def counting(decoder, data):
        calls.append(decoder)
        return typed(decoder, data)
    monkeypatch.setattr(merged, "_typed_events", counting)
    warnings = []
    events = merged.decode_events(path, cut, warnings.append, typed=True, skim=True)
    assert calls == [merged._SKIM_DECODER]
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: ")
    whole = merged.decode_events(path, data, None, typed=True, skim=True)
    assert 0 < len(events) < len(whole)
