"""Shared test helpers.  The real samples live in ../shared/samples (CI has them there too)."""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
import zlib
from pathlib import Path

import pytest

# Tests send Ctrl-C (SIGINT) to the processes they start.  A suite started in the background
# of a non-interactive shell (``.ci/run &``, some CI runners) inherits SIGINT ignored, and so
# would every process it starts: give them Python's own handler back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples"
# Real outputs other people committed from their own machines (PROVENANCE.md there).
FIELD = SHARED / "field-samples"
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
    """Counts of what a decoded trace holds: slices, instants, counter samples (their own
    TYPE_COUNTER events and the extra counter values riding on other events), flows."""
    types = collections.Counter()
    flows_out = flows_in = extra = 0
    for p in trace.packet:
        if p.HasField("track_event"):
            te = p.track_event
            types[te.type] += 1
            flows_out += len(te.flow_ids)
            flows_in += len(te.terminating_flow_ids)
            extra += len(te.extra_counter_values) + len(te.extra_double_counter_values)
    return {"begin": types[1], "end": types[2], "instant": types[3],
            "counter": types[4] + extra,
            "flow_ids": flows_out, "terminating_flow_ids": flows_in,
            "tracks": sum(1 for p in trace.packet if p.HasField("track_descriptor")
                          and p.track_descriptor.uuid)}     # uuid 0: the root, no track


# -- the checkout's own folders, as a fresh clone has them ---------------------------------------
# A user's commands leave outputs in the checkout: the README's first command writes
# samples/pypto/ffn_medium/output_….pftrace, and to-chrome, to-model and summary write
# `<run>.json`, `<run>.tcmodel` and `<run>.summary.*` next to each run (a .tcmodel is itself a
# run that `info` and `summary` then find).  Tests never read samples/ (or any other folder of
# the checkout that holds runs) in place: they read a copy made by ``checkout_copy``.

def checkout_files(folder: Path, repo: Path = REPO) -> list[Path]:
    """The files under ``folder`` (in the checkout ``repo``) that a fresh clone has: those git
    tracks.  Where ``repo`` is not a git work tree (an unpacked source archive) or git is
    missing: every file but tracecvt's own outputs (``is_tracecvt_output``)."""
    folder = Path(folder)
    try:
        rel = folder.resolve().relative_to(Path(repo).resolve())
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--", str(rel)],
                             capture_output=True, check=True, timeout=60).stdout
        inside = subprocess.run(["git", "-C", str(repo), "rev-parse", "--show-toplevel"],
                                capture_output=True, check=True, text=True,
                                timeout=60).stdout.strip()
    except (OSError, ValueError, subprocess.SubprocessError):
        out, inside = None, ""
    if out is not None and Path(inside).resolve() == Path(repo).resolve():
        names = [n for n in out.decode().split("\0") if n]
        return sorted(Path(repo) / n for n in names)
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and not is_tracecvt_output(p))


