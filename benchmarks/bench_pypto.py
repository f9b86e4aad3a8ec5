#!/usr/bin/env python3
"""Benchmark: PyPTO merged_swimlane.json -> .pftrace, as ratios against floors measured in
the same run.

    python benchmarks/bench_pypto.py RUN_DIR [--repeat 3] [--json OUT.json] [--no-plain]

RUN_DIR is a PyPTO run (output/output_*/ or a folder holding one) with a merged_swimlane.json;
make a big one with ../shared/tools/pypto-sample/ (see docs/performance.md).  Every
measurement runs in a fresh child process, so peak RSS (its VmHWM, childrun.peak_rss_kb) is
that job's alone.

Figures (goals from issues 2 and 6):
* time ratio    = tracecvt to-perfetto wall time / (read + orjson.loads of the same file) <= 1.5
                  (in process, the model kept as the command keeps it: not freed on the clock)
                  (measured with the derived tracks, the default, with --no-derived, and
                  in one process: -j 1)
* plain speedup = plain converter (json + one perfetto_trace_pb2 packet per event through
                  TraceProtoBuilder, benchmarks/plain_converter.py) / tracecvt           >= 2.5
* size ratio    = .pftrace bytes / merged_swimlane.json bytes                             <= 0.25
* size vs Chrome = .pftrace bytes / tracecvt's compact Chrome JSON of the same run         <= 0.5
* lower bound   = (reading + analyses + derived tracks, nothing written) / floor: what the
                  two-process conversion cannot go below whatever its writer costs, since
                  this process writes the derived lanes after the analyses
* memory ratio  = peak RSS of the conversion / peak RSS of read + orjson.loads alone      <= 1.2
                  (the conversion's peak plus that of the process its writer forks, if any)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from childrun import compile_tracecvt, side_by_side_slowdown, run_child
from pypto_scaled import merged_file

REPO = Path(__file__).resolve().parents[1]

FLOOR = r"""
import resource, sys, time, orjson
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    data = f.read()
if sys.argv[1].endswith(".gz"):
    import gzip
    data = gzip.decompress(data)
doc = orjson.loads(data)
dt = time.perf_counter() - t
print(dt, peak_rss_kb())
"""

CONVERT = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
(src,) = find_runs(sys.argv[1], sys.argv[4] or None)
result = convert_source(src, sys.argv[6], Path(sys.argv[2]), True, ReadOptions(),
                        derived=sys.argv[5] == "1",
                        workers=int(sys.argv[7]) if len(sys.argv) > 7 else None,
                        keep=[])     # the model kept, as the command keeps it
dt = time.perf_counter() - t
# The writer may fork a second process: count its peak too (the sum is an upper bound, as
# the two share the model's pages copy-on-write).
rss = (peak_rss_kb()
       + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(dt, rss, result.size)
"""

# What a conversion does before its writer can finish, whatever the writer costs: reading
# the run and adding the derived tracks (the analyses), with nothing written.  Printed: the
# time to the end of the reading, peak RSS, then the time to the end of the analyses.
BOUND = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[2] + "/benchmarks"); import checkout; checkout.use(sys.argv[2])
from tracecvt.analyses import add_derived
from tracecvt.convert import gc_paused
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
with gc_paused():
    (src,) = find_runs(sys.argv[1], None)
    trace = src.read(ReadOptions())
    read = time.perf_counter() - t
    add_derived(trace)
    dt = time.perf_counter() - t
