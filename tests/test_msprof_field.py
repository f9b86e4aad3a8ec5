"""msprof runs as other people's machines write them (../shared/field-samples/msprof): the
metadata found by content next to msprof's *.done markers, the chip named for every
platform_version msprof knows, every file the run does not read listed as not used (never
warned about).  Where the field data differs from a shared sample in one way, the shared sample
is copied to tmp_path and changed that way."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from tracecvt.cli import main
from tracecvt.readers import find_runs

from conftest import SAMPLES, SHARED

FIELD = SHARED / "field-samples" / "msprof"
P310B = (FIELD / "hansheng1001-ascendccontest-310b/01Addcmul/FrameworkLaunch/AddcmulTest/output/"
         "PROF_000001_20240418055151588_MHHFRHDLONLGNBIA")
CANNBOT = next((SAMPLES / "msprof/cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/"
                "ascendc_b1").glob("PROF_*"))
TORCH_RANK = SAMPLES / "msprof/msinsight/test/data/pytorch/text/level0/rank0_ascend_pt"

# every id of msprof's ChipModel enum (Ascend/msprof, analysis/profiling_bean/prof_enum/
# chip_model.py) with its enum name
CHIP_MODEL = {"0": "CHIP_V1_1_0", "1": "CHIP_V2_1_0", "2": "CHIP_V3_1_0", "3": "CHIP_V3_2_0",
              "4": "CHIP_V3_3_0", "5": "CHIP_V4_1_0", "7": "CHIP_V1_1_1", "8": "CHIP_V1_1_2",
              "9": "CHIP_V5_1_0", "11": "CHIP_V1_1_3", "15": "CHIP_V6_1_0", "16": "CHIP_V6_2_0"}


def info_json(path: Path) -> list[dict]:
    r = CliRunner().invoke(main, ["info", str(path), "--json", "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def one_run(path: Path):
    (src,) = find_runs(path)
    return src, src.read()


def add_markers(root: Path) -> int:
    """A ``<name>.done`` marker (text ``filesize:N``, as msprof writes it) beside every file
    under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for p in files:
        p.with_name(p.name + ".done").write_text(f"filesize:{p.stat().st_size}\n")
    return len(files)


# -- the 310B field run ---------------------------------------------------------------------
def test_310b_run_names_its_metadata_chip_and_clock_not_the_done_markers():
    (rep,) = info_json(P310B)
    files = {f["role"]: f["path"] for f in rep["files"]}
    assert len(files) == len(rep["files"])
    for role, name in (("device_0/info", "info.json.0"), ("device_0/start_info", "start_info.0"),
                       ("device_0/end_info", "end_info.0"), ("device_0/sample", "sample.json"),
                       ("host/info", "info.json"), ("host/start_info", "start_info"),
                       ("host/end_info", "end_info"), ("host/sample", "sample.json")):
        assert Path(files[role]).name == name, role
    assert rep["tool"] == "msprof"
    assert rep["device"] == ("NPU 0: platform_version 7 (CHIP_V1_1_1 (310B)), 1 AI core + "
                             "1 vector core @ 1250 MHz")
    assert rep["clock"] == {"name": "epoch-us", "unit": "us", "ns_per_unit": 1000,
                            "ns_per_unit_numerator": 1000, "ns_per_unit_denominator": 1}
    assert rep["warnings"] == []
    # counts equal the source's: the JSON's X events are the slices (task_time's 5 rows and
    # op_summary's row are the same tasks), its s/f pair the one flow
    out = P310B / "mindstudio_profiler_output"
    events = json.loads(next(out.glob("msprof_*.json")).read_text())
    assert sum(e.get("ph") == "X" for e in events) == rep["counts"]["slices"] == 64
    assert sum(e.get("ph") == "s" for e in events) == rep["counts"]["flows"] == 1
    with open(next(out.glob("task_time_*.csv")), newline="") as f:
        assert len(list(csv.DictReader(f))) == 5


