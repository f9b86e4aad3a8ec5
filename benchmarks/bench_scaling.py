#!/usr/bin/env python3
"""Benchmark: how the cost of a conversion grows with the work (issue 26) — time and peak
memory per event from a small run to runs 10, 100 and 1,000 times larger.

    python benchmarks/bench_scaling.py [--simpler RUN_DIR] [--scales 1,10,100,1000]
                                       [--pypto RUN ...] [--workers 2] [--json OUT]

simpler: the real run ``RUN_DIR`` (default: the 1,000-task bgemm sample) and copies of it
laid end to end (``bench_simpler.scaled_run``: task ids, dispatch counters, loop iterations
and times shifted; **made by repeating a real run along the time axis**, not collected).
PyPTO: the real runs given with ``--pypto`` (e.g. the samples' ffn_medium, ffn_large and a
90,112-task run made with ../shared/tools/pypto-sample), as they are; and with
``--pypto-scales``, copies of the real run ``--pypto-run`` (default: the samples' ffn_medium)
laid end to end (``pypto_scaled.scaled_merged``: its merged_swimlane.json alone, seqNo,
taskId, event and flow ids and times shifted; **made by repeating a real run along the time
axis**, not collected).

Each conversion (``to-perfetto`` with derived tracks, ``--workers`` processes) runs in a
fresh child process.  Events = slices + instants + counter samples + flows of the written
trace (the writer's counts).  Peak memory = the converting process's peak RSS (VmHWM) plus its
forked writer's (an upper bound: pages they share are counted twice).  Machine memory = the
converting process's peak RSS plus what its forked helper adds: the helper's own pages (not
those it still shares), read as its work ends.  CPU = user and system seconds of the
conversion's processes; on a VM the system part includes the host's backing of memory
touched for the first time, measured on its own before and after (``first_touch_cost``).

Net figures leave out the process's fixed part, which no run's size changes: the modules a
conversion loads are imported before its clock (their time is added back in the raw
figure), and net memory is the peak RSS above the RSS the process had then (the forked
writer's above the same).  Small runs are dominated by that fixed part; the net figures
show how the cost of the work itself grows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench_simpler import scaled_run
from pypto_scaled import scaled_merged
from childrun import compile_tracecvt, first_touch_cost, run_child

REPO = Path(__file__).resolve().parents[1]
SIMPLER = REPO.parent / "shared" / "samples" / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L4"
PYPTO = REPO.parent / "shared" / "samples" / "pypto" / "ffn_medium"

CONVERT = r"""
import os, resource, sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
# The modules a conversion loads on first use (every reader's, analysis's and writer's,
# with what they import: numpy, msgspec), imported before the clock: a fixed cost, timed
# on its own; the RSS after them is the process's fixed memory.
t = time.perf_counter()
import importlib, pkgutil, tracecvt.analyses, tracecvt.readers, tracecvt.writers
for pkg in (tracecvt.readers, tracecvt.analyses, tracecvt.writers):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        try:
            importlib.import_module(m.name)
        except ImportError:             # an optional extra's module
            pass
imports = time.perf_counter() - t
with open("/proc/self/statm") as f:
    base = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
# What a forked helper (the writer's second half; the PyPTO reader's pass) adds to the
# machine's memory: its own pages, not those it still shares with this process, read as its
# work ends; the largest of them (the helpers run one after another).
import tracecvt.forkpass as fp
def counted(fn):
    def work():
        out = fn()
        with open("/proc/self/smaps_rollup") as f:
            kb = sum(int(x.split()[1]) for x in f
                     if x.startswith(("Private_Clean", "Private_Dirty")))
        with open(sys.argv[5], "a") as f:
            f.write(f"{kb}\n")
        return out
    return work
_fork_pass = fp.fork_pass
for m in list(sys.modules.values()):
    if getattr(m, "fork_pass", None) is _fork_pass:
        m.fork_pass = lambda fn, *wire: _fork_pass(counted(fn), *wire)
ru = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
(src,) = find_runs(sys.argv[1])
r = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions(), derived=True,
                   workers=int(sys.argv[4]), keep=[])    # (kept, as the command keeps it)
