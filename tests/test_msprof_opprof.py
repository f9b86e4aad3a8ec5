"""msprof op aggregates: per-block view lanes (one slice from 0 per block/sub-block), every
metric row as args, visualize_data.bin blocks, roofline and advice in run metadata."""

from __future__ import annotations

import csv
import io
import json
import struct
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tracecvt.readers import find_runs
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

MS = SAMPLES / "msprof"
TILE = next(MS.glob("tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/"
                    "OPPROF_*"))
SIGMOID = MS / "tile-ai-tilelang-ascend/custom/sigmoid/Sigmoid/trace_data"
BIG = MS / "bigorange1024-ascendc/docs/perf/round_003_pke_decrypt_1launch"
BINS = MS / "msinsight/server/src/test/test_data"
UT = MS / "msopprof/test/ut/resources/op_profiling"


def ns(value: float) -> int:
    return int((Decimal(repr(value)) * 1000).to_integral_value(ROUND_HALF_UP))


def rows(path):
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    header = [h for h in r[0] if h]
    return [dict(zip(header, row)) for row in r[1:]]


def op_run(path):
    runs = [r for r in find_runs(path) if r.variant == "msprof-op"]
    assert len(runs) == 1, runs
    return runs[0], runs[0].read()


def blocks(path):
    """The block stream, parsed here independently: (type, JSON) per block."""
    data = path.read_bytes()
    pos, out = 0, []
    while pos < len(data):
        size, typ, pad, _, _ = struct.unpack_from("<QBBBB", data, pos)
        pos += 12 + (4096 if typ == 1 else 0)
        out.append((typ, json.loads(data[pos:pos + size].rstrip(b"\0"))))
        pos += size
    return out


def written(trace):
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    pf = decode_pftrace(buf.getvalue())
    check_pftrace(pf)
    cbuf = io.BytesIO()
    write_chrome(trace, cbuf)
    json.loads(cbuf.getvalue())
    return pftrace_counts(pf)


def test_opprof_folder_every_metric_row_present():
    src, trace = op_run(TILE)
    assert src.root == TILE and trace.meta.tool == "msprof op"
    assert trace.meta.device == "Ascend910_9362"          # dump/op_basic_info.txt
    op = trace.meta.extra["msprof_op"]
    assert (op["op_name"], op["op_type"], op["block_dim"], op["mix_block_dim"]) == \
        ("main_kernel", "mix", 512, 1024)
    assert op["task_duration_us"] == 71.918564 and op["current_freq_mhz"] == 1650
    pipe = rows(TILE / "PipeUtilization.HEAD_EXCERPT.csv")
    assert len(trace.slices) == len(pipe) == 9
    by_key = {(s.args["block_id"], s.args["sub_block"]): s for s in trace.slices}
    for metric in ("PipeUtilization", "ArithmeticUtilization", "L2Cache", "Memory"):
        data = rows(TILE / f"{metric}.HEAD_EXCERPT.csv")
        for r, row in enumerate(data):
            s = by_key[(int(row["block_id"]), row["sub_block_id"])]
            got = s.args[metric]
            assert got["row"] == r
            for col, text in row.items():
                if col in ("block_id", "sub_block_id"):
                    continue
                name = col.lower().replace("(us)", "_us").replace("(gb/s)", "_gb_s") \
                    .replace("(%)", "_pct").replace("(kb)", "_kb").replace("(estimate)",
                                                                         "_estimate")
                name = "_".join(p for p in name.replace("/", "_").split("_") if p)
                assert name in got, (metric, col, name)
                value = got[name]
                assert value is None if text == "NA" else value == (
                    int(text) if text.isdigit() else float(text))