def test_310b_run_metadata_carries_cores_and_clocks_from_info_json():
    _, trace = one_run(P310B)
    dev = trace.meta.extra["msprof_info"]["device_0"]
    assert dev["platform_version"] == "7"
    assert (dev["ai_core_num"], dev["aiv_num"]) == (1, 1)
    assert (dev["aic_frequency_mhz"], dev["aiv_frequency_mhz"]) == (1250.0, 1250.0)
    assert dev["hwts_frequency_mhz"] == 47.999001
    assert dev["hostname"] == "davinci-mini" and dev["drv_version"] == 466701
    assert trace.meta.extra["core_count"] == 1
    start = trace.meta.extra["msprof_info"]["device_0"]["start_info"]
    assert start["collectionTimeBegin"] == "1713390711758740"
    assert trace.meta.extra["msprof_info"]["host"]["end_info"]["collectionTimeEnd"] == \
        "1713390712560656"


def test_310b_every_file_the_run_does_not_read_is_listed_not_used():
    src, trace = one_run(P310B)
    read = set(trace.meta.source_files)
    unused = trace.meta.extra["msprof_ignored_files"]
    every = {str(p) for p in P310B.rglob("*") if p.is_file()}
    assert len(every) == 67
    assert every - read - set(unused) == set()
    assert not read & set(unused)
    assert len(unused) == 54
    why = {Path(p).relative_to(P310B).as_posix(): r for p, r in unused.items()}
    assert why["device_0/sqlite/ascend_task.db"].startswith("msprof's per-module SQLite file")
    assert why["host/sqlite/runtime.db"].startswith("msprof's per-module SQLite file")
    assert why["device_0/sqlite/biu_perf.db"] == "empty file"          # 0 bytes
    assert why["device_0/data/stars_soc.data.0.slice_0"].startswith("raw collected data")
    assert why["device_0/info.json.0.done"] == \
        "msprof's write-complete marker of info.json.0 (filesize): no data"
    assert why["host/data/unaging.additional.hash_dic.slice_0.done"].startswith(
        "msprof's write-complete marker")                # filesize, starttime, endtime lines
    assert why["host/data/all_file.complete"].startswith("empty file")
    assert why["mindstudio_profiler_log/collection_host.log"].startswith("msprof's collection")
    # listed, never warned about one by one; info's JSON and text say "not used"
    assert not [w for w in trace.meta.warnings if any(Path(p).name in w for p in unused)]
    (rep,) = info_json(P310B)
    assert rep["not_used"] == [{"path": p, "reason": r} for p, r in sorted(unused.items())]
    assert not [f for f in rep["files"] if "ignored" in f["role"]]
    text = CliRunner().invoke(main, ["info", str(P310B), "-q"]).output
    assert f"  not used: {P310B / 'device_0/sqlite/op_counter.db'} (msprof's per-module" in text


# -- a shared PROF_* sample changed the way field data differs ------------------------------
def test_done_markers_beside_every_file_change_nothing_read(tmp_path):
    plain = tmp_path / "plain" / CANNBOT.name
    marked = tmp_path / "marked" / CANNBOT.name
    shutil.copytree(CANNBOT, plain)
    shutil.copytree(CANNBOT, marked)
    n = add_markers(marked)
    src0, t0 = one_run(plain)
    src1, t1 = one_run(marked)
    rel = lambda files, root: {r: Path(p).relative_to(root).as_posix()  # noqa: E731
                               for r, p in files.items() if "ignored" not in r}
    assert rel(src1.files, marked) == rel(src0.files, plain)
    assert rel(src1.files, marked)["device_0/info"] == "device_0/info.json.0"
    assert t1.meta.device == t0.meta.device and "CHIP_V4_1_0" in t1.meta.device
    assert json.dumps(t1.meta.extra["msprof_info"], sort_keys=True) == \
        json.dumps(t0.meta.extra["msprof_info"], sort_keys=True)
    assert t1.meta.warnings == [w.replace(str(plain), str(marked)) for w in t0.meta.warnings]
    assert len(t1.slices) == len(t0.slices)
    markers = {p for p in t1.meta.extra["msprof_ignored_files"] if p.endswith(".done")}
    assert len(markers) == n