dt = time.perf_counter() - t
c = r.counts
events = c.get("slices", 0) + c.get("instants", 0) + c.get("counter_samples", 0) \
    + c.get("flows", 0) - c.get("flows_not_drawn", 0)
own = peak_rss_kb()
kids = resource.getrusage(resource.RUSAGE_CHILDREN)     # the forked writer, reaped
me = resource.getrusage(resource.RUSAGE_SELF)
user = me.ru_utime - ru.ru_utime + kids.ru_utime
system = me.ru_stime - ru.ru_stime + kids.ru_stime
try:
    with open(sys.argv[5]) as f:
        private = max(map(int, f.read().split()), default=0)
except OSError:
    private = 0
print(dt, events, own, kids.ru_maxrss, r.size, imports, base, user, system, private)
"""


def _records_dir(run: Path) -> Path:
    return run if (run / "chip_swimlane_records.json").is_file() else \
        next(run.rglob("chip_swimlane_records.json")).parent


def measure(run: Path, out: Path, workers: int) -> dict:
    t0 = time.perf_counter()
    helper = out.with_name("helper_private_kb")
    helper.unlink(missing_ok=True)
    dt, events, own, child, size, imports, base, user, system, private = run_child(
        CONVERT, str(run), str(out), str(REPO), str(workers), str(helper), inputs=(str(run),))
    peak = (own + child) * 1024
    # Net of the fixed part: the time without the imports; the memory above the RSS the
    # process had before converting (for the forked writer too: it starts with those pages).
    net_peak = (own - base + (child - base if child else 0)) * 1024
    return {"run": str(run), "events": int(events), "convert_s": round(dt + imports, 3),
            "imports_s": round(imports, 3), "net_convert_s": round(dt, 3),
            "process_s": round(time.perf_counter() - t0, 3),
            "peak_rss_bytes": int(peak), "fixed_rss_bytes": int(base * 1024),
            "net_peak_rss_bytes": int(net_peak), "pftrace_bytes": int(size),
            "us_per_event": round((dt + imports) / events * 1e6, 3),
            "bytes_per_event": round(peak / events, 1),
            "net_us_per_event": round(dt / events * 1e6, 3),
            "net_bytes_per_event": round(net_peak / events, 1),
            "helper_private_bytes": int(private * 1024),
            "machine_peak_bytes_per_event": round((own + private) * 1024 / events, 1),
            "net_machine_peak_bytes_per_event": round((own - base + private) * 1024 / events,
                                                      1),
            "user_cpu_s": round(user, 3), "system_cpu_s": round(system, 3),
            "user_us_per_event": round(user / events * 1e6, 3),
            "system_us_per_event": round(system / events * 1e6, 3)}


def flatness(rows: list[dict], key: str, floor_events: int = 10_000) -> float | None:
    """max / min of ``key`` over the runs of at least ``floor_events`` events; None where
    fewer than two runs have it or one measured 0 (a short run's system CPU time: the
    kernel counts it in clock ticks), which no ratio can be made of."""
    vals = [r[key] for r in rows if r["events"] >= floor_events]
    return round(max(vals) / min(vals), 3) if len(vals) > 1 and min(vals) > 0 else None


def report(family: str, rows: list[dict]) -> dict:
    print(f"\n{family}")
    print("| run | events | convert | µs / event | peak RSS | bytes / event "
          "| net: µs / event | net: bytes / event | net: machine bytes / event "
          "| CPU µs / event: user; system |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {Path(r['run']).name} | {r['events']:,} | {r['convert_s']:.2f} s | "
              f"{r['us_per_event']:.3f} | {r['peak_rss_bytes'] / 2**30:.2f} GiB | "
              f"{r['bytes_per_event']:.0f} | {r['net_us_per_event']:.3f} | "
              f"{r['net_bytes_per_event']:.0f} | {r['net_machine_peak_bytes_per_event']:.0f} | "
              f"{r['user_us_per_event']:.3f}; "
              f"{r['system_us_per_event']:.3f} |")
    fig = {"family": family, "runs": rows,
           "time_per_event_max_over_min": flatness(rows, "us_per_event"),
           "memory_per_event_max_over_min": flatness(rows, "bytes_per_event"),
           "net_time_per_event_max_over_min": flatness(rows, "net_us_per_event"),
           "net_memory_per_event_max_over_min": flatness(rows, "net_bytes_per_event"),
           "net_machine_memory_per_event_max_over_min": flatness(
               rows, "net_machine_peak_bytes_per_event"),
           "user_cpu_per_event_max_over_min": flatness(rows, "user_us_per_event"),
           "system_cpu_per_event_max_over_min": flatness(rows, "system_us_per_event")}
    print(f"per event, runs of 10k events and more, max / min (goal <= 1.25): time "
          f"{fig['time_per_event_max_over_min']}, memory "
          f"{fig['memory_per_event_max_over_min']}; net of the fixed part (imports "
          f"{min(r['imports_s'] for r in rows):.2f} s, "
          f"{min(r['fixed_rss_bytes'] for r in rows) / 2**20:.0f} MiB): time "
          f"{fig['net_time_per_event_max_over_min']}, memory "
          f"{fig['net_memory_per_event_max_over_min']} (machine memory "
          f"{fig['net_machine_memory_per_event_max_over_min']}); CPU of the conversion's "
          "processes: "
          f"user {fig['user_cpu_per_event_max_over_min']}, system (the kernel: page faults) "
          f"{fig['system_cpu_per_event_max_over_min']}")
    return fig


def _scaled_rows(scales: str, make, real: Path | None, out: Path, a) -> list[dict]:
    """Per scale of ``scales`` (comma-separated copies): the run ``make(k)`` converted
    ``a.repeat`` times, the median's figures; a made run's files are deleted after (``real``,
    the real run itself, is kept)."""
    rows = []
    for k in (int(x) for x in scales.split(",")):
        made = make(k)
        runs = [measure(made, out, a.workers) for _ in range(a.repeat)]
        rows.append({"scale": k, **sorted(runs, key=lambda r: r["convert_s"])[
            (len(runs) - 1) // 2]})
        if made != real:
            for p in made.iterdir():
                p.unlink()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simpler", type=Path, default=SIMPLER)
    ap.add_argument("--scales", default="1,10,100", help="simpler copies, comma-separated")
    ap.add_argument("--pypto", type=Path, nargs="*", default=[], help="real PyPTO runs")
    ap.add_argument("--pypto-run", type=Path, default=PYPTO,
                    help="the real PyPTO run --pypto-scales copies")
    ap.add_argument("--pypto-scales", default="",
                    help="copies of --pypto-run laid end to end, comma-separated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1,
                    help="conversions per simpler run (the median's figures are shown)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    compile_tracecvt(REPO)
    touch = [first_touch_cost()]
    print(f"first touch of new memory here: {touch[0]['s_per_gib']} s / GiB "
          f"({touch[0]['system_s_per_gib']} s / GiB in the kernel), after "
          f"{touch[0]['idle_s']:.0f} s idle")
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        out = tmpd / "out.pftrace"
        run = _records_dir(a.simpler.resolve())
        rows = _scaled_rows(a.scales, lambda k: run if k == 1 else
                            scaled_run(run, k, tmpd / f"x{k}"), run, out, a)
        figures.append(report("simpler (copies of a real run laid end to end)", rows))
        if a.pypto:
            rows = [measure(p.resolve(), out, a.workers) for p in a.pypto]
            figures.append(report("PyPTO 0.2 (real runs)", rows))
        if a.pypto_scales:
            rows = _scaled_rows(a.pypto_scales, lambda k: scaled_merged(
                a.pypto_run.resolve(), k, tmpd / f"pypto_x{k}"), None, out, a)
            figures.append(report(f"PyPTO 0.2 (copies of {a.pypto_run.name} laid end to end)",
                                  rows))
    touch.append(first_touch_cost())
    print(f"\nfirst touch of new memory, again: {touch[1]['s_per_gib']} s / GiB "
          f"({touch[1]['system_s_per_gib']} s / GiB in the kernel)")
    print(f"python {sys.version.split()[0]}; {a.workers} process(es) per conversion")
    if a.json:
        a.json.write_text(json.dumps({"families": figures, "first_touch": touch}, indent=2)
                          + "\n")


if __name__ == "__main__":
    main()
