"""Outputs are all or nothing, inputs are never touched.

* A conversion killed with SIGKILL while it writes leaves no file under the output name; the
  only leftover is the hidden ``.<name>.<random>.part`` temporary (a killed process cannot
  remove it), never something that looks like the output.
* Interrupted (SIGINT / Ctrl-C): no output, no temporary, exit code 130.
* Inputs are byte-identical after any conversion, killed or not.
* An output path that is an input (same path, through ``..``, a symlink or a hard link) is
  refused with a one-line error.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tracecvt.cli import main

from conftest import REPO, check_pftrace, decode_pftrace, pypto_run_dir, pypto_sim_dir


def digest(paths) -> dict[str, str]:
    return {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}


def tree(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def big_merged(directory: Path, copies: int = 3) -> Path:
    """A merged_swimlane.json of the largest sample repeated ``copies`` times in time
    (ffn_large: 5,632 tasks, 8,310 flows, 15,282 counter samples per copy)."""
    (src,) = pypto_sim_dir("ffn_large").glob("merged_swimlane.json*")
    data = src.read_bytes()
    doc = orjson.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events = doc["traceEvents"]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) + 10
    out = [e for e in events if e["ph"] == "M"]
    for k in range(copies):
        for e in events:
            if e["ph"] != "M":
                e2 = dict(e)
                e2["ts"] = e["ts"] + k * span
                if "id" in e2:
                    e2["id"] = e["id"] + k * 10**6
                out.append(e2)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "merged_swimlane.json"
    path.write_bytes(orjson.dumps({"traceEvents": out}))
    return path


def cli(*args: str, code: str | None = None) -> subprocess.Popen:
    """tracecvt in a child process (optionally after running ``code`` in it)."""
    prog = (code or "") + "\nfrom tracecvt.cli import main\nmain()\n"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", prog, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def temporaries(directory: Path, name: str) -> list[Path]:
    return sorted(directory.glob(f".{name}.*.part"))


def wait_for_temporary(proc: subprocess.Popen, directory: Path, name: str,
                       min_size: int = 0, timeout: float = 120) -> Path | None:
    """Poll until the writer's temporary file exists (with at least ``min_size`` bytes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for p in temporaries(directory, name):
            try:
                if p.stat().st_size >= min_size:
                    return p
            except FileNotFoundError:
                pass
        time.sleep(0.001)
    return None


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    return big_merged(tmp_path_factory.mktemp("big") / "run")


