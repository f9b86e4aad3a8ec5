"""A trace's bytes do not depend on how many processes write it.

Where a trace is large enough, the Perfetto writer splits its sequences in two parts
(``writers.perfetto``: the run's own sequences while the derived tracks are made, or two
halves by cost).  With ``workers`` > 1 a forked process writes the second part; with one
worker, or where the fork fails, a writer of its own writes it in this process, first,
as the forked process would.  Either way the file is the same, byte for byte: what batch,
the Python API (one process) and ``to-perfetto`` (two) write for one run.
"""

from __future__ import annotations

import io
import random

import pytest

from tracecvt.model import RunMeta, Trace

_WORDS = ("MatMul", "Add", "Cast", "ReduceSum", "Transpose", "Mul", "Gelu")


def _run(seed: int, far: bool = False, shuffled: bool = False) -> Trace:
    """Six lanes of tasks (nested calls on half of them), own args with repeated and new
    strings, shared args, flows forward and backward, counters whose samples fall on
    slice starts and ends (they ride there) and between, instants.  ``far``: times past
    ±2^62 (the writer takes each slice as it is); ``shuffled``: each lane's slices added
    out of time order (the writer orders a lane's ids in place)."""
    rng = random.Random(seed)
    t = Trace(RunMeta(f"one-or-two-{seed}", "test"))
    base = (1 << 62) + 5 if far else 1000
    lanes = [t.add_track(f"stream {k}", nesting=k % 2 == 0) for k in range(6)]
    shared = [{"op_type": w, "block_dim": j} for j, w in enumerate(_WORDS[:3])]
    marks = []
    for lane in lanes:
        made = []
        at = base
        for k in range(rng.randrange(150, 450)):
            dur = rng.choice((0, 3, 40, 90))
            args = {"k": k, "name": rng.choice(_WORDS), "pmu": rng.random()} \
                if rng.random() < 0.8 else None
            if k % 97 == 5:
                args = {**(args or {}), "unique": f"only-{lane}-{k}", "shape": [k, 3]}
            made.append((at, dur, rng.choice(_WORDS), "task" if k % 3 else "",
                         args, rng.choice(shared) if k % 4 == 0 else None))
            if lane % 2 == 0 and dur >= 40:         # a call inside
                made.append((at + 2, dur // 3, "inner", "", {"k": -k}, None))
            at += dur + rng.choice((0, 1, 7, 30))
        if shuffled:
            rng.shuffle(made)
        for ts, dur, name, cat, args, sh in made:
            marks.append(t.add_slice(lane, ts, dur, name, cat, args, sh))
            if rng.random() < 0.05:
                t.add_instant(lane, ts, "mark", args={"at": ts})
    for _ in range(len(marks) // 4):
        a, b = rng.sample(marks, 2)
        t.add_flow(a, b)
    busy = t.add_counter("busy")
    starts = sorted({t.slices[i].ts for i in marks} | {t.slices[i].ts + t.slices[i].dur
                                                       for i in marks})
    for ts in rng.sample(starts, len(starts) // 2):
        busy.add(ts, rng.randrange(0, 9))
    busy.ts[:], busy.values[:] = zip(*sorted(zip(busy.ts, busy.values))) if busy.ts else ((), ())
    level = t.add_counter("level", unit="MB")
    for k in range(300):
        level.add(base + 13 * k, rng.random() * 100)
    return t


def _new_args(trace: Trace) -> None:
    """An analysis that replaces the args of a third of the run's own slices (on every
    lane: those the second part writes too), gives some new shared args, and adds a
    derived lane and counter."""
    own = len(trace.slices)
    for i in range(0, own, 3):
        s = trace.slices[i]
        s.args = {**(s.args or {}), "on_critical_path": i % 2 == 0, "step": i}
        if i % 9 == 0:
            s.shared_args = {"op_type": "Fused", "block_dim": 48}
    lane = trace.add_track("derived", derived=True)
    c = trace.add_counter("derived load", derived=True)
    for k in range(0, own, 5):
        s = trace.slices[k]
        trace.add_slice(lane, s.ts, 3, "gap", args={"waiting_for": f"task {k}"})
        c.add(s.ts, k % 4)


def _add_flow(trace: Trace) -> None:
    """An enrich that changes what the run's own sequences hold (a flow between two of
    them): the second part is dropped and everything is written again."""
    trace.add_flow(0, len(trace.slices) - 1)
    _new_args(trace)


def _real_analyses(trace: Trace) -> None:
    from tracecvt.analyses import add_derived
    add_derived(trace)


def _write(make, enrich, workers: int, monkeypatch, forks_fail: bool = False):
    """(bytes, counts, forked processes, writers made for a part here) of one write of a
    fresh ``make()``; every slice of the trace (enriched) is counted written, and the
    progress told reaches them all."""
    from tracecvt.writers import perfetto
    forks, parts = [], []
    real_fork, real_part = perfetto.fork_pass, perfetto._part_writer

    def fork(fn):
        forks.append(1)
        return None if forks_fail else real_fork(fn)

    monkeypatch.setattr(perfetto, "fork_pass", fork)
    monkeypatch.setattr(perfetto, "_part_writer", lambda t, w: parts.append(1) or real_part(t, w))
    buf = io.BytesIO()
    trace = make()
    told = []
    counts = perfetto.write_perfetto(trace, buf, told.append, workers=workers, enrich=enrich)
    assert counts["slices"] == len(trace.slices)        # (the enriched trace's)
    assert told == sorted(told) and told[-1] == len(trace.slices)   # (progress: all done)
    return buf.getvalue(), counts, len(forks), len(parts)


CASES = [
    ("halves", lambda: _run(1), None),
    ("halves, far times, lanes out of order", lambda: _run(2, far=True, shuffled=True), None),
    ("new args", lambda: _run(3), _new_args),
    ("new args, lanes out of order", lambda: _run(4, shuffled=True), _new_args),
    ("new args, far times, lanes out of order", lambda: _run(5, far=True, shuffled=True),
     _new_args),
    ("a flow added", lambda: _run(6), _add_flow),
    ("the analyses", lambda: _run(7), _real_analyses),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_process_writes_the_bytes_two_do(case, monkeypatch):
    """Each way of splitting, in two processes, in one, and in one after a failed fork:
    the same bytes and counts, the split made each time."""
    from tracecvt.writers import perfetto
    _, make, enrich = case
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    two, c2, forks2, parts2 = _write(make, enrich, 2, monkeypatch)
    one, c1, forks1, parts1 = _write(make, enrich, 1, monkeypatch)
    failed, cf, forksf, partsf = _write(make, enrich, 2, monkeypatch, forks_fail=True)
    again = 2 if enrich is _add_flow else 1         # the dropped part, then the halves
    assert (forks2, parts2) == (again, 0)
    assert (forks1, parts1) == (0, again)
    assert (forksf, partsf) == (again, again)
    assert c1 == c2 == cf
    assert one == two
    assert failed == two


@pytest.mark.parametrize("far", [False, True], ids=["near", "far times, calls first"])
def test_the_one_process_write_takes_sequences_as_the_two_processes_do(far, monkeypatch):
    """A run whose own slices cost more than the analyses (many args, as a database's
    tasks): the writing process takes some of the last own sequences (``share.taken``),
    the other part writes the rest with the args they had before the analyses and then
    builds again the BEGINs whose args the analyses replaced; one process does the same
    in turn, to the byte.  ``far``: times past ±2^62, and every task a call with an inner
    call starting with it, added first (each writer orders its own lists of a lane's ids;
    the samples at a task's start ride on the first BEGIN there in the lane's order)."""
    from tracecvt.writers import perfetto
    from tracecvt.writers.perfetto import share
    base = (1 << 62) + 5 if far else 0

    def make():
        t = Trace(RunMeta("taken", "test"))
        lanes = [t.add_track(f"stream {i}", nesting=far) for i in range(6)]
        for k in range(6000):
            if far:
                t.add_slice(lanes[k % 6], base + 10 * k, 2, "inner", args={"k": k})
            t.add_slice(lanes[k % 6], base + 10 * k, 5, f"task {k % 7}",
                        args={**{f"pmu_{j}": k + j for j in range(12)},
                              "kind": _WORDS[k % 5]})
        for k in range(0, 5990, 2):
            t.add_flow(k, k + 7)
        c = t.add_counter("c")
        for k in range(0, 60_000, 10):
            c.add(base + k, k % 7)
        return t

    took = []
    real_taken = share.taken
    monkeypatch.setattr(share, "taken", lambda *a: took.append(real_taken(*a)) or took[-1])
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    two, c2, _, _ = _write(make, _new_args, 2, monkeypatch)
    one, c1, _, parts = _write(make, _new_args, 1, monkeypatch)
    assert took[0] == took[1] > 0 and parts == 1
    assert c1 == c2
    assert one == two


def test_a_sample_run_split_in_two_is_the_same_file_either_way(tmp_path):
    """The one sample large enough to be split (msinsight's level2, two ranks): ``-j 1``
    and ``-j 2`` write the same file, through the command a user types."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from tracecvt.cli import main
    run = SAMPLES / "msprof" / "msinsight" / "test" / "data" / "pytorch" / "text" / "level2"
    got = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.pftrace"
        r = CliRunner().invoke(main, ["to-perfetto", str(run), "-o", str(out), "-j", jobs,
                                      "-q"])
        assert r.exit_code == 0, r.output
        got[jobs] = out.read_bytes()
    assert len(got["1"]) > 1_000_000
    assert got["1"] == got["2"]


def test_one_worker_merges_in_one_process_too(monkeypatch, tmp_path):
    """The merge of a large trace's packets into a file cuts out its second half in a
    forked process (``order._write_halves``) only where the write may use two: with one
    worker nothing is forked at all, and the file is the same."""
    from tracecvt.writers import perfetto
    from tracecvt.writers.perfetto import order
    forks = []
    real = order.fork_pass
    monkeypatch.setattr(order, "fork_pass", lambda fn: forks.append(1) or real(fn))
    monkeypatch.setattr(order, "SPLIT_FROM_BYTES", 0)
    monkeypatch.setattr(perfetto, "CHUNK_PACKETS", 500)     # (spilled: merged from a file)
    monkeypatch.setattr(perfetto, "fork_pass", lambda fn: forks.append(2) or None)
    got = {}
    for workers in (1, 2):
        forks.clear()
        out = tmp_path / f"w{workers}.pftrace"
        with open(out, "wb") as f:
            perfetto.write_perfetto(_run(8), f, None, workers=workers)
        got[workers] = (out.read_bytes(), list(forks))
    assert got[1][1] == []
    assert got[2][1] == [1]             # (the run too small to split its sequences)
    assert got[1][0] == got[2][0]


def test_one_process_tells_the_progress_of_the_part_it_writes(monkeypatch):
    """Written here, the second part tells its slices done as it writes them (its first
    sequences before the analyses run); the first part's then count on from there: the
    slices done only grow, up to all of them, and the file is the two processes' one."""
    from tracecvt.writers import perfetto
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "CHUNK_PACKETS", 50)
    got = {}
    for enrich in (None, _new_args):
        for workers in (1, 2):
            told: list[tuple[int, bool]] = []
            ran = []

            def analyses(trace, enrich=enrich):
                ran.append(1)
                enrich(trace)
            trace = _run(9)
            buf = io.BytesIO()
            perfetto.write_perfetto(trace, buf, lambda done: told.append((done, bool(ran))),
                                    workers=workers, enrich=analyses if enrich else None)
            done = [d for d, _ in told]
            assert done == sorted(done) and done[-1] == len(trace.slices)
            got[enrich, workers] = (buf.getvalue(), told)
        assert got[enrich, 1][0] == got[enrich, 2][0]
    before = [d for d, after in got[_new_args, 1][1] if not after]
    assert max(before) > 0                      # (the part's first sequences, told here)
    assert not [d for d, after in got[_new_args, 2][1] if not after]    # (there: not)
    # the first part's steps, after the second part's here: every one told (counted on
    # from the part's), as where the part is written elsewhere
    assert len([d for d, after in got[_new_args, 1][1] if after]) >= \
        len([d for d, after in got[_new_args, 2][1] if after])
