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


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(f"shared samples not found at {SAMPLES}")
    return SAMPLES