def test_block_lanes_are_a_per_block_view():
    src, trace = op_run(TILE)
    pipe = rows(TILE / "PipeUtilization.HEAD_EXCERPT.csv")
    for s in trace.slices:
        row = next(r for r in pipe if int(r["block_id"]) == s.args["block_id"]
                   and r["sub_block_id"] == s.args["sub_block"])
        t = "aic_time(us)" if s.args["sub_block"] == "cube0" else "aiv_time(us)"
        assert s.ts == 0 and s.dur == ns(float(row[t]))
        lane = trace.tracks[s.track]
        assert lane.name == s.args["sub_block"] and not lane.nesting
        assert "per-block view" in lane.description and "not a timeline" in lane.description
        assert trace.path(s.track).startswith("main_kernel: per-block view / Block ")
        side = "aic" if s.args["sub_block"] == "cube0" else "aiv"
        pipes = s.args["pipes"]
        if side == "aic":
            assert pipes["cube"] == float(row["aic_cube_ratio"])
            assert pipes["fixpipe"] == float(row["aic_fixpipe_ratio"])
            assert s.args["pipe_time_us"]["mte1"] == float(row["aic_mte1_time(us)"])
        else:
            assert pipes["vector"] == float(row["aiv_vec_ratio"])
            assert pipes["mte3"] == float(row["aiv_mte3_ratio"])
    assert trace.meta.clock.name == "per-block-us"
    top = trace.children(None)[0]
    assert "NOT a timeline" in trace.tracks[top].description
    meta = trace.meta.extra["msprof_op"]["blocks"]
    assert [(b["block_id"], b["block"]) for b in meta] == [
        (b, sub) for b in range(3) for sub in ("cube0", "vector0", "vector1")]
    assert set(meta[0]["pipes"]) == {"cube", "mte1", "mte2", "mte3", "fixpipe", "scalar"}
    assert set(meta[1]["pipes"]) == {"vector", "mte2", "mte3", "scalar"}
    counts = written(trace)
    assert counts["begin"] == 9
    # Not a timeline: the analyses measure no bubbles on these lanes.
    assert trace.meta.extra["no_bubbles"].startswith("not a timeline")
    from tracecvt.convert import add_derived_tracks
    add_derived_tracks(trace)
    assert not [t for t in trace.tracks if "bubbles" in t.name]


def test_renamed_metric_file_and_optional_wait_columns():
    src, trace = op_run(BIG)
    assert src.name == "round_003_pke_decrypt_1launch-msprof-op"
    assert len(trace.slices) == 3
    for s in trace.slices:
        assert set(s.args) >= {"PipeUtilization", "PipeUtilization_roofline"}
    cube = next(s for s in trace.slices if s.args["sub_block"] == "cube0")
    row = rows(BIG / "PipeUtilization.csv")[0]
    roof = rows(BIG / "PipeUtilization_roofline.csv")[0]
    assert cube.args["PipeUtilization"]["aic_scalar_wait_id14_time_us"] == \
        float(row["aic_scalar_wait_id14_time(us)"])
    assert cube.args["PipeUtilization_roofline"]["aic_time_us"] == float(roof["aic_time(us)"])
    # the pipes come from the plain PipeUtilization file
    assert cube.args["pipes"]["cube"] == float(row["aic_cube_ratio"])
    assert cube.dur == ns(float(row["aic_time(us)"]))
    assert not any("cut short" in w for w in trace.meta.warnings)     # 1 block, 3 rows
    written(trace)


def test_memory_ub_only_folder():
    src, trace = op_run(SIGMOID)
    data = rows(SIGMOID / "MemoryUB.HEAD_EXCERPT.csv")
    assert len(trace.slices) == len(data)
    for s in trace.slices:
        assert s.args["MemoryUB"]["row"] < len(data)
        assert s.args["duration_from"].startswith("MemoryUB.")
    assert any("9 of 288 block rows" in w for w in trace.meta.warnings)


@pytest.mark.parametrize("name", ["base_info.bin", "load_data.bin", "memory_data.bin",
                                  "roofline_data.bin", "test_bin_mix/visualize_data.bin"])
def test_visualize_bin_blocks(name):
    path = BINS / name
    src, trace = op_run(path if path.name != "visualize_data.bin" else path.parent)
    found = blocks(path)
    op = trace.meta.extra["msprof_op"]
    basic = next(j for t, j in found if t == 5)
    assert op["op_name"] == basic["name"] and trace.meta.device == basic["soc"]
    if "block_detail" in basic:
        durations = [(b["block_id"], d) for b in basic["block_detail"] for d in b["duration"]]
    else:
        heads = basic["mix_block_detail"]["head_name"][1:]
        durations = [(int(r["value"][0]), float(v)) for r in basic["mix_block_detail"]["row"]
                     for v in r["value"][1:]]
        assert len(heads) == 3
    assert len(trace.slices) == len(durations)
    assert sorted((s.args["block_id"], s.dur) for s in trace.slices) == sorted(
        (b, ns(d)) for b, d in durations)
    for t, j in found:
        if t in (6, 7):
            key = "compute_load" if t == 6 else "compute_load_table"
            n = sum(len(s.args.get(key, {})) - sum(1 for k in s.args.get(key, {})
                                                   if k.endswith("(origin)"))
                    for s in trace.slices)
            assert n == len(j["subblock_detail"])
        if t == 13:
            assert op["roofline_verdict"] == j["advice"]
            assert len(op["roofline"]) == sum(len(g["rooflines"])
                                              for g in j["multiple_rooflines"])
            assert all(r["bound"] in ("memory", "compute") for r in op["roofline"])
            assert j["advice"] in op["advice"]
        if t == 8:
            assert len(op["memory_heat_map"]) == len(j["core_memory_map"])
        if t == 9:
            assert len(op["storage_tables"]) == len(j["table_per_block"])
    assert written(trace)["begin"] == len(durations)


