"""Ascend database exports (readers/ascend_db): the same run as the text export, flows and
counters counted on the tables, read-only opening, bad input."""

from __future__ import annotations

import collections
import json
import shutil
import sqlite3
from pathlib import Path
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tracecvt.analyses import analyze
from tracecvt.readers import find_runs
from tracecvt.summary import summary_data

from conftest import SAMPLES

MS = SAMPLES / "msprof"
PROFS = sorted(MS.glob("cannbot-ascendc-vs-pypto/operators/*/reports/raw/*/PROF_*"))
TORCH = MS / "msinsight/test/data/pytorch/db/level0/rank0_ascend_pt"
TORCH_DB = TORCH / "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
HW = "Ascend Hardware"


def ro(path):
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def device_tasks(trace, exact=True):
    """(name, start ns, duration ns, stream) of every slice on an Ascend Hardware lane
    (``exact=False``: duration left out, the slice itself as the value)."""
    out = collections.Counter() if exact else collections.defaultdict(list)
    for s in trace.slices:
        parts = trace.path(s.track).split(" / ")
        if HW in parts:
            key = (s.name, s.ts, parts[parts.index(HW) + 1])
            if exact:
                out[(s.name, s.ts, s.dur, key[2])] += 1
            else:
                out[key].append(s)
    return out


def json_durations(text_dir) -> dict[tuple[str, int], list[Decimal]]:
    """Exact durations (ns, with the sub-ns digits msprof_*.json prints) by (name, start)."""
    (path,) = text_dir.glob("mindstudio_profiler_output/msprof_*.json")
    out = collections.defaultdict(list)
    for e in json.loads(path.read_text()):
        if e.get("ph") == "X":
            out[(e["name"], text_ns(e["ts"]))].append(Decimal(repr(e.get("dur", 0))) * 1000)
    return out


def same_duration(db_slice, text_slice, exact: list[Decimal]) -> bool:
    """The database stores start and end as whole ns, each rounded; msprof_*.json prints
    the duration with sub-ns digits (90.5018125 µs), which the text reader rounds half-up to
    the ns.  Same: the database's end - start is within 1 ns of the JSON's exact duration
    (two roundings of 0.5 ns each), and the text model's duration is that exact duration
    rounded."""
    return any(abs(db_slice.dur - x) < 1 and text_slice.dur == int(
        x.to_integral_value(ROUND_HALF_UP)) for x in exact)


def text_ns(value) -> int:
    d = Decimal(value.strip()) if isinstance(value, str) else Decimal(repr(value))
    return int((d * 1000).to_integral_value(ROUND_HALF_UP))


def split_copies(prof, tmp_path):
    """Two copies of one PROF_* folder: the database alone, and the text export alone."""
    db_dir = tmp_path / "db" / prof.name
    db_dir.mkdir(parents=True)
    (db,) = prof.glob("msprof_*.db")
    shutil.copy(db, db_dir / db.name)
    text_dir = tmp_path / "text" / prof.name
    shutil.copytree(prof / "mindstudio_profiler_output", text_dir / "mindstudio_profiler_output")
    return db_dir, text_dir, db


def merged_tasks(db) -> int:
    """TASK rows that are the hardware task around a context subtask: a KERNEL_* row with
    no COMPUTE_TASK_INFO and no context id beside a row of the same stream, task id and
    connection id that has both.  The text export shows the subtask only; so does the
    reader (the outer task's times become args of the subtask)."""
    with ro(db) as c:
        return c.execute(
            "SELECT count(*) FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType "
            "WHERE s.value LIKE 'KERNEL%' AND t.contextId = 4294967295 AND t.globalTaskId "
            "NOT IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO) AND EXISTS (SELECT 1 FROM "
            "TASK u JOIN COMPUTE_TASK_INFO ci ON ci.globalTaskId = u.globalTaskId WHERE "
            "u.streamId = t.streamId AND u.taskId = t.taskId AND u.connectionId = "
            "t.connectionId AND u.contextId != 4294967295)").fetchone()[0]


