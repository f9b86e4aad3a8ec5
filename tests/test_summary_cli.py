"""Derived tracks in the written traces, and the summary / compare commands."""

from __future__ import annotations

import json

import pytest

from conftest import check_pftrace, decode_pftrace, event_name, lanes_in_display_order, \
    resolve_packets
from conftest import cli as run
from test_cli import copy_run

BUBBLES = " · bubbles"



@pytest.fixture
def matmul(tmp_path):
    return copy_run("matmul_add", tmp_path / "runs")


@pytest.fixture
def tiny(tmp_path):
    return copy_run("tiny_add", tmp_path / "tiny")


def test_pftrace_has_derived_tracks_right_under_their_lanes(matmul, tmp_path):
    out = tmp_path / "m.pftrace"
    r = run("to-perfetto", matmul, "-o", out, "-q")
    assert r.exit_code == 0, r.output
    pf = decode_pftrace(out)
    descriptors = check_pftrace(pf)
    lanes = lanes_in_display_order(pf)
    bubble = [k for k, n in enumerate(lanes) if n.endswith(BUBBLES)]
    assert len(bubble) == 33                    # every lane that ran a task
    for k in bubble:
        assert lanes[k - 1] == lanes[k][:-len(BUBBLES)]
    assert lanes[-1] == "critical path"         # the analysis group comes last
    counters = lanes_in_display_order(pf, "counter")
    # a kind's busy lanes are the row of its lanes' group; ready tasks are in the analysis
    assert {"AIC cores (cube) · busy lanes · AIC", "AIV cores (vector) · busy lanes · AIV",
            "ready but waiting · AIC", "ready but waiting · AIV"} <= set(counters)
    groups = {td.name for td in descriptors.values()}
    assert "tracecvt analysis" in groups
    # bubble slices are named by cause
    names = set()
    uuids = {uuid for uuid, td in descriptors.items() if td.name.endswith(BUBBLES)}
    for p, _, _, uuid, tables in resolve_packets(pf):
        if p.HasField("track_event") and uuid in uuids and p.track_event.type == 1:
            names.add(event_name(p, tables))
    assert names == {"wait predecessor", "wait schedule"}


def test_no_derived_leaves_them_out(matmul, tmp_path):
    for writer, name in (("to-perfetto", "a.pftrace"), ("to-chrome", "a.json")):
        with_d = tmp_path / ("d-" + name)
        without = tmp_path / ("n-" + name)
        assert run(writer, matmul, "-o", with_d, "-q").exit_code == 0
        assert run(writer, matmul, "-o", without, "-q", "--no-derived").exit_code == 0
        if writer == "to-perfetto":
            a = lanes_in_display_order(decode_pftrace(with_d), "all")
            b = lanes_in_display_order(decode_pftrace(without), "all")
            assert "critical path" in a and "tracecvt analysis" in a
            assert not any(n.endswith(BUBBLES) for n in b)
            assert "critical path" not in b and "tracecvt analysis" not in b
            own = [n for n in a if not n.endswith(BUBBLES)
                   and n not in ("critical path", "tracecvt analysis")
                   and "busy lanes" not in n and not n.startswith("ready but waiting")]
            # The core groups are written in neither: with the derived tracks each is the
            # row of its busy lanes ("AIC cores (cube) · busy lanes · AIC"), without them
            # it holds only threads (the Perfetto UI would show an empty row).
            assert own == b
            assert not {"AIC cores (cube)", "AIV cores (vector)"} & (set(a) | set(b))
        else:
            da = json.loads(with_d.read_bytes())
            db = json.loads(without.read_bytes())
            threads = lambda d: [e["args"]["name"] for e in d["traceEvents"]
                                 if e.get("ph") == "M" and e["name"] == "thread_name"]
            assert any(n.endswith(BUBBLES) for n in threads(da))
            assert not any(n.endswith(BUBBLES) for n in threads(db))
            xa = [e for e in da["traceEvents"] if e["ph"] == "X" and e.get("cat") == "bubble"]
            assert xa and not [e for e in db["traceEvents"] if e.get("cat") == "bubble"]


