#!/usr/bin/env python3
"""Benchmark: a simpler run (chip_swimlane_records.json + deps.json) -> .pftrace, as ratios
against floors measured in the same run, and against the runtime's own converter.

    python benchmarks/bench_simpler.py RUN_DIR [--repeat 3] [--scale 10] [--peer SIMPLER]
                                       [--json OUT.json]

RUN_DIR holds chip_swimlane_records.json and deps.json (the largest sample:
../shared/samples/simpler/a2a3sim_tmr_benchmark_bgemm_Case0_L4, 1,000 tasks).  ``--scale K``
also measures a synthetic run made of K copies of it laid end to end (task ids, dispatch
counters, loop iterations and times shifted; edges and deps tasks copied with the new ids), so
the fixed costs of a small run do not hide the per-record ones.  ``--peer`` is a checkout of
hw-native-sys/simpler (fetched for measuring only, never part of this project): its
``python -m simpler_setup.tools.swimlane_converter`` is timed on the same input.  Every
measurement runs in a fresh child process.

Figures (goals from issue 16):
* time ratio  = tracecvt to-perfetto (in-process, from finding the run to the written file;
                the model kept, as the command keeps it, not freed on the clock)
                / (read + orjson.loads of the records and deps.json)                 <= 1.5
* peer speedup = the runtime converter's process / tracecvt's to-perfetto process, both
                 whole processes (interpreter start and imports included)   >= 5 (issue 26)
* size ratio  = .pftrace bytes / the runtime converter's merged_swimlane.json        <= 0.3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from childrun import compile_tracecvt, run_child, side_by_side_slowdown, warm

REPO = Path(__file__).resolve().parents[1]

FLOOR = r"""
import sys, time, orjson
t = time.perf_counter()
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        orjson.loads(f.read())
print(time.perf_counter() - t)
"""

CONVERT = r"""
import sys, time
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
(src,) = find_runs(sys.argv[1])
result = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions(),
                        derived=sys.argv[4] == "1", workers=int(sys.argv[5]),
                        keep=[])     # the model kept, as the command keeps it
print(time.perf_counter() - t, result.size)
"""

READ = r"""
import sys, time
sys.path.insert(0, sys.argv[2] + "/benchmarks"); import checkout; checkout.use(sys.argv[2])
from tracecvt.convert import gc_paused
from tracecvt.readers import ReadOptions, find_runs
t = time.perf_counter()
with gc_paused():
    (src,) = find_runs(sys.argv[1])
    trace = src.read(ReadOptions())