@pytest.mark.parametrize("prof", PROFS, ids=lambda p: p.parent.name)
def test_database_and_text_give_the_same_device_tasks(prof, tmp_path):
    db_dir, text_dir, db = split_copies(prof, tmp_path)
    (dsrc,) = find_runs(db_dir)
    (tsrc,) = find_runs(text_dir)
    assert dsrc.format == "msprof-db" and tsrc.variant == "msprof-app"
    dtrace, ttrace = dsrc.read(), tsrc.read()
    got, want = device_tasks(dtrace, False), device_tasks(ttrace, False)
    # the text export prints start times in µs with 3 decimals: exact ns, compared as such;
    # durations as same_duration says; the one difference, named: kernel tasks without an op
    assert not set(want) - set(got)
    exact = json_durations(text_dir)
    extra = collections.Counter()
    for key, slices in got.items():
        text = want.get(key, [])
        assert len(slices) >= len(text), key
        for a, b in zip(slices, text):
            assert same_duration(a, b, exact[(key[0], key[1])]), (key, a.dur, b.dur)
        for a in slices[len(text):]:
            extra[(a.name, a.ts, a.dur, key[2])] += 1
    assert not extra
    with ro(db) as c:
        rows = c.execute("SELECT count(*) FROM TASK").fetchone()[0]
    merged = merged_tasks(db)
    assert sum(map(len, got.values())) == rows - merged
    assert dtrace.meta.extra["ascend_db"].get("tasks_merged_into_subtask", 0) == merged
    assert sum(1 for s in dtrace.slices if "hardware_task_start_ns" in (s.args or {})) == merged
    # ... each with its hardware task's start, duration and id
    with ro(db) as c:
        hardware = set(c.execute(
            "SELECT startNs, endNs - startNs, globalTaskId FROM TASK t JOIN STRING_IDS s ON "
            "s.id = t.taskType WHERE s.value LIKE 'KERNEL%' AND t.contextId = 4294967295 "
            "AND t.globalTaskId NOT IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO)"))
    assert {(s.args["hardware_task_start_ns"], s.args["hardware_task_dur_ns"],
             s.args["hardware_global_task_id"]) for s in dtrace.slices
            if "hardware_task_start_ns" in (s.args or {})} <= hardware
    # the kernel table of the summary: the same rows, but for the database's extra tasks
    dsum = {r["label"]: r for r in summary_data(dtrace, analyze(dtrace))["time_by_label"]
            [0]["rows"]}
    tsum = {r["label"]: r for r in summary_data(ttrace, analyze(ttrace))["time_by_label"]
            [0]["rows"]}
    only: set[str] = set()
    assert set(dsum) - set(tsum) <= only
    for label, row in tsum.items():
        if label in only:
            continue
        d = dsum[label]
        assert d["count"] == row["count"], label
        # totals: sums of per-task ns, each within 1 ns of the text's (same_duration)
        assert abs(row["total_us"] - d["total_us"]) <= row["count"] / 1000 + 1e-6, label
        assert abs(row["max_us"] - d["max_us"]) <= 0.001 + 1e-9, label


@pytest.mark.parametrize("prof", PROFS, ids=lambda p: p.parent.name)
def test_database_args_match_op_summary(prof, tmp_path):
    """Op type, block dims and PMU figures: the database's values, rounded the way
    op_summary prints them (its own digits), are the text's."""
    db_dir, text_dir, _ = split_copies(prof, tmp_path)
    dtrace = find_runs(db_dir)[0].read()
    ttrace = find_runs(text_dir)[0].read()
    text = {(s.ts, s.name): s.args for s in ttrace.slices if s.args and
            s.args.get("op_summary_row") is not None}
    assert text
    compared = 0
    for s in dtrace.slices:
        t = text.get((s.ts, s.name))
        if t is None:
            continue
        for k in ("op_type", "block_dim", "mix_block_dim", "stream_id", "task_id",
                  "task_type", "aic_total_cycles", "aiv_total_cycles"):
            if k in t and t[k] is not None:
                assert s.all_args.get(k) == t[k], (k, s.name)
        for k, v in t.items():
            if k.endswith(("_ratio", "_time_us")) and isinstance(v, float) and k in s.all_args:
                digits = -Decimal(repr(v)).as_tuple().exponent
                assert round(float(s.all_args[k]), max(digits, 3)) == pytest.approx(v), k
                compared += 1
    assert compared


