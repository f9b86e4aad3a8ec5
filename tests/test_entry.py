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


FREEZE = """
import gc, sys
from pathlib import Path
from tracecvt import entry
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs
if sys.argv[1] == "command":
    entry.keep = []
(src,) = find_runs(sys.argv[2])
convert_source(src, "perfetto", Path(sys.argv[3]), False, ReadOptions(), keep=entry.keep)
print(gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_the_command_leaves_the_pause_without_a_collection_over_the_model(tmp_path):
    # After the pause, the first collection would walk every object made during it; the
    # command (which ends without freeing them) freezes them instead.  From Python nothing
    # is frozen: the collector still tracks the model's objects.
    def after(mode: str) -> tuple[str, int, int]:
        done = subprocess.run([sys.executable, "-c", FREEZE, mode, str(TINY),
                               str(tmp_path / f"{mode}.pftrace")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        enabled, frozen, tracked = done.stdout.split()
        return enabled, int(frozen), int(tracked)

    (src,) = runs_under(TINY)
    model_objects = 2 * len(src.read().slices)      # a slice and its args, at least
    enabled, frozen, tracked = after("command")
    assert enabled == "True" and frozen > model_objects
    enabled, frozen, tracked_api = after("api")
    assert enabled == "True" and frozen == 0 and tracked_api - tracked > model_objects

