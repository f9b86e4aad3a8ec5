#!/usr/bin/env python3
"""Benchmark: an Ascend database export (msprof_*.db) -> model and -> .pftrace, as ratios
against a floor measured in the same run.

    python benchmarks/bench_db.py [--tasks 1000000] [--seed-db DB] [--repeat 1] [--json OUT]

The input is made, not collected: a real run's rows (default: the cannbot PyPTO run,
msprof_20260716124705.db: 2,095 TASK rows, 900 COMPUTE_TASK_INFO, 8,400 TASK_PMU_INFO,
2,728 CANN_API) repeated along the time axis until TASK has about ``--tasks`` rows.  Each
copy is shifted by the run's span plus 1 ms and gets fresh globalTaskId / connectionId
values, so every copy's tasks, op info, PMU figures and host calls stay joined as in the
original; the other tables (strings, enums, AICORE_FREQ, NPU_INFO …) are kept once.

Every measurement runs in a fresh child process (benchmarks/childrun.py):

* floor      = sqlite3 alone: ``SELECT *`` of every table the reader reads, all rows
               fetched and held (``fetchall``), read-only as the reader opens it
* read       = the reader as the API calls it: ``tracecvt.read(path)[0].trace`` (the model,
               nothing written; the garbage collector paused while reading, as the
               command and the API do; until 2026-11-29 ``Source.read`` was timed alone,
               with the collector running: 14.9 s against 9-10 s on the 1 M-task copy)
* conversion = tracecvt to-perfetto of the same file through ``convert_source`` (find, read,
               the analyses' derived tracks, on by default, write), the model kept as the
               command keeps it (``keep``: the command ends without freeing it; until
               2026-12-06 the model was freed inside the clock, 2.6 s of a 1 M-task run)
* time ratio = conversion / floor (goal <= 1.5); memory ratio = peak RSS ratio (goal <= 1.2)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
from pathlib import Path

from childrun import compile_tracecvt, run_child, side_by_side_slowdown

REPO = Path(__file__).resolve().parents[1]
SEED = next((REPO.parent / "shared" / "samples" / "msprof" / "cannbot-ascendc-vs-pypto"
             / "operators" / "add").rglob("msprof_*.db"), None)
READ_TABLES = ("TASK", "COMPUTE_TASK_INFO", "TASK_PMU_INFO", "CANN_API", "STRING_IDS",
               "ENUM_API_TYPE", "AICORE_FREQ", "META_DATA", "NPU_INFO")

FLOOR = r"""
import resource, sqlite3, sys, time
t = time.perf_counter()
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
held, n = [], 0
for table in sys.argv[2].split(","):
    rows = c.execute(f'SELECT * FROM "{table}"').fetchall()
    n += len(rows)
    held.append(rows)
dt = time.perf_counter() - t
print(dt, peak_rss_kb(), n)
"""

READ = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
import tracecvt
t = time.perf_counter()
(run,) = tracecvt.read(sys.argv[1], "msprof-db")
trace = run.trace
dt = time.perf_counter() - t
print(dt, peak_rss_kb(), len(trace.slices))
"""