def test_compute_rows_that_differ_in_one_cell_keep_their_own_args(tmp_path):
    """The reader holds one entry for COMPUTE_TASK_INFO rows that differ only in their task
    id (the 900 rows of this run are one op run again and again); a row that differs in one
    cell, by value or by type (a BLOB where the others have an int), keeps its own."""
    prof = tmp_path / PROFS[0].name
    prof.mkdir()
    db = prof / next(PROFS[0].glob("msprof_*.db")).name
    shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    with sqlite3.connect(db) as c:
        ids = [r[0] for r in c.execute("SELECT globalTaskId FROM COMPUTE_TASK_INFO "
                                       "ORDER BY globalTaskId")]
        (block,) = c.execute("SELECT blockNum FROM COMPUTE_TASK_INFO WHERE globalTaskId = ?",
                             (ids[0],)).fetchone()
        c.execute("UPDATE COMPUTE_TASK_INFO SET blockNum = ? WHERE globalTaskId = ?",
                  (block + 7, ids[1]))
        c.execute("UPDATE COMPUTE_TASK_INFO SET blockNum = ? WHERE globalTaskId = ?",
                  (bytes([block]), ids[2]))
    c.close()
    got = {s.args["global_task_id"]: s.args["block_dim"] for s in find_runs(prof)[0].read().slices
           if s.args and s.args.get("global_task_id") in ids}
    assert len(got) == len(ids)
    assert got[ids[1]] == block + 7
    assert got[ids[2]] == bytes([block]).hex()
    assert all(got[i] == block for i in ids if i not in ids[1:3])


def test_both_exports_one_run_text_by_default_database_with_from():
    prof = PROFS[0]
    (src,) = find_runs(prof)
    assert src.variant == "msprof-app"
    trace = src.read()
    db = next(prof.glob("msprof_*.db"))
    why = trace.meta.extra["msprof_ignored_files"][str(db)]
    assert why.startswith("the run's database export: not read, the text export's timeline "
                          "holds") and "--from msprof-db" in why
    assert not any(str(db) in w for w in trace.meta.warnings)    # listed, not warned about
    (src,) = find_runs(prof, "msprof-db")
    assert src.format == "msprof-db" and src.root == prof
    trace = src.read()
    with ro(db) as c:
        assert sum(device_tasks(trace).values()) == \
            c.execute("SELECT count(*) FROM TASK").fetchone()[0] - merged_tasks(db)
    ignored = trace.meta.extra["msprof_ignored_files"]
    assert any("mindstudio_profiler_output" in p for p in ignored)
    assert any(w.startswith(f"{db}: read as asked (--from msprof-db)")
               for w in trace.meta.warnings)


def test_database_read_where_the_text_export_has_no_timeline(tmp_path):
    """A PROF_* folder whose text export holds CSV summaries only: the database holds more,
    it is read, and the run says so."""
    prof = PROFS[1]
    run = tmp_path / prof.name
    shutil.copytree(prof, run)
    for p in run.glob("mindstudio_profiler_output/msprof_*.json"):
        p.unlink()
    (src,) = find_runs(run)
    assert src.format == "msprof-db"
    trace = src.read()
    db = next(run.glob("msprof_*.db"))
    assert any(w.startswith(f"{db}: read instead of the ") and "--from msprof reads them" in w
               for w in trace.meta.warnings)
    assert "platform_version 5" in trace.meta.device     # info.json beside it, as the text