def test_sigkill_while_writing_leaves_no_output(big_input, tmp_path):
    before = digest([big_input])
    out = tmp_path / "out" / "big.pftrace"
    out.parent.mkdir()
    proc = cli("to-perfetto", str(big_input), "-o", str(out), "-q")
    tmp = wait_for_temporary(proc, out.parent, out.name)
    assert tmp is not None, "the writer never opened its output: " + \
        proc.communicate()[1].decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    leftovers = [p.name for p in out.parent.iterdir()]
    # only the hidden temporary, named after the output but never as it
    assert leftovers and all(n.startswith(".big.pftrace.") and n.endswith(".part")
                             for n in leftovers), leftovers
    assert digest([big_input]) == before
    # the next run writes the output normally, and it is a valid trace
    r = CliRunner().invoke(main, ["to-perfetto", str(big_input), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    check_pftrace(decode_pftrace(out))


SLOW_WRITER = """
import time
from contextlib import contextmanager
import tracecvt.convert as conv
import tracecvt.writers.perfetto as pf
pf.CHUNK_PACKETS = 200
_orig = conv.atomic_output
class _Slow:
    def __init__(self, f): self.f = f
    def write(self, b):
        time.sleep(0.003)
        return self.f.write(b)
    def __getattr__(self, name): return getattr(self.f, name)
@contextmanager
def _slow(path, gzip_level=None):
    with _orig(path, gzip_level) as f:
        yield _Slow(f)
conv.atomic_output = _slow
"""


def test_sigkill_after_bytes_were_written(tmp_path):
    """Killed with part of the trace already on disk: those bytes stay in the temporary."""
    run = tmp_path / "run"
    shutil.copytree(pypto_run_dir("ffn_medium"), run)
    for p in [run, *run.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    before = digest(tree(run))
    out = tmp_path / "out" / "t.pftrace"
    out.parent.mkdir()
    proc = cli("to-perfetto", str(run), "-o", str(out), "-q", code=SLOW_WRITER)
    tmp = wait_for_temporary(proc, out.parent, out.name, min_size=1)
    assert tmp is not None, proc.communicate()[1].decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert not out.exists()
    assert tmp.exists() and tmp.stat().st_size > 0
    assert digest(tree(run)) == before


def test_interrupt_while_writing_removes_the_temporary(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(pypto_run_dir("ffn_medium"), run)
    out = tmp_path / "out" / "t.pftrace"
    out.parent.mkdir()
    proc = cli("to-perfetto", str(run), "-o", str(out), "-q", code=SLOW_WRITER)
    assert wait_for_temporary(proc, out.parent, out.name, min_size=1) is not None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert err.decode().strip().splitlines() == [
        "tracecvt: error: interrupted; no partial output was left behind"]
    assert not out.exists() and not temporaries(out.parent, out.name)


@pytest.mark.parametrize("writer,name", [("to-perfetto", "t.pftrace"), ("to-chrome", "t.json"),
                                         ("to-chrome", "t.json.gz")])
def test_inputs_unchanged_and_outputs_readable(tmp_path, writer, name):
    run = tmp_path / "run"
    shutil.copytree(pypto_run_dir("softmax_multiseq"), run)
    for p in [run, *run.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    before = digest(tree(run))
    mtimes = {p: p.stat().st_mtime_ns for p in tree(run)}
    out = tmp_path / name
    r = CliRunner().invoke(main, [writer, str(run), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert digest(tree(run)) == before
    assert {p: p.stat().st_mtime_ns for p in tree(run)} == mtimes
    # an ordinary file: the umask decides its mode, not mkstemp's 0600
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert not temporaries(tmp_path, name)


def _refused(args, target: Path):
    before = target.read_bytes()
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert "overwrite an input" in line
    assert target.read_bytes() == before


def test_output_onto_an_input_is_refused_however_named(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(pypto_run_dir("tiny_add"), run)
    for p in [run, *run.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    merged = run / "CostModelSimulationOutput" / "merged_swimlane.json"
    topo = run / "dyn_topo.txt"
    # the file itself, through "..", through a symlink, a hard link, and a side file
    _refused(["to-chrome", str(merged), "-o", str(merged), "--force"], merged)
    dotted = run / "CostModelSimulationOutput" / ".." / "CostModelSimulationOutput" / merged.name
    _refused(["to-chrome", str(merged), "-o", str(dotted), "--force"], merged)
    link = tmp_path / "link.json"
    link.symlink_to(merged)
    _refused(["to-chrome", str(merged), "-o", str(link), "--force"], merged)
    hard = tmp_path / "hard.json"
    os.link(merged, hard)
    _refused(["to-chrome", str(merged), "-o", str(hard), "--force"], merged)
    _refused(["to-perfetto", str(run), "-o", str(topo), "--force"], topo)


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in state          # a zombie: ended, not yet reaped by init


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("stage", ["reading", "writing"])
def test_a_killed_conversion_leaves_no_second_process_behind(big_input, tmp_path, stage):
    """The reader's helper and the writer's part end by themselves when the conversion is
    killed (their pipe closes), and leave no file."""
    out = tmp_path / "big.pftrace"
    lower = ("import tracecvt.readers.pypto.merged as m, tracecvt.writers.perfetto as w\n"
             "m.PARALLEL_MIN_BYTES = 0\nw.PARALLEL_MIN_COST = 0\n")
    if stage == "writing":      # hold the parent inside the writer once its part started
        lower += ("import time, tracecvt.writers.perfetto as w\n_f = w.fork_pass\n"
                  "def fp(fn, *wire):\n    p = _f(fn, *wire)\n    time.sleep(30)\n    return p\n"
                  "w.fork_pass = fp\n")
    else:                       # hold the parent while the reader's helper runs
        lower += ("import time\n_f = m.fork_series_pass\n"
                  "def fp(d):\n    p = _f(d)\n    time.sleep(30)\n    return p\n"
                  "m.fork_series_pass = fp\n")
    proc = cli("to-perfetto", str(big_input), "-o", str(out), "-q", code=lower)
    deadline = time.monotonic() + 60
    kids: set[int] = set()
    while not kids and time.monotonic() < deadline and proc.poll() is None:
        kids = _children(proc.pid)
        time.sleep(0.01)
    assert kids, "no second process started: " + proc.communicate()[1].decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(_gone(k) for k in kids):
        time.sleep(0.05)
    assert all(_gone(k) for k in kids)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] in ([], [n.name for n in
                                                         temporaries(tmp_path, out.name)])
