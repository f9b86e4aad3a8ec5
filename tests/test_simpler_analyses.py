"""simpler runs through the analyses: tracecvt's figures against what the runtime's own tools
printed for every sample run (reference/critical_path_report.md, CPM_*.json.gz,
sched_overhead_analysis.txt), bubbles with the 'wait start' cause, the scheduler-loop idle
track, the critical path by task, and the summaries' simpler section.

The reference reports are parsed here by a small parser of the test's own; a figure agrees
when the tool's printed number is tracecvt's exact value rounded to the printed digits."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from tracecvt.analyses import add_derived, analyze
from tracecvt.analyses.bubbles import CAUSES, WAIT_START
from tracecvt.analyses.simpler import parse_critical_path_report, parse_sched_overhead
from tracecvt.model import PICKUP, TASK_ID
from tracecvt.readers import find_runs
from tracecvt.summary import render, summary_data

from conftest import PYPTO, REPO, SAMPLES, checkout_copy
from simpler_refparse import agrees, parse_cp, parse_loop, parse_so

SIMPLER = SAMPLES / "simpler"
RUNS = sorted(p.parent for p in SIMPLER.glob("*/outputs/*/chip_swimlane_records.json"))
IDS = [f"{p.parents[1].name}/{p.name.split('_')[1]}" for p in RUNS]


def reference(run: Path) -> Path:
    (ref,) = run.parents[1].glob(f"reference/{run.name}")
    return ref


WITH_CP = [r for r in RUNS if (reference(r) / "critical_path/critical_path_report.md").exists()]
WITH_SO = [r for r in RUNS if (reference(r) / "sched_overhead_analysis.txt").exists()]

_cache: dict[Path, tuple] = {}


def analysed(run: Path):
    if run not in _cache:
        (src,) = find_runs(run)
        trace = src.read()
        _cache[run] = (trace, analyze(trace))
    return _cache[run]


def check_all(ours: dict, ref: dict[str, str]) -> list[str]:
    assert ref, "the reference parser found nothing"
    return [f"{k}: reference {v}, tracecvt {ours.get(k)!r}" for k, v in ref.items()
            if k not in ours or not agrees(v, ours[k])]


def exact(figures) -> dict:
    return {f.key: f.value for f in figures}


# -- critical_path ---------------------------------------------------------------------------
@pytest.mark.parametrize("run", WITH_CP, ids=[IDS[RUNS.index(r)] for r in WITH_CP])
def test_critical_path_figures_equal_the_report(run):
    _, a = analysed(run)
    text = (reference(run) / "critical_path/critical_path_report.md").read_text()
    ref = parse_cp(text)
    assert {"tasks", "makespan_ms", "cpm_ms", "observed_tasks", "tiling_ticks"} <= set(ref)
    assert check_all(exact(a.simpler.figures()["critical_path"]), ref) == []


@pytest.mark.parametrize("run", WITH_CP, ids=[IDS[RUNS.index(r)] for r in WITH_CP])
def test_path_task_sets_equal_the_cpm_traces(run):
    """Static and observed path = the taskIds CPM_*.json leaves named (the rest are renamed
    '·(…)'); tracecvt's own critical path walks the same tasks in the same order, and its
    graph bound is the static CPM length."""
    trace, a = analysed(run)
    cpm = a.simpler.cpm
    for name, ours in (("observed", [t.task for t in cpm.path]), ("static", cpm.cpm_path)):
        ev = json.loads(gzip.decompress(
            (reference(run) / f"critical_path/CPM_{name}.json.gz").read_bytes()))
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        kept = {e["args"]["taskId"] for e in ev if e.get("pid") == 4 and e.get("ph") == "X"
                and "taskId" in (e.get("args") or {}) and not e["name"].startswith("\u00b7")}
        assert set(ours) == kept and len(ours) == len(kept), name
    cp = a.critical_path
    assert cp.computed
    path = [trace.slices[i].all_args[TASK_ID] for i in cp.tasks]
    assert path == [t.task for t in cpm.path]
    assert cp.length == cpm.makespan and cp.task_time == cpm.compute
    assert cp.graph_bound == cpm.cpm_len
    # the derived tracks mark every slice of a path task, and the flows between path tasks
    if not any(t.derived for t in trace.tracks):
        add_derived(trace, a)
    node = a.timeline.node
    flagged = {(node(f.src), node(f.dst)) for f in trace.flows
               if (f.args or {}).get("critical_path")}
    assert flagged == set(cp.edges)
    on_path = set(path)
    marked = [s for lane in a.timeline.lanes for s in (trace.slices[i] for i in lane.slices)
              if s.all_args[TASK_ID] in on_path]
    assert marked and all("critical_path_step" in s.args for s in marked)


# -- sched_overhead_analysis -----------------------------------------------------------------
@pytest.mark.parametrize("run", WITH_SO, ids=[IDS[RUNS.index(r)] for r in WITH_SO])
def test_sched_overhead_figures_equal_the_report(run):
    trace, a = analysed(run)
    text = (reference(run) / "sched_overhead_analysis.txt").read_text()
    figs = a.simpler.figures()
    level = trace.meta.extra["simpler"]["level"]
    if level == 1:
        # The tool prints Parts 1-4 from zero dispatch/finish times; tracecvt says why not.
        assert a.simpler.overhead is None and figs["sched_overhead"] == []
        assert any("no dispatch/finish" in n for n in a.simpler.notes)
    else:
        ref = parse_so(text)
        assert {"window_us", "has_overhead_pct", "verdict", "head P50", "tail total",
                "switch bound upper_us"} <= set(ref)
        assert check_all(exact(figs["sched_overhead"]), ref) == []
    loop = parse_loop(text)
    if level < 3:
        assert not loop and figs["sched_loop"] == []      # the tool stops at Part 5 too
        assert any("Part 5" in n for n in a.simpler.notes)
    else:
        assert check_all(exact(figs["sched_loop"]), loop) == []


@pytest.mark.parametrize("run", WITH_SO, ids=[IDS[RUNS.index(r)] for r in WITH_SO])
def test_summary_side_by_side_with_the_reports(run):
    """The project's own parsers (used for the summary's side-by-side table) read what the
    test's parser reads, and every figure the tools printed shows as agreeing."""
    trace, a = analysed(run)
    ref = reference(run)
    so = (ref / "sched_overhead_analysis.txt").read_text()
    oh, loop = parse_sched_overhead(so)
    if trace.meta.extra["simpler"]["level"] > 1:
        assert oh == parse_so(so)
    assert loop == parse_loop(so)
    reports = {"sched_overhead_analysis": so}
    cp_path = ref / "critical_path/critical_path_report.md"
    if cp_path.exists():
        reports["critical_path_report"] = cp_path.read_text()
        assert parse_critical_path_report(reports["critical_path_report"]) == \
            parse_cp(reports["critical_path_report"])
    a.simpler.compare_with(reports)
    d = a.simpler.to_dict()
    rows = [r for c in d["comparisons"].values() for r in c["rows"]]
    assert rows and all(r["agrees"] is not False for r in rows)
    figs = a.simpler.figures()
    for tool, c in d["comparisons"].items():
        values = {f.key: f.value for f in figs[tool]}
        for r in c["rows"]:            # printed differently only at an exact half-way value
            if r["agrees"] and r["tracecvt"] != r["reference"]:
                digits = r["decimals"]
                assert r.get("half_way") and abs(Fraction(repr(r["reference"])) - Fraction(
                    values[r["figure"]])) == Fraction(1, 2 * 10 ** digits), r
    md = render("md", summary_data(trace, a)).decode()
    assert "| figure | tracecvt | runtime's tool | |" in md and "✘" not in md
    agree = sum(c["agree"] for c in d["comparisons"].values())
    assert f"{agree} of {agree} figures the tools printed agree" in md
    a.simpler.comparisons.clear()


