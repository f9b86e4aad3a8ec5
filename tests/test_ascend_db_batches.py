"""TASK rows a batch at a time (``readers.ascend_db.task_rows``): the batch path (the rows'
columns, what a task's info and type give worked out once, the args' tables filled a
column at a time) gives the model the row-by-row path gives, value for value and type for
type, and the same trace: on every database sample, in batches of any size, where rows only
the row-by-row path takes sit among them, and on mutated databases."""

from __future__ import annotations

import io
import shutil
import sqlite3

import pytest

from tracecvt.readers import ReadOptions, find_runs
from tracecvt.readers.ascend_db import database
from tracecvt.readers.ascend_db.task_rows import TaskRows
from tracecvt.writers import perfetto
from fuzzing import family, on_mutated
from test_ascend_db import _model_facts


def _read(root):
    try:
        (src,) = find_runs(root, "msprof-db")
        return src.read(ReadOptions(workers=1)), None
    except Exception as e:                  # noqa: BLE001 - compared, not hidden
        return None, f"{type(e).__name__}: {e}"


def _written(trace) -> bytes:
    out = io.BytesIO()
    perfetto.write_perfetto(trace, out, None)
    return out.getvalue()


def _both_ways(monkeypatch, root, written: bool = False) -> int:
    """Read ``root`` by batches and row by row; the same model (or the same error) both
    ways.  Returns how many batches took the batch path."""
    taken = []
    real = TaskRows._args

    def spy(self, *a):
        taken.append(1)
        return real(self, *a)
    with monkeypatch.context() as m:
        m.setattr(TaskRows, "_args", spy)
        batches, error = _read(root)
    with monkeypatch.context() as m:
        m.setattr(TaskRows, "batch", lambda self, cols: self.rows(zip(*cols)))
        rows, error_rows = _read(root)
    assert error == error_rows
    if batches is not None:
        assert _model_facts(batches) == _model_facts(rows)
        if written:
            assert _written(batches) == _written(rows)
    return len(taken)


def _msprof_copy(tmp_path):
    """A copy of the msprof database sample's run folder, and its database."""
    seed = next(s for s in family("msprof-db").seeds()
                if s.root.name.startswith("PROF_"))
    root = tmp_path / seed.root.name
    shutil.copytree(seed.root, root)
    (db,) = root.glob("msprof_*.db")
    return root, db


@pytest.mark.parametrize("size", [1 << 16, 7])
def test_database_samples_read_the_same_by_batches(monkeypatch, size):
    monkeypatch.setattr(database, "BATCH_ROWS", size)
    seeds = family("msprof-db").seeds()
    assert seeds, "no database sample runs"
    taken = [_both_ways(monkeypatch, seed.root, written=True) for seed in seeds]
    assert all(taken), "a sample's TASK rows did not take the batch path"


def test_rows_only_the_row_path_takes_among_batches(tmp_path, monkeypatch):
    """Batches of 5 rows: those with a row whose times are not usable, a BLOB, a float
    stream or a text task id go row by row, the rest (NULL or 'no id' contexts and models,
    NULL connections among them) by batch; hardware tasks around a context subtask and the
    subtask itself may fall in different batches."""
    root, db = _msprof_copy(tmp_path)
    c = sqlite3.connect(db)
    c.execute("UPDATE TASK SET contextId = 4294967295 WHERE rowid % 13 = 1")
    c.execute("UPDATE TASK SET modelId = NULL WHERE rowid % 11 = 2")
    c.execute("UPDATE TASK SET connectionId = NULL WHERE rowid % 17 = 3")
    c.execute("UPDATE TASK SET endNs = startNs - 1 WHERE rowid = 40")
    c.execute("UPDATE TASK SET streamId = 2.5 WHERE rowid = 90")
    c.execute("UPDATE TASK SET deviceId = x'00ff' WHERE rowid = 140")
    c.execute("UPDATE TASK SET taskId = 'seven' WHERE rowid = 190")
    c.commit()
    c.close()
    monkeypatch.setattr(database, "BATCH_ROWS", 5)
    n = sqlite3.connect(db).execute("SELECT count(*) FROM TASK").fetchone()[0]
    taken = _both_ways(monkeypatch, root, written=True)
    assert n // 5 - 4 <= taken < n // 5 + 1