print(read, peak_rss_kb(), dt)
"""

PLAIN = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3])
from plain_converter import convert
t = time.perf_counter()
convert(sys.argv[1], sys.argv[2])
print(time.perf_counter() - t, peak_rss_kb())
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--no-plain", action="store_true",
                    help="skip the (slow) plain reference converter")
    a = ap.parse_args()
    compile_tracecvt(REPO)
    slowdown_before = side_by_side_slowdown()

    merged = merged_file(a.run)
    if merged is None:
        sys.exit(f"{a.run}: no merged_swimlane.json(.gz) below it")
    size_in = merged.stat().st_size
    times: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}

    def measure(key: str, code: str, *args: str) -> None:
        out = run_child(code, *args, inputs=(str(a.run),))
        times.setdefault(key, []).append(out[0])
        rss.setdefault(key, []).append(out[1])
        if len(out) > 2:
            sizes[key] = int(out[2])

    def measure_bound() -> None:
        read, peak, analysed = run_child(BOUND, str(a.run), str(REPO), inputs=(str(a.run),))
        times.setdefault("read", []).append(read)
        times.setdefault("bound", []).append(analysed)
        rss.setdefault("bound", []).append(peak)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.pftrace")
        for _ in range(a.repeat):
            measure("floor", FLOOR, str(merged))
            measure("derived", CONVERT, str(a.run), out, str(REPO), "", "1", "perfetto")
            measure("plain_model", CONVERT, str(a.run), out, str(REPO), "", "0", "perfetto")
            measure("one_process", CONVERT, str(a.run), out, str(REPO), "", "1", "perfetto",
                    "1")
            measure_bound()
        if any(a.run.rglob("_simulate.swim.json*")):   # (a made run has no raw files)
            measure("raw", CONVERT, str(a.run), out, str(REPO), "pypto-raw", "1", "perfetto")
        measure("chrome", CONVERT, str(a.run), os.path.join(tmp, "out.json"), str(REPO), "",
                "1", "chrome")
        if not a.no_plain:
            measure("plain", PLAIN, str(merged), os.path.join(tmp, "plain.pftrace"),
                    str(REPO / "benchmarks"))
    med = {k: statistics.median(v) for k, v in times.items()}
    peak = {k: max(v) for k, v in rss.items()}
    f_t = med["floor"]
    figures = {
        "input": str(merged),
        "input_bytes": int(size_in),
        "pftrace_bytes": sizes["derived"],
        "pftrace_no_derived_bytes": sizes["plain_model"],
        "chrome_json_bytes": sizes["chrome"],
        "floor_read_orjson_s": round(f_t, 3),
        "convert_s": round(med["derived"], 3),
        "convert_no_derived_s": round(med["plain_model"], 3),
        "convert_raw_path_s": round(med["raw"], 3) if "raw" in med else None,
        "plain_converter_s": round(med["plain"], 3) if "plain" in med else None,
        "time_ratio": round(med["derived"] / f_t, 3),
        "time_ratio_no_derived": round(med["plain_model"] / f_t, 3),
        "convert_one_process_s": round(med["one_process"], 3),
        "read_only_s": round(med["read"], 3),
        "read_and_analyses_s": round(med["bound"], 3),
        "time_ratio_read_only": round(med["read"] / f_t, 3),
        "time_ratio_no_writing": round(med["bound"] / f_t, 3),
        "plain_speedup_no_writing": (round(med["plain"] / med["bound"], 2)
                                     if "plain" in med else None),
        "time_ratio_one_process": round(med["one_process"] / f_t, 3),
        "plain_speedup": round(med["plain"] / med["derived"], 2) if "plain" in med else None,
        "plain_speedup_no_derived": (round(med["plain"] / med["plain_model"], 2)
                                     if "plain" in med else None),
        "size_ratio": round(sizes["derived"] / size_in, 3),
        "size_ratio_no_derived": round(sizes["plain_model"] / size_in, 3),
        "size_vs_chrome": round(sizes["derived"] / sizes["chrome"], 3),
        "floor_peak_rss_mb": round(peak["floor"] / 1024, 1),
        "convert_peak_rss_mb": round(peak["derived"] / 1024, 1),
        "memory_ratio": round(peak["derived"] / peak["floor"], 3),
        "memory_ratio_no_derived": round(peak["plain_model"] / peak["floor"], 3),
        "repeat": a.repeat,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "side_by_side_slowdown": [slowdown_before, side_by_side_slowdown()],
    }
    rows = [
        ("read + orjson.loads (floor)", "floor"),
        ("tracecvt to-perfetto (derived tracks, the default)", "derived"),
        ("tracecvt to-perfetto --no-derived", "plain_model"),
        ("tracecvt to-perfetto -j 1 (one process)", "one_process"),
        ("reading alone (tracecvt's reader, one process's view)", "read"),
        ("reading + analyses + derived tracks, nothing written", "bound"),
        ("tracecvt to-perfetto --from pypto-raw", "raw"),
        ("tracecvt to-chrome", "chrome"),
        ("plain converter (json + TraceProtoBuilder)", "plain"),
    ]
    print(f"input: {merged} ({size_in / 1e6:.1f} MB), median of {a.repeat}")
    print(_MACHINE.format(*figures["side_by_side_slowdown"]))
    print("| job | wall time | peak RSS | output |\n|---|---|---|---|")
    for label, key in rows:
        if key in med:
            size = f"{sizes[key] / 1e6:.1f} MB" if key in sizes else ""
            mem = f"{peak[key] / 1024:.0f} MB" if key in peak else ""
            print(f"| {label} | {med[key]:.3f} s | {mem} | {size} |")
    print()
    print("| figure | measured | goal |\n|---|---|---|")
    print(f"| time ratio (to-perfetto / floor) | {figures['time_ratio']} "
          f"({figures['time_ratio_no_derived']} with --no-derived, "
          f"{figures['time_ratio_one_process']} with -j 1) | <= 1.5 |")
    if figures["plain_speedup"]:
        print(f"| speedup over the plain converter | {figures['plain_speedup']} "
              f"({figures['plain_speedup_no_derived']} with --no-derived, the plain "
              "converter's content) | >= 2.5 |")
    bound = (f"{figures['time_ratio_no_writing']} (reading alone "
             f"{figures['time_ratio_read_only']})")
    if figures["plain_speedup_no_writing"]:
        bound += f"; speedup over the plain converter {figures['plain_speedup_no_writing']}"
    print(f"| lower bound: reading + analyses, nothing written / floor | {bound} "
          "| what any writer adds to |")
    print(f"| size ratio (.pftrace / JSON) | {figures['size_ratio']} "
          f"({figures['size_ratio_no_derived']} with --no-derived) | <= 0.25 |")
    print(f"| .pftrace / tracecvt Chrome JSON | {figures['size_vs_chrome']} | <= 0.5 |")
    print(f"| memory ratio (peak RSS) | {figures['memory_ratio']} "
          f"({figures['memory_ratio_no_derived']} with --no-derived) | <= 1.2 |")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


_MACHINE = ("machine: two processes building Python objects side by side each took {} x "
            "(before) and {} x (after) the time of one alone (1.0: no contention; the "
            "two-process figures move with it)")


if __name__ == "__main__":
    main()
