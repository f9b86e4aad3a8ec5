#!/usr/bin/env python3
"""Benchmark: `tracecvt batch` on 8 copies of a medium PyPTO run, -j 1 against -j 2.

    python benchmarks/bench_batch.py [RUN_DIR] [--copies 8] [--repeat 3] [--to perfetto]
                                     [--json OUT.json]

RUN_DIR defaults to ../shared/samples/pypto/ffn_medium; it is copied COPIES times into a
temporary archive.  Each measurement is a fresh child process running the whole batch with
--force into a fresh folder.  Two times are reported per measurement:

* batch_s:   the batch itself (scan, convert, index), timed inside the child;
* process_s: the whole command, interpreter start-up and imports included.

Goal (issue 6): speedup = time(-j 1) / time(-j 2) >= 1.7 on batch_s, on an idle 2-core
machine.  -j 1 converts in the calling process; "-j 1 (one worker)" is the same work in a
single worker process, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from childrun import compile_tracecvt, side_by_side_slowdown

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RUN = REPO.parent / "shared" / "samples" / "pypto" / "ffn_medium"

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1] + "/benchmarks"); import checkout; checkout.use(sys.argv[1])
import tracecvt.batch.local as local
from tracecvt.batch import batch
if sys.argv[2] == "worker":
    local.IN_PROCESS_SERIAL = False
t = time.perf_counter()
try:
    batch.main(sys.argv[3:], standalone_mode=False)
finally:
    print(time.perf_counter() - t, file=sys.stderr)
"""


def measure(archive: Path, out: Path, jobs: int, mode: str, to: str) -> tuple[float, float]:
    if out.exists():
        shutil.rmtree(out)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, str(REPO), mode, str(archive), "-o",
                        str(out), "-j", str(jobs), "--to", to, "--force", "-q"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"batch failed ({p.returncode}):\n{p.stderr}")
    inner = float(p.stderr.strip().splitlines()[-1])
    return inner, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, nargs="?", default=DEFAULT_RUN)
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--to", default="perfetto")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args()
    compile_tracecvt(REPO)
    slowdown_before = side_by_side_slowdown()
    if not a.run.is_dir():
        sys.exit(f"{a.run}: not a directory")

    cases = [("-j 1", 1, "inproc"), ("-j 1 (one worker)", 1, "worker"), ("-j 2", 2, "inproc")]
    times: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "archive"
        for i in range(a.copies):
            shutil.copytree(a.run, archive / f"copy{i}", symlinks=True)
        measure(archive, Path(tmp) / "warm", 2, "inproc", a.to)      # warm the page cache
        for _ in range(a.repeat):
            for label, jobs, mode in cases:             # interleaved: load drifts evenly
                times[label].append(measure(archive, Path(tmp) / "out", jobs, mode, a.to))
        runs = json.loads((Path(tmp) / "out" / "index.json").read_text())["runs_total"]

    med = {label: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v))
           for label, v in times.items()}
    j1, j1w, j2 = med["-j 1"], med["-j 1 (one worker)"], med["-j 2"]
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    figures = {
        "run": str(a.run), "copies": a.copies, "runs_found": runs, "to": a.to,
        "repeat": a.repeat,
        "j1_batch_s": round(j1[0], 3), "j1_process_s": round(j1[1], 3),
        "j1_one_worker_batch_s": round(j1w[0], 3),
        "j2_batch_s": round(j2[0], 3), "j2_process_s": round(j2[1], 3),
        "speedup_batch": round(j1[0] / j2[0], 3),
        "speedup_process": round(j1[1] / j2[1], 3),
        "goal_speedup": 1.7,
        "cpus": os.cpu_count(), "load_avg_1min": load,
        "side_by_side_slowdown": [slowdown_before, side_by_side_slowdown()],
        "python": sys.version.split()[0],
    }
    print(f"{runs} runs ({a.copies} copies of {a.run.name}), --to {a.to}, median of {a.repeat};"
          f" load average {load}")
    print(f"machine: two processes building Python objects side by side each took "
          f"{figures['side_by_side_slowdown'][0]} x (before) and "
          f"{figures['side_by_side_slowdown'][1]} x (after) the time of one alone")
    print("| case | batch | whole command |\n|---|---|---|")
    for label in times:
        print(f"| {label} | {med[label][0]:.3f} s | {med[label][1]:.3f} s |")
    print(f"\nspeedup -j 2 over -j 1: {figures['speedup_batch']} (batch), "
          f"{figures['speedup_process']} (whole command); goal >= 1.7")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