print(time.perf_counter() - t, len(trace.slices))
"""

CLI = r"""
import sys
sys.path.insert(0, sys.argv[1] + "/benchmarks"); import checkout; checkout.use(sys.argv[1])
from tracecvt.entry import run      # what the installed tracecvt command runs
sys.argv = ["tracecvt", *sys.argv[2:]]
run()
"""


def wall(cmd: list[str], env: dict | None = None, cwd: str | None = None,
         inputs: tuple = ()) -> float:
    warm(*inputs)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=cwd)
    return time.perf_counter() - t


# -- a larger run: K copies end to end ---------------------------------------------------------

def scaled_run(run: Path, k: int, out: Path) -> Path:
    rec = json.loads((run / "chip_swimlane_records.json").read_bytes())
    deps = json.loads((run / "deps.json").read_bytes())
    cyc = [x for r in rec["aicore_tasks"] for x in r[3:5]] + \
        [x for r in rec["aicpu_tasks"] for x in r[2:4]]
    cyc += [p[k2] for t in rec.get("aicpu_scheduler_phases", []) for p in t
            for k2 in ("start_cycles", "end_cycles")]
    cyc += [p[k2] for t in rec.get("aicpu_orchestrator_phases", []) for p in t
            for k2 in ("start_cycles", "end_cycles")]
    span = max(cyc) - min(cyc) + 1
    ids = {r[1] for r in rec["aicore_tasks"]} | {int(t["task_id"]) for t in deps["tasks"]}
    ids |= {int(e[x]) for e in deps["edges"] for x in ("pred", "succ")}
    n_local = max(i & 0xFFFFFFFF for i in ids) + 1
    regs: dict[int, int] = {}
    for r in rec["aicore_tasks"]:
        regs[r[0]] = max(regs.get(r[0], 0), r[2])

    def tid(i: int, c: int) -> int:
        return i + c * n_local

    out_rec = dict(rec, aicore_tasks=[], aicpu_tasks=[])
    phases = [[] for _ in rec.get("aicpu_scheduler_phases", [])]
    orch = [[] for _ in rec.get("aicpu_orchestrator_phases", [])]
    loops = [max((p["loop_iter"] for p in t), default=0) + 1
             for t in rec.get("aicpu_scheduler_phases", [])]
    for c in range(k):
        d = c * span
        out_rec["aicore_tasks"] += [[r[0], tid(r[1], c), r[2] + c * regs[r[0]], r[3] + d,
                                     r[4] + d, r[5]] for r in rec["aicore_tasks"]]
        out_rec["aicpu_tasks"] += [[r[0], r[1] + c * regs[r[0]], r[2] + d, r[3] + d]
                                   for r in rec["aicpu_tasks"]]
        for n, t in enumerate(rec.get("aicpu_scheduler_phases", [])):
            for p in t:
                q = dict(p, start_cycles=p["start_cycles"] + d, end_cycles=p["end_cycles"] + d,
                         loop_iter=p["loop_iter"] + c * loops[n])
                if "task_id" in q:
                    q["task_id"] = tid(q["task_id"], c)
                phases[n].append(q)
        for n, t in enumerate(rec.get("aicpu_orchestrator_phases", [])):
            orch[n] += [dict(p, task_id=tid(p["task_id"], c), start_cycles=p["start_cycles"] + d,
                             end_cycles=p["end_cycles"] + d) for p in t]
    if "aicpu_scheduler_phases" in rec:
        out_rec["aicpu_scheduler_phases"] = phases
    if "aicpu_orchestrator_phases" in rec:
        out_rec["aicpu_orchestrator_phases"] = orch
    out_deps = dict(deps, tasks=[], edges=[])
    for c in range(k):
        out_deps["tasks"] += [dict(t, task_id=str(tid(int(t["task_id"]), c)))
                              for t in deps["tasks"]]
        out_deps["edges"] += [dict(e, pred=str(tid(int(e["pred"]), c)),
                                   succ=str(tid(int(e["succ"]), c))) for e in deps["edges"]]
    target = out / f"{run.name}_x{k}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "chip_swimlane_records.json").write_text(json.dumps(out_rec))
    (target / "deps.json").write_text(json.dumps(out_deps, separators=(",", ":")))
    for p in run.glob("name_map*.json"):
        (target / p.name).write_bytes(p.read_bytes())
    return target


# -- measuring --------------------------------------------------------------------------------

def measure(run: Path, repeat: int, peer: Path | None, tmp: Path) -> dict:
    records, deps = run / "chip_swimlane_records.json", run / "deps.json"
    out = str(tmp / "out.pftrace")
    ins = (str(records), str(deps))         # (read before each job: ``childrun.warm``)
    t: dict[str, list[float]] = {}
    size = {}
    for _ in range(repeat):
        t.setdefault("floor", []).append(run_child(FLOOR, str(records), str(deps), inputs=ins)[0])
        s, size["derived"] = run_child(CONVERT, str(run), out, str(REPO), "1", "2", inputs=ins)
        t.setdefault("derived", []).append(s)
        s, size["plain"] = run_child(CONVERT, str(run), out, str(REPO), "0", "2", inputs=ins)
        t.setdefault("plain", []).append(s)
        t.setdefault("one_process", []).append(
            run_child(CONVERT, str(run), out, str(REPO), "1", "1", inputs=ins)[0])
        s, slices = run_child(READ, str(run), str(REPO), inputs=ins)
        t.setdefault("read", []).append(s)
        t.setdefault("cli", []).append(wall([sys.executable, "-c", CLI, str(REPO),
                                             "to-perfetto", str(run), "-o", out, "--force",
                                             "-q"], inputs=ins))
        if peer is not None:
            merged = tmp / "peer_merged.json"
            env = dict(os.environ, PYTHONPATH=f"{peer / 'python'}:{peer}")
            t.setdefault("peer", []).append(wall(
                [sys.executable, "-m", "simpler_setup.tools.swimlane_converter", str(records),
                 "-o", str(merged), "--deps-json", str(deps)], env=env, cwd=str(peer),
                inputs=ins))
            size["peer"] = merged.stat().st_size
    if "peer" not in size:
        beside = sorted(run.glob("merged_swimlane*.json"))
        if beside:
            size["peer"] = beside[0].stat().st_size
    med = {k: statistics.median(v) for k, v in t.items()}
    f = med["floor"]
    fig = {
        "run": str(run), "records_bytes": records.stat().st_size,
        "deps_bytes": deps.stat().st_size, "slices": int(slices),
        "floor_s": round(f, 4), "convert_s": round(med["derived"], 4),
        "convert_no_derived_s": round(med["plain"], 4),
        "convert_one_process_s": round(med["one_process"], 4),
        "read_only_s": round(med["read"], 4), "cli_process_s": round(med["cli"], 3),
        "time_ratio": round(med["derived"] / f, 2),
        "time_ratio_no_derived": round(med["plain"] / f, 2),
        "time_ratio_one_process": round(med["one_process"] / f, 2),
        "time_ratio_read_only": round(med["read"] / f, 2),
        "pftrace_bytes": int(size["derived"]),
        "pftrace_no_derived_bytes": int(size["plain"]),
    }
    if "peer" in med:
        fig["peer_process_s"] = round(med["peer"], 3)
        fig["peer_speedup"] = round(med["peer"] / med["cli"], 2)
    if "peer" in size:
        fig["peer_json_bytes"] = size["peer"]
        fig["size_ratio"] = round(size["derived"] / size["peer"], 3)
        fig["size_ratio_no_derived"] = round(size["plain"] / size["peer"], 3)
    return fig


def report(fig: dict) -> None:
    print(f"\n{fig['run']}: records {fig['records_bytes'] / 1e6:.2f} MB + deps "
          f"{fig['deps_bytes'] / 1e6:.2f} MB, {fig['slices']:,} slices")
    print("| job | wall time |\n|---|---|")
    for label, key in (("read + orjson.loads of records and deps (floor)", "floor_s"),
                       ("tracecvt to-perfetto (in process; derived tracks)", "convert_s"),
                       ("tracecvt to-perfetto --no-derived (in process)", "convert_no_derived_s"),
                       ("tracecvt to-perfetto -j 1 (in process)", "convert_one_process_s"),
                       ("tracecvt reading alone", "read_only_s"),
                       ("tracecvt to-perfetto, whole process", "cli_process_s"),
                       ("runtime swimlane_converter, whole process", "peer_process_s")):
        if key in fig:
            print(f"| {label} | {fig[key]:.4f} s |")
    print("\n| figure | measured | goal |\n|---|---|---|")
    print(f"| time ratio (to-perfetto / floor) | {fig['time_ratio']} "
          f"({fig['time_ratio_no_derived']} --no-derived, {fig['time_ratio_one_process']} "
          f"-j 1; reading alone {fig['time_ratio_read_only']}) | <= 1.5 |")
    if "peer_speedup" in fig:
        print(f"| speedup over the runtime's converter (whole processes) | "
              f"{fig['peer_speedup']} | >= 5 (issue 26; >= 2 issue 16) |")
    if "size_ratio" in fig:
        print(f"| size ratio (.pftrace / merged_swimlane.json) | {fig['size_ratio']} "
              f"({fig['size_ratio_no_derived']} --no-derived) | <= 0.3 |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=int, default=0, help="also a run of K copies end to end")
    ap.add_argument("--peer", type=Path, help="a hw-native-sys/simpler checkout")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.run = a.run.resolve()   # (the peer runs in its own checkout)
    run = a.run if (a.run / "chip_swimlane_records.json").is_file() else \
        next(a.run.rglob("chip_swimlane_records.json")).parent
    compile_tracecvt(REPO)
    slowdown = [side_by_side_slowdown()]
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run] + ([scaled_run(run, a.scale, Path(tmp))] if a.scale > 1 else [])
        for r in runs:
            fig = measure(r, a.repeat, a.peer, Path(tmp))
            report(fig)
            figures.append(fig)
    slowdown.append(side_by_side_slowdown())
    print(f"\nmachine: two processes side by side each took {slowdown[0]} x (before) and "
          f"{slowdown[1]} x (after) the time of one alone; median of {a.repeat}, "
          f"python {sys.version.split()[0]}")
    if a.json:
        a.json.write_text(json.dumps({"runs": figures, "side_by_side_slowdown": slowdown},
                                     indent=2) + "\n")


if __name__ == "__main__":
    main()
