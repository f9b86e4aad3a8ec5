#!/usr/bin/env python3
"""Benchmark: how fast Perfetto's trace_processor opens tracecvt's .pftrace, against the input
it came from and the plain converter's output of the same run.

    python benchmarks/bench_open.py RUN_DIR [--repeat 3] [--json OUT.json]

RUN_DIR is a PyPTO run with a merged_swimlane.json (output/output_*/ or a folder holding one).
The same run is converted three ways, then each file is loaded by
../shared/tools/trace_processor/trace_processor_shell (v58.2), a fresh process per load that
runs one query (``select count(*) from slice``), repeat times; the figures are the median wall
time, CPU time (user + system: steadier than wall time on a shared machine) and the peak RSS of
that process (``wait4``), and the rows of its args table:

* input        = merged_swimlane.json itself (a Chrome JSON trace);
* plain        = the plain converter's .pftrace (benchmarks/plain_converter.py);
* tracecvt     = ``tracecvt to-perfetto`` (derived tracks included, the default);
* no derived   = ``tracecvt to-perfetto --no-derived`` (the plain converter's content).

Goal (issue 17): every tracecvt .pftrace loads no slower than the input and than the plain
converter's output: time ratios tracecvt / input <= 1 and tracecvt / plain <= 1 (wall and
CPU time).
The process start (about 20 ms, measured on an empty trace) is included in every figure; so
is what any protobuf trace costs Trace Processor over a JSON one (about 20 ms more, measured
on a one-packet .pftrace), which dominates small runs: the last line also gives the ratio net
of both.

``--ui N`` also opens the input, the plain converter's and tracecvt's file in the Perfetto UI
itself (v52 in headless Chromium, ../shared/tools/perfetto-ui), N rounds in turn, and gives
the median time from navigation until the tracks are on screen (the UI's own start included,
the same for every file): what a user waits for.
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

from childrun import compile_tracecvt, run_child
from pypto_scaled import merged_file

REPO = Path(__file__).resolve().parents[1]
UI_TOOL = REPO.parent / "shared" / "tools" / "perfetto-ui" / "perfetto_ui.py"
TP = Path(os.environ.get("TRACE_PROCESSOR_SHELL", REPO.parent / "shared" / "tools"
                        / "trace_processor" / "trace_processor_shell"))

CONVERT = r"""
import sys
sys.path.insert(0, sys.argv[3] + "/benchmarks"); import checkout; checkout.use(sys.argv[3])
from pathlib import Path
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
(src,) = find_runs(sys.argv[1], "pypto-merged")
r = convert_source(src, "perfetto", Path(sys.argv[2]), True, ReadOptions(),
                   derived=sys.argv[4] == "1")