# -- bubbles, scheduler-loop idle --------------------------------------------------------------
@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_bubbles_tile_every_core_lane_with_wait_start(run):
    trace, a = analysed(run)
    tl, b = a.timeline, a.bubbles
    assert b.computed and b.cause_model == "task graph"
    slices = trace.slices
    parts: dict[int, list] = {}
    for li, s, e, cause, nxt, _ in b.gaps:
        assert s < e
        parts.setdefault(li, []).append((s, e, cause))
    has_pickup = any(PICKUP in slices[i].all_args for lane in tl.lanes for i in lane.slices)
    assert tl.has_pickup == has_pickup == (trace.meta.extra["simpler"]["level"] >= 2)
    for li, (lane, fig) in enumerate(zip(tl.lanes, b.lanes)):
        busy = sorted((slices[i].ts, slices[i].ts + slices[i].dur) for i in lane.slices)
        pieces = sorted([(s, e) for s, e in busy] + [(s, e) for s, e, _ in parts.get(li, [])])
        cur = tl.start
        for s, e in pieces:                    # busy and bubble parts tile [T0, last end]
            assert s == cur or s < cur and e <= cur or (s < cur and e > cur)
            cur = max(cur, e)
        assert cur == fig.last_end and fig.busy + fig.wait == fig.last_end - tl.start
        causes = [c for _, _, c in parts.get(li, [])]
        sums = [sum(e - s for s, e, c in parts.get(li, []) if c == k) for k in range(4)]
        assert (fig.wait_predecessor, fig.wait_schedule, fig.idle, fig.wait_start) == \
            tuple(sums) and sum(sums) == fig.wait
        if not has_pickup:
            assert 3 not in causes
    assert (b.run.wait_start > 0) == has_pickup
    tasks = {slices[i].all_args[TASK_ID] for lane in tl.lanes for i in lane.slices}
    for kind, (_, values) in b.ready_series.items():     # a task queues once, not per block
        assert max(values) <= len(tasks)
    ready = sum(values[-1] for _, values in b.ready_series.values())
    assert ready == 0
    if has_pickup:                              # dispatched-not-started is time after dispatch
        for li, s, e, cause, nxt, _ in b.gaps:
            if cause == 3:
                sl = slices[nxt]
                assert sl.ts - sl.all_args[PICKUP] <= s and e == sl.ts
    if not any(t.derived for t in trace.tracks):
        add_derived(trace, a)
    names = {s.name for s in slices if s.cat == "bubble"}
    assert (WAIT_START in names) == has_pickup and names <= set(CAUSES) | {"loop idle"}