def test_summary_markdown_default_name_next_to_run(matmul):
    r = run("summary", matmul)
    assert r.exit_code == 0, r.output
    out = matmul.parent / (matmul.name + ".summary.md")
    assert str(out) in r.output
    md = out.read_text()
    for heading in ("# Profile report", "## Configuration", "## Bottleneck and root cause",
                    "## Top 3 opportunities", "## Ratings", "## Lanes", "## Critical path",
                    "## Time by leaf function", "## PyPTO's own figures"):
        assert heading in md, heading
    assert "| AIC | 16 of 24 |" in md and "74 of 74 cores match" in md
    assert "vs baseline" not in md
    # an existing summary is not overwritten without --force; one line, exit 2
    r = run("summary", matmul)
    assert r.exit_code == 2 and "already exists" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert run("summary", matmul, "--force").exit_code == 0


def test_summary_json_has_stable_keys_with_units(matmul, tmp_path):
    out = tmp_path / "s.json"
    r = run("summary", matmul, "--format", "json", "-o", out)
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert d["schema"] == "tracecvt-summary/3"
    for key in ("run", "configuration", "time_span", "bottleneck", "opportunities",
                "ratings", "bubbles", "critical_path", "time_by_label", "top_tasks",
                "pypto_check", "key_figures", "warnings"):
        assert key in d, key
    run_ = d["bubbles"]["run"]
    assert {"busy_us", "total_wait_us", "wait_schedule_us", "wait_predecessor_us",
            "utilization_pct", "bubble_rate_pct"} <= set(run_)
    lane = d["bubbles"]["lanes"][0]
    assert {"name", "kind", "tasks", "span_us", "busy_us", "total_wait_us", "utilization_pct",
            "bubble_rate_pct"} <= set(lane)
    assert len(d["opportunities"]) == 3
    assert all({"title", "metric", "estimated_gain_us"} <= set(o) for o in d["opportunities"])
    assert d["critical_path"]["length_us"] == pytest.approx(d["time_span"]["makespan_us"])
    # the same figures as the Markdown report
    md = run("summary", matmul, "-o", "-").output
    assert f"{d['bubbles']['run']['utilization_pct']:.1f} %" in md


def test_summary_with_baseline_and_compare(matmul, tiny, tmp_path):
    base_json = tmp_path / "tiny.json"
    assert run("summary", tiny, "--format", "json", "-o", base_json).exit_code == 0
    for baseline in (tiny, base_json):               # a run, or its JSON summary
        r = run("summary", matmul, "--baseline", baseline, "-o", "-")
        assert r.exit_code == 0, r.output
        assert "## vs baseline (output_" in r.output
        assert "| makespan | 10.259 µs | 23.101 µs | +12.842 µs (+125.2 %) ✘ |" in r.output
    r = run("summary", matmul, "--baseline", tiny, "--format", "json", "-o", "-")
    d = json.loads(r.output)
    rows = {x["figure"]: x for x in d["vs_baseline"]}
    assert rows["makespan"]["previous"] == 10.259 and rows["makespan"]["current"] == 23.101
    assert rows["makespan"]["improved"] is False
    r = run("compare", tiny, matmul)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("# Comparison: ") and "| makespan | 10.259 µs | 23.101 µs |" \
        in r.output
    r = run("compare", base_json, matmul, "--format", "json")
    c = json.loads(r.output)
    assert c["schema"] == "tracecvt-compare/3" and c["rows"]
    out = tmp_path / "cmp.html"
    assert run("compare", tiny, matmul, "--format", "html", "-o", out).exit_code == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="baseline"' in page


def test_summary_and_compare_errors_are_one_line(tmp_path, tiny, matmul):
    r = run("summary", tmp_path / "nope")
    assert r.exit_code == 2 and "no such file" in r.output
    assert len(r.output.strip().splitlines()) == 1
    both = tmp_path / "two"
    copy_run("tiny_add", both / "a")
    copy_run("matmul_add", both / "b")
    r = run("compare", both, matmul)
    assert r.exit_code == 2 and "2 runs found" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = run("summary", matmul, "--baseline", both)
    assert r.exit_code == 2 and "--baseline" in r.output
    r = run("summary", matmul, "--format", "pdf")
    assert r.exit_code == 2
    # several runs: one summary per run, into a directory
    out = tmp_path / "sums"
    r = run("summary", both, "-o", out, "--format", "html", "-q")
    assert r.exit_code == 0, r.output
    assert len(list(out.glob("*.summary.html"))) == 2


def test_write_summary_for_batch_jobs(matmul):
    import io
    from tracecvt.convert import read
    from tracecvt.summary import SUFFIX, write_summary
    (trace,) = read(matmul)
    buf = io.BytesIO()
    n = write_summary(trace, buf)
    assert SUFFIX == ".summary.md" and n["bytes"] == len(buf.getvalue()) > 0
    assert buf.getvalue().startswith(b"# Profile report")
