"""The two-process paths on mutated inputs (tests/fuzzing.py's mutations of real PyPTO
runs and database exports): reading with a second process gives exactly the model one
process reads, or the same error; and a trace written by two processes (the run's own
sequences in the other one while the derived tracks are made here) reads back as that model,
and is the same bytes one process writes.

Large files take these paths by default; here the size thresholds are lowered to 0 so that
the small seed runs take them too (and a database's tables are handed over a few rows at a
time, so that a table cut short or damaged part-way is read on by this process).
"""

from __future__ import annotations

import io

from tracecvt.modelfile.compare import model_differences
from tracecvt.readers.pypto import merged
from tracecvt.writers import perfetto
from fuzzing import family, on_mutated, read_model, same_reading
from test_perfetto_roundtrip import assert_same_as_model


def test_mutated_pypto_runs_read_and_write_the_same_with_two_processes(tmp_path_factory,
                                                                        monkeypatch):
    from tracecvt.convert import add_derived_tracks
    fam = family("pypto-merged")
    seeds = [s for s in fam.seeds() if any("merged" in t.name for t in s.targets)]
    assert seeds, "no PyPTO merged sample runs"
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    where = tmp_path_factory.mktemp("parallel")

    def check(root, _):
        one, error_one = read_model(root, "pypto", 1)
        two, error_two = read_model(root, "pypto", 2)
        assert error_one == error_two
        if one is None:
            return
        # The helper may fail on what it cannot decode: its pass then runs here and the
        # trace says so; nothing else may differ.
        extra = [w for w in two.meta.warnings if w not in one.meta.warnings]
        assert all("the second process reading counters and flows failed" in w
                   for w in extra), extra
        two.meta.warnings = list(one.meta.warnings)
        assert model_differences(one, two) == []
        buf = io.BytesIO()
        perfetto.write_perfetto(two, buf, None, workers=2, enrich=add_derived_tracks)
        assert_same_as_model(two, buf.getvalue())
        alone = io.BytesIO()            # (the same model: one process writes the same bytes)
        perfetto.write_perfetto(one, alone, None, workers=1, enrich=add_derived_tracks)
        assert alone.getvalue() == buf.getvalue()

    on_mutated(seeds, where, check, lambda seed: [t for t in seed.targets
                                                  if "merged" in t.name])


def _reads_the_same(seeds, fmt, where) -> None:
    """Mutated ``seeds`` (the fuzzing family's) read as ``fmt`` by one process and by two:
    the model, warnings included, is the same, or the error is."""
    on_mutated(seeds, where, lambda root, _: same_reading(read_model(root, fmt, 1),
                                                          read_model(root, fmt, 2)),
               share=4)


def test_mutated_databases_read_the_same_with_two_processes(tmp_path_factory, monkeypatch):
    """A database's large tables read by a forked process (``ascend_db.ahead``), in pieces
    of 5 rows: the model, warnings included, is the one a single process reads, or the error
    is the same (a damaged table fails or is cut at the same row either way)."""
    from tracecvt.readers.ascend_db import ahead, database
    seeds = family("msprof-db").seeds()
    assert seeds, "no database sample runs"
    monkeypatch.setattr(ahead, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ahead, "BATCH_ROWS", 5)
    monkeypatch.setattr(database, "BATCH_ROWS", 5)      # (batches of the rows read here)
    forked = []
    real_fork = ahead.fork_child

    def fork(body):
        forked.append(body)
        return real_fork(body)
    monkeypatch.setattr(ahead, "fork_child", fork)
    _reads_the_same(seeds, "msprof-db", tmp_path_factory.mktemp("parallel-db"))
    assert forked, "no database was read by two processes"


def test_mutated_simpler_runs_read_the_same_with_two_processes(tmp_path_factory, monkeypatch):
    """A simpler run's deps.json loaded by a forked process while this one loads the
    records (``readers.simpler.deps.start_deps``): the model, warnings included, is the one
    a single process reads, or the error is the same."""
    from tracecvt.readers.simpler import deps as deps_mod
    seeds = [s for s in family("simpler").seeds()
             if any(t.name == "deps.json" for t in s.targets)]
    assert seeds, "no simpler sample runs with a deps.json"
    monkeypatch.setattr(deps_mod, "PARALLEL_MIN_BYTES", 0)
    forked = []
    real_fork = deps_mod.fork_pass
    monkeypatch.setattr(deps_mod, "fork_pass",
                        lambda fn, *wire: forked.append(1) or real_fork(fn, *wire))
    _reads_the_same(seeds, "simpler", tmp_path_factory.mktemp("parallel-simpler"))
    assert forked, "no deps.json was loaded by a second process"
