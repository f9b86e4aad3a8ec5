"""A simpler run's deps.json loaded by a forked process while this one loads the records
(``readers.simpler.deps.start_deps``, from ``PARALLEL_MIN_BYTES`` on; lowered to 0 here so
that the samples take that path): the model, warnings included and in their order, is the
one a single process reads, whatever happens to the second process."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tracecvt.errors import InputError
from tracecvt.modelfile.compare import model_differences
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.readers.simpler import deps as deps_mod

from test_simpler import RUNS
from test_simpler_inputs import VECTOR, copy_run

WITH_DEPS = [r for r in RUNS if (r / "deps.json").is_file()]


@pytest.fixture
def forks(monkeypatch):
    """Every deps.json takes the forked path; the list holds the pid of each process
    started."""
    started = []
    real = deps_mod.fork_pass

    def fork(fn, *wire):
        helper = real(fn, *wire)
        started.append(helper.pid)
        return helper
    monkeypatch.setattr(deps_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(deps_mod, "fork_pass", fork)
    return started


def _read(run, workers):
    (src,) = find_runs(run, "simpler")
    return src.read(ReadOptions(workers=workers))


def _reaped(pids):
    """Each of ``pids`` has ended and been waited for (none is left running or a zombie)."""
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return True


@pytest.mark.parametrize("run", WITH_DEPS, ids=lambda r: r.parents[1].name)
def test_deps_loaded_by_a_second_process_give_the_same_model(run, forks):
    one = _read(run, 1)
    assert forks == []
    two = _read(run, 2)
    assert len(forks) == 1 and _reaped(forks)
    assert two.meta.warnings == one.meta.warnings
    assert model_differences(one, two) == []


def test_one_process_below_the_size_where_a_fork_pays(monkeypatch):
    started = []
    monkeypatch.setattr(deps_mod, "fork_pass", lambda fn, *wire: started.append(1))
    _read(VECTOR, 2)
    assert (VECTOR / "deps.json").stat().st_size < deps_mod.PARALLEL_MIN_BYTES
    assert started == []


def _damaged(tmp_path):
    """The vector example with tasks and edges the loader drops (each with a warning)."""
    run = copy_run(VECTOR, tmp_path)
    doc = json.loads((run / "deps.json").read_bytes())
    doc["tasks"].append({"task_id": "not a number"})
    doc["tasks"].append(7)
    doc["edges"].append({"pred": "x", "succ": "1"})
    doc["edges"].append([1, 2])
    (run / "deps.json").write_text(json.dumps(doc))
    return run


def test_the_second_process_warnings_are_told_in_their_place(tmp_path, forks):
    run = _damaged(tmp_path)
    one = _read(run, 1)
    said = [w for w in one.meta.warnings if "deps.json" in w]
    assert len(said) == 2 and "tasks[] entries" in said[0] and "edges dropped" in said[1]
    two = _read(run, 2)
    assert len(forks) == 1 and _reaped(forks)
    assert two.meta.warnings == one.meta.warnings
    assert model_differences(one, two) == []


@pytest.mark.parametrize("how", ["raises", "killed"])
def test_a_second_process_that_fails_or_dies_is_replaced_by_this_one(tmp_path, forks,
                                                                     monkeypatch, how):
    run = _damaged(tmp_path)
    one = _read(run, 1)
    here = os.getpid()
    real = deps_mod.load_deps

    def load(path, warn):
        if os.getpid() != here:             # the forked process only
            warn("a line the failing process said")
            if how == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            raise MemoryError("no memory in the second process")
        return real(path, warn)
    monkeypatch.setattr(deps_mod, "load_deps", load)
    two = _read(run, 2)
    assert len(forks) == 1 and _reaped(forks)
    assert two.meta.warnings == one.meta.warnings     # nothing of the failed process
    assert model_differences(one, two) == []


def test_records_that_fail_leave_no_second_process_behind(tmp_path, forks):
    run = copy_run(VECTOR, tmp_path)
    (run / "chip_swimlane_records.json").write_text('{"chip_swimlane_level": 4, "aicore_')
    with pytest.raises(InputError, match="chip_swimlane_records.json"):
        _read(run, 2)
    assert len(forks) == 1 and _reaped(forks)