@pytest.mark.parametrize("run", WITH_SO, ids=[IDS[RUNS.index(r)] for r in WITH_SO])
def test_loop_idle_lanes_sum_to_the_runtime_idle(run):
    trace, a = analysed(run)
    loop = parse_loop((reference(run) / "sched_overhead_analysis.txt").read_text())
    if not loop:
        assert not a.loop_idle
        return
    if not any(t.derived for t in trace.tracks):
        add_derived(trace, a)
    lanes = {t.index: t.name for t in trace.tracks if t.derived and t.name.endswith("loop idle")}
    for t in lanes.values():
        assert re.fullmatch(r"Sched_\d+ · loop idle", t)
    idle = sum(s.dur for s in trace.slices if s.track in lanes)
    assert agrees(loop["phase idle total_us"], Fraction(idle, 1000))
    per_thread = {lp.thread: lp.idle for lp in a.simpler.loops}
    for t, name in lanes.items():
        n = int(name.split("_")[1].split(" ")[0])
        assert sum(s.dur for s in trace.slices if s.track == t) == per_thread[n]


# -- summaries -----------------------------------------------------------------------------------
def test_summaries_carry_the_simpler_section():
    run = next(r for r in RUNS if "paged_attention_CaseVarSeq4" in str(r))
    trace, a = analysed(run)
    data = summary_data(trace, a)
    js = json.loads(render("json", data))
    s = js["simpler"]
    assert [q["question"] for q in s["questions"]] == [
        "Are the tasks too small?", "Is dispatch the bottleneck?", "Did the graph serialize?",
        "Is the kernel itself slow?"]
    assert all(q["answer"] in ("yes", "no", "partly") and q["figures"] for q in s["questions"])
    dispatch = s["questions"][1]
    assert dispatch["answer"] == "yes"          # SCHEDULER-BOUND: has_overhead 90.3 %
    assert dispatch["figures"]["has_overhead_pct"] == pytest.approx(90.3, abs=0.05)
    makespan = next(f for f in s["figures"]["critical_path"] if f["figure"] == "makespan_ms")
    assert makespan == {"figure": "makespan_ms", "value": 11.892, "unit": "ms", "decimals": 3}
    assert [f["function"] for f in s["functions"]] == ["QK", "SF", "PV", "UP"]
    assert js["bubbles"]["run"]["wait_start_us"] > 0
    exact_cp = s["exact_ns"]["critical_path"]
    assert exact_cp["makespan_ns"] == a.timeline.makespan
    assert exact_cp["observed_path"] == [trace.slices[i].all_args["task"]
                                         for i in a.critical_path.tasks]
    assert sum(t["idle_ns"] for t in s["exact_ns"]["sched_loop"]) == sum(
        g1 - g0 for gaps in a.loop_idle.values() for g0, g1 in gaps)
    rows = {trace.slices[i].all_args[TASK_ID] for lane in a.timeline.lanes for i in lane.slices}
    assert len(rows) == 64                     # tasks with AICore rows (+ 4 allocations)
    assert js["configuration"]["tasks"] == trace.meta.extra.get("tasks", len(rows))
    kf = js["key_figures"]                      # the vs-baseline rows of a simpler run
    assert kf["has_overhead_pct"] == pytest.approx(90.3, abs=0.05)
    assert kf["wait_start_us"] == js["bubbles"]["run"]["wait_start_us"]
    assert kf["scheduler_loop_ns"] == pytest.approx(4407, abs=0.5)   # the tool: 4407 ns
    md = render("md", data).decode()
    for text in ("## First questions (PyPTO 3.0 swimlane guide)", "Is dispatch the bottleneck?",
                 "has_overhead 90.3 %", "## The simpler runtime's own analyses",
                 "| wait start |", "Time by function"):
        assert text in md
    html = render("html", data, trace, a).decode()
    assert '<section id="simpler">' in html and "Did the graph serialize?" in html
    assert "wait start" in html