print(r.size)
"""


def tp_load(path: str, query: str = "select count(*) from slice"
            ) -> tuple[float, int, str, float]:
    """(wall s, peak RSS kB, stdout, CPU s) of one trace_processor_shell loading ``path``."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as q:
        q.write(query)
    try:
        t = time.perf_counter()
        p = subprocess.Popen([str(TP), "-q", q.name, path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        out = p.stdout.read().decode()
        _, status, usage = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        os.unlink(q.name)
    if p.returncode:
        raise SystemExit(f"trace_processor_shell failed on {path}")
    return dt, usage.ru_maxrss, out, usage.ru_utime + usage.ru_stime


def args_rows(path: str) -> int:
    out = tp_load(path, "select count(*) as n from args")[2]
    return int(out.split()[-1].strip('"'))


def ui_loads(files: dict[str, str], rounds: int, tmp: str) -> dict[str, float]:
    """Median seconds until the Perfetto UI shows each file's tracks, the files opened in
    turn, ``rounds`` times, by one harness run (one browser)."""
    order = [k for _ in range(rounds) for k in files]
    out = subprocess.run([sys.executable, str(UI_TOOL), *(files[k] for k in order), "--out",
                          os.path.join(tmp, "ui"), "--expand", "0", "--no-omnibox-check"],
                         capture_output=True, text=True)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    if len(lines) != len(order) or not all(x["loaded"] for x in lines):
        raise SystemExit(f"the Perfetto UI did not load every file: {out.stderr[-500:]}")
    got: dict[str, list[float]] = {k: [] for k in files}
    for k, line in zip(order, lines):
        got[k].append(line["seconds"])
    return {k: round(statistics.median(v), 3) for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--ui", type=int, default=0, metavar="N",
                    help="also open each file N times in the Perfetto UI (headless Chromium)")
    a = ap.parse_args()
    if not os.access(TP, os.X_OK):
        raise SystemExit(f"no trace_processor_shell at {TP}")
    compile_tracecvt(REPO)
    merged = merged_file(a.run)
    if merged is None:
        raise SystemExit(f"{a.run}: no merged_swimlane.json under it")
    with tempfile.TemporaryDirectory() as tmp:
        if merged.name.endswith(".gz"):     # the samples store it gzipped; PyPTO does not
            import gzip
            import shutil
            plain_json = os.path.join(tmp, "merged_swimlane.json")
            with gzip.open(merged, "rb") as f, open(plain_json, "wb") as g:
                shutil.copyfileobj(f, g, 1 << 20)
            merged = Path(plain_json)
        files = {"input": str(merged), "plain": os.path.join(tmp, "plain.pftrace"),
                 "tracecvt": os.path.join(tmp, "t.pftrace"),
                 "no_derived": os.path.join(tmp, "nd.pftrace")}
        # Every conversion in a child: this process stays small, so a trace_processor it
        # forks starts with little (ru_maxrss counts the forked copy's pages too).
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "plain_converter.py"),
                        str(merged), files["plain"]], check=True, capture_output=True)
        run_child(CONVERT, str(a.run), files["tracecvt"], str(REPO), "1")
        run_child(CONVERT, str(a.run), files["no_derived"], str(REPO), "0")
        empty = os.path.join(tmp, "empty.json")
        Path(empty).write_text('{"traceEvents": []}')
        start = statistics.median(tp_load(empty)[0] for _ in range(a.repeat))
        # The least a protobuf trace costs: one packet holding one track descriptor.
        desc = b"\x08\x01\x12\x01x"                            # uuid 1, name "x"
        body = b"\xe2\x03" + bytes([len(desc)]) + desc + b"\x50\x01"
        one = os.path.join(tmp, "one.pftrace")
        Path(one).write_bytes(b"\x0a" + bytes([len(body)]) + body)
        pf_start = statistics.median(tp_load(one)[0] for _ in range(a.repeat))
        fig: dict = {"run": str(a.run), "tp_start_s": round(start, 3),
                     "tp_start_protobuf_s": round(pf_start, 3)}
        if a.ui:
            fig["ui_load_s"] = ui_loads({k: files[k] for k in ("input", "plain", "tracecvt")},
                                        a.ui, tmp)
        for key, path in files.items():
            runs = [tp_load(path) for _ in range(a.repeat)]
            fig[key] = {"bytes": os.path.getsize(path),
                        "load_s": round(statistics.median(r[0] for r in runs), 3),
                        "cpu_s": round(statistics.median(r[3] for r in runs), 3),
                        "peak_rss_mb": round(max(r[1] for r in runs) / 1024, 1),
                        "args_rows": args_rows(path)}
    for m in ("load_s", "cpu_s"):
        t = fig["tracecvt"][m]
        fig[f"ratio_vs_input_{m}"] = round(t / fig["input"][m], 3)
        fig[f"ratio_vs_plain_{m}"] = round(t / fig["plain"][m], 3)
        fig[f"ratio_no_derived_vs_input_{m}"] = round(fig["no_derived"][m] / fig["input"][m], 3)
        fig[f"ratio_no_derived_vs_plain_{m}"] = round(fig["no_derived"][m] / fig["plain"][m], 3)
    # Net of what opening any file of each kind costs (an empty JSON trace, a one-packet
    # .pftrace): what the content itself costs.
    fig["ratio_vs_input_net_of_start"] = round(
        (fig["tracecvt"]["load_s"] - fig["tp_start_protobuf_s"])
        / max(fig["input"]["load_s"] - fig["tp_start_s"], 1e-3), 3)
    fig["memory_ratio_vs_plain"] = round(fig["tracecvt"]["peak_rss_mb"]
                                         / fig["plain"]["peak_rss_mb"], 3)
    print(f"{'file':<12} {'MB':>8} {'load s':>8} {'CPU s':>8} {'peak MB':>8} {'args rows':>10}")
    for key in ("input", "plain", "tracecvt", "no_derived"):
        f = fig[key]
        print(f"{key:<12} {f['bytes'] / 1e6:>8.2f} {f['load_s']:>8.3f} {f['cpu_s']:>8.3f} "
              f"{f['peak_rss_mb']:>8.1f} {f['args_rows']:>10,}")
    for m, what in (("load_s", "wall time"), ("cpu_s", "CPU time")):
        print(f"{what}: tracecvt / input {fig[f'ratio_vs_input_{m}']}, tracecvt / plain "
              f"{fig[f'ratio_vs_plain_{m}']}; --no-derived / input "
              f"{fig[f'ratio_no_derived_vs_input_{m}']}, / plain "
              f"{fig[f'ratio_no_derived_vs_plain_{m}']}")
    print(f"memory vs plain {fig['memory_ratio_vs_plain']}; process start {fig['tp_start_s']} s "
          f"included (an empty JSON trace; a one-packet .pftrace: {fig['tp_start_protobuf_s']} s); "
          f"net of those, tracecvt / input {fig['ratio_vs_input_net_of_start']}")
    ui = fig.get("ui_load_s")
    if ui:
        print(f"Perfetto UI ({a.ui} rounds, median s from navigation, its start included): "
              + ", ".join(f"{k} {v}" for k, v in ui.items())
              + f"; tracecvt / input {round(ui['tracecvt'] / ui['input'], 3)}, / plain "
              f"{round(ui['tracecvt'] / ui['plain'], 3)}")
    if a.json:
        a.json.write_text(json.dumps(fig, indent=1))


if __name__ == "__main__":
    main()
