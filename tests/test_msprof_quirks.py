"""One test per file-format quirk of the msprof family, each on the real sample that shows it
(or, where no sample shows it, on a modified copy of a real sample made in tmp_path)."""

from __future__ import annotations

import csv
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tracecvt.readers import find_runs
from tracecvt.readers.msprof.csvtable import (canonical, cell_value, normalize_pipe,
                                               normalize_task_type, read_table, tensor_list)
from tracecvt.readers.msprof.jsontrace import device_args, load_events
from tracecvt.readers.msprof.timefmt import us_to_ns

from conftest import SAMPLES

MS = SAMPLES / "msprof"
BIG = MS / "bigorange1024-ascendc/docs/perf/round_003_pke_decrypt_1launch"
ASCENDC = next(MS.glob("cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1/PROF_*"))
PT = MS / "msinsight/test/data/pytorch/text"
OLD = MS / "msinsight/server/src/test/test_data"
TILE = next(MS.glob("tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/"
                    "OPPROF_*"))


def exact_ns(text: str) -> int:
    return int((Decimal(text.strip()) * 1000).to_integral_value(ROUND_HALF_UP))


def raw_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def test_epoch_us_last_digit_survives():
    path = next((ASCENDC / "mindstudio_profiler_output").glob("op_summary_*.csv"))
    cell = raw_rows(path)[1][8]
    assert cell == "1784216647596110.805\t"          # a TAB after the timestamp
    assert us_to_ns(cell) == 1784216647596110805
    # a float round trip would lose the last digits
    assert int(float(cell) * 1000) != 1784216647596110805
    (src,) = find_runs(ASCENDC)
    trace = src.read()
    s = next(s for s in trace.slices if (s.args or {}).get("op_summary_row") == 0)
    assert s.ts == 1784216647596110805
    # JSON writes it as a string: the same exact value
    events, _, _ = load_events(next((ASCENDC / "mindstudio_profiler_output").glob("msprof_*.json")))
    e = next(e for e in events if e.get("ph") == "X" and e["args"].get("Task Id") == 0
             and e["name"] == "matmul_kernel")
    assert e["ts"] == "1784216647596110.805" and us_to_ns(e["ts"]) == s.ts


def test_trailing_comma_on_every_line():
    path = BIG / "PipeUtilization.csv"
    lines = path.read_text().splitlines()
    assert all(line.endswith(",") for line in lines)
    table = read_table(path)
    assert table.trailing_comma
    assert table.header[-1] == "aiv_scalar_wait_id3_time(us)" and "" not in table.header
    assert len(table.rows) == 3 and all(len(r) == len(table.header) for r in table.rows)
    assert not table.notes()


def test_crlf_and_lf_files_of_the_same_profiler_read_alike():
    crlf = PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    lf = PT / "level2/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    assert b"\r\n" in crlf.read_bytes() and b"\r\n" not in lf.read_bytes()
    a, b = read_table(crlf), read_table(lf)
    assert a.crlf and not b.crlf
    assert a.header == b.header
    assert len(a.rows) == len(b.rows) == 191
    assert not any("\r" in c for r in a.rows for c in r)


def test_optional_bom(tmp_path):
    """No sample has a BOM (an Excel round trip adds one): a copy of a real file with one."""
    src = PT / "level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    dst = tmp_path / "kernel_details.csv"
    dst.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    a, b = read_table(src), read_table(dst)
    assert b.bom and not a.bom
    assert b.header == a.header and b.header[0] == "Step Id"
    assert b.rows == a.rows
    (run,) = find_runs(tmp_path)
    assert len(run.read().slices) == 191


@pytest.mark.parametrize("path, column, text", [
    (next((ASCENDC / "mindstudio_profiler_output").glob("op_summary_*.csv")), "Model ID",
     "4294967295"),
    (next((ASCENDC / "mindstudio_profiler_output").glob("op_summary_*.csv")), "OP Type", "N/A"),
    (BIG / "PipeUtilization.csv", "aiv_time(us)", "NA"),
    (PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/memory_record.csv",
     "Total Allocated(MB)", ""),
])
def test_missing_values_are_no_value_not_zero(path, column, text):
    rows = raw_rows(path)
    i = rows[0].index(column)
    assert any(r[i] == text for r in rows[1:] if len(r) > i)
    assert cell_value(text) is None


