"""The ``tracecvt`` command (``entry.run``) ends its process without freeing the model, as
``sys.exit`` would otherwise: the same exit codes, every line it printed reaches a pipe, the
exit handlers run, and the output is whole.  ``convert_source(keep=...)`` keeps one model at a
time."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tracecvt.convert import convert_source, runs_under
from tracecvt.readers import ReadOptions

from conftest import decode_pftrace

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "samples" / "pypto" / "tiny_add"
COMMAND = ("import atexit, sys; sys.argv[0] = 'tracecvt'; "
           "atexit.register(lambda: print('exit handler ran')); "
           "from tracecvt.entry import run; run()")


def _tracecvt(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # pipes buffer
    return subprocess.run([sys.executable, "-c", COMMAND, *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_the_installed_command_is_the_fast_exit():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"tracecvt": "tracecvt.entry:run"}


def test_a_conversion_prints_to_a_pipe_and_writes_a_whole_trace(tmp_path):
    out = tmp_path / "tiny.pftrace"
    done = _tracecvt("to-perfetto", str(TINY), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} (")
    assert "open it at https://ui.perfetto.dev" in done.stdout
    assert done.stdout.rstrip().endswith("exit handler ran")
    packets = decode_pftrace(out).packet
    assert sum(p.track_event.type == 1 for p in packets) > 0


def test_errors_keep_their_exit_code_and_one_line(tmp_path):
    done = _tracecvt("to-perfetto", str(tmp_path / "missing"), "-o", str(tmp_path / "x"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "tracecvt: error:" in done.stderr
    assert "exit handler ran" in done.stdout
    assert _tracecvt("--version").returncode == 0
    assert _tracecvt("to-perfetto").returncode == 2          # click's usage error


def test_keep_holds_one_model_at_a_time(tmp_path):
    runs = runs_under(REPO / "samples" / "pypto")
    assert len(runs) >= 2
    keep: list = []
    for k, src in enumerate(runs[:2]):
        convert_source(src, "perfetto", tmp_path / f"{k}.pftrace", False, ReadOptions(),
                       keep=keep)
        assert len(keep) == 1 and keep[0].meta.name == src.read().meta.name