@pytest.mark.parametrize("column", ["startNs", "endNs", "deviceId", "connectionId",
                                    "globalTaskId", "taskType", "contextId", "streamId",
                                    "taskId", "modelId"])
def test_a_column_of_floats_goes_row_by_row(tmp_path, monkeypatch, column):
    """A TASK column whose every value in a batch is a float comes from the forked reader
    as an ``array('d')``: that batch goes row by row (its floats are no ids and no
    times), as the row-by-row path takes it, and nothing reads a float's bytes as an
    int64 (a float start passed the time checks as a time)."""
    root, db = _msprof_copy(tmp_path)
    c = sqlite3.connect(db)
    c.execute(f'UPDATE TASK SET "{column}" = 1.5')
    c.commit()
    c.close()
    assert _both_ways(monkeypatch, root, written=True) == 0     # (no batch taken)


def test_mutated_databases_read_the_same_by_batches(tmp_path_factory, monkeypatch):
    on_mutated(family("msprof-db").seeds(), tmp_path_factory.mktemp("batches"),
               lambda root, _: _both_ways(monkeypatch, root), share=4)


def test_pmu_tasks_pipe_ratios_are_made_from_their_figures():
    """The batch path holds no pipe ratios per PMU task: its tables' "pipe_ratio" is a
    ``Derived`` column, made from the task's figures when read (the row path's dicts, the
    same values: ``test_database_samples_read_the_same_by_batches``)."""
    from tracecvt.arg_rows import ArgRow, Derived
    from tracecvt.readers.msprof.tasks import pipe_ratios
    seed = next(s for s in family("msprof-db").seeds() if s.root.name.startswith("PROF_"))
    trace, error = _read(seed.root)
    assert error is None
    rows = [s.args for s in trace.slices if s.args.__class__ is ArgRow and
            "pipe_ratio" in s.args.table.index]
    assert rows, "no PMU task with pipe ratios in the sample"
    for row in rows:
        table = row.table
        assert table.settle()[table.index["pipe_ratio"]].__class__ is Derived
        assert row["pipe_ratio"] == pipe_ratios(dict(row)) != {}


def test_rows_as_columns_keep_every_value_and_type():
    """``database.as_columns``: rows of ints alone become arrays all at once, anything else
    column by column (``forkpass.pack_numbers``); the same columns, values and types either
    way: ints at int64's edges, an int beyond them, floats, None, bytes, text, a bool (an
    int to ``isinstance``), rows of one value, no rows."""
    from array import array
    from tracecvt.forkpass import pack_numbers

    def by_column(rows):
        return [pack_numbers(list(column)) for column in zip(*rows)]

    ints = [(k, -k, (1 << 63) - 1 - k, -(1 << 63) + k, 7) for k in range(100)]
    cases = [ints, [(k,) for k in range(9)], [],
             ints + [(1, 2, 1 << 63, 4, 5)], ints + [(1, 2, 3, 4, 5.0)],
             ints + [(1, 2, 3, None, 5)], ints + [(1, b"x", 3, 4, 5)],
             ints + [(1, 2, "3", 4, 5)], ints + [(True, 2, 3, 4, 5)],
             [(0.5, 1), (1.5, 2)]]
    for rows in cases:
        got, want = database.as_columns(rows), by_column(rows)
        assert [(type(c), getattr(c, "typecode", None), list(c)) for c in got] == \
            [(type(c), getattr(c, "typecode", None), list(c)) for c in want]
        assert [list(map(type, c)) for c in got] == [list(map(type, c)) for c in want]
    (first, *_), (bool_first, *_) = database.as_columns(ints), database.as_columns(cases[8])
    assert first.__class__ is array and first.typecode == "q"
    assert bool_first.__class__ is list and bool_first[-1] is True
