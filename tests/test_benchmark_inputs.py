"""The benchmarks' made inputs are what they say: K copies of a real run laid end to end read
as K times its tasks, flows and counter samples, each copy later than the one before
(``benchmarks/pypto_scaled.py``, ``bench_simpler.scaled_run``)."""

from __future__ import annotations

import sys

from tracecvt.readers import ReadOptions, find_runs

from conftest import REPO, SAMPLES

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_scaling import flatness  # noqa: E402
from bench_simpler import scaled_run  # noqa: E402
from pypto_scaled import scaled_merged  # noqa: E402


def _model(path):
    (src,) = find_runs(path)
    return src.read(ReadOptions())


def _figures(trace):
    return (len(trace.slices), len(trace.flows), sum(len(c.ts) for c in trace.counters),
            trace.meta.extra.get("tasks"))


def test_pypto_copies_read_as_k_times_the_run(tmp_path):
    one = _model(scaled_merged(SAMPLES / "pypto" / "ffn_medium", 1, tmp_path / "x1"))
    three = _model(scaled_merged(SAMPLES / "pypto" / "ffn_medium", 3, tmp_path / "x3"))
    real = _model(next((SAMPLES / "pypto" / "ffn_medium").rglob("merged_swimlane.json")))
    assert _figures(one) == _figures(real)
    assert _figures(three) == tuple(3 * x for x in _figures(one))
    span = one.time_span()
    start, end = three.time_span()
    assert start == span[0] and end > 3 * (span[1] - span[0])
    # each copy's tasks are new ones: three times the run's (seqNo, taskId) keys
    assert len(_task_keys(three)) == 3 * len(_task_keys(one)) > 0


def _task_keys(trace):
    """The (seqNo, taskId) of every slice that has them (own args, else shared)."""
    keys = set()
    for s in trace.slices:
        a = {**(s.shared_args or {}), **(s.args or {})}
        if "seqNo" in a:
            keys.add((a["seqNo"], a.get("taskId")))
    return keys


def test_simpler_copies_read_as_k_times_the_run(tmp_path):
    run = next((SAMPLES / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L4").rglob(
        "chip_swimlane_records.json")).parent
    one = _model(run)
    three = _model(scaled_run(run, 3, tmp_path))
    (slices, flows, samples, tasks), (s1, f1, n1, t1) = _figures(three), _figures(one)
    assert (slices, flows, tasks) == (3 * s1, 3 * f1, 3 * t1)
    # a counter is sampled where its value changes: where a copy ends with the value the
    # next one starts with, one sample fewer
    assert 3 * n1 - 2 * len(one.counters) <= samples <= 3 * n1


def test_the_benchmarks_read_each_input_before_a_job(tmp_path, monkeypatch):
    """``childrun.warm`` reads every byte of the files it is given, alone or below a
    folder, once; a name that is no file or folder is passed over; inputs over
    ``WARM_MAX_BYTES`` together are not read at all."""
    import childrun
    (tmp_path / "run" / "deep").mkdir(parents=True)
    sizes = {"run/a.json": 5, "run/deep/b.json": (16 << 20) + 3, "c.db": 0}
    for name, n in sizes.items():
        (tmp_path / name).write_bytes(b"x" * n)
    read: dict[str, int] = {}
    real_open = open

    class Counting:
        def __init__(self, f):
            self.f, self.name = f, f.name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def readinto(self, buf):
            n = self.f.readinto(buf)
            read[self.name] = read.get(self.name, 0) + n
            return n

    monkeypatch.setattr(childrun, "open", lambda p, *a, **k: Counting(real_open(p, *a, **k)),
                        raising=False)
    childrun.warm(str(tmp_path / "run"), str(tmp_path / "c.db"), "x" * 5000,
                  str(tmp_path / "gone"))
    assert {str(tmp_path / k): v for k, v in sizes.items()} == read
    read.clear()
    monkeypatch.setattr(childrun, "WARM_MAX_BYTES", 16 << 20)
    childrun.warm(str(tmp_path / "run"))
    assert read == {}


def test_scaling_flatness_is_max_over_min_of_the_runs_large_enough():
    rows = [{"events": 5_000, "t": 9.0}, {"events": 15_000, "t": 6.0},
            {"events": 150_000, "t": 4.0}, {"events": 1_500_000, "t": 5.0}]
    assert flatness(rows, "t") == 1.5                   # 6 / 4: the 5,000-event run left out
    assert flatness(rows[:2], "t") is None              # one run: no ratio
    # a short run's system CPU time measured 0 (clock ticks): no ratio, not a crash
    rows[1]["t"] = 0.0
    assert flatness(rows, "t") is None
