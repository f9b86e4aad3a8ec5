#!/usr/bin/env python3
"""Benchmark: loading a model archive (.tcmodel) vs parsing the run's source files.

    python benchmarks/bench_model.py RUN [--repeat 3] [--json OUT.json] [--no-pftrace]

RUN is anything `tracecvt` reads as one run (a PyPTO output/output_*/ directory, a file); the
largest available is the PyPTO run made as in docs/performance.md.  Every measurement runs in
a fresh child process with the garbage collector paused, as tracecvt's conversions read runs
(``--gc`` leaves it enabled).

Figures (goal from issue 6):
* load ratio = parse time (find the run + Source.read()) / load time (find + read the .tcmodel)
  >= 5
* sizes: .tcmodel bytes vs the source files and vs the .pftrace of the same run
The write child also loads the file back and checks the model is identical
(tracecvt.modelfile.compare), so the figures are for a lossless archive.
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

from childrun import compile_tracecvt

REPO = Path(__file__).resolve().parents[1]

READ = r"""
import contextlib, sys, time
sys.path.insert(0, sys.argv[2] + "/benchmarks"); import checkout; checkout.use(sys.argv[2])
from tracecvt.convert import gc_paused
from tracecvt.readers import ReadOptions, find_runs
with gc_paused() if sys.argv[3] == "paused" else contextlib.nullcontext():
    t = time.perf_counter()
    (src,) = find_runs(sys.argv[1])
    trace = src.read(ReadOptions())
    dt = time.perf_counter() - t
print(dt, len(trace.slices))
"""

WRITE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[4] + "/benchmarks"); import checkout; checkout.use(sys.argv[4])
from pathlib import Path
from tracecvt.convert import convert_source, gc_paused
from tracecvt.modelfile.compare import model_differences
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.writers.model import encode_model
(src,) = find_runs(sys.argv[1])
with gc_paused():
    t = time.perf_counter()
    result = convert_source(src, "model", Path(sys.argv[2]), True, ReadOptions())
    write_s = time.perf_counter() - t
    trace = src.read(ReadOptions())
    (back,) = find_runs(sys.argv[2])
    diffs = model_differences(trace, back.read(ReadOptions()))
    raw = len(encode_model(trace))
pf = 0
if sys.argv[3]:             # the same model as Perfetto protobuf (no derived tracks)
    from tracecvt.writers.perfetto import write_perfetto
    with open(sys.argv[3], "wb") as f:
        write_perfetto(trace, f)
    pf = os.path.getsize(sys.argv[3])
files = {str(p): os.path.getsize(p) for p in set(src.files.values())}
main = src.files.get("merged")
print(json.dumps({"write_s": write_s, "model_bytes": result.size, "model_raw_bytes": raw,
                  "pftrace_bytes": pf, "identical": not diffs, "differences": diffs[:5],
                  "source_files_bytes": sum(files.values()),
                  "main_file": str(main) if main else None,
                  "main_file_bytes": os.path.getsize(main) if main else None,
                  "counts": trace.stats()}))
"""


def run_child(code: str, *args: str) -> str:
    return subprocess.run([sys.executable, "-c", code, *args], check=True,
                          capture_output=True, text=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--no-pftrace", action="store_true",
                    help="skip writing the .pftrace used for the size comparison")
    ap.add_argument("--gc", action="store_true",
                    help="leave the garbage collector enabled while reading (default: paused, "
                         "as tracecvt's conversions do)")
    a = ap.parse_args()
    compile_tracecvt(REPO)

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "run.tcmodel")
        pftrace = "" if a.no_pftrace else os.path.join(tmp, "run.pftrace")
        w = json.loads(run_child(WRITE, str(a.run), model, pftrace, str(REPO)))
        if not w["identical"]:
            sys.exit(f"round trip NOT identical: {w['differences']}")
        parse_t, load_t = [], []
        for _ in range(a.repeat):
            gc_mode = "enabled" if a.gc else "paused"
            parse_t.append(float(run_child(READ, str(a.run), str(REPO), gc_mode).split()[0]))
            load_t.append(float(run_child(READ, model, str(REPO), gc_mode).split()[0]))

    p, l_ = statistics.median(parse_t), statistics.median(load_t)
    figures = {
        "run": str(a.run),
        "counts": w["counts"],
        "parse_s": round(p, 3),
        "load_s": round(l_, 3),
        "load_ratio": round(p / l_, 1),
        "write_model_s": round(w["write_s"], 3),
        "model_bytes": w["model_bytes"],
        "model_uncompressed_bytes": w["model_raw_bytes"],
        "main_file": w["main_file"],
        "main_file_bytes": w["main_file_bytes"],
        "source_files_bytes": w["source_files_bytes"],
        "pftrace_bytes": w["pftrace_bytes"] or None,
        "round_trip_identical": w["identical"],
        "gc": "enabled" if a.gc else "paused",
        "repeat": a.repeat,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    mb = 1e6
    print(f"run: {a.run}  ({w['counts']['slices']} slices, {w['counts']['flows']} flows, "
          f"{w['counts']['counter_samples']} counter samples); median of {a.repeat}, "
          f"garbage collector {'enabled' if a.gc else 'paused'}")
    print("| job | wall time |\n|---|---|")
    print(f"| parse the source (find + Source.read) | {p:.3f} s |")
    print(f"| load the .tcmodel (find + read) | {l_:.3f} s |")
    print(f"| write the .tcmodel (read + write, once) | {w['write_s']:.3f} s |")
    print()
    print("| figure | measured | goal |\n|---|---|---|")
    print(f"| load ratio (parse / load) | {figures['load_ratio']} | >= 5 |")
    print(f"| .tcmodel size | {w['model_bytes'] / mb:.2f} MB "
          f"({w['model_raw_bytes'] / mb:.2f} MB uncompressed) | |")
    if w["main_file_bytes"]:
        print(f"| .tcmodel / {Path(w['main_file']).name} | "
              f"{w['model_bytes'] / w['main_file_bytes']:.4f} "
              f"({w['main_file_bytes'] / mb:.1f} MB) | |")
    print(f"| .tcmodel / all source files | "
          f"{w['model_bytes'] / w['source_files_bytes']:.4f} "
          f"({w['source_files_bytes'] / mb:.1f} MB) | |")
    if w["pftrace_bytes"]:
        print(f"| .tcmodel / .pftrace | {w['model_bytes'] / w['pftrace_bytes']:.3f} "
              f"({w['pftrace_bytes'] / mb:.1f} MB) | |")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