def test_collection_times_found_by_content_when_renamed(tmp_path):
    """start_info/end_info/info.json renamed: content still says which is which."""
    prof = tmp_path / CANNBOT.name
    shutil.copytree(CANNBOT, prof)
    dev = prof / "device_0"
    (dev / "info.json.0").rename(dev / "device_info")
    (dev / "sample.json").rename(dev / "collection_config")
    (dev / "start_info.0").rename(dev / "begin.0")
    (dev / "end_info.0").rename(dev / "finish.0")
    src, trace = one_run(prof)
    assert Path(src.files["device_0/info"]).name == "device_info"
    assert Path(src.files["device_0/sample"]).name == "collection_config"
    # newer CANN writes both keys into both files, the other time left "": the time decides
    assert Path(src.files["device_0/start_info"]).name == "begin.0"
    assert Path(src.files["device_0/end_info"]).name == "finish.0"
    assert "CHIP_V4_1_0" in trace.meta.device


def test_every_platform_version_msprof_knows_is_named(tmp_path):
    prof = tmp_path / CANNBOT.name
    shutil.copytree(CANNBOT, prof)
    info = prof / "device_0" / "info.json.0"
    data = json.loads(info.read_text())
    named = {}
    for version in sorted(CHIP_MODEL, key=int):
        data["platform_version"] = version
        info.write_text(json.dumps(data))
        _, trace = one_run(prof)
        named[version] = trace.meta.device.split(" (", 1)[1].split(")", 1)[0]
    assert {v: n.split(" ")[0] for v, n in named.items()} == CHIP_MODEL
    # the products msprof itself names (its CHIP_TABLE)
    assert [named[v] for v in ("0", "1", "4", "5", "7", "15")] == [
        "CHIP_V1_1_0 (310", "CHIP_V2_1_0 (910A", "CHIP_V3_3_0 (310P family",
        "CHIP_V4_1_0 (910B / Atlas A2 family", "CHIP_V1_1_1 (310B", "CHIP_V6_1_0 (950"]


def test_start_and_end_info_both_kept():
    """info.json's facts no longer replace the end_info read before them (roles are read in
    sorted order: device_0/end_info < device_0/info)."""
    _, trace = one_run(CANNBOT)
    for where in ("device_0", "host"):
        entry = trace.meta.extra["msprof_info"][where]
        assert entry["platform_version"] == "5"
        assert {"start_info", "end_info", "sample"} <= set(entry)
    end = json.loads((CANNBOT / "device_0" / "end_info.0").read_text())
    assert trace.meta.extra["msprof_info"]["device_0"]["end_info"] == end


# -- a torch_npu rank folder with the raw data it was exported from -------------------------
def test_torch_rank_raw_data_listed_not_used(tmp_path):
    rank = tmp_path / TORCH_RANK.name
    shutil.copytree(TORCH_RANK, rank)
    prof = rank / "PROF_000001_20250109065043880_ABCDEFGHIJKLMNOP"
    (prof / "device_0" / "data").mkdir(parents=True)
    (prof / "device_0" / "data" / "ts_track.data.0.slice_0").write_bytes(b"\x5a" * 64)
    (prof / "device_0" / "sqlite").mkdir()
    (prof / "device_0" / "sqlite" / "step_trace.db").write_bytes(b"")
    (rank / "FRAMEWORK").mkdir()
    (rank / "FRAMEWORK" / "torch.op_range").write_bytes(b"\x00" * 32)
    (rank / "logs").mkdir()
    (rank / "logs" / "rank_0.log").write_text("profiling started\n")
    add_markers(prof)
    src, trace = one_run(rank)
    assert src.variant == "torch-npu"
    unused = trace.meta.extra["msprof_ignored_files"]
    every = {str(p) for p in rank.rglob("*") if p.is_file()}
    assert every - set(trace.meta.source_files) - set(unused) == set()
    assert unused[str(prof / "device_0" / "sqlite" / "step_trace.db")] == "empty file"
    assert not [w for w in trace.meta.warnings if "FRAMEWORK" in w or ".done" in w]
