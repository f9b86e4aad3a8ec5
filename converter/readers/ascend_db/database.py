"""Opening an Ascend profiling database read-only, and the lookups every table needs.

The file is opened with ``file:…?mode=ro&immutable=1``: sqlite then takes no lock and reads
no journal, so a profiler still holding the file, a read-only folder or a lock held by
another process never stops the conversion, and nothing (no ``-journal``, ``-wal``, ``-shm``)
is ever written beside the input.  The price of ``immutable``: changes another process makes
while we read are not seen, and a write-ahead log beside the file would be ignored; so where
a ``-wal`` file sits beside the database it is opened with ``mode=ro`` alone (sqlite reads the
log, may wait on a writer's lock, and says "database is locked" if one never lets go).
A database inside an archive or compressed is copied to a temporary file first.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from array import array
from itertools import chain, islice
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote

import numpy as np

from ...archive import locate
from ...errors import InputError
from ...fileio import read_bytes, read_head
from ...forkpass import pack_numbers
from ...model import MAX_NS, Trace

MAGIC = b"SQLite format 3\x00"
# What reading a damaged database can raise: sqlite's errors, and UnicodeDecodeError where a
# damaged name (a table or column name, an error message) is not UTF-8.
DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)
# What makes a database an msprof / torch_npu export: its metadata and string tables plus at
# least one of the timeline tables.
REQUIRED = {"META_DATA", "STRING_IDS"}
TIMELINE = {"TASK", "CANN_API", "PYTORCH_API", "COMMUNICATION_OP", "MSTX_EVENTS",
            "NPU_MEM", "AICORE_FREQ"}


def is_export_tables(tables: set[str] | frozenset[str]) -> bool:
    """Whether a database with these tables is an msprof / torch_npu export."""
    return REQUIRED <= tables and bool(tables & TIMELINE)


def looks_like_sqlite(path: Path) -> bool:
    try:
        return read_head(path, 16) == MAGIC
    except OSError:
        return False


class Database:
    """One open export: its tables, strings and enums."""

    def __init__(self, path: Path):
        self.path = path
        self._tmp: str | None = None
        try:
            self.conn = self._open(path)
        except BaseException:
            # a copy that could not be made or opened (a damaged .gz, an archive entry
            # past the cap, no database in it) is not left behind
            self._remove_copy()
            raise
        try:
            self.tables = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        except DB_ERRORS as e:
            self.close()
            raise InputError(path, f"not a readable SQLite database ({e})") from None
        self._strings: dict[int, str] | None = None
        self._enums: dict[str, dict[int, str]] = {}
        self.missing_strings = 0
        self.unknown_enums: dict[str, set[int]] = {}

    def _open(self, path: Path) -> sqlite3.Connection:
        real = str(path)
        if locate(path) is not None or _gzipped(path):
            fd, self._tmp = tempfile.mkstemp(suffix=".db", prefix="tracecvt-")
            with os.fdopen(fd, "wb") as f:
                f.write(read_bytes(path))
            real = self._tmp
        self._real = real
        return self._connect(path, real)

    def reconnect(self) -> None:
        """A connection of this process's own to the same file: a forked process reads
        through one (an open connection must not be used across a fork); the first is
        left as it is, for the process that made it."""
        self.conn = self._connect(self.path, self._real)

    def size(self) -> int:
        """Bytes of the file read (0 where that cannot be told)."""
        try:
            return os.path.getsize(self._real)
        except OSError:
            return 0

    @staticmethod
    def _connect(path: Path, real: str) -> sqlite3.Connection:
        wal = os.path.exists(real + "-wal")
        uri = f"file:{quote(os.path.abspath(real))}?mode=ro" + ("" if wal else "&immutable=1")
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = 1")
            # TEXT that is not UTF-8 (a damaged file) reads with U+FFFD where the bad bytes
            # were, instead of stopping the whole table
            conn.text_factory = _decode
        except DB_ERRORS as e:
            raise InputError(path, f"cannot open the database read-only ({e})") from None
        return conn

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self._remove_copy()

    def _remove_copy(self) -> None:
        """Remove the temporary copy of a compressed or archived database, if any."""
        if self._tmp:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- content -------------------------------------------------------------------------
    def is_export(self) -> bool:
        return is_export_tables(self.tables)

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f'PRAGMA table_info("{table}")')]

    def count(self, table: str) -> int:
        if table not in self.tables:
            return 0
        return self.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]

    def rows_about(self, table: str) -> int:
        """About how many rows ``table`` has, at once (its largest rowid: a table's rows
        are appended by the profiler, never deleted); 0 where that cannot be told."""
        if table not in self.tables:
            return 0
        try:
            n = self.conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
        except DB_ERRORS:
            return 0
        return n if isinstance(n, int) else 0

    def rows(self, table: str, want: list[str]):
        """(present columns, cursor over rows of those columns) — columns a version lacks
        come back as None so readers index by name."""
        have = set(self.columns(table))
        sel = ", ".join(f'"{c}"' if c in have else "NULL" for c in want)
        return [c for c in want if c in have], self.conn.execute(f'SELECT {sel} FROM "{table}"')

    def meta(self) -> dict[str, str]:
        if "META_DATA" not in self.tables:
            return {}
        return {str(n): str(v) for n, v in self.conn.execute("SELECT name, value FROM META_DATA")}

    @property
    def strings(self) -> dict[int, str]:
        if self._strings is None:
            self._strings = dict(self.conn.execute("SELECT id, value FROM STRING_IDS")) \
                if "STRING_IDS" in self.tables else {}
        return self._strings

    def string(self, sid) -> str | None:
        """STRING_IDS value of ``sid``; a missing id counts and gives None."""
        if sid is None:
            return None
        try:
            v = self.strings.get(sid)
        except TypeError:           # an unhashable id cannot happen in sqlite; be safe
            v = None
        if v is None:
            self.missing_strings += 1
            return None
        return v if type(v) is str else text(v)

    def misses(self, since: tuple | None = None) -> tuple[int, dict[str, set[str]]]:
        """What the lookups could not find: (string ids missed, {enum table: values not
        in it}); with ``since`` (an earlier result), only what was missed after it."""
        count, enums = self.missing_strings, self.unknown_enums
        if since is None:
            return count, {t: set(v) for t, v in enums.items()}
        new = {t: v - since[1].get(t, set()) for t, v in enums.items()}
        return count - since[0], {t: v for t, v in new.items() if v}

    def add_misses(self, misses: tuple[int, dict[str, set[str]]]) -> None:
        """Count what another process's lookups missed (``misses``) as this one's."""
        self.missing_strings += misses[0]
        for table, values in misses[1].items():
            self.unknown_enums.setdefault(table, set()).update(values)

    def enum(self, table: str, value) -> str | None:
        names = self._enums.get(table)
        if names is None:
            names = self._enums[table] = dict(self.conn.execute(
                f'SELECT id, name FROM "{table}"')) if table in self.tables else {}
        if value is None:
            return None
        name = names.get(value)
        if name is None:
            self.unknown_enums.setdefault(table, set()).add(text(value))
            return text(value)
        return name if type(name) is str else text(name)


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _gzipped(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def span(start, end) -> tuple[int, int] | None:
    """(start, duration) of a row's ns times, or None where they are not usable times
    (not integers, negative, reversed, or beyond the model's bound)."""
    if type(start) is not int or type(end) is not int or start < 0 or end < start \
            or end > MAX_NS:
        return None
    return start, end - start


# Rows per batch of columns (``column_batches``; ``ahead`` hands a table over in batches of
# this size too).
BATCH_ROWS = 1 << 16


def as_columns(rows: list) -> list:
    """``rows`` (tuples of one table's row) as its columns, each in a form that pickles and
    reads fast (``forkpass.pack_numbers``: a column of 64-bit ints or of floats as an
    ``array``, so that its values and their types come back exactly); [] for no rows.

    Rows of ints alone (a TASK row's ten ids and times, a CANN call's five) are made
    columns all at once, through one array of their values: 0.5 s against 1.3 s for a
    million TASK rows (docs/performance.md, thirtieth session)."""
    if not rows:
        return []
    n, width = len(rows), len(rows[0])
    if set(map(type, chain.from_iterable(rows))) == _INT and \
            sum(map(len, rows)) == n * width:
        try:
            values = np.fromiter(chain.from_iterable(rows), np.int64, n * width)
        except OverflowError:                   # an int beyond 64 bits: column by column
            pass
        else:
            return [array("q", column.tobytes())
                    for column in values.reshape(n, width).T.copy()]
    return [pack_numbers(list(column)) for column in zip(*rows)]


_INT = {int}


def column_batches(rows: Iterable[tuple]) -> Iterator[list]:
    """``rows`` as batches of ``BATCH_ROWS`` rows, each batch as its columns
    (``as_columns``)."""
    rows = iter(rows)
    while True:
        chunk = list(islice(rows, BATCH_ROWS))
        if not chunk:
            return
        yield as_columns(chunk)


def add_end(index: dict, key, i: int) -> None:
    """Slice ``i`` into ``index[key]``: the slice, or the list of them in order once a
    second comes (most connection ids have one device task: no list each)."""
    at = index.get(key)
    if at is None:
        index[key] = i
    elif at.__class__ is int:
        index[key] = [at, i]
    else:
        at.append(i)


def ends_of(at) -> list[int] | tuple[int]:
    """The slices ``add_end`` put under a key (None for none: ())."""
    return () if at is None else (at,) if at.__class__ is int else at


def plain(v):
    """A cell as a value args can hold: bytes (a BLOB) as hex text."""
    return v.hex() if isinstance(v, bytes) else v


def text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def report_rows(trace: Trace, db: "Database", stats: dict, table: str, made: int, bad: int) -> None:
    """Count a table's rows and slices in stats; warn about rows without usable times."""
    stats[table] = {"rows": made + bad, "slices": made}
    if bad:
        trace.warn(f"{db.path}: {bad} {table} rows without a usable start/end time "
                   "not converted")


def sql_error(path: Path, table: str, e: Exception) -> str:
    return f"{path}: table {table} could not be read ({e}); its rows are not converted"
