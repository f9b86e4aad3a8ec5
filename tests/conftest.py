"""Shared test helpers.  The real samples live in ../shared/samples (CI has them there too)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples"
PYPTO = SAMPLES / "pypto"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

PYPTO_RUNS = sorted(p.name for p in PYPTO.iterdir() if p.is_dir()) if PYPTO.is_dir() else []
# Runs that have a merged_swimlane.json (ffn_over_threshold has none).
PYPTO_MERGED_RUNS = [r for r in PYPTO_RUNS
                     if list((PYPTO / r).glob("output/*/CostModelSimulationOutput/merged_swimlane.json*"))]


def pypto_run_dir(name: str) -> Path:
    """The output/output_*/ directory of a shared PyPTO sample."""
    (run,) = (PYPTO / name / "output").glob("output_*")
    return run


def pypto_sim_dir(name: str) -> Path:
    return pypto_run_dir(name) / "CostModelSimulationOutput"


def decode_pftrace(path_or_bytes):
    """Parse a written .pftrace with the perfetto package's compiled schema."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else Path(path_or_bytes).read_bytes()
    return pb.Trace.FromString(data)


def pftrace_counts(trace) -> dict:
    """Counts of what a decoded trace holds: slices, instants, counter samples, flows."""
    types = collections.Counter()
    flows_out = flows_in = 0
    for p in trace.packet:
        if p.HasField("track_event"):
            te = p.track_event
            types[te.type] += 1
            flows_out += len(te.flow_ids)
            flows_in += len(te.terminating_flow_ids)
    return {"begin": types[1], "end": types[2], "instant": types[3], "counter": types[4],
            "flow_ids": flows_out, "terminating_flow_ids": flows_in,
            "tracks": sum(1 for p in trace.packet if p.HasField("track_descriptor"))}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "no_trace_check: the test writes invalid .pftrace files on purpose (the "
        "automatic validation of written traces is skipped)")


@pytest.fixture(autouse=True)
def _validate_written_traces(request):
    """Every Perfetto trace a test writes under its tmp_path passes ``tracecvt validate``."""
    yield
    tmp = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if tmp is None or request.node.get_closest_marker("no_trace_check"):
        return
    from converter.validate import validate_path
    for trace in sorted([*Path(tmp).rglob("*.pftrace"), *Path(tmp).rglob("*.pftrace.gz")]):
        if trace.is_file() and not trace.is_symlink():
            report = validate_path(trace)
            assert report.ok, report.text()


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(f"shared samples not found at {SAMPLES}")
    return SAMPLES


def check_pftrace(trace) -> dict:
    """Structural checks every written trace must pass; returns per-track info.

    * the first packet clears incremental state; every packet defining or using interned ids
      carries SEQ_NEEDS_INCREMENTAL_STATE, and every iid is defined at or before its use;
    * every track_uuid used has a descriptor, and every parent exists;
    * BEGIN/END are balanced per track and END never precedes its BEGIN;
    * every terminating flow id has a matching outgoing flow id;
    * and ``tracecvt validate`` (converter/validate.py) finds no problem in it.
    """
    from converter.validate import validate_bytes
    report = validate_bytes(trace.SerializeToString())
    assert report.ok, report.text()
    tables = {"name": set(), "cat": set(), "arg": set(), "str": set()}
    descriptors = {}
    first = trace.packet[0]
    assert first.sequence_flags & 1, "first packet must clear incremental state"
    stacks = collections.defaultdict(list)
    out_ids, in_ids = set(), set()
    for p in trace.packet:
        if p.HasField("interned_data"):
            assert p.sequence_flags & 2
            d = p.interned_data
            tables["name"].update(e.iid for e in d.event_names)
            tables["cat"].update(e.iid for e in d.event_categories)
            tables["arg"].update(e.iid for e in d.debug_annotation_names)
            tables["str"].update(e.iid for e in d.debug_annotation_string_values)
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            assert td.uuid not in descriptors, f"duplicate track uuid {td.uuid}"
            descriptors[td.uuid] = td
        if p.HasField("track_event"):
            te = p.track_event
            assert te.track_uuid in descriptors, f"event on undeclared track {te.track_uuid}"
            uses = te.name_iid or te.category_iids or te.debug_annotations
            if uses:
                assert p.sequence_flags & 2, "packet uses iids without SEQ_NEEDS_INCREMENTAL_STATE"
            if te.name_iid:
                assert te.name_iid in tables["name"], f"unresolved name iid {te.name_iid}"
            for c in te.category_iids:
                assert c in tables["cat"]
            todo = list(te.debug_annotations)
            while todo:            # nested dict entries and array values too
                a = todo.pop()
                if a.name_iid:
                    assert a.name_iid in tables["arg"], f"unresolved arg name iid {a.name_iid}"
                if a.string_value_iid:
                    assert a.string_value_iid in tables["str"]
                todo.extend(a.dict_entries)
                todo.extend(a.array_values)
            if te.type == 1:
                stacks[te.track_uuid].append(p.timestamp)
            elif te.type == 2:
                assert stacks[te.track_uuid], f"END without BEGIN on track {te.track_uuid}"
                begin = stacks[te.track_uuid].pop()
                assert p.timestamp >= begin
            out_ids.update(te.flow_ids)
            in_ids.update(te.terminating_flow_ids)
    for uuid, td in descriptors.items():
        if td.parent_uuid:
            assert td.parent_uuid in descriptors, f"track {td.name} has an unknown parent"
    assert not any(stacks.values()), "unbalanced BEGIN/END"
    assert in_ids <= out_ids, "terminating flow ids without a source"
    return descriptors


def lanes_in_display_order(trace, kind="lane"):
    """Track names depth-first by sibling_order_rank, as the UI shows them."""
    descriptors = {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            descriptors[p.track_descriptor.uuid] = p.track_descriptor
    children = collections.defaultdict(list)
    for td in descriptors.values():
        children[td.parent_uuid].append(td)
    out = []

    def visit(parent):
        for td in sorted(children[parent], key=lambda t: t.sibling_order_rank):
            is_group = bool(children[td.uuid])
            is_counter = td.HasField("counter")
            if kind == "all" or (kind == "lane" and not is_group and not is_counter) \
                    or (kind == "counter" and is_counter):
                out.append(td.name)
            visit(td.uuid)

    visit(0)
    return out