@pytest.mark.parametrize("name", ["tiny_add", "ffn_medium", "softmax_multiseq"])
def test_pypto_summaries_have_no_simpler_keys(name):
    for src in find_runs(PYPTO / name):
        trace = src.read()
        a = analyze(trace)
        js = json.loads(render("json", summary_data(trace, a)))
        assert "simpler" not in js and "wait_start_us" not in js["bubbles"]["run"]
        assert all(g[3] != 3 for g in a.bubbles.gaps)         # never a wait start
        assert not a.timeline.has_pickup and not a.loop_idle and not a.timeline.node_of
        md = render("md", summary_data(trace, a)).decode()
        assert "wait start" not in md and "First questions" not in md


def test_simpler_html_renders_in_chromium(tmp_path):
    from test_summary_html import BROWSER, chromium
    if BROWSER is None:
        pytest.skip("headless Chromium not installed (Debian package 'chromium')")
    run = next(r for r in RUNS if "paged_attention_CaseVarSeq4" in str(r))
    (src,) = find_runs(run)
    trace = src.read()
    a = analyze(trace)
    out = tmp_path / "simpler.html"
    out.write_bytes(render("html", summary_data(trace, a), trace, a))
    r = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l]
    assert not [l for l in console if "Uncaught" in l or "Error" in l], console
    dom = r.stdout
    assert 'data-rendered="ok"' in dom and '<section id="simpler"' in dom
    util = dom[dom.index('id="util-bars"'):]
    util = util[:util.index("</svg>")]
    assert util.count('class="lane-bar"') == 16 and 'class="c-wait-start"' in util
    png = tmp_path / "simpler.png"
    r = chromium(tmp_path, f"--screenshot={png}", "--window-size=1100,3000",
                 "--hide-scrollbars", out.as_uri())
    assert r.returncode == 0 and png.stat().st_size > 50_000


def test_the_runtime_tools_reports_beside_the_records_are_compared(tmp_path):
    """A user's run folder that keeps critical_path_report.md (critical_path writes it there)
    and the saved sched_overhead_analysis output: the summary compares every figure with
    them, and they all agree (the bundled sample is such a folder)."""
    from tracecvt.cli import main as cli_main
    from click.testing import CliRunner
    run = checkout_copy(REPO / "samples" / "simpler" / "a2a3sim_paged_attention",
                        tmp_path / "a2a3sim_paged_attention")
    res = CliRunner().invoke(cli_main, ["summary", str(run), "--format", "json", "-o", "-"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    comparisons = doc["simpler"]["comparisons"]
    assert set(comparisons) == {"critical_path", "sched_overhead", "sched_loop"}
    for tool, c in comparisons.items():
        assert c["compared"] > 20 and c["agree"] == c["compared"], (tool, c)
    # Without them the figures stand alone (nothing to compare with).
    (src,) = find_runs(run)
    assert str(run / "sched_overhead_analysis.txt") in src.read().meta.source_files
    bare = tmp_path / "run"
    shutil.copytree(run, bare, ignore=shutil.ignore_patterns("critical_path_report.md",
                                                             "sched_overhead_analysis.txt"))
    (src,) = find_runs(bare)
    trace = src.read()
    assert "tool_reports" not in trace.meta.extra["simpler"]
    assert "comparisons" not in analyze(trace).simpler.to_dict()
