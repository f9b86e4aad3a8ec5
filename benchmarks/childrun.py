"""Shared by the benchmarks: run a measurement in a fresh interpreter, so its peak RSS
(ru_maxrss) and its imports are that job's alone."""

from __future__ import annotations

import subprocess
import sys


def run_child(code: str, *args: str) -> list[float]:
    """Run ``python -c code args...``; its stdout is whitespace-separated numbers."""
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(x) for x in out]