def test_missing_values_in_the_model():
    (src,) = find_runs(ASCENDC)
    trace = src.read()
    s = next(s for s in trace.slices if (s.args or {}).get("op_summary_row") == 0)
    assert s.args["model_id"] is None and s.args["op_type"] is None
    assert "model_id" in s.args                  # kept, as no value
    # empty memory_record cells give no counter sample
    path = PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/memory_record.csv"
    rows = raw_rows(path)
    (run,) = find_runs(PT / "level1")
    trace = run.read()
    names = {trace.tracks[c.track].name for c in trace.counters}
    assert "APP Total Allocated" not in names    # APP rows never fill Total Allocated
    assert sum(1 for r in rows[1:] if r[0] == "APP") > 0
    reserved = next(c for c in trace.counters if trace.tracks[c.track].name ==
                    "APP Total Reserved")
    assert len(reserved) == sum(1 for r in rows[1:] if r[0] == "APP")


def test_multi_line_quoted_call_stacks():
    path = PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv"
    rows = raw_rows(path)[1:]
    text = path.read_text()
    assert text.count("\n") > 5 * len(rows)
    table = read_table(path)
    assert len(table.rows) == len(rows) and table.multiline_rows > 0
    (run,) = find_runs(PT / "level1")
    details = run.read().meta.extra["msprof_statistics"]["operator_details"]
    assert len(details) == len(rows)
    assert details[0]["call_stack"] == rows[0][2].strip()
    assert "\n" in details[0]["call_stack"]


def test_quoted_shape_lists_with_semicolons():
    path = PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    rows = raw_rows(path)
    i = rows[0].index("Input Shapes")
    cell = next(r[i] for r in rows if r[4] == "Conv2D1")
    assert cell == '"32,1,224,224,8;121,4,16,8;64"'        # quotes survive RFC-4180 decoding
    assert tensor_list(cell, True) == [[32, 1, 224, 224, 8], [121, 4, 16, 8], [64]]
    assert tensor_list("FLOAT;FLOAT;FLOAT", False) == ["FLOAT"] * 3
    (run,) = find_runs(PT / "level1")
    s = next(s for s in run.read().slices if s.name == "Conv2D1")
    assert s.args["input_shapes"] == [[32, 1, 224, 224, 8], [121, 4, 16, 8], [64]]
    assert s.args["input_formats"] == ["NC1HWC0", "FRACTAL_Z", "NCHW"]
    # empty tensors (";;") in the 2023 files
    assert tensor_list('"8192,2,640;;1,1,8192,8192"', True) == [[8192, 2, 640], [], [1, 1, 8192, 8192]]


def test_column_aliases_across_versions():
    op_summary = raw_rows(next((ASCENDC / "mindstudio_profiler_output").glob("op_summary_*.csv")))[0]
    kernel = raw_rows(PT / "level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")[0]
    task_time = raw_rows(next((ASCENDC / "mindstudio_profiler_output").glob("task_time_*.csv")))[0]
    assert "Task Start Time(us)" in op_summary and "Start Time(us)" in kernel
    assert canonical("Task Start Time(us)") == canonical("Start Time(us)") == \
        canonical("task_start(us)") == "start_time_us"
    assert "Block Num" in op_summary and "Block Dim" in kernel
    assert canonical("Block Num") == canonical("Block Dim") == "block_dim"
    assert canonical("Accelerator Core") == canonical("Task Type") == canonical(task_time[2]) \
        == "task_type"
    # JSON args: Physic Stream Id (2025+) and Stream Id (older torch_npu)
    assert device_args({"Physic Stream Id": 46})["stream_id"] == 46
    assert device_args({"Stream Id": 3})["stream_id"] == 3
    # task types of two generations, one vocabulary
    assert normalize_task_type("KERNEL_AICORE") == normalize_task_type("AI_CORE") == "AI_CORE"
    assert normalize_task_type("KERNEL_AIVEC") == "AI_VECTOR_CORE"
    assert normalize_task_type("N/A") is None
    # one pipe vocabulary
    assert normalize_pipe("aic_mac") == normalize_pipe("CUBE") == normalize_pipe("cube") == "cube"
    assert normalize_pipe("aiv_vec") == normalize_pipe("VECTOR") == "vector"
    assert normalize_pipe("FIXP") == normalize_pipe("aic_fixpipe") == "fixpipe"


