"""Tables of a large database read ahead by a forked process, while this one reads others.

Reading a 1 M-task database is sqlite's rows and the model's objects, one process on one
CPU.  The objects must be made here, but the rows need not be fetched here: a forked
process fetches TASK's rows (with the task info the reader joins to them; where this one
has PMU figures to read meanwhile), then CANN_API's and PYTORCH_API's (with their lookups),
through a connection of its own, and hands them over as columns ``BATCH_ROWS`` rows at a
time (``database.as_columns``), so that this one makes the slices of a table's first rows
while the forked one still fetches the rest.  What comes back is exactly what this process would have read, values
and types: a column of 64-bit ints or of floats as an array (iterated, it gives back the
same numbers), anything else as it is.  A table that process fails on (or every table,
where it cannot be forked or dies) is read here as before, so its errors are reported as
they would have been; where it fails part-way through a table, this process reads the
table's rest itself (the rows it was handed, read again, are skipped).  What the forked
lookups missed (string ids, enum values) is counted here once.
"""

from __future__ import annotations

import os
import pickle
import struct
import tempfile
from collections import deque
from itertools import chain, islice
from typing import IO, Any, Callable, Iterator

from ...forkpass import fork_child, reap
from .database import BATCH_ROWS, Database, as_columns, column_batches
from .host import cann_rows, pytorch_rows
from .tasks import task_tables

# Below this size a fork does not pay (measured: docs/performance.md, tenth session; the
# database of a 100,000-task run is 20 MB).
PARALLEL_MIN_BYTES = 4 << 20

# table -> what reads it (this process or the forked one): a dict whose "rows" are the
# table's rows as the reader takes them, its other keys what reading them told
PASSES: dict[str, Callable[[Database], dict]] = {
    "TASK": task_tables, "CANN_API": cann_rows, "PYTORCH_API": pytorch_rows}


def _rows_of(columns: list) -> Iterator[tuple]:
    return zip(*columns)


def _pieces(got: dict[str, Any]) -> Iterator[tuple[bool, dict[str, Any]]]:
    """In the forked process: a pass's result ``got`` as pieces to hand over, (last?,
    piece): each piece has ``BATCH_ROWS`` of the rows as columns that pickle fast
    (``database.as_columns``), the first every other key of ``got``, the next what the rows
    read meanwhile added to its lists (they only grow: ``cann_rows``), the last its other
    values again but its dicts (complete when the pass begins: ``task_tables``; the rest
    final once every row is read, e.g. "bad")."""
    rows = got.pop("rows")
    lists = {key: 0 for key, v in got.items() if v.__class__ is list}
    first = True
    while True:
        chunk = list(islice(rows, BATCH_ROWS))
        last = len(chunk) < BATCH_ROWS
        if first:
            piece = dict(got)
        else:
            piece = {key: got[key][n:] for key, n in lists.items()}
            if last:
                piece.update((key, v) for key, v in got.items()
                             if key not in lists and v.__class__ is not dict)
        for key in lists:
            lists[key] = len(got[key])
        piece["rows"] = as_columns(chunk)
        yield last, piece
        if last:
            return
        first = False


_NOTICE = struct.Struct("<BBqq")   # a table's place in PASSES, last piece?, offset, length


class Ahead:
    """A forked process that reads ``db``'s large tables, in the order the reader needs
    them (none for a small database or one process); ``take`` a table's result where the
    reader needs it, ``close`` at the end.

    Each piece of a table (``_pieces``) goes into a file the two processes share, and a
    notice of where it is through a pipe (a few bytes: the forked process never waits for
    this one to read, as it would with the pieces themselves in a pipe)."""

    def __init__(self, db: Database, workers: int):
        self.db = db
        self.tables: list[str] = []
        self.pid = 0
        self.notices: IO[bytes] | None = None
        self.told: dict[str, deque] = {}       # table -> its pieces told, not yet taken
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
        """The forked process: each table read (through a connection of its own) piece by
        piece (``_pieces``), each written to the file and told; a table that fails is told
        so (length -1), and the rest go on."""
        db = self.db
        db.reconnect()
        at = 0
        for k, table in enumerate(self.tables):
            try:
                before = db.misses()
                for last, piece in _pieces(PASSES[table](db)):
                    if last:
                        piece["misses"] = db.misses(before)
                    data = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
                    self.file.write(data)       # (a file object writes it whole)
                    self.file.flush()
                    os.write(w, _NOTICE.pack(k, last, at, len(data)))
                    at += len(data)
            except Exception:                   # noqa: BLE001 - that table is read there
                os.write(w, _NOTICE.pack(k, True, 0, -1))
        os.close(w)

    def take(self, table: str, batches: bool = False) -> dict[str, Any] | None:
        """What the forked process read of ``table`` (its "rows" given as its pieces come;
        with ``batches``, as batches of columns: ``database.column_batches``), or None (it
        was not started, it failed on that table, or it ended before: the reader then
        reads it itself)."""
        if self.notices is None or table not in self.tables:
            return None
        piece = self._piece(table)
        if piece is None:
            return None
        last, got = piece
        rows = got.pop("rows")
        got["rows"] = self._batches(table, got, rows, last)
        if not batches:
            got["rows"] = chain.from_iterable(map(_rows_of, got["rows"]))
        return got

    def _batches(self, table: str, got: dict[str, Any], rows: list, last: bool) -> Iterator:
        """The rows of ``table``'s pieces as columns, a piece at a time, the first
        (``rows``, ``last``) at hand; each next piece's additions go into ``got`` as it
        comes.  Where a piece does not come, the rest are read here."""
        done = 0
        while True:
            yield rows
            if last:
                return
            done += len(rows[0]) if rows else 0
            piece = self._piece(table)
            if piece is None:
                yield from column_batches(self._rest(table, got, done))
                return
            last, more = piece
            rows = more.pop("rows")
            for key, v in more.items():
                if got.get(key).__class__ is list:
                    got[key].extend(v)
                else:
                    got[key] = v

    def _rest(self, table: str, got: dict[str, Any], done: int) -> Iterator:
        """``table``'s rows after the first ``done`` (those handed over), read here; its
        lists (which the rows index) kept as this reading makes them, its other keys set
        once every row is read."""
        own = PASSES[table](self.db)
        lists = [(got[key], v) for key, v in own.items() if v.__class__ is list]
        for row in islice(own["rows"], done, None):
            for mine, theirs in lists:
                if len(theirs) > len(mine):
                    mine.extend(theirs[len(mine):])
            yield row
        for key, v in own.items():
            if key != "rows" and v.__class__ is not list:
                got[key] = v

    def _piece(self, table: str) -> tuple[bool, dict[str, Any]] | None:
        """The next piece of ``table`` (last?, piece), or None: it failed, or the process
        ended before telling it, or the piece could not be read whole."""
        while not self.told.get(table):
            notice = self.notices.read(_NOTICE.size) if self.notices is not None else b""
            if len(notice) < _NOTICE.size:          # it ended (or died) before that table
                return None
            k, last, at, length = _NOTICE.unpack(notice)
            self.told.setdefault(self.tables[k], deque()).append((bool(last), at, length))
        last, at, length = self.told[table].popleft()
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
        piece = pickle.loads(data)          # (ours, not the input's)
        del data
        if last:
            self.db.add_misses(piece.pop("misses"))
        return last, piece

    def close(self) -> None:
        """Stop the forked process if it still runs, and let go of the pipe and file."""
        if self.pid:
            reap(self.pid, kill=True)
            self.pid = 0
        if self.notices is not None:
            self.notices.close()
            self.notices = None
            self.file.close()