def test_roofline_bound_and_pipes_from_compute_load():
    src, trace = op_run(BINS / "roofline_data.bin")
    op = trace.meta.extra["msprof_op"]
    entry = next(r for r in op["roofline"] if r["bandwidth_name"] == "L1 to GM")
    assert entry["bound"] == "compute"          # 983.6 right of the ridge 324.4 / 4.45
    entry = next(r for r in op["roofline"] if r["bandwidth_name"] == "UB Read + Write")
    assert entry["bound"] == "memory"
    cube = next(s for s in trace.slices if s.args["block_id"] == 0
                and s.args["sub_block"] == "cube0")
    assert cube.args["pipes"]["cube"] == pytest.approx(0.0887)      # 8.87 % "Cube All Active"
    assert any("compute usage lower than 20%" in a for a in op["advice"])


def test_occupancy_advice_lines():
    src, trace = op_run(BINS / "test_bin_mix")
    op = trace.meta.extra["msprof_op"]
    assert "1) core1 vector1 took more time than other core." in op["advice"]
    assert len(op["occupancy"]) == 2


@pytest.mark.parametrize("chip, soc, dim", [("device310P", "Ascend310P3", 3),
                                            ("device910B", "Ascend910B4", 1),
                                            ("deviceA5", "Ascend950PR_9589", 1)])
def test_op_basic_info_only(chip, soc, dim):
    src, trace = op_run(UT / chip)
    assert trace.meta.device == soc and len(trace.slices) == 0
    op = trace.meta.extra["msprof_op"]
    assert op["op_name"] == "add" and op["block_dim"] == dim
    if chip == "deviceA5":
        assert op["op_basic_info"]["current_freq"] is None          # "N/A"
        assert op["op_basic_info"]["has_simt"] == 1


def test_310p_rows_without_block_columns(tmp_path):
    """No real 310P output exists (docs §11): headers from the format reference, values
    invented, to show rows without block_id/sub_block_id become one ``aicore`` lane each."""
    (tmp_path / "OpBasicInfo.csv").write_text(
        "Op Name,Op Type,Task Duration(us),Block Dim,Device Id,Pid,Current Freq,Rated Freq,\n"
        "add_custom,aicore,12.5,2,0,1,1000,1000,\n")
    (tmp_path / "PipeUtilization.csv").write_text(
        "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),"
        "aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,"
        "aic_mte3_time(us),aic_mte3_ratio,aic_icache_miss_rate,aic_vec_time(us),aic_vec_ratio,\n"
        "10.000000,10000,0.000000,0.000000,1.000000,0.100000,0.000000,0.000000,2.000000,"
        "0.200000,1.000000,0.100000,0.000000,5.000000,0.500000,\n"
        "11.000000,11000,0.000000,0.000000,1.100000,0.100000,0.000000,0.000000,2.200000,"
        "0.200000,1.100000,0.100000,0.000000,5.500000,0.500000,\n")
    src, trace = op_run(tmp_path)
    assert [(s.args["block_id"], s.args["sub_block"], s.dur) for s in trace.slices] == \
        [(0, "aicore", 10000), (1, "aicore", 11000)]
    assert trace.slices[0].args["pipes"] == {"cube": 0.0, "scalar": 0.1, "mte1": 0.0,
                                             "mte2": 0.2, "mte3": 0.1, "vector": 0.5}
    assert trace.meta.extra["msprof_op"]["mix_block_dim"] is None
    assert not trace.meta.warnings
