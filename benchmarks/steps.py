#!/usr/bin/env python3
"""The steps of one conversion in every process it uses, on one wall clock.

    python benchmarks/steps.py [--wrap MODULE:QUALNAME ...] [--min-ms MS] -- ARGS...

runs ``tracecvt ARGS...`` (e.g. ``to-perfetto RUN -o OUT --force``) in this process with
each step of ``STEPS`` (and each ``--wrap``: a function or a method, as
``tracecvt.writers.perfetto.events:SequenceWriter.ride``) timed where it returns, in this
process and in the processes it forks (a forked reader, the forked writer, the merge's
second half): per process, each step's start, end and length in seconds from the start of
this script, nested as the calls nest.  How the performance log's timelines are made
(docs/performance.md): which process ends last, and what it spends its time on, tells
which step is worth making faster.  Steps shorter than ``--min-ms`` are left out.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

STEPS = """
tracecvt.fileio:read_bytes
tracecvt.readers.base:Source.read
tracecvt.readers.pypto.merged:ChromeEventLoader.load
tracecvt.readers.pypto.merged:series_pass
tracecvt.readers.simpler.build:build
tracecvt.readers.ascend_db.read:read_db
tracecvt.readers.ascend_db.tasks:add_tasks
tracecvt.forkpass:ForkedPass.result
tracecvt.model:split_overlaps
tracecvt.analyses:add_derived
tracecvt.analyses:analyze_tracks
tracecvt.analyses.timeline:Timeline.build
tracecvt.analyses.derived:add_derived_tracks
tracecvt.writers.perfetto:write_perfetto
tracecvt.writers.perfetto.events:SequenceWriter.__init__
tracecvt.writers.perfetto.events:SequenceWriter.flows_of
tracecvt.writers.perfetto.events:SequenceWriter.count_names
tracecvt.writers.perfetto.events:SequenceWriter.ride
tracecvt.writers.perfetto.events:SequenceWriter.write_slices
tracecvt.writers.perfetto.events:SequenceWriter.write_counters
tracecvt.writers.perfetto.events:SequenceWriter.begin_again
tracecvt.writers.perfetto.events:SequenceWriter.part_counts
tracecvt.writers.perfetto.events:SequenceWriter.write_sorted
tracecvt.writers.perfetto.order:_cut_in_order
""".split()

_T0 = time.time()
_DEPTH = [0]                            # calls open in this process (forked ones inherit it)


def wrap(target: str, log: int) -> bool:
    """Time ``target`` (``module:qualname``) into the file ``log`` at each return; a
    module's function is also put in place of the names other modules imported it by.
    False where it is not found."""
    mod_name, _, qual = target.partition(":")
    try:
        owner = importlib.import_module(mod_name)
        *path, attr = qual.split(".")
        for name in path:
            owner = getattr(owner, name)
        fn = getattr(owner, attr)
    except (ImportError, AttributeError, ValueError):
        return False
    depth = _DEPTH

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        start = time.time()
        depth[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            os.write(log, f"{os.getpid()} {depth[0]} {start - _T0:.4f} "
                          f"{time.time() - _T0:.4f} {qual}\n".encode())
    setattr(owner, attr, timed)
    if not path:                        # (``from module import fn`` elsewhere)
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("tracecvt") and \
                    module is not owner:
                for name, value in list(vars(module).items()):
                    if value is fn:
                        setattr(module, name, timed)
    return True



def report(lines: list[str], min_ms: float) -> str:
    """The steps logged, per process (in the order each began), each with its start,
    end and length, nested by depth."""
    rows = []
    for line in lines:
        pid, depth, start, end, name = line.split(None, 4)
        rows.append((int(pid), int(depth), float(start), float(end), name.strip()))
    first = {}
    for pid, _, start, _, _ in rows:
        first[pid] = min(first.get(pid, start), start)
    out = []
    for pid in sorted(first, key=first.get):
        mine = sorted((r for r in rows if r[0] == pid), key=lambda r: (r[2], r[1]))
        out.append(f"process {pid}: {len(mine)} steps, the last ending at "
                   f"{max(r[3] for r in mine):.3f} s")
        for _, depth, start, end, name in mine:
            if (end - start) * 1000 >= min_ms:
                out.append(f"  {start:8.3f} {end:8.3f} {end - start:7.3f}  "
                           f"{'  ' * depth}{name}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, cli = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else ([], argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wrap", action="append", default=[], help="MODULE:QUALNAME")
    ap.add_argument("--min-ms", type=float, default=5.0)
    a = ap.parse_args(ours)
    if not cli:
        ap.error("no tracecvt arguments after --")
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "benchmarks"))
    import checkout                     # (this checkout's tracecvt)
    checkout.use(repo)
    import tracecvt.cli                 # (its modules, before wrapping)
    fd, path = tempfile.mkstemp(prefix="tracecvt-steps-")
    os.close(fd)
    # (every process appends its lines whole: O_APPEND, one write a line)
    log = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        for t in STEPS + a.wrap:
            if not wrap(t, log) and t in a.wrap:
                print(f"steps.py: {t}: not found", file=sys.stderr)
        sys.argv = ["tracecvt", *cli]
        code = 0
        try:
            tracecvt.cli.main()         # (not ``entry.run``: it ends the process)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        print(report(Path(path).read_text().splitlines(), a.min_ms))
    finally:
        os.close(log)
        os.unlink(path)
    return code


if __name__ == "__main__":
    sys.exit(main())
