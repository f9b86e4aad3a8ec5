"""Tables of a large database read ahead by forked processes, while this one reads others.

Reading a 1 M-task database is sqlite's rows and the model's objects, one process on one
CPU.  The objects must be made here, but the rows need not be fetched here: a forked
process fetches TASK's rows (with the task info the reader joins to them) and another
CANN_API's, each through a connection of its own, and hands them over as columns while
this one reads the PMU figures and then makes TASK's slices.  What comes back is exactly
what this process would have read, values and types: a column of 64-bit ints or of floats
as an array (iterated, it gives back the same numbers), anything else as it is.  A process
that fails or cannot be forked leaves its table to be read here as before, so its errors
are reported as they would have been.  What the forked lookups missed (string ids, enum
values) is counted here once.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from ...forkpass import ForkedPass, fork_pass, pack_numbers
from .database import Database
from .host import cann_rows
from .tasks import task_tables

# Below this size a fork does not pay (the database of a 100,000-task run is 20 MB).
PARALLEL_MIN_BYTES = 8 << 20
_CANN_NUMBERS = ("start", "dur", "tid", "name", "conn")


def _task_ahead(db: Database) -> dict[str, Any]:
    got = task_tables(db)
    rows = got["rows"].fetchall()
    got["rows"] = [pack_numbers(list(column)) for column in zip(*rows)]
    return got


def _task_back(got: dict[str, Any]) -> dict[str, Any]:
    # rows as the cursor gives them; an array's ints are made as they are iterated, not
    # all at once
    got["rows"] = zip(*got["rows"])
    return got


def _cann_ahead(db: Database) -> dict[str, Any]:
    got = cann_rows(db)
    for k in _CANN_NUMBERS:
        got[k] = pack_numbers(got[k])
    return got


def _cann_back(got: dict[str, Any]) -> dict[str, Any]:
    return got          # (arrays iterate as the lists they were made from)


# table -> (what the forked process reads, how this one takes it back)
PASSES: dict[str, tuple[Callable[[Database], dict], Callable[[dict], dict]]] = {
    "TASK": (_task_ahead, _task_back),
    "CANN_API": (_cann_ahead, _cann_back),
}


def _in_child(db: Database, read: Callable[[Database], dict]) -> dict[str, Any]:
    db.reconnect()
    before = db.misses()
    got = read(db)
    got["misses"] = db.misses(before)
    return got


class Ahead:
    """The forked readers of ``db``'s large tables (none for a small database or one
    process); ``take`` a table's result where the reader needs it, ``close`` at the end."""

    def __init__(self, db: Database, workers: int):
        self.db = db
        self.passes: dict[str, ForkedPass] = {}
        if workers > 1 and db.size() >= PARALLEL_MIN_BYTES:
            for table, (read, _) in PASSES.items():
                if table in db.tables:
                    helper = fork_pass(partial(_in_child, db, read))
                    if helper is not None:
                        self.passes[table] = helper

    def take(self, table: str) -> dict[str, Any] | None:
        """What the forked process read of ``table``, or None (none was started, or it
        failed: the reader then reads the table itself)."""
        helper = self.passes.pop(table, None)
        if helper is None:
            return None
        try:
            got = helper.result()
        finally:
            helper.abandon()
        if got is None:
            return None
        self.db.add_misses(got.pop("misses"))
        return PASSES[table][1](got)

    def close(self) -> None:
        for helper in self.passes.values():
            helper.abandon()
        self.passes.clear()
