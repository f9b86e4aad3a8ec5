#!/usr/bin/env python3
"""Benchmark: Nsight Compute report -> .pftrace, as a ratio against a floor measured in the
same run.

    python benchmarks/bench_ncu.py [REPORT] [--repeat 3] [--json OUT.json]

REPORT defaults to the 1,867-kernel sample ../shared/samples/ncu/h200-nvtx-many/
many_nvtx.ncu-rep.xz; a compressed report is decompressed once, before timing, because
ncu_report only loads plain files.  Every measurement runs in a fresh child process.

* floor      = ncu_report alone: load_report, then for every result action_by_idx, its name
               and the value of every metric the converter reads (metrics.ALL_READ_METRICS)
* conversion = tracecvt to-perfetto of the same plain .ncu-rep (find, read, NVTX, rules,
               layout, write)
* time ratio = conversion / floor                                              goal <= 1.5
Also reported: converting the compressed file directly (decompression included).
"""

from __future__ import annotations

import argparse
import json
import lzma
import gzip
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from childrun import compile_tracecvt, run_child

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "samples" / "ncu" / "h200-nvtx-many" / "many_nvtx.ncu-rep.xz"

FLOOR = r"""
import json, resource, sys, time
import ncu_report
names = json.loads(sys.argv[2])
t = time.perf_counter()
ctx = ncu_report.load_report(sys.argv[1])
n = 0
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for i in range(rng.num_actions()):
        a = rng.action_by_idx(i)
        a.name()
        a.name(ncu_report.IAction.NameBase_DEMANGLED)
        for name in names:
            m = a.metric_by_name(name)
            if m is not None and m.has_value():
                m.value()
        n += 1
dt = time.perf_counter() - t
print(dt, peak_rss_kb(), n)
"""

CONVERT = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
(src,) = find_runs(sys.argv[1])
result = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions(),
                        keep=[])     # the model kept, as the command keeps it
dt = time.perf_counter() - t
print(dt, peak_rss_kb(), result.size)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", type=Path, nargs="?", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args()
    compile_tracecvt(REPO)

    sys.path.insert(0, str(REPO / "benchmarks")); import checkout; checkout.use(REPO)
    from tracecvt.readers.ncu.metrics import ALL_READ_METRICS
    names = json.dumps(list(ALL_READ_METRICS))

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / (a.report.name.split(".ncu-rep")[0] + ".ncu-rep")
        opener = {".xz": lzma.open, ".gz": gzip.open}.get(a.report.suffix)
        if opener:
            with opener(a.report, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        else:
            shutil.copyfile(a.report, plain)
        out = os.path.join(tmp, "out.pftrace")
        floor_t, floor_rss, conv_t, conv_rss, packed_t = [], [], [], [], []
        kernels = size_out = 0
        for _ in range(a.repeat):
            t, rss, kernels = run_child(FLOOR, str(plain), names)
            floor_t.append(t)
            floor_rss.append(rss)
            t, rss, size_out = run_child(CONVERT, str(plain), out, str(REPO))
            conv_t.append(t)
            conv_rss.append(rss)
        if opener:
            t, _rss, _size = run_child(CONVERT, str(a.report), out, str(REPO))
            packed_t.append(t)
        size_plain = plain.stat().st_size

    f_t, c_t = statistics.median(floor_t), statistics.median(conv_t)
    figures = {
        "input": str(a.report),
        "kernels": int(kernels),
        "report_bytes": int(size_plain),
        "pftrace_bytes": int(size_out),
        "metrics_read_per_kernel": len(json.loads(names)),
        "floor_ncu_report_s": round(f_t, 3),
        "convert_s": round(c_t, 3),
        "time_ratio": round(c_t / f_t, 3),
        "floor_runs_s": [round(x, 3) for x in floor_t],
        "convert_runs_s": [round(x, 3) for x in conv_t],
        "convert_compressed_input_s": round(packed_t[0], 3) if packed_t else None,
        "floor_peak_rss_mb": round(max(floor_rss) / 1024, 1),
        "convert_peak_rss_mb": round(max(conv_rss) / 1024, 1),
        "repeat": a.repeat,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    print(f"input: {a.report} ({int(kernels)} kernels, {size_plain / 1e6:.1f} MB plain), "
          f"median of {a.repeat}")
    print("| job | wall time | peak RSS |\n|---|---|---|")
    print(f"| ncu_report: load + read the same metrics (floor) | {f_t:.3f} s | "
          f"{figures['floor_peak_rss_mb']:.0f} MB |")
    print(f"| tracecvt to-perfetto (plain .ncu-rep) | {c_t:.3f} s | "
          f"{figures['convert_peak_rss_mb']:.0f} MB |")
    if packed_t:
        print(f"| tracecvt to-perfetto ({a.report.suffix} input, decompression included) | "
              f"{packed_t[0]:.3f} s | |")
    print()
    print("| figure | measured | goal |\n|---|---|---|")
    print(f"| time ratio (convert / floor) | {figures['time_ratio']} | <= 1.5 |")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
