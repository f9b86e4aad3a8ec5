#!/usr/bin/env python3
"""The dedicated fuzzing run: N generated inputs per reader family, counted.

    python benchmarks/fuzz_run.py                       # 10,000 per family (CI families)
    python benchmarks/fuzz_run.py --examples 500 --family pypto-merged --family ncu-rep
    python benchmarks/fuzz_run.py --all --json fuzz.json    # also the slow families

Each family runs in a child process, so that a native crash (an abort inside a C
extension) is reported with the input that caused it instead of ending the run.  Unlike the
pytest run (tests/test_fuzz_readers.py: stops at the first failure and shrinks
it), every example here is run and counted: converted, failed cleanly (one error line, exit
2), or broke the contract (tests/fuzzing.py: an uncaught exception, the "tracecvt bug" line,
a several-line error, an invalid trace).  Broken contracts are grouped by their first line,
with the input that first showed each, and the exit code is 1 when there is any.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO)]

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fuzzing  # noqa: E402


def run_family(fam: fuzzing.Family, examples: int, where: Path, progress: bool) -> dict:
    counts = collections.Counter()
    errors = collections.Counter()
    violations: dict[str, dict] = {}
    start = time.perf_counter()

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        info = {}
        try:
            outcome, info = fuzzing.fuzz_one(fam, data.draw, where)
        except fuzzing.ContractViolation as e:
            info = getattr(e, "info", info)
            counts["violation"] += 1
            text = str(e)
            key = text.splitlines()[0][:160]
            key = " ".join(w if not w.startswith(("/", "'/")) else "<path>" for w in key.split())
            v = violations.setdefault(key, {"count": 0, "first": text[:4000], "input": info})
            v["count"] += 1
            return
        counts["converted" if outcome.converted else "error"] += 1
        if outcome.converted and outcome.warnings:
            counts["converted_with_warnings"] += 1
        if not outcome.converted:
            line = outcome.stderr.strip()
            what = line.split(": ", 3)[-1][:60] if ": " in line else line[:60]
            errors[what] += 1
        n = sum(counts[k] for k in ("converted", "error", "violation"))
        if progress and n % 500 == 0:
            print(f"  {fam.name}: {n} examples, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)

    one()
    total = sum(counts[k] for k in ("converted", "error", "violation"))
    return {"family": fam.name, "examples": total, "seconds": round(time.perf_counter() - start, 1),
            "converted": counts["converted"],
            "converted_with_warnings": counts["converted_with_warnings"],
            "clean_errors": counts["error"], "violations": counts["violation"],
            "violation_kinds": violations,
            "top_errors": errors.most_common(12)}


def run_child(fam: fuzzing.Family, examples: int, quiet: bool) -> dict:
    """``run_family`` in a child process: a native crash (an abort in a C extension, which
    no Python code can catch) is counted instead of ending the run.  The input being
    converted when the child died is left in its folder (printed)."""
    where = Path(tempfile.mkdtemp(prefix=f"fuzz-{fam.name}-"))
    out = where / "result.json"
    cmd = [sys.executable, __file__, "--child", "--family", fam.name, "--examples",
           str(examples), "--where", str(where / "work"), "--json", str(out)]
    proc = subprocess.run(cmd + (["-q"] if quiet else []), stderr=subprocess.PIPE, text=True)
    if proc.returncode in (0, 1) and out.exists():
        (result,) = json.loads(out.read_text())
        shutil.rmtree(where, ignore_errors=True)
        return result
    done = [int(m) for m in re.findall(rf"{re.escape(fam.name)}: (\d+) examples", proc.stderr)]
    native = [line for line in proc.stderr.splitlines() if line.startswith(("F0000", "***"))]
    current = where / "work" / "current.json"
    what = json.loads(current.read_text()) if current.exists() else None
    return {"family": fam.name, "examples": done[-1] if done else 0, "seconds": None,
            "crashed": {"exit": proc.returncode, "native_error": native[:2],
                        "input_kept_in": str(where / "work" / "in"), "input": what,
                        "stderr_tail": proc.stderr.strip().splitlines()[-3:]},
            "converted": None, "clean_errors": None, "violations": 1,
            "violation_kinds": {}, "top_errors": []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=10_000, help="per family (default 10000)")
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--all", action="store_true", help="also the slow families (ncu-rep)")
    ap.add_argument("--json", type=Path, help="write the results here too")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--where", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    fams = fuzzing.FAMILIES + (fuzzing.SLOW_FAMILIES if a.all or a.family else [])
    if a.family:
        fams = [f for f in fams if f.name in a.family]
    if a.child:
        (fam,) = fams
        a.where.mkdir(parents=True, exist_ok=True)
        result = run_family(fam, a.examples, a.where, True)
        a.json.write_text(json.dumps([result], default=str))
        sys.exit(0)
    results = []
    for fam in fams:
        if not fam.seeds():
            print(f"{fam.name}: no sample runs found, skipped", file=sys.stderr)
            continue
        r = run_child(fam, a.examples, a.quiet)
        results.append(r)
        if "crashed" in r:
            c = r["crashed"]
            print(f"{r['family']}: the process died (exit {c['exit']}) after about "
                  f"{r['examples']} inputs: {' '.join(c['native_error']) or c['stderr_tail']}; "
                  f"the input it was converting ({c['input']}) is in {c['input_kept_in']}",
                  flush=True)
            continue
        print(f"{r['family']}: {r['examples']} inputs in {r['seconds']} s: {r['converted']} "
              f"converted ({r['converted_with_warnings']} with warnings), "
              f"{r['clean_errors']} one-line errors (exit 2), {r['violations']} contract "
              "violations", flush=True)
        for key, v in r["violation_kinds"].items():
            print(f"    x{v['count']}: {key}\n        first input: {v['input']}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=2, default=str))
    sys.exit(1 if any(r["violations"] for r in results) else 0)


if __name__ == "__main__":
    main()
