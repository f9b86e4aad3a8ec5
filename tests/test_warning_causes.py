"""Warnings that share a cause are one line on the terminal, in every family; `info` and the
summary hold each in full (issue 23, item 11: the first conversion of the bundled ffn_medium
printed four long warnings about PyPTO's HUB seqNo quirk)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, SAMPLES, cli

FFN_MEDIUM = REPO / "samples" / "pypto" / "ffn_medium"
SIMPLER_L1 = SAMPLES / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L1"
HUB_QUIRK = "PyPTO's HUB seqNo quirk"


def _warning_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("tracecvt: warning:")]


def _info(path: Path) -> dict:
    r = cli("info", path, "--json", "-q")
    assert r.exit_code == 0, r.output
    (run,) = json.loads(r.stdout)
    return run


def test_ffn_medium_first_conversion_prints_one_line_for_the_hub_quirk(tmp_path):
    for command, out in (("to-perfetto", tmp_path / "x.pftrace"),
                         ("to-chrome", tmp_path / "x.json")):
        r = cli(command, FFN_MEDIUM, "-o", out)
        assert r.exit_code == 0, r.output
        (line,) = _warning_lines(r.output)
        assert HUB_QUIRK in line and "4 warnings" in line and "tracecvt info" in line
    # In full in `info`: the reader's three, and what each writer does not draw, under the
    # one cause.
    run = _info(FFN_MEDIUM)
    (group,) = run["causes"]
    assert group["cause"].startswith(HUB_QUIRK)
    shown = [run["warnings"][i] for i in group["warnings"]]
    assert len(shown) == len(run["warnings"]) == 5
    assert any("negative wait times on 24 cores" in w for w in shown)
    assert any("160 of 1024 dependencies re-bound" in w for w in shown)
    assert any("160 of 1024 dependencies cannot be bound" in w for w in shown)
    assert any(w.startswith("a .pftrace: 160 of 1024") for w in shown)
    assert any(w.startswith("Chrome JSON: 96 of 1024") for w in shown)
    # In full in the summary too (the reader's warnings).
    r = cli("summary", FFN_MEDIUM, "--format", "json", "-o", "-")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert sum(w in summary["warnings"] for w in shown) == 3


def test_the_rule_holds_in_other_families_and_through_a_model_file(tmp_path):
    """simpler at level 1: two warnings say what the level did not record, one cause."""
    r = cli("to-perfetto", SIMPLER_L1, "-o", tmp_path / "l1.pftrace")
    assert r.exit_code == 0, r.output
    (line,) = _warning_lines(r.output)
    assert "chip swimlane level 1 of 4" in line and "2 warnings" in line
    # A .tcmodel keeps each warning's cause: converting it prints the same one line.
    model = tmp_path / "ffn.tcmodel"
    assert cli("to-model", FFN_MEDIUM, "-o", model, "-q").exit_code == 0
    r = cli("to-perfetto", model, "-o", tmp_path / "again.pftrace")
    assert r.exit_code == 0, r.output
    (line,) = _warning_lines(r.output)
    assert HUB_QUIRK in line and "4 warnings" in line


def test_warnings_of_different_causes_stay_lines_of_their_own(tmp_path):
    """The field sample's warnings have two causes (task-graph rows without a record;
    dependencies the times do not show as causal): Chrome JSON draws those dependencies,
    two full lines; a .pftrace leaves them out, which shares their cause: still two lines."""
    field = SAMPLES.parent / "field-samples" / "pypto" / "hicann-pypto-ut"
    r = cli("to-chrome", field, "-o", tmp_path / "f.json")
    assert r.exit_code == 0, r.output
    lines = _warning_lines(r.output)
    assert len(lines) == 2 and not any("warnings (in full" in w for w in lines)
    r = cli("to-perfetto", field, "-o", tmp_path / "f.pftrace")
    assert r.exit_code == 0, r.output
    first, second = _warning_lines(r.output)
    assert first == lines[0] and "not causal as recorded" in second \
        and "2 warnings (in full" in second


MSPROF = SAMPLES / "msprof"
LEVEL2 = MSPROF / "msinsight" / "test" / "data" / "pytorch" / "text" / "level2"
OPPROF = (MSPROF / "tile-ai-tilelang-ascend" / "custom" / "sigmoid" / "perf_tuning"
          / "msprof_output_iter1" / "OPPROF_20260803153518_MNJZZROZPPYUQFTT")


def test_msprof_flows_without_a_partner_in_each_rank_of_one_run_are_one_line(tmp_path):
    """level2 is one run of two ranks; each rank's trace_view.json has 5 flow ends without a
    partner: one terminal line for the cause, both warnings in full in info."""
    r = cli("to-chrome", LEVEL2, "-o", tmp_path / "l2.json")
    assert r.exit_code == 0, r.output
    (line,) = [w for w in _warning_lines(r.output) if "without a partner" in w]
    assert line.startswith("tracecvt: warning: level2: flow events the export holds without "
                           "a partner") and "2 warnings" in line, line
    run = _info(LEVEL2)
    (group,) = [g for g in run["causes"] if "without a partner" in g["cause"]]
    shown = [run["warnings"][i] for i in group["warnings"]]
    assert [w.split("/ASCEND_PROFILER_OUTPUT/")[0].rsplit("/", 1)[1] for w in shown] == [
        "rank0_ascend_pt", "rank1_ascend_pt"]
    assert all("5 flow ends without a partner" in w for w in shown)


def test_msprof_op_excerpts_cut_short_in_one_run_are_one_line(tmp_path):
    """Four metric CSVs of one OPPROF run are excerpts (9 of 1536 block rows each)."""
    r = cli("to-perfetto", OPPROF, "-o", tmp_path / "op.pftrace")
    assert r.exit_code == 0, r.output
    (line,) = _warning_lines(r.output)
    assert "files cut short" in line and "4 warnings" in line, line
    run = _info(OPPROF)
    (group,) = run["causes"]
    shown = sorted(run["warnings"][i].split(": ")[0].rsplit("/", 1)[1] for i in group["warnings"])
    assert shown == ["ArithmeticUtilization.HEAD_EXCERPT.csv", "L2Cache.HEAD_EXCERPT.csv",
                     "Memory.HEAD_EXCERPT.csv", "PipeUtilization.HEAD_EXCERPT.csv"]
    assert all("9 of 1536 block rows" in run["warnings"][i] for i in group["warnings"])
