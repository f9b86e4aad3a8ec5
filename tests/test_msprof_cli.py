"""The command line on the whole msprof sample tree: every run found and converted, every
sample file accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracecvt.cli import main
from tracecvt.readers import find_runs

from conftest import SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

MS = SAMPLES / "msprof"

EXPECTED = {   # run root (relative) -> variant
    "bigorange1024-ascendc/docs/perf/round_003_pke_decrypt_1launch": "msprof-app",
    "bigorange1024-ascendc/docs/perf/round_003_pke_decrypt_1launch/OpBasicInfo.csv": "msprof-op",
    "msinsight/server/src/test/test_data": "torch-npu",
    "msinsight/server/src/test/test_data/base_info.bin": "msprof-op",
    "msinsight/server/src/test/test_data/load_data.bin": "msprof-op",
    "msinsight/server/src/test/test_data/memory_data.bin": "msprof-op",
    "msinsight/server/src/test/test_data/roofline_data.bin": "msprof-op",
    "msinsight/server/src/test/test_data/test_bin_mix": "msprof-op",
    "msinsight/test/data/pytorch/db/level0/rank0_ascend_pt": "msprof-db",     # ascend_db
    "msinsight/test/data/pytorch/text/level0/rank0_ascend_pt": "torch-npu",
    "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt": "torch-npu",
    "msinsight/test/data/pytorch/text/level2": "torch-npu",
    "msopprof/test/ut/resources/op_profiling/device310P": "msprof-op",
    "msopprof/test/ut/resources/op_profiling/device910B": "msprof-op",
    "msopprof/test/ut/resources/op_profiling/deviceA5": "msprof-op",
    "msprof-analyze/msprof_analyze/test/resource": "torch-npu",
    "msprof-analyze/msprof_analyze/test/resource/advisor/cluster_analysis_output": "msprof-stats",
    "msprof-analyze/msprof_analyze/test/ut/advisor/advisor_backend/compute_advice": "torch-npu",
    "msprof-analyze/msprof_analyze/test/ut/advisor/compute_advice/data": "torch-npu",
    "msprof-analyze/msprof_analyze/test/ut/advisor/timeline_advice": "torch-npu",
    "tile-ai-tilelang-ascend/custom/sigmoid/Sigmoid/trace_data": "msprof-op",
    "tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/"
    "OPPROF_20260803153518_MNJZZROZPPYUQFTT": "msprof-op",
    "tile-ai-tilelang-ascend/examples/cann-bench/foreach_norm/output/"
    "OPPROF_20260813152110_XFIGEGBXQDWNDDYG": "msprof-sim",
    "zouzias-pto-isa-mirror/tests/npu/a5/src/st/testcase/qk_attn_incore5/profiling":
        "msprof-sim",
}
EXPECTED.update({str(p.relative_to(MS)): "msprof-app"
                 for p in MS.glob("cannbot-ascendc-vs-pypto/operators/*/reports/raw/*/PROF_*")})


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def runs():
    return find_runs(MS)


def test_every_layout_found(runs):
    got = {str(Path(r.root).relative_to(MS)): r.variant for r in runs}
    assert got == EXPECTED
    assert all(r.format == ("msprof-db" if r.variant == "msprof-db" else "msprof") for r in runs)
    assert len({r.name for r in runs}) == len(runs)


def test_every_sample_file_is_in_some_run(runs):
    """Converted (source_files) or listed with a reason (msprof_ignored_files)."""
    seen = set()
    for r in runs:
        trace = r.read()
        seen.update(trace.meta.source_files)
        seen.update(trace.meta.extra.get("msprof_ignored_files", {}))
    every = {str(p) for p in MS.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"}
    assert len(every) == 141
    assert every - seen == set()


def test_info_lists_every_run():
    r = run("info", MS, "--json", "-q")
    assert r.exit_code == 0, r.output
    reports = json.loads(r.output)
    assert len(reports) == len(EXPECTED)
    assert not [x for x in reports if "error" in x]
    by_root = {str(Path(x["root"]).relative_to(MS)): x for x in reports}
    ut = by_root["msopprof/test/ut/resources/op_profiling/device310P"]
    assert ut["device"] == "Ascend310P3" and ut["counts"]["slices"] == 0
    level2 = by_root["msinsight/test/data/pytorch/text/level2"]
    assert level2["tool"] == "torch_npu" and level2["counts"]["flows"] == 1212
    text = run("info", MS / "tile-ai-tilelang-ascend", "-q").output
    assert "3 run(s) found" in text and "looks cut short" in text


def test_to_perfetto_converts_every_run(tmp_path):
    out = tmp_path / "out"
    r = run("to-perfetto", MS, "-o", str(out) + "/", "-q")
    assert r.exit_code == 0, r.output
    files = sorted(out.glob("*.pftrace"))
    assert len(files) == len(EXPECTED)
    total = 0
    for f in files:
        pf = decode_pftrace(f)
        check_pftrace(pf)
        total += pftrace_counts(pf)["begin"]
    assert total > 20000


def test_to_chrome_converts_every_run(tmp_path):
    out = tmp_path / "out"
    r = run("to-chrome", MS, "-o", str(out) + "/", "-q")
    assert r.exit_code == 0, r.output
    files = sorted(out.glob("*.json"))
    assert len(files) == len(EXPECTED)
    for f in files:
        doc = json.loads(f.read_text())
        assert doc["metadata"]["format"] == "msprof"


def test_to_chrome_on_a_prof_folder(tmp_path):
    prof = next(MS.glob("cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1/PROF_*"))
    r = run("to-chrome", prof, "-o", tmp_path / "a.json", "--no-derived")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "a.json").read_text())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == 269
    assert doc["metadata"]["tool"] == "msprof"
    # with the derived tracks (the default): the bubble and critical-path slices on top,
    # although msprof's own overlap lanes are marked derived too
    from tracecvt.convert import add_derived_tracks
    (src,) = find_runs(prof)
    added = add_derived_tracks(src.read())
    assert added["bubble_slices"] > 0
    r = run("to-chrome", prof, "-o", tmp_path / "b.json")
    doc = json.loads((tmp_path / "b.json").read_text())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == (
        269 + added["bubble_slices"] + added["critical_path_segments"])


def test_from_variant(tmp_path):
    prof = next(MS.glob("cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1/PROF_*"))
    r = run("info", prof, "--from", "msprof-app", "-q")
    assert r.exit_code == 0 and "msprof-app" in r.output and "given, but" not in r.output
    # a variant that does not fit the files is a hint: read as what they are, and say so
    r = run("info", prof, "--from", "torch-npu", "-q")
    assert r.exit_code == 0 and "[msprof/msprof-app]" in r.output
    assert "--from torch-npu given, but these files are msprof-app" in r.output
    r = run("info", MS / "zouzias-pto-isa-mirror", "--from", "msprof", "-q")
    assert r.exit_code == 0 and "msprof-sim" in r.output


def test_runs_inside_an_archive(tmp_path):
    import tarfile
    arc = tmp_path / "ms.tar.gz"
    with tarfile.open(arc, "w:gz") as tar:
        tar.add(MS / "bigorange1024-ascendc", arcname="bigorange1024-ascendc")
        tar.add(MS / "msinsight/test/data/pytorch/text/level2", arcname="level2")
    runs = find_runs(arc)
    assert sorted(r.variant for r in runs) == ["msprof-app", "msprof-op", "torch-npu"]
    level2 = next(r for r in runs if r.variant == "torch-npu").read()
    on_disk = next(r for r in find_runs(MS / "msinsight/test/data/pytorch/text/level2")).read()
    assert [(s.ts, s.dur, s.name) for s in level2.slices] == \
        [(s.ts, s.dur, s.name) for s in on_disk.slices]


def test_no_warning_reports_nothing(runs):
    """A warning line counts something: none says "(0 events)" or has only zero counts
    (the torch_npu trace_view.json samples printed "negative or out-of-range durations drawn
    as 0 ns (0 events)")."""
    import re
    checked = 0
    for src in runs:
        for w in src.read().meta.warnings:
            counts = [int(n.replace(",", "")) for n in
                      re.findall(r"(?<![\w./-])(\d[\d,]*)(?= [a-z(])", w)]
            assert "(0 events)" not in w, w
            assert not counts or any(counts), w
            checked += 1
    assert checked > 10