def is_tracecvt_output(path: Path) -> bool:
    """A file tracecvt writes next to a run: a Perfetto trace (``.pftrace``, ``.pftrace.gz``)
    or a model file (``.tcmodel``), by name; by content, a summary (JSON with the
    ``tracecvt-summary/`` schema, Markdown or HTML that names tracecvt as its maker) or a
    Chrome JSON trace whose first event names tracecvt as its producer."""
    name = path.name
    if name.endswith((".pftrace", ".pftrace.gz", ".tcmodel")):
        return True
    if not name.endswith((".json", ".json.gz", ".md", ".html")):
        return False
    head = path.read_bytes()[:4096]
    if name.endswith(".gz"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
        except zlib.error:
            return False
    return any(marker in head for marker in (
        b'"schema": "tracecvt-summary/', b'"producer":"tracecvt ', b"made by tracecvt ",
        b"<title>tracecvt "))


def checkout_copy(folder: Path, dest: Path, repo: Path = REPO) -> Path:
    """A writable copy of ``folder`` of the checkout as a fresh clone has it
    (``checkout_files``), at ``dest``; returns ``dest``."""
    folder = Path(folder)
    for f in checkout_files(folder, repo):
        target = dest / f.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        os.chmod(target, 0o644)
    return dest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ui: opens traces in the real Perfetto UI (headless Chromium, about a "
        "minute); deselect with -m 'not ui' while developing")
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
    from tracecvt.validate import validate_path
    for trace in sorted([*Path(tmp).rglob("*.pftrace"), *Path(tmp).rglob("*.pftrace.gz")]):
        if trace.is_file() and not trace.is_symlink():
            report = validate_path(trace)
            assert report.ok, report.text()


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(f"shared samples not found at {SAMPLES}")
    return SAMPLES


BOOTTIME = 6          # BuiltinClock: Trace Processor's default trace clock


def resolve_packets(trace):
    """Yields every packet of a decoded trace as ``(packet, seq_id, ts, track_uuid, tables)``, with
    sequence defaults and clocks resolved the way Trace Processor resolves them:

    * ``SEQ_INCREMENTAL_STATE_CLEARED`` (or ``incremental_state_cleared``) starts a new
      generation of the sequence's state: no interned entries, no ``TracePacketDefaults``
      (proto_trace_reader.cc handles the flag first, then the packet's defaults, then its
      interned data);
    * a packet's clock is its ``timestamp_clock_id``, else the sequence defaults'
      ``timestamp_clock_id``, else the trace clock (BOOTTIME);
    * clock ids 64-127 are scoped to the sequence; a ``ClockSnapshot`` registers each clock
      with its unit and ``is_incremental`` and sets the clock's last value to the snapshot's
      timestamp.  On an incremental clock a packet's timestamp is a delta: the clock's last
      value (ns) advances by ``timestamp * unit_multiplier_ns`` (ClockSynchronizer's
      ``ClockDomain::ToNs``), and the result maps to BOOTTIME through a snapshot holding both
      clocks: ``boottime_at_snapshot + (value - clock_at_snapshot)``;
    * an event's track is its ``track_uuid``, else the sequence defaults'
      ``track_event_defaults.track_uuid``.

    ``ts`` is None for packets without a timestamp, ``track_uuid`` None for packets without a
    TrackEvent; ``tables`` maps an InternedData field number to the sequence's current
    ``{iid: entry}`` as the packet sees it (its own entries included; the dict grows as the
    generator goes on).
    """
    seqs = {}
    clocks = {}          # clock key -> [incremental, unit ns, last ns, {other key: (mine, theirs)}]
    for p in trace.packet:
        seq_id = p.trusted_packet_sequence_id
        st = seqs.get(seq_id)
        if st is None or p.sequence_flags & 1 or p.incremental_state_cleared:
            st = seqs[seq_id] = {"tables": {}, "defaults": None}
        if p.HasField("trace_packet_defaults"):
            st["defaults"] = p.trace_packet_defaults
        tables = st["tables"]
        if p.HasField("interned_data"):
            for fd, entries in p.interned_data.ListFields():
                tables.setdefault(fd.number, {}).update((e.iid, e) for e in entries)
        defaults = st["defaults"]

        def key(clock_id):
            return (seq_id, clock_id) if 64 <= clock_id < 128 else clock_id

        if p.HasField("clock_snapshot"):
            snap = [(key(c.clock_id), c.timestamp * (c.unit_multiplier_ns or 1), c)
                    for c in p.clock_snapshot.clocks]
            for k, ns, c in snap:
                clock = clocks.setdefault(k, [c.is_incremental, c.unit_multiplier_ns or 1, 0, {}])
                clock[2] = ns
                for k2, ns2, _ in snap:
                    if k2 != k:
                        clock[3][k2] = (ns, ns2)
            yield p, seq_id, None, None, tables
            continue
        ts = None
        if p.HasField("timestamp"):
            clock_id = p.timestamp_clock_id or (defaults.timestamp_clock_id if defaults else 0)
            ts = p.timestamp
            if clock_id and clock_id != BOOTTIME:
                incremental, unit, last, links = clocks[key(clock_id)]
                ns = ts * unit
                if incremental:
                    ns = clocks[key(clock_id)][2] = last + ns
                mine, boot = links[BOOTTIME]
                ts = boot + (ns - mine)
        uuid = None
        if p.HasField("track_event"):
            te = p.track_event
            if te.HasField("track_uuid"):
                uuid = te.track_uuid
            elif defaults is not None and defaults.track_event_defaults.HasField("track_uuid"):
                uuid = defaults.track_event_defaults.track_uuid
        yield p, seq_id, ts, uuid, tables


def event_name(packet, tables) -> str:
    """A TrackEvent's name, inline or interned on its sequence."""
    te = packet.track_event
    if te.HasField("name_iid"):
        return tables[2][te.name_iid].name
    return te.name


def check_pftrace(trace) -> dict:
    """Structural checks every written trace must pass; returns per-track info.

    * the first packet of every sequence clears incremental state; every packet defining or
      using interned ids carries SEQ_NEEDS_INCREMENTAL_STATE, and every iid is defined on its
      sequence at or before its use;
    * every track_uuid used (explicit or from the sequence's TrackEventDefaults) has a
      descriptor, and every parent exists;
    * BEGIN/END are balanced per track and END never precedes its BEGIN (timestamps resolved
      through the sequence clocks, see ``resolve_packets``);
    * every terminating flow id has a matching outgoing flow id;
    * and ``tracecvt validate`` (converter/validate/) finds no problem in it.
    """
    from tracecvt.validate import validate_bytes
    report = validate_bytes(trace.SerializeToString())
    assert report.ok, report.text()
    descriptors = {}
    first = trace.packet[0]
    assert first.sequence_flags & 1, "first packet must clear incremental state"
    started = set()
    stacks = collections.defaultdict(list)
    out_ids, in_ids = set(), set()
    for p, seq_id, ts, uuid, tables in resolve_packets(trace):
        if seq_id not in started:
            assert p.sequence_flags & 1, f"sequence {seq_id} does not start by clearing its state"
            started.add(seq_id)
        names = tables.get(2, {})
        cats = tables.get(1, {})
        args = tables.get(3, {})
        strs = tables.get(29, {})
        if p.HasField("interned_data"):
            assert p.sequence_flags & 2
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            assert td.uuid not in descriptors, f"duplicate track uuid {td.uuid}"
            descriptors[td.uuid] = td
        if p.HasField("track_event"):
            te = p.track_event
            assert uuid in descriptors, f"event on undeclared track {uuid}"
            uses = te.name_iid or te.category_iids or te.debug_annotations
            if uses:
                assert p.sequence_flags & 2, "packet uses iids without SEQ_NEEDS_INCREMENTAL_STATE"
            if te.name_iid:
                assert te.name_iid in names, f"unresolved name iid {te.name_iid}"
            for c in te.category_iids:
                assert c in cats
            todo = list(te.debug_annotations)
            while todo:            # nested dict entries and array values too
                a = todo.pop()
                if a.name_iid:
                    assert a.name_iid in args, f"unresolved arg name iid {a.name_iid}"
                if a.string_value_iid:
                    assert a.string_value_iid in strs
                todo.extend(a.dict_entries)
                todo.extend(a.array_values)
            if te.type == 1:
                stacks[uuid].append(ts)
            elif te.type == 2:
                assert stacks[uuid], f"END without BEGIN on track {uuid}"
                begin = stacks[uuid].pop()
                assert ts >= begin
            out_ids.update(te.flow_ids)
            in_ids.update(te.terminating_flow_ids)
    for uuid, td in descriptors.items():
        if td.parent_uuid:
            assert td.parent_uuid in descriptors, f"track {td.name} has an unknown parent"
    assert not any(stacks.values()), "unbalanced BEGIN/END"
    assert in_ids <= out_ids, "terminating flow ids without a source"
    root = descriptors.pop(0, None)     # the root descriptor: trace-wide settings, no track
    assert root is None or (not root.parent_uuid and not root.name)
    return descriptors


def lanes_in_display_order(trace, kind="lane"):
    """Track names depth-first by sibling_order_rank, as the UI shows them."""
    descriptors = {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            descriptors[p.track_descriptor.uuid] = p.track_descriptor
    children = collections.defaultdict(list)
    for td in descriptors.values():
        if td.uuid:                     # uuid 0: the root descriptor (trace-wide settings)
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


def cli(*args):
    """Run the tracecvt command line in process (``CliRunner``; exceptions propagate)."""
    from click.testing import CliRunner

    from tracecvt.cli import main
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
