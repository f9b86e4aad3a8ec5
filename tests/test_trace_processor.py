"""Every sample run, both writers, derived tracks included, loaded by Perfetto's own
trace_processor (../shared/tools/trace_processor, through the ``perfetto`` package).

For each trace: no ``error`` or ``data_loss`` stat; the slice, flow and counter-sample counts
equal the model's; every flow joins the model's predecessor (``slice_out``) to its successor
(``slice_in``).  What "the model's count" means:

* slices: the model's slices plus its instants (both writers write an instant as a
  zero-duration slice, which trace_processor keeps in its ``slice`` table);
* counter samples: one ``counter`` row per model sample, and in the .pftrace the same
  (time, value) pairs (samples there may ride on slice events, ``SequenceWriter.ride``;
  a counter track may be named there with its group's name in front, so names are not
  compared);
* flows: the model's flows that a trace can draw in their true direction
  (``writers.flows.drawable``): trace_processor binds a flow's ends in time order, so a
  dependency whose successor starts before its predecessor can only be drawn reversed; the
  writers leave those out and say so (``flows_not_drawn`` and a warning).  Every other flow
  is drawn, from its source to its destination.

One trace_processor per trace; they are started a few at a time in threads (each start waits
about a second for its server) and queried in one module-scoped pass.  A new family's
samples are tested by adding its runs to ``PLACES``.
"""

from __future__ import annotations

import collections
import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tracecvt.convert import add_derived_tracks
from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.flows import drawable
from tracecvt.writers.perfetto import time_origin, write_perfetto

from conftest import FIXTURES, SAMPLES
from tp_helper import TP_BIN, rows, trace_processor

# (label, where, format): every run ``find_runs`` finds there.  Add a family's samples here.
PLACES = [
    ("pypto", SAMPLES / "pypto", None),
    ("pypto-raw", SAMPLES / "pypto", "pypto-raw"),
    ("pypto-npu", FIXTURES / "pypto_npu", None),
    ("pypto-raw-fixture", FIXTURES / "pypto_raw", None),
    ("msprof", SAMPLES / "msprof", None),
    # the database exports beside the text ones (read when asked for: the text holds more)
    ("msprof-db", SAMPLES / "msprof" / "cannbot-ascendc-vs-pypto", "msprof-db"),
    ("ncu", SAMPLES / "ncu", None),
    ("simpler", SAMPLES / "simpler", None),      # the chip swimlanes (PyPTO 3.0)
]
PARALLEL = 6          # trace_processors started at once (each waits ~1 s for its server)
WRITERS = ("perfetto", "chrome")


def _runs() -> list:
    out = []
    for label, where, fmt in PLACES:
        if not where.is_dir():
            continue
        for src in find_runs(where, fmt if fmt == "msprof-db" else None):
            if fmt == "pypto-raw":
                if "swim" not in src.files:
                    continue
                src.variant = fmt
            out.append((f"{label}:{src.name}", src))
    ids = collections.Counter(i for i, _ in out)
    seen: collections.Counter = collections.Counter()
    unique = []
    for i, src in out:
        seen[i] += 1
        unique.append((f"{i}#{seen[i]}" if ids[i] > 1 else i, src))
    return unique


RUNS = _runs()


def _model_flows(trace, writer: str, base: int) -> collections.Counter:
    slices = trace.slices
    out = collections.Counter()
    for f in trace.flows:
        a, b = slices[f.src], slices[f.dst]
        if drawable(a, b, writer, f.name):
            out[(a.ts - base, a.dur, a.name, b.ts - base, b.dur, b.name)] += 1
    return out


QUERIES = {
    "bad_stats": "select name, idx, severity, value from stats "
                 "where value > 0 and severity in ('error', 'data_loss')",
    "slices": "select count(*) as n, min(ts) as lo from slice",
    "counters": "select count(*) as n from counter",
    "samples": "select ts, value from counter",
    "args_per_slice": "select n, count(*) as slices from (select count(a.id) as n from slice s "
                      "left join args a using (arg_set_id) group by s.id) group by n",
    "flows": "select so.ts as sts, so.dur as sdur, so.name as sname, si.ts as dts, "
             "si.dur as ddur, si.name as dname from flow f "
             "join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in",
}


def _arg_rows(s, lines: dict) -> int:
    """The args rows of a slice: one per arg, but one per declared line (model.ARG_LINES)
    of its shared args, however many of the line's args it has."""
    shared = {k for k, v in (s.shared_args or {}).items() if v is not None}
    made = {ln for ln, names in lines.items() if ln not in shared and shared & set(names)}
    folded = {n for ln in made for n in lines[ln]}
    own = {k for k, v in (s.args or {}).items() if v is not None}
    return len((shared - folded) | made | own)


