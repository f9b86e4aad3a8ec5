"""simpler runs as a user hands them over: detection (run folder, records file alone, the
runtime's converter output, dfx_outputs, archives, legacy names) and damaged inputs (one
warning or one error line naming the file)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tracecvt.errors import InputError
from tracecvt.readers import find_runs

from conftest import FIXTURES, cli
from test_simpler import RUNS, SIMPLER

VECTOR = next(r for r in RUNS if r.parents[1].name == "a2a3sim_tmr_vector_example_L4")
PAGED = next(r for r in RUNS if "paged_attention_CaseVarSeq4" in str(r))



def copy_run(run: Path, dest: Path, skip=()) -> Path:
    target = dest / run.name
    target.mkdir(parents=True)
    for p in run.iterdir():
        if p.name not in skip:
            shutil.copyfile(p, target / p.name)
    return target


def records_of(run: Path) -> dict:
    return json.loads((run / "chip_swimlane_records.json").read_bytes())


def write_records(run: Path, doc: dict) -> None:
    (run / "chip_swimlane_records.json").write_text(json.dumps(doc))


def test_the_samples_folder_is_fifteen_simpler_runs_and_nothing_else():
    runs = find_runs(SIMPLER)
    assert len(runs) == len(RUNS) == 15
    assert {r.format for r in runs} == {"simpler"}
    assert sorted(r.name for r in runs) == sorted(r.name for r in RUNS)


def test_run_folder_records_file_and_converter_output_give_the_same_run():
    (a,) = find_runs(PAGED)
    (b,) = find_runs(PAGED / "chip_swimlane_records.json")
    (c,) = find_runs(PAGED / "merged_swimlane.json")
    assert a.name == b.name == c.name == PAGED.name
    assert a.files["deps"] == b.files["deps"] == c.files["deps"]
    assert a.files["name_map"].name.startswith("name_map_TestPagedAttention")
    assert len(a.read().flows) == len(c.read().flows) == 128


def test_converter_output_alone_is_read_as_drawn_and_deps_alone_refused_in_one_line(tmp_path):
    merged = tmp_path / "merged_swimlane.json"
    shutil.copyfile(VECTOR / "merged_swimlane.json", merged)
    (src,) = find_runs(merged)           # (test_simpler_converter_output.py: what it gives)
    assert (src.format, src.variant) == ("simpler", "converter-output")
    r = cli("to-perfetto", merged)
    assert r.exit_code == 0, r.output
    deps = tmp_path / "deps.json"
    shutil.copyfile(VECTOR / "deps.json", deps)
    with pytest.raises(InputError, match="task graph, without times"):
        find_runs(deps)


def test_records_alone_convert_and_say_what_is_missing(tmp_path):
    run = copy_run(PAGED, tmp_path, skip=("deps.json", "merged_swimlane.json"))
    for p in run.glob("name_map*"):
        p.unlink()
    (src,) = find_runs(run / "chip_swimlane_records.json")
    trace = src.read()
    assert not trace.flows
    assert any("no deps.json" in w and str(run) in w for w in trace.meta.warnings)
    assert {s.name.split("(")[0] for s in trace.slices if s.cat == "kernel"} == {"task"}
    assert trace.meta.extra["task_graph"] is False


def test_no_name_map_gives_func_names_and_a_warning():
    trace = find_runs(VECTOR)[0].read()
    assert any("no name_map" in w for w in trace.meta.warnings)
    names = {s.name.split("(")[0] for s in trace.slices if s.cat == "kernel"}
    assert names == {"func_0_a", "func_1_b", "func_2_c"}


def test_from_simpler_records_ignores_deps(tmp_path):
    (src,) = find_runs(PAGED, "simpler-records")
    trace = src.read()
    assert not trace.flows and src.variant == "simpler-records"
    assert any("deps.json ignored" in w for w in trace.meta.warnings)


def test_dfx_outputs_and_pypto_l3_folders_are_named_after_the_work_dir(tmp_path):
    copy_run(VECTOR, tmp_path / "build_output" / "prog_2026")
    (tmp_path / "build_output" / "prog_2026" / VECTOR.name).rename(
        tmp_path / "build_output" / "prog_2026" / "dfx_outputs")
    l3 = tmp_path / "out_l3" / "dfx_outputs" / "rank1"
    copy_run(VECTOR, l3)
    (l3 / VECTOR.name).rename(l3 / "d0")
    assert sorted(r.name for r in find_runs(tmp_path)) == ["out_l3-rank1-d0", "prog_2026"]


def test_an_archive_of_runs(tmp_path):
    z = tmp_path / "runs.zip"
    with zipfile.ZipFile(z, "w") as f:
        for run in (VECTOR, PAGED):
            for p in run.iterdir():
                f.write(p, f"{run.parents[1].name}/{run.name}/{p.name}")
    runs = find_runs(z)
    assert sorted(r.name for r in runs) == sorted([VECTOR.name, PAGED.name])
    r = cli("to-perfetto", z, "-o", tmp_path / "out/")
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "out").glob("*.pftrace"))) == 2


def test_legacy_l2_name_with_five_column_rows():
    root = FIXTURES / "simpler_legacy_l2_name_5_columns"
    (src,) = find_runs(root)
    trace = src.read()
    kernels = [s for s in trace.slices if s.cat == "kernel"]
    assert [(s.ts, s.dur) for s in kernels] == [(20000, 10000), (32000, 6000), (22000, 6000),
                                                (39000, 1000)]
    assert all("setup_ns" not in s.args for s in kernels)
    assert kernels[3].name == "task(r1t0)"
    assert trace.meta.extra["simpler"]["level_key"] == "l2_swimlane_level"
    assert any("5 columns" in w for w in trace.meta.warnings)
    assert [trace.tracks[i].name for i in trace.children(trace.tracks[kernels[0].track].parent)] \
        == ["AIC_0", "AIV_2", "AIV_3"]
    assert trace.meta.device == "Ascend A2/A3"


def test_legacy_microsecond_layout_is_read_from_its_own_fields(tmp_path):
    path = FIXTURES / "simpler_legacy_us_layout" / "perf_swimlane_20260401_120000.json"
    (src,) = find_runs(path.parent)
    assert src.name == "simpler_legacy_us_layout"
    trace = src.read()
    kernels = sorted((s.ts, s.dur, s.name, s.args.get("pickup_ns"), s.args.get("completion_ns"))
                     for s in trace.slices if s.cat == "kernel")
    assert kernels == [(1000, 2500, "func_0_a(t0)", 200, 120),
                       (4000, 1000, "func_1_b(t1)", 100, 100),
                       (4250, 500, "func_0_a(r1t0)", 250, 50)]
    assert trace.meta.clock.name == "simpler-us" and trace.meta.device == "Ascend"
    assert trace.meta.extra["simpler"]["clock_freq_hz"] is None
    assert trace.meta.extra["simpler"]["level"] == 4
    assert len(trace.flows) == 2
    assert {trace.slices[f.dst].name for f in trace.flows} == {"func_1_b(t1)", "func_0_a(r1t0)"}
    w = "\n".join(trace.meta.warnings)
    assert "read as level 4 from its content" in w and "scan (1)" in w
    names = [s.name for s in trace.slices if s.cat in ("scheduler", "orchestrator")]
    assert names == ["dispatch(1)", "scan(0)", "complete(1)", "submit(t0)", "orch_alloc(t1)"]
    r = cli("to-perfetto", path, "-o", tmp_path / "x.pftrace")
    assert r.exit_code == 0 and (tmp_path / "x.pftrace").stat().st_size > 0


def test_truncated_records_keep_the_rows_before_the_cut(tmp_path):
    run = copy_run(PAGED, tmp_path, skip=("merged_swimlane.json",))
    data = (run / "chip_swimlane_records.json").read_bytes()
    cut = data.index(b"\n", data.index(b'"aicpu_tasks"') + 2000)
    (run / "chip_swimlane_records.json").write_bytes(data[:cut])
    trace = find_runs(run)[0].read()
    warned = [w for w in trace.meta.warnings if "cut short" in w]
    assert len(warned) == 1 and "chip_swimlane_records.json" in warned[0]
    assert sum(1 for s in trace.slices if s.cat == "kernel") == 64
    assert any("no AICPU row" in w for w in trace.meta.warnings)
    # Cut before the first row, or empty: an error naming the file.
    for cut in (data[:200], b""):
        (run / "chip_swimlane_records.json").write_bytes(cut)
        r = cli("to-perfetto", run, "-o", tmp_path / "x.pftrace")
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
        assert str(run / "chip_swimlane_records.json") in r.output


def test_unknown_phase_kind_bad_rows_and_ids_that_do_not_join(tmp_path):
    run = copy_run(VECTOR, tmp_path, skip=("merged_swimlane.json",))
    doc = records_of(run)
    doc["aicpu_scheduler_phases"][1][0]["kind"] = "wire"
    doc["aicore_tasks"][0][3] = "soon"
    doc["aicpu_tasks"][2][1] = 99            # (core 10, reg 99): no AICore row; (10, 3)
    #                                          loses its AICPU row, (10, 1) its AICore row
    write_records(run, doc)
    trace = find_runs(run)[0].read()
    w = "\n".join(trace.meta.warnings)
    assert "phase kinds this reader does not know, kept as drawn: wire (1)" in w
    assert "1 of 5 aicore_tasks rows dropped" in w
    assert "2 aicpu_tasks rows have no AICore row" in w
    assert "1 AICore rows have no AICPU row" in w
    assert "AICore rows have no AICPU row" in w
    assert any(s.name == "wire(1)" for s in trace.slices)
    assert all(str(run) in line for line in trace.meta.warnings)


def test_missing_clock_is_a_one_line_error(tmp_path):
    run = copy_run(VECTOR, tmp_path, skip=("merged_swimlane.json",))
    doc = records_of(run)
    del doc["metadata"]["clock_freq_hz"]
    write_records(run, doc)
    r = cli("to-perfetto", run, "-o", tmp_path / "x.pftrace")
    assert r.exit_code == 2 and "clock_freq_hz" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = cli("to-perfetto", run, "-o", tmp_path / "x.pftrace", "--clock-mhz", "50")
    assert r.exit_code == 0, r.output


def test_malformed_deps_and_name_map_are_warnings(tmp_path):
    run = copy_run(PAGED, tmp_path, skip=("merged_swimlane.json",))
    (run / "deps.json").write_text('{"tasks": [')
    next(run.glob("name_map*")).write_text("[]")
    trace = find_runs(run)[0].read()
    w = "\n".join(trace.meta.warnings)
    assert "deps.json: truncated JSON" in w and "no function names or dependencies" in w
    assert not trace.flows


def test_edges_that_cannot_be_drawn_are_named(tmp_path):
    run = copy_run(PAGED, tmp_path, skip=("merged_swimlane.json",))
    doc = records_of(run)
    doc["aicpu_orchestrator_phases"] = [[r for r in doc["aicpu_orchestrator_phases"][0]
                                         if r["task_id"] >> 32 != 1]]   # drop the allocs
    write_records(run, doc)
    trace = find_runs(run)[0].read()
    (w,) = [w for w in trace.meta.warnings if "edges not drawn" in w]
    n = int(w.split(": ", 1)[1].split(" of ")[0])
    assert n + len(trace.flows) == 128 and n > 0
    assert "(r1t0)" in w


def test_to_perfetto_prints_the_output_path(tmp_path):
    out = tmp_path / "pa.pftrace"
    r = cli("to-perfetto", PAGED, "-o", out)
    assert r.exit_code == 0 and str(out) in r.output and out.stat().st_size > 0


def test_the_bundled_sample_converts_like_its_source(tmp_path):
    from conftest import REPO, checkout_copy
    bundled = REPO / "samples" / "simpler" / "a2a3sim_paged_attention"
    run = checkout_copy(bundled, tmp_path / bundled.name)
    r = cli("to-perfetto", run, "--force")
    out = tmp_path / f"{bundled.name}.pftrace"
    assert r.exit_code == 0 and str(out) in r.output and out.is_file()
    mine, source = find_runs(run)[0].read(), find_runs(PAGED)[0].read()
    assert [(s.name, s.ts, s.dur) for s in mine.slices] == \
        [(s.name, s.ts, s.dur) for s in source.slices]
    assert len(mine.flows) == len(source.flows) == 128
    assert mine.meta.device == "Ascend A2/A3 (a2a3sim)"


def test_batch_converts_every_sample_run(tmp_path):
    r = cli("batch", SIMPLER, "-o", tmp_path)
    assert r.exit_code == 0, r.output
    assert "15 runs: 15 converted" in r.output
    assert len(list(tmp_path.rglob("*.pftrace"))) == 15
