"""Tables of a large database read ahead by a forked process, while this one reads others.

Reading a 1 M-task database is sqlite's rows and the model's objects, one process on one
CPU.  The objects must be made here, but the rows need not be fetched here: a forked
process fetches TASK's rows (with the task info the reader joins to them; where this one
has PMU figures to read meanwhile), then CANN_API's and PYTORCH_API's (with their lookups),
through a connection of its own, and hands each over as columns as soon as it has it, while
this one makes the slices of the tables it has.  What comes back is exactly what this
process would have read, values and types: a column of 64-bit ints or of floats as an
array (iterated, it gives back the same numbers), anything else as it is.  A table that
process fails on (or every table, where it cannot be forked or dies) is read here as
before, so its errors are reported as they would have been.  What the forked lookups
missed (string ids, enum values) is counted here once.
"""

from __future__ import annotations

import os
import pickle
import struct
import tempfile
from typing import IO, Any, Callable

from ...forkpass import fork_child, pack_numbers, reap
from .database import Database
from .host import cann_rows, pytorch_rows
from .tasks import task_tables

# Below this size a fork does not pay (the database of a 100,000-task run is 20 MB).
PARALLEL_MIN_BYTES = 8 << 20

# table -> what reads it (this process or the forked one): a dict whose "rows" are the
# table's rows as the reader takes them, its other keys what reading them told
PASSES: dict[str, Callable[[Database], dict]] = {
    "TASK": task_tables, "CANN_API": cann_rows, "PYTORCH_API": pytorch_rows}


def _as_columns(got: dict[str, Any]) -> dict[str, Any]:
    """In the forked process: every row read (its other keys told meanwhile), as columns
    that pickle fast (``pack_numbers``)."""
    got["rows"] = [pack_numbers(list(column)) for column in zip(*got["rows"])]
    return got


def _as_rows(got: dict[str, Any]) -> dict[str, Any]:
    """Here: the columns as rows again (an array's ints made as they are iterated)."""
    got["rows"] = zip(*got["rows"])
    return got


_NOTICE = struct.Struct("<Bqq")    # a table's place in PASSES, its data's offset, length


class Ahead:
    """A forked process that reads ``db``'s large tables, in the order the reader needs
    them (none for a small database or one process); ``take`` a table's result where the
    reader needs it, ``close`` at the end.

    Each table's result goes into a file the two processes share, and a notice of where
    it is through a pipe (a few bytes: the forked process never waits for this one to
    read, as it would with the results themselves in a pipe)."""

    def __init__(self, db: Database, workers: int):
        self.db = db
        self.tables: list[str] = []
        self.pid = 0
        self.notices: IO[bytes] | None = None
        self.told: dict[str, tuple[int, int]] = {}
        if workers < 2 or db.size() < PARALLEL_MIN_BYTES:
            return
        self.tables = [t for t in PASSES if t in db.tables]
        if self.tables[:1] == ["TASK"] and \
                2 * db.rows_about("TASK_PMU_INFO") < db.rows_about("TASK"):
            # TASK is the first table this process needs, and it has little to do before
            # (the PMU figures): it reads TASK itself rather than wait for it (a torch_npu
            # database: TASK 110,000 rows, no PMU figures, PYTORCH_API 492,000)
            del self.tables[0]
        if not self.tables:
            return
        self.file = tempfile.TemporaryFile()
        forked = fork_child(self._read_ahead)
        if forked is None:
            self.file.close()
            return
        self.pid, r = forked
        self.notices = os.fdopen(r, "rb")

    def _read_ahead(self, w: int) -> None:
        """The forked process: each table read (through a connection of its own), written
        to the file, and told; one that fails is told so (length -1), and the rest go on."""
        db = self.db
        db.reconnect()
        at = 0
        for k, table in enumerate(self.tables):
            try:
                before = db.misses()
                got = _as_columns(PASSES[table](db))
                got["misses"] = db.misses(before)
                data = pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:                   # noqa: BLE001 - that table is read there
                os.write(w, _NOTICE.pack(k, 0, -1))
                continue
            self.file.write(data)           # (a file object writes it whole)
            self.file.flush()
            os.write(w, _NOTICE.pack(k, at, len(data)))
            at += len(data)
        os.close(w)

    def take(self, table: str) -> dict[str, Any] | None:
        """What the forked process read of ``table``, or None (it was not started, it
        failed on that table, or it ended before: the reader then reads it itself)."""
        if self.notices is None or table not in self.tables:
            return None
        while table not in self.told:
            notice = self.notices.read(_NOTICE.size)
            if len(notice) < _NOTICE.size:          # it ended (or died) before that table
                return None
            k, at, length = _NOTICE.unpack(notice)
            self.told[self.tables[k]] = (at, length)
        at, length = self.told.pop(table)
        if length < 0:
            return None
        data = bytearray(length)
        view = memoryview(data)
        done = 0
        while done < length:                # (one call reads 2 GiB at most)
            n = os.preadv(self.file.fileno(), [view[done:]], at + done)
            if not n:
                return None
            done += n
        view.release()
        got = pickle.loads(data)            # (ours, not the input's)
        del data
        self.db.add_misses(got.pop("misses"))
        return _as_rows(got)

    def close(self) -> None:
        """Stop the forked process if it still runs, and let go of the pipe and file."""
        if self.pid:
            reap(self.pid, kill=True)
            self.pid = 0
        if self.notices is not None:
            self.notices.close()
            self.notices = None
            self.file.close()