def test_torch_npu_database_counts():
    (src,) = find_runs(TORCH)
    assert src.format == "msprof-db" and src.root == TORCH
    trace = src.read()
    with ro(TORCH_DB) as c:
        q = lambda s: c.execute(s).fetchone()[0]      # noqa: E731
        assert sum(device_tasks(trace).values()) == q("SELECT count(*) FROM TASK") \
            - merged_tasks(TORCH_DB)
        host = collections.Counter(trace.path(s.track).split(" / ")[2] for s in trace.slices
                                   if " / Host / " in f" {trace.path(s.track)}")
        assert host["Python"] == q("SELECT count(*) FROM PYTORCH_API")
        assert host["CANN"] == q("SELECT count(*) FROM CANN_API")
        names = collections.Counter(f.name for f in trace.flows)
        # flows end on the drawn device slices (tasks and communication ops) of a connection id
        ends = collections.Counter(s.args["connection_id"] for s in trace.slices
                                   if s.args and "global_task_id" in s.args
                                   or s.cat == "hccl" and s.args and "op_id" in s.args)
        cann = {r[0] for r in c.execute("SELECT connectionId FROM CANN_API")}
        assert names["HostToDevice"] == sum(ends[k] for k in cann) > 0
        # every CONNECTION_IDS pair is a flow: to its device slices, else to its CANN call,
        # else Enqueue -> Dequeue (the two queue rows sharing a connection id)
        torch_ids = {r[0] for r in c.execute("SELECT connectionId FROM PYTORCH_API")}
        npu = queue = 0
        for pid, conn in c.execute("SELECT id, connectionId FROM CONNECTION_IDS"):
            assert pid in torch_ids
            if ends[conn]:
                npu += ends[conn]
            elif conn in cann:
                npu += 1
            else:
                queue += 1
        assert names["async_npu"] == npu > 0
        assert names["async_task_queue"] == queue // 2 > 0
        assert not any("CONNECTION_IDS" in w for w in trace.meta.warnings)
        samples = sum(len(c_) for c_ in trace.counters)
        want = (q("SELECT count(*) FROM AICORE_FREQ") + 2 * q("SELECT count(*) FROM NPU_MEM")
                + q("SELECT count(*) FROM NPU_MODULE_MEM") + q("SELECT count(*) FROM HBM")
                + 2 * q("SELECT count(*) FROM LLC") + 4 * q("SELECT count(*) FROM ACC_PMU")
                + 2 * q("SELECT count(*) FROM SOC_BANDWIDTH_LEVEL")
                + 3 * q("SELECT count(*) FROM MEMORY_RECORD"))
        assert samples == want
    steps = [s for s in trace.slices if s.cat == "step"]
    assert [s.name for s in steps] == ["Step 50"] and steps[0].args["computing_us"] == 8843.91
    assert trace.meta.device == "NPU 0: Ascend910B"
    assert any("tables not converted: NPU_OP_MEM (114 rows), OP_MEMORY (184 rows)" in w
               for w in trace.meta.warnings)


def test_opened_read_only_nothing_written(tmp_path):
    run = tmp_path / "PROF_1"
    run.mkdir()
    db = run / "renamed.sqlite"
    shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    run.chmod(0o555)
    db.chmod(0o444)
    try:
        before = sorted(p.name for p in run.iterdir())
        (src,) = find_runs(run)
        assert src.format == "msprof-db"
        assert src.read().slices
        assert sorted(p.name for p in run.iterdir()) == before
    finally:
        run.chmod(0o755)


def test_locked_database_still_reads(tmp_path):
    db = tmp_path / "x.db"
    shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        (src,) = find_runs(db)
        assert src.read().slices
    finally:
        holder.rollback()
        holder.close()


