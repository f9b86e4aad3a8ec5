"""Shared by the benchmarks: run a measurement in a fresh interpreter, so its peak RSS
(ru_maxrss) and its imports are that job's alone."""

from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path


def compile_tracecvt(repo: Path) -> None:
    """Compile the checkout's ``converter`` package to bytecode (``__pycache__``), as
    ``pip install .`` does: the benchmarks import tracecvt from the checkout, and where
    nothing writes bytecode (PYTHONDONTWRITEBYTECODE, a read-only tree) every measured
    process would otherwise compile the modules it imports from source (measured: 80 ms per
    process for what a batch worker imports)."""
    if not compileall.compile_dir(str(repo / "converter"), quiet=1):
        sys.exit(f"{repo / 'converter'}: cannot compile to bytecode")


def run_child(code: str, *args: str) -> list[float]:
    """Run ``python -c code args...``; its stdout is whitespace-separated numbers."""
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(x) for x in out]
