#!/usr/bin/env python3
"""Benchmark: PyPTO merged_swimlane.json -> .pftrace, as ratios against a floor measured in
the same run.

    python benchmarks/bench_pypto.py RUN_DIR [--repeat 3] [--json OUT.json]

RUN_DIR is a PyPTO run (output/output_*/ or a folder holding one) with a merged_swimlane.json;
make a big one with ../shared/tools/pypto-sample/ (see docs/performance.md).  Every
measurement runs in a fresh child process, so peak RSS (ru_maxrss) is that job's alone.

Figures (goals from the foundation issue):
* time ratio   = tracecvt to-perfetto wall time / (read + orjson.loads of the same file)  <= 1.5
* size ratio   = .pftrace bytes / merged_swimlane.json bytes                              <= 0.25
* memory ratio = peak RSS of the conversion / peak RSS of read + orjson.loads alone       <= 1.2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FLOOR = r"""
import resource, sys, time, orjson
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    doc = orjson.loads(f.read())
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

CONVERT = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from converter.convert import convert_source
from converter.readers import ReadOptions, find_runs
t = time.perf_counter()
(src,) = find_runs(sys.argv[1], sys.argv[4] or None)
result = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions())
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, result.size)
"""


def run_child(code: str, *args: str) -> list[float]:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(x) for x in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args()

    merged = sorted(a.run.rglob("merged_swimlane.json"))
    if not merged:
        sys.exit(f"{a.run}: no (uncompressed) merged_swimlane.json below it")
    merged = merged[0]
    size_in = merged.stat().st_size
    floor_t, floor_rss, conv_t, conv_rss, raw_t = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.pftrace")
        size_out = 0
        for _ in range(a.repeat):
            t, rss = run_child(FLOOR, str(merged))
            floor_t.append(t)
            floor_rss.append(rss)
            t, rss, size_out = run_child(CONVERT, str(a.run), out, str(REPO), "")
            conv_t.append(t)
            conv_rss.append(rss)
        t, _rss, _size = run_child(CONVERT, str(a.run), out, str(REPO), "pypto-raw")
        raw_t.append(t)

    f_t, c_t = statistics.median(floor_t), statistics.median(conv_t)
    f_rss, c_rss = max(floor_rss), max(conv_rss)
    figures = {
        "input": str(merged),
        "input_bytes": int(size_in),
        "pftrace_bytes": int(size_out),
        "floor_read_orjson_s": round(f_t, 3),
        "convert_s": round(c_t, 3),
        "convert_raw_path_s": round(raw_t[0], 3),
        "time_ratio": round(c_t / f_t, 3),
        "size_ratio": round(size_out / size_in, 3),
        "floor_peak_rss_mb": round(f_rss / 1024, 1),
        "convert_peak_rss_mb": round(c_rss / 1024, 1),
        "memory_ratio": round(c_rss / f_rss, 3),
        "repeat": a.repeat,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    rows = [
        ("read + orjson.loads (floor)", f"{f_t:.3f} s", f"{f_rss / 1024:.0f} MB"),
        ("tracecvt to-perfetto (merged file)", f"{c_t:.3f} s", f"{c_rss / 1024:.0f} MB"),
        ("tracecvt to-perfetto --from pypto-raw", f"{raw_t[0]:.3f} s", ""),
    ]
    print(f"input: {merged} ({size_in / 1e6:.1f} MB), median of {a.repeat}")
    print("| job | wall time | peak RSS |\n|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("| figure | measured | goal |\n|---|---|---|")
    print(f"| time ratio (convert / floor) | {figures['time_ratio']} | <= 1.5 |")
    print(f"| size ratio (.pftrace / JSON) | {figures['size_ratio']} | <= 0.25 |")
    print(f"| memory ratio (peak RSS) | {figures['memory_ratio']} | <= 1.2 |")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