def test_old_stream_id_arg_and_task_type_in_the_model():
    (run,) = find_runs(MS / "msprof-analyze/msprof_analyze/test/ut/advisor/timeline_advice")
    trace = run.read()
    hw = [s for s in trace.slices if (s.args or {}).get("source") == "trace_view.json"]
    assert hw and all(s.args["stream_id"] == 3 for s in hw)
    assert {trace.tracks[s.track].name for s in hw} == {"Stream 3"}


def test_cut_mid_row_csv_converts_what_is_there(tmp_path):
    src = next((ASCENDC / "mindstudio_profiler_output").glob("task_time_*.csv"))
    data = src.read_bytes()
    cut = data[:len(data) - 30]                  # inside the last row
    (tmp_path / src.name).write_bytes(cut)
    table = read_table(tmp_path / src.name)
    full = read_table(src)
    assert table.partial_last_row and len(table.rows) == len(full.rows) - 1
    (run,) = find_runs(tmp_path)
    trace = run.read()
    assert len(trace.slices) == len(full.rows) - 1
    assert any("file ends mid-row" in w and f"{len(full.rows) - 1} rows converted" in w
               for w in trace.meta.warnings)


def test_cut_mid_event_json_converts_what_is_there(tmp_path):
    src = next((ASCENDC / "mindstudio_profiler_output").glob("msprof_*.json"))
    data = src.read_bytes()
    cut = data[:len(data) // 2]
    path = tmp_path / src.name
    path.write_bytes(cut)
    events, _, note = load_events(path)
    full, _, _ = load_events(src)
    assert note and 0 < len(events) < len(full)
    assert events == full[:len(events)]
    (run,) = find_runs(tmp_path)
    trace = run.read()
    assert len(trace.slices) == sum(1 for e in events if e["ph"] == "X")
    assert any("ends mid-record" in w and "cut short" in w for w in trace.meta.warnings)


def test_head_excerpt_is_reported_as_cut_short():
    (run,) = find_runs(TILE)
    trace = run.read()
    cut = [w for w in trace.meta.warnings if "the file looks cut short" in w]
    assert len(cut) == 4 and all("9 of 1536 block rows" in w for w in cut)
    assert len(trace.slices) == 9                # the rows present are converted


def test_spreadsheet_scientific_timestamps_are_reported():
    path = OLD / "test_rank_1/ASCEND_PROFILER_OUTPUT/memory_record.csv"
    rows = raw_rows(path)[1:]
    assert all(r[1] == "1.69512E+15" for r in rows)
    assert us_to_ns("1.69512E+15") == 1695120000000000000
    runs = [r for r in find_runs(OLD) if r.name == "test_data"]
    trace = runs[0].read()
    assert any("scientific notation" in w and "memory_record.csv" in w
               for w in trace.meta.warnings)


def test_ragged_row_is_padded_and_reported():
    path = OLD / "test_rank_0/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    rows = raw_rows(path)
    short = [r for r in rows[1:] if len(r) != len(rows[0])]
    assert len(short) == 1
    table = read_table(path)
    assert table.ragged_rows == 1 and all(len(r) == len(table.header) for r in table.rows)


def test_tsv_tab_inside_quoted_timestamp():
    """msprof-analyze's 2025 kernel_details quotes the timestamp together with its TAB."""
    path = MS / "msprof-analyze/msprof_analyze/test/ut/advisor/compute_advice/data/kernel_details.csv"
    assert b'"1736413971558972.912\t"' in path.read_bytes()
    (run,) = find_runs(path.parent)
    s = next(s for s in run.read().slices if s.args["kernel_details_row"] == 0)
    assert s.ts == 1736413971558972912
    assert s.args["start_time_us"] == "1736413971558972.912"


def test_exact_ns_helper_matches_reader():
    for text in ("1784216647596110.805\t", "1699529622790614.8", "1695115378713661", "0.0005"):
        assert us_to_ns(text) == exact_ns(text)


def test_communication_json_nested_deeper_than_the_recursion_limit():
    """A communication.json nested 1,000 deep (orjson reads up to 1,024) is walked, not a
    RecursionError: the record at the bottom is found with its whole key path."""
    import sys

    from tracecvt.readers.msprof.stats import communication_records
    depth = sys.getrecursionlimit() + 10
    node = {"Communication Time Info": {"Elapse Time(ms)": 2.5}}
    for i in range(depth):
        node = {f"level{i}": node}
    ops, totals = communication_records(node, 3, cluster=False)
    assert totals == [] and len(ops) == 1
    assert ops[0]["rank"] == 3 and len(ops[0]["path"]) == depth
    assert ops[0]["elapse_time_us"] == 2500.0