def _broken(tmp_path, how):
    db = tmp_path / "msprof_1.db"
    shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    if how == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[:len(data) // 3])
    elif how == "corrupt":
        data = bytearray(db.read_bytes())
        for i in range(200, len(data), 997):
            data[i] ^= 0x5A
        db.write_bytes(bytes(data))
    elif how == "empty":
        db.write_bytes(b"")
    elif how == "schema not utf-8":     # a table's name in sqlite_master damaged
        data = bytearray(db.read_bytes())
        data[data.index(b"tableCANN_API") + len(b"table")] = 0xF8
        db.write_bytes(bytes(data))
    else:
        c = sqlite3.connect(db)
        if how == "missing table":
            c.execute("DROP TABLE COMPUTE_TASK_INFO")
        elif how == "unknown enum":
            c.execute("UPDATE CANN_API SET type = 777")
        elif how == "not utf-8":
            c.execute("UPDATE STRING_IDS SET value = CAST(X'6D61746D756CFF' AS TEXT) "
                      "WHERE id = (SELECT name FROM COMPUTE_TASK_INFO LIMIT 1)")
        elif how == "string id":
            c.execute("DELETE FROM STRING_IDS WHERE id = (SELECT name FROM COMPUTE_TASK_INFO "
                      "LIMIT 1)")
        c.commit()
        c.close()
    return db


@pytest.mark.parametrize("how", ["truncated", "corrupt", "empty", "missing table",
                                 "unknown enum", "string id", "not utf-8",
                                 "schema not utf-8"])
def test_bad_input_one_line(tmp_path, how):
    from conftest import cli
    db = _broken(tmp_path, how)
    res = cli("info", "--from", "msprof-db", str(db))
    out = res.output
    assert "Traceback" not in out
    if how == "not utf-8":          # read, the bad bytes shown as U+FFFD
        assert res.exit_code == 0 and "Traceback" not in out
        trace = find_runs(db, "msprof-db")[0].read()
        assert any(s.name == "matmul\ufffd" for s in trace.slices)
        return
    if how in ("truncated", "corrupt", "empty", "schema not utf-8"):
        assert res.exit_code != 0 and str(db) in out
    else:
        assert res.exit_code == 0
        lines = [ln for ln in out.splitlines() if "warning" in ln and str(db) in ln]
        assert lines, out
        want = {"missing table": "no COMPUTE_TASK_INFO table", "unknown enum": "ENUM_API_TYPE",
                "string id": "string ids have no STRING_IDS row"}[how]
        assert any(want in ln for ln in lines), out


def test_summary_compare_batch_api(tmp_path):
    from conftest import cli
    import tracecvt.api as api
    res = cli("summary", "-q", "--format", "json", "-o", str(tmp_path / "s.json"), str(TORCH))
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["time_by_label"][0]["rows"]
    res = cli("compare", str(TORCH), str(tmp_path / "s.json"))
    assert res.exit_code == 0, res.output
    res = cli("batch", str(TORCH.parent), "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert list((tmp_path / "out").rglob("*.pftrace"))
    (run,) = api.read(TORCH)
    assert run.format == "msprof-db" and run.trace.slices
    (run,) = api.read(PROFS[1], "msprof-db")
    assert run.format == "msprof-db" and run.trace.meta.tool == "msprof"


def test_compressed_and_archived_database(tmp_path):
    import gzip
    import zipfile
    db = next(PROFS[1].glob("msprof_*.db"))
    gz = tmp_path / "run.db.gz"
    gz.write_bytes(gzip.compress(db.read_bytes()))
    zp = tmp_path / "run.zip"
    with zipfile.ZipFile(zp, "w") as z:
        z.write(db, "PROF_x/" + db.name)
    with ro(db) as c:
        rows = c.execute("SELECT count(*) FROM TASK").fetchone()[0]
    for path in (gz, zp):
        (src,) = find_runs(path)
        assert src.format == "msprof-db"
        assert sum(device_tasks(src.read()).values()) == rows - merged_tasks(db)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.db.gz", "run.zip"]


def test_overlap_analysis_table_gives_the_text_overlap_lanes(tmp_path):
    """Newer msprof versions write OVERLAP_ANALYSIS (id, deviceId, startNs, endNs, type;
    ENUM_OVERLAP_ANALYSIS_TYPE COMPUTE 0, COMMUNICATION 1, COMM_NOT_OVERLAP_COMP 2, FREE 3).
    Made here from a cannbot run the way such a version differs: its text timeline's
    Overlap Analysis events written into the database copy; the database model then has the
    text model's derived Overlap Analysis lanes, slice for slice."""
    prof = PROFS[1]
    db_dir, text_dir, db = split_copies(prof, tmp_path)
    copy = db_dir / db.name
    (js,) = text_dir.glob("mindstudio_profiler_output/msprof_*.json")
    events = json.loads(js.read_text())
    pname = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    kinds = {"Computing": 0, "Communication": 1, "Communication(Not Overlapped)": 2, "Free": 3}
    rows = [(i, 0, text_ns(e["ts"]), text_ns(e["ts"]) + text_ns(e["dur"]), kinds[e["name"]])
            for i, e in enumerate(e for e in events if e["ph"] == "X"
                                  and pname[e["pid"]] == "Overlap Analysis")]
    assert rows
    with sqlite3.connect(copy) as c:
        c.execute("CREATE TABLE OVERLAP_ANALYSIS (id INTEGER PRIMARY KEY, deviceId INTEGER, "
                  "startNs NUMERIC, endNs NUMERIC, type INTEGER)")
        c.executemany("INSERT INTO OVERLAP_ANALYSIS VALUES (?, ?, ?, ?, ?)", rows)
        c.execute("CREATE TABLE ENUM_OVERLAP_ANALYSIS_TYPE (id INTEGER PRIMARY KEY, name TEXT)")
        c.executemany("INSERT INTO ENUM_OVERLAP_ANALYSIS_TYPE VALUES (?, ?)",
                      [(0, "COMPUTE"), (1, "COMMUNICATION"), (2, "COMM_NOT_OVERLAP_COMP"),
                       (3, "FREE")])

    def overlap(trace):
        return collections.Counter(
            (trace.path(s.track), trace.tracks[s.track].derived, s.name, s.ts, s.dur)
            for s in trace.slices if "/ Overlap Analysis /" in trace.path(s.track))

    dtrace = find_runs(db_dir)[0].read()
    ttrace = find_runs(text_dir)[0].read()
    assert overlap(dtrace) == overlap(ttrace) and sum(overlap(dtrace).values()) == len(rows)
    assert "OVERLAP_ANALYSIS" not in dtrace.meta.extra["ascend_db"]["tables_not_converted"]


def test_several_database_ranks_are_one_run(tmp_path):
    """Two torch_npu ranks side by side, each with only its database (made from the real
    rank: the copy's RANK_DEVICE_MAP and profiler_info say rank 1): one run with a Rank
    group per rank, as the text reader makes of several ranks."""
    for r in (0, 1):
        rank = tmp_path / f"rank{r}_ascend_pt"
        shutil.copytree(TORCH, rank)
        if r:
            info = rank / "profiler_info_0.json"
            doc = json.loads(info.read_text())
            doc["rank_id"] = 1
            (rank / "profiler_info_1.json").write_text(json.dumps(doc))
            info.unlink()
            with sqlite3.connect(next(rank.glob("*/ascend_pytorch_profiler_0.db"))) as c:
                c.execute("UPDATE RANK_DEVICE_MAP SET rankId = 1")
    (src,) = find_runs(tmp_path)
    assert src.format == "msprof-db" and src.root == tmp_path
    trace = src.read()
    single = find_runs(TORCH)[0].read()
    per_rank = collections.Counter(trace.path(s.track).split(" / ")[0] for s in trace.slices)
    assert per_rank == {"Rank 0": len(single.slices), "Rank 1": len(single.slices)}
    assert len(trace.flows) == 2 * len(single.flows)
    assert sorted(trace.meta.extra["torch_npu"]["ranks"]) == ["0", "1"]


@pytest.fixture
def opens(monkeypatch):
    """Counter of sqlite3 connections by the resolved file opened (every opening of a
    database goes through sqlite3.connect, with a ``file:`` URI)."""
    from urllib.parse import unquote
    counts: collections.Counter = collections.Counter()
    real = sqlite3.connect

    def connect(database, *args, **kwargs):
        path = unquote(str(database)).removeprefix("file:").split("?", 1)[0]
        counts[str(Path(path).resolve())] += 1
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return counts


def _two_ranks(tmp_path):
    for r in (0, 1):
        shutil.copytree(TORCH, tmp_path / f"rank{r}_ascend_pt")
    return tmp_path


@pytest.mark.parametrize("fmt", [None, "msprof-db"])
@pytest.mark.parametrize("where", ["msprof", "torch_npu", "two ranks"])
def test_finding_runs_opens_each_database_once(opens, tmp_path, where, fmt):
    """Discovery asks several questions of one database (an export? an analysis.db? the one
    database of a rank folder, asked again for each rank beside it): each SQLite file is
    opened once per find_runs, and reading the run opens it once more."""
    root = {"msprof": MS / "cannbot-ascendc-vs-pypto", "torch_npu": TORCH}.get(where) \
        or _two_ranks(tmp_path)
    dbs = sorted(str(p.resolve()) for p in root.rglob("*.db"))
    assert len(dbs) == {"msprof": 3, "torch_npu": 2, "two ranks": 4}[where]
    runs = find_runs(root, fmt)
    assert sorted(opens) == dbs
    assert set(opens.values()) == {1}, opens
    opens.clear()
    db_runs = [s for s in runs if s.format == "msprof-db"]
    assert len(db_runs) == {"msprof": 3 if fmt else 0, "torch_npu": 1, "two ranks": 1}[where]
    for src in db_runs:
        src.read()
    if db_runs:
        assert sorted(opens) == dbs and set(opens.values()) == {1}, opens
    opens.clear()
    find_runs(root, fmt)            # a second scan reads the files again
    assert sorted(opens) == dbs and set(opens.values()) == {1}, opens


def test_database_tables_kept_while_the_file_is_unchanged(opens, tmp_path):
    """Within one scan the tables are read once; a file changed meanwhile (other size or
    mtime) is opened again and its new tables seen."""
    import os
    from tracecvt import fileio
    from tracecvt.readers import ascend_db
    db = tmp_path / "msprof_1.db"
    shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    with fileio.heads_kept():
        assert ascend_db.is_export(db) is True
        assert ascend_db.is_export(db) is True and not ascend_db._is_analysis(db)
        assert list(opens.values()) == [1]
        st = db.stat()
        with sqlite3.connect(db) as c:
            for t in ("TASK", "CANN_API", "COMMUNICATION_OP", "MSTX_EVENTS", "NPU_MEM",
                      "AICORE_FREQ", "PYTORCH_API"):
                c.execute(f'DROP TABLE IF EXISTS "{t}"')
        c.close()
        os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert ascend_db.is_export(db) is False
        assert list(opens.values()) == [3]      # the change above opened it too


def _model_facts(trace):
    """Everything a reader makes, as plain values (the args' with their types: 1 and 1.0
    are written differently)."""
    def typed(args):
        return None if args is None else [(k, type(v), v) for k, v in args.items()]
    return ([(t.name, t.kind, t.parent, t.order) for t in trace.tracks],
            [(s.track, type(s.ts), s.ts, s.dur, s.name, s.cat, typed(s.args),
              typed(s.shared_args)) for s in trace.slices],
            [(f.src, f.dst, f.name, f.args) for f in trace.flows],
            [(c.track, c.ts, c.values) for c in trace.counters],
            trace.meta.warnings, trace.meta.extra)


_HOWS = ["as is", "unknown enum", "string ids", "bad times", "TASK fails", "CANN_API fails",
         "dies", "short reads", "TASK fails part-way", "CANN_API fails part-way",
         "CANN_API dies part-way"]


@pytest.mark.parametrize("run,how", [("msprof", h) for h in _HOWS]
                         + [("torch_npu", h) for h in [*_HOWS, "PYTORCH_API fails",
                                                       "PYTORCH_API fails part-way"]])
def test_tables_read_ahead_by_another_process(tmp_path, monkeypatch, run, how):
    """A large database's TASK rows (with their task info), CANN_API and PYTORCH_API rows
    are read by a forked process (ahead.Ahead), and handed over a few rows at a time, while
    this one reads the PMU figures and makes the slices: the same model as reading them
    here, with what its lookups missed counted once (not lost, not twice); a table that
    process fails on, and every table after it dies, is read here; where it fails or dies
    part-way through a table, the rest of that table is read here."""
    import os
    from tracecvt.readers.ascend_db import ahead
    from tracecvt.readers.base import ReadOptions
    if run == "msprof":
        db = tmp_path / "msprof_1.db"
        shutil.copy(next(PROFS[0].glob("msprof_*.db")), db)
    else:
        db = tmp_path / TORCH_DB.name
        shutil.copy(TORCH_DB, db)
    c = sqlite3.connect(db)
    torch = run == "torch_npu"
    if how == "unknown enum":
        c.execute("UPDATE CANN_API SET type = 777 + rowid % 3")
        if torch:
            c.execute("UPDATE PYTORCH_API SET type = 900 WHERE rowid % 7 = 0")
    elif how == "string ids":
        c.execute("DELETE FROM STRING_IDS WHERE id IN (SELECT name FROM CANN_API LIMIT 3)")
        c.execute("DELETE FROM STRING_IDS WHERE id IN (SELECT name FROM COMPUTE_TASK_INFO "
                  "LIMIT 2)")
        if torch:
            c.execute("DELETE FROM STRING_IDS WHERE id IN (SELECT name FROM PYTORCH_API "
                      "LIMIT 3) OR id IN (SELECT inputShapes FROM PYTORCH_API WHERE "
                      "inputShapes IS NOT NULL LIMIT 2)")
    elif how == "bad times":
        c.execute("UPDATE CANN_API SET endNs = startNs - 1 WHERE rowid % 4 = 0")
        c.execute("UPDATE TASK SET endNs = NULL WHERE rowid % 5 = 0")
        if torch:
            c.execute("UPDATE PYTORCH_API SET startNs = 'x' WHERE rowid % 6 = 0")
    c.commit()
    c.close()
    here = find_runs(db, "msprof-db")[0].read(ReadOptions(workers=1))
    forked, taken = [], []
    parent = os.getpid()
    real_fork, real_take = ahead.fork_child, ahead.Ahead.take
    real_piece, real_rest = ahead.Ahead._piece, ahead.Ahead._rest
    pieces, rests = [], []

    def piece(self, table):
        got = real_piece(self, table)
        pieces.append((table, got is not None))
        return got

    def rest(self, table, got, done):
        rests.append((table, done))
        return real_rest(self, table, got, done)
    monkeypatch.setattr(ahead.Ahead, "_piece", piece)
    monkeypatch.setattr(ahead.Ahead, "_rest", rest)
    monkeypatch.setattr(ahead, "BATCH_ROWS", 97)      # many pieces a table

    def fork(body):
        forked.append(body)
        return real_fork(body)

    def take(self, table, batches=False):
        got = real_take(self, table, batches)
        taken.append((table, got is not None))
        return got
    monkeypatch.setattr(ahead, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ahead, "fork_child", fork)
    if how == "short reads":               # as the kernel does past 2 GiB a call
        real_preadv = os.preadv
        monkeypatch.setattr(os, "preadv", lambda fd, bufs, at: real_preadv(
            fd, [memoryview(bufs[0])[:777]], at))
    monkeypatch.setattr(ahead.Ahead, "take", take)
    partway = how.endswith("part-way")
    failing = how.split()[0] if how.endswith(("fails", "part-way")) else \
        "CANN_API" if how == "dies" else None
    dies = "dies" in how
    if failing:
        read = ahead.PASSES[failing]

        def cut(rows):          # the rows of three pieces, then the end
            for n, row in enumerate(rows):
                if n == 3 * 97 + 5:
                    if dies:
                        os._exit(3)
                    raise RuntimeError("no")
                yield row

        def fails(d):
            if os.getpid() != parent:
                if not partway:
                    if dies:
                        os._exit(3)
                    raise RuntimeError("no")
                got = read(d)
                got["rows"] = cut(got["rows"])
                return got
            return read(d)
        monkeypatch.setitem(ahead.PASSES, failing, fails)
    there = find_runs(db, "msprof-db")[0].read(ReadOptions(workers=2))
    assert len(forked) == 1, "the tables were not read by another process"
    tables = ["TASK", "CANN_API", "PYTORCH_API"][:2 + torch]
    # (the torch_npu run has no PMU figures to read meanwhile: TASK is read here)
    ahead_of = tables[torch:]
    lost = ({failing} if not partway else set()) | \
        ({"CANN_API", "PYTORCH_API"} - {failing} if dies else set())
    assert [x for x in taken if x[0] in tables] == \
        [(t, t in ahead_of and t not in lost) for t in tables]
    # the tables handed over came in pieces; one cut part-way was read on here
    for t in set(ahead_of) - lost:
        handed = sum(1 for x in pieces if x == (t, True))
        assert handed == 3 if partway and t == failing else handed > 3, (t, handed)
    assert rests == ([(failing, 3 * 97)] if partway and failing in ahead_of else [])
    assert _model_facts(there) == _model_facts(here)
    warned = " ".join(here.meta.warnings)
    assert {"unknown enum": "ENUM_API_TYPE", "string ids": "string ids have no",
            "bad times": "CANN_API rows without a usable"}.get(how, "") in warned
    assert sum(1 for s in here.slices if s.cat == "cann") > 100
    if how == "bad times":
        assert "TASK rows without a usable" in warned
        assert not torch or "PYTORCH_API rows without a usable" in warned
    if torch:
        assert sum(1 for s in here.slices if s.cat in ("cpu_op", "python_function")) > 1000
        assert any("Call stack" in (s.args or {}) for s in here.slices)


@pytest.mark.parametrize("how", ["damaged gz", "gz of no database", "archive of no database"])
def test_no_copy_left_behind(tmp_path, monkeypatch, how):
    """A compressed or archived database is copied to a temporary file to be opened; where
    the copy cannot be made or is no database, the error names the file and the copy is
    removed (one that could not be made was left behind, empty, once per such input)."""
    import gzip
    import tempfile
    import zipfile
    from conftest import cli
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    db = next(PROFS[0].glob("msprof_*.db"))
    if how == "damaged gz":
        data = gzip.compress(db.read_bytes())
        bad = tmp_path / "msprof_1.db.gz"
        bad.write_bytes(data[:len(data) // 2] + bytes(64))
    elif how == "gz of no database":
        bad = tmp_path / "msprof_1.db.gz"
        bad.write_bytes(gzip.compress(b"SQLite format 3\x00" + bytes(200)))
    else:
        bad = tmp_path / "run.zip"
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("PROF_x/msprof_1.db", b"SQLite format 3\x00" + bytes(200))
    res = cli("to-perfetto", "--from", "msprof-db", str(bad), "-o", str(tmp_path / "x.pftrace"))
    assert res.exit_code != 0 and "Traceback" not in res.output, res.output
    assert "msprof_1.db" in res.output, res.output
    assert not list(temp.glob("tracecvt-*.db")), "a temporary copy was left behind"
