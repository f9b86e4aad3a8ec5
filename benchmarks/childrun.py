"""Shared by the benchmarks: run a measurement in a fresh interpreter, so its peak RSS and
its imports are that job's alone.

Peak RSS is ``peak_rss_kb()`` (defined in every child, ``PRELUDE``): the process's own high
water mark (VmHWM).  Not ``ru_maxrss``: Linux carries it across exec from the process that
started the child, so a child of a benchmark that holds 400 MB (a scaled run it made)
reported at least 400 MB whatever it used (measured: 513 MB from a 500 MB parent, against a
VmHWM of 13.6 MB)."""

from __future__ import annotations

import compileall
import subprocess
import sys
import time
from pathlib import Path


def compile_tracecvt(repo: Path) -> None:
    """Compile the checkout's ``converter`` package to bytecode (``__pycache__``), as
    ``pip install .`` does: the benchmarks import tracecvt from the checkout, and where
    nothing writes bytecode (PYTHONDONTWRITEBYTECODE, a read-only tree) every measured
    process would otherwise compile the modules it imports from source (measured: 80 ms per
    process for what a batch worker imports)."""
    if not compileall.compile_dir(str(repo / "converter"), quiet=1):
        print(f"warning: {repo / 'converter'}: cannot compile to bytecode (read-only?); the "
              "measured processes compile what they import", file=sys.stderr)


PRELUDE = r"""
def peak_rss_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""


WARM_MAX_BYTES = 2 << 30     # inputs up to this size are read before each job


def warm(*args: str) -> None:
    """Read the files that ``args`` name (a file, or every file below a folder) once,
    where they total ``WARM_MAX_BYTES`` or less, so that every job finds its input in the
    page cache: on this kind of machine the kernel's proactive page-out (DAMON,
    ``kdamond``) takes the cache back within minutes, and a job that came after such a
    pause read its 213.5 MB from the disk (0.17 s warm, up to 1 s not: measured), which
    moved the floors, and with them every ratio, by up to 40 %."""
    files: list[Path] = []
    for a in args:
        p = Path(a)
        try:
            if p.is_file():
                files.append(p)
            elif p.is_dir():
                files.extend(f for f in p.rglob("*") if f.is_file())
        except OSError:
            continue
    try:
        if sum(f.stat().st_size for f in files) > WARM_MAX_BYTES:
            return
    except OSError:
        return
    buf = bytearray(16 << 20)
    for f in files:
        try:
            with open(f, "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass
        except OSError:
            continue


def run_child(code: str, *args: str, inputs: tuple = ()) -> list[float]:
    """Run ``python -c code args...`` (with ``PRELUDE``), the files of ``inputs`` read
    once before (``warm``); its stdout is whitespace-separated numbers."""
    warm(*inputs)
    out = subprocess.run([sys.executable, "-c", PRELUDE + code, *args], check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(x) for x in out]


_BUILD = ("import time; t = time.perf_counter()\n"
          "for _ in range(5): x = [{'a': i, 'b': str(i)} for i in range(100_000)]; del x\n"
          "print(time.perf_counter() - t)")


def side_by_side_slowdown(repeat: int = 3) -> float:
    """How much slower two processes building Python objects at once each run than one
    alone (1.0: not at all), median of ``repeat``.  The benchmarks print it with their
    figures: on a shared 2-CPU VM it has moved between 1.0 and 1.3 within a day, and every
    two-process figure moves with it."""
    ratios = []
    for _ in range(repeat):
        (alone,) = run_child(_BUILD)
        procs = [subprocess.Popen([sys.executable, "-c", _BUILD], stdout=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        both = [float(p.communicate()[0]) for p in procs]
        ratios.append(max(both) / alone)
    return round(sorted(ratios)[len(ratios) // 2], 2)


_TOUCH = r"""
import mmap, resource, sys, time
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n)
r0 = resource.getrusage(resource.RUSAGE_SELF); t = time.perf_counter()
for i in range(0, n, 4096):
    m[i] = 1
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, r1.ru_stime - r0.ru_stime)
"""


def first_touch_cost(mib: int = 1024, idle_s: float = 10.0) -> dict:
    """What this machine's kernel charges for memory a process touches for the first time:
    a fresh process writes one byte per page of ``mib`` MiB of new anonymous memory, after
    ``idle_s`` seconds in which nothing here allocates.  On a VM whose balloon reports free
    pages to the host, memory freed a few seconds before is given back and costs the host's
    backing again when touched (measured on the 2-CPU VM: 4 GiB in 0.45 s right after
    another process freed it, 8.75 s after 20 s idle); a conversion pays this for every page
    of its peak RSS, so its time per event grows with its memory whatever its own work."""
    time.sleep(idle_s)
    wall, system = run_child(_TOUCH, str(mib))
    return {"mib": mib, "idle_s": idle_s, "s_per_gib": round(wall * 1024 / mib, 3),
            "system_s_per_gib": round(system * 1024 / mib, 3)}