def _load(path: Path) -> dict:
    with trace_processor(path) as tp:
        return {k: rows(tp, q) for k, q in QUERIES.items()}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """{(run id, writer): (model figures, trace_processor figures)} for every run."""
    if not os.access(TP_BIN, os.X_OK):
        pytest.skip(f"trace_processor_shell not found at {TP_BIN}")
    pytest.importorskip("perfetto.trace_processor")
    tmp = tmp_path_factory.mktemp("tp")
    jobs = {}
    models = {}
    for k, (rid, src) in enumerate(RUNS):
        trace = src.read()
        add_derived_tracks(trace)
        span = [s.ts for s in trace.slices] + [i.ts for i in trace.instants]
        base = min(span) if span else 0
        origin = time_origin(trace)             # the .pftrace's time 0
        samples = collections.Counter((t - origin, float(v))
                                      for c in trace.counters for t, v in zip(c.ts, c.values))
        for writer in WRITERS:
            path = tmp / f"{k}.{'pftrace' if writer == 'perfetto' else 'json'}"
            with open(path, "wb") as f:
                counts = (write_perfetto if writer == "perfetto" else write_chrome)(trace, f)
            models[(rid, writer)] = {
                "slices": len(trace.slices) + len(trace.instants), "base": base,
                "counters": sum(len(c) for c in trace.counters),
                "flows": _model_flows(trace, writer, base), "counts": counts,
                "flows_total": len(trace.flows),
                "samples": samples,
                "args_per_slice": collections.Counter(
                    [_arg_rows(s, trace.meta.extra.get("arg_lines", {})) for s in trace.slices]
                    + [sum(v is not None for v in (i.args or {}).values())
                       for i in trace.instants])}
            jobs[(rid, writer)] = path
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = dict(zip(jobs, pool.map(_load, jobs.values())))
    return {key: (models[key], results[key]) for key in jobs}


CASES = [pytest.param(rid, w, id=f"{rid}-{w}") for rid, _ in RUNS for w in WRITERS]


@pytest.mark.parametrize("rid, writer", CASES)
def test_loads_cleanly_with_the_models_counts(loaded, rid, writer):
    model, tp = loaded[(rid, writer)]
    assert tp["bad_stats"] == []
    assert tp["slices"][0]["n"] == model["slices"]
    assert tp["counters"][0]["n"] == model["counters"]
    assert len(tp["flows"]) == sum(model["flows"].values())
    # the flows left out are exactly those the writer counts (and warns about)
    assert model["counts"]["flows_not_drawn"] == model["flows_total"] - len(tp["flows"])


@pytest.mark.parametrize("rid, writer", CASES)
def test_every_flow_joins_predecessor_to_successor(loaded, rid, writer):
    """Flow ends by (start, duration, name) of the slices, relative to the first slice:
    the .pftrace keeps the model's ns, the Chrome JSON counts from the trace start."""
    model, tp = loaded[(rid, writer)]
    lo = tp["slices"][0]["lo"]
    got = collections.Counter((r["sts"] - lo, r["sdur"], r["sname"], r["dts"] - lo, r["ddur"],
                               r["dname"]) for r in tp["flows"])
    assert got == model["flows"]


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_counter_samples_are_the_models(loaded, rid):
    """Every sample at its time with its value, whether it has a packet of its own or rides
    on a slice event as an extra counter value."""
    model, tp = loaded[(rid, "perfetto")]
    got = collections.Counter((r["ts"], r["value"]) for r in tp["samples"])
    assert got == model["samples"]


def test_every_family_is_tested():
    kinds = {(src.format, src.variant) for _, src in RUNS}
    assert {("pypto", "merged"), ("pypto", "pypto-raw"), ("pypto", "raw"), ("pypto", "aicpu"),
            ("msprof", "msprof-app"), ("msprof", "msprof-op"), ("msprof", "msprof-sim"),
            ("msprof", "torch-npu"), ("ncu", "ncu-rep"), ("ncu", "csv")} <= kinds


@pytest.mark.parametrize("rid", [rid for rid, _ in RUNS])
def test_pftrace_args_are_one_row_per_model_arg(loaded, rid):
    """Trace Processor stores every leaf of a nested debug annotation as an args row of its
    own; the .pftrace writes nested values (operand lists, statistics) as one string each,
    so a slice has exactly one args row per model arg, except that a declared line of its
    shared args (model.ARG_LINES) is one row (PyPTO tasks: 5 rows, not 37; the reader no
    longer repeats what the name and category say: rootIndex, psgId, fake,
    input_bytes/output_bytes, 14 rows with them; a call's label, three hashes and execution
    statistics are one line, 9 rows without it)."""
    model, tp = loaded[(rid, "perfetto")]
    got = collections.Counter({r["n"]: r["slices"] for r in tp["args_per_slice"]})
    assert got == model["args_per_slice"]