CONVERT = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
(src,) = find_runs(sys.argv[1], "msprof-db")
result = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions(), keep=[])
dt = time.perf_counter() - t
print(dt, peak_rss_kb(), result.size)
"""


def build(seed: Path, out: Path, tasks: int) -> dict:
    """``out``: ``seed`` with its TASK, COMPUTE_TASK_INFO, TASK_PMU_INFO and CANN_API rows
    repeated along the time axis until TASK holds about ``tasks`` rows."""
    shutil.copyfile(seed, out)
    c = sqlite3.connect(out)
    n = c.execute("SELECT count(*) FROM TASK").fetchone()[0]
    lo, hi = c.execute("SELECT min(startNs), max(endNs) FROM (SELECT startNs, endNs FROM TASK "
                       "UNION ALL SELECT startNs, endNs FROM CANN_API)").fetchone()
    gids = c.execute("SELECT max(globalTaskId) + 1 FROM TASK").fetchone()[0]
    conns = max(c.execute("SELECT max(connectionId) FROM TASK").fetchone()[0],
                c.execute("SELECT max(connectionId) FROM CANN_API").fetchone()[0]) + 1
    shift = hi - lo + 1_000_000
    copies = max(1, round(tasks / n))
    for k in range(1, copies):
        dt, dg, dc = k * shift, k * gids, k * conns
        c.execute("INSERT INTO TASK SELECT startNs + ?, endNs + ?, deviceId, connectionId + ?, "
                  "globalTaskId + ?, globalPid, taskType, contextId, streamId, taskId, modelId "
                  "FROM TASK WHERE globalTaskId < ?", (dt, dt, dc, dg, gids))
        cols = [r[1] for r in c.execute("PRAGMA table_info(COMPUTE_TASK_INFO)")]
        sel = ", ".join("globalTaskId + ?" if x == "globalTaskId" else x for x in cols)
        c.execute(f"INSERT INTO COMPUTE_TASK_INFO SELECT {sel} FROM COMPUTE_TASK_INFO "
                  "WHERE globalTaskId < ?", (dg, gids))
        c.execute("INSERT INTO TASK_PMU_INFO SELECT globalTaskId + ?, name, value "
                  "FROM TASK_PMU_INFO WHERE globalTaskId < ?", (dg, gids))
        c.execute("INSERT INTO CANN_API SELECT startNs + ?, endNs + ?, type, globalTid, "
                  "connectionId + ?, name FROM CANN_API WHERE connectionId < ?",
                  (dt, dt, dc, conns))
    c.commit()
    counts = {t: c.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
              for t in ("TASK", "COMPUTE_TASK_INFO", "TASK_PMU_INFO", "CANN_API")}
    c.execute("VACUUM")
    c.close()
    return {"copies": copies, "rows": counts, "bytes": out.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--seed-db", type=Path, default=SEED)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args()
    compile_tracecvt(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "PROF_bench" / "msprof_bench.db"
        db.parent.mkdir()
        made = build(a.seed_db, db, a.tasks)
        out = os.path.join(tmp, "out.pftrace")
        runs: dict[str, list] = {"floor": [], "read": [], "convert": []}
        for _ in range(a.repeat):
            runs["floor"].append(run_child(FLOOR, str(db), ",".join(READ_TABLES), inputs=(str(db),)))
            runs["read"].append(run_child(READ, str(db), out, str(REPO), inputs=(str(db),)))
            runs["convert"].append(run_child(CONVERT, str(db), out, str(REPO), inputs=(str(db),)))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
           for k, v in runs.items()}
    figures = {
        "seed": str(a.seed_db), **made,
        "floor_rows_fetched": int(runs["floor"][0][2]),
        "slices": int(runs["read"][0][2]),
        "pftrace_bytes": int(runs["convert"][0][2]),
        "floor_s": round(med["floor"][0], 3), "read_s": round(med["read"][0], 3),
        "convert_s": round(med["convert"][0], 3),
        "floor_peak_mb": round(med["floor"][1] / 1024, 1),
        "read_peak_mb": round(med["read"][1] / 1024, 1),
        "convert_peak_mb": round(med["convert"][1] / 1024, 1),
        "time_ratio_read": round(med["read"][0] / med["floor"][0], 2),
        "time_ratio_convert": round(med["convert"][0] / med["floor"][0], 2),
        "memory_ratio_read": round(med["read"][1] / med["floor"][1], 2),
        "memory_ratio_convert": round(med["convert"][1] / med["floor"][1], 2),
        "side_by_side_slowdown": side_by_side_slowdown(),
        "repeat": a.repeat,
    }
    print(json.dumps(figures, indent=2))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
