"""Own args held as rows of a table (``arg_rows.ArgRow``), encoded a column at a time.

A table's columns whose every value is a number an arg writes as itself (a float, or an
int in [0, 2^63)) are "static": their DebugAnnotations depend on the value and the arg
name's iid only, so a run of such columns is built for every row of the table at once with
numpy, every row's bytes end to end in one ``bytes``.  A column whose every value is None
writes nothing.  The other columns ("dynamic": strings, which are written inline first and
interned from their second use, nested values, None among values...) are encoded per
row, in the table's order, as the encoder's usual path does (a string seen before is
taken from its cache here); rows that can define nothing (``RowPlans.later``) are
encoded together, their runs' bytes and their values' (each distinct one looked up
once) gathered by numpy (``encode_later``).  The bytes, and the order in which
interned entries are defined, are those of encoding the row as a dict: a table's first row
in a process is encoded that way (which gives its static columns' names their iids, in the
dict way's order), and a run's name entries are defined on a sequence before its first use
there, in column order, as the dict way defines them arg by arg.
"""

from __future__ import annotations

from array import array
from itertools import count
from typing import Any, Callable

import numpy as np

from ...arg_rows import ArgRow, ArgTable, Coded, Derived
from ...distinct import distinct_places
from ...model import INPUTS, OUTPUTS
from .columns import factor, gather_rows, varint_matrix
from .wire import _DOUBLE_VALUE, _INT_VALUE, _TE_DEBUG

_CHUNK = 65536          # rows built at once (bounds the byte matrix)
_ALONE = 1024           # a run's rows encoded one at a time before all are cut at once
_TEXTS = 4096           # rows of a Derived column made text at a time
_OPERANDS = frozenset({INPUTS, OUTPUTS})    # (lists written otherwise: ``compact_text``)


class _Run:
    """A run of static columns: the name entries they use, and each row's bytes (row r's
    are ``data[at[r]:at[r + 1]]``, ``piece(r)``)."""

    __slots__ = ("entries", "data", "at", "optional", "pieces", "alone")

    def __init__(self, entries: tuple[bytes, ...], data: bytes, at: np.ndarray,
                 optional: bool):
        self.entries = entries      # (the run itself, in a sequence's ``seen``: its entries
        self.data = data            # are defined there)
        self.at = at
        self.optional = optional    # one column with None values: no bytes, no entry there
        self.pieces: list[bytes] | None = None      # one bytes per row, once
        self.alone = 0              # rows encoded one at a time (``RowPlans.encode``)

    def piece(self, r: int) -> bytes:
        """Row ``r``'s bytes (where rows are encoded one at a time, ``_ALONE`` of them, they
        are cut out of ``data`` once, for every row)."""
        if self.pieces is not None:
            return self.pieces[r]
        self.alone += 1
        if self.alone > _ALONE:
            data, at = self.data, self.at.tolist()
            self.pieces = [data[a:b] for a, b in zip(at, at[1:])]
            return self.pieces[r]
        return self.data[int(self.at[r]):int(self.at[r + 1])]


class RowPlans:
    """Per writer process: how each ``ArgTable`` met is encoded (``encode``)."""

    def __init__(self, names: dict[str, tuple[bytes, bytes]], cache: dict,
                 encode_pairs: Callable[[Any, Any], bytes],
                 encode_new: Callable[[str, Any, Any], bytes],
                 encode_text: Callable[[str, str, Any], bytes]):
        self.names = names                  # the encoder's: arg name -> (name field, entry)
        self.cache = cache                  # and its (name, str, value) -> (bytes, entries)
        self.encode_pairs = encode_pairs    # the encoder's (name, value) pairs, seq -> bytes
        self.encode_new = encode_new        # and its (name, a new value, seq) -> bytes
        self.encode_text = encode_text      # and its (name, a nested value's text, seq)
        self.plans: dict[ArgTable, tuple[int, list]] = {}     # (tables hash as themselves)
        # (table, column) of a ``Derived`` column -> the first row, the stop and the texts
        # of the rows made last (None: made one at a time), ``_TEXTS`` rows at a time
        self.texts: dict[tuple[ArgTable, int], tuple[int, int, list | None]] = {}

    def clear(self) -> None:
        self.plans.clear()
        self.texts.clear()

    def _text(self, table: ArgTable, k: int, column: Derived, r: int) -> str | None:
        """Row ``r``'s value of the ``Derived`` column ``k`` of ``table`` as compact JSON
        text, where its column makes them a column at a time (``Derived.texts``: a PMU
        task's pipe ratios, 10 us a row one at a time); else None."""
        got = self.texts.get((table, k))
        if got is None or not got[0] <= r < got[1]:
            first = r - r % _TEXTS
            stop = min(first + _TEXTS, table.size)
            got = self.texts[(table, k)] = (first, stop, column.texts(first, stop))
        return None if got[2] is None else got[2][r - got[0]]

    def encode(self, row: ArgRow, seq) -> bytes:
        """``row``'s DebugAnnotations, defining on ``seq`` the entries they use."""
        table, r = row.table, row.row
        plan = self.plans.get(table)
        if plan is None or r >= plan[0]:
            # the table's first row here, or one added since its plan: the dict way (which
            # gives the names their iids)
            out = self.encode_pairs(zip(table.names, table.row(r)), seq)
            if plan is None:
                self.plans[table] = _plan(table, self.names)
            return out
        parts = []
        cache, defined, encode_pairs = self.cache, seq.defined, self.encode_pairs
        encode_new = self.encode_new
        columns = table.columns             # (the rows of the plan are settled)
        for seg in plan[1]:
            if seg.__class__ is _Run:
                pieces = seg.pieces
                piece = pieces[r] if pieces is not None else seg.piece(r)
                if seg not in seq.seen and (piece or not seg.optional):
                    seq.seen.add(seg)
                    seq.use(seg.entries)
                parts.append(piece)
                continue
            name, column = seg[1], columns[seg[0]]
            if column.__class__ is Derived:     # (a new value: nothing cached by it)
                text = self._text(table, seg[0], column, r) if name not in _OPERANDS \
                    else None
                parts.append(encode_new(name, column[r], seq) if text is None else
                             self.encode_text(name, text, seq))
                continue
            value = column.values[column.codes[r]] if column.__class__ is Coded else column[r]
            if value.__class__ is str:      # a string seen before, as ``encode_pairs``
                hit = cache.get((name, str, value))     # takes it
                if hit is not None:
                    parts.append(hit[0])
                    for entry in hit[1]:
                        if entry not in defined:
                            defined.add(entry)
                            seq.pending.append(entry)
                    continue
            elif value is None:
                continue                    # (nothing, as ``encode_pairs``)
            parts.append(encode_pairs(((name, value),), seq))
        return b"".join(parts)

    def later(self, table: ArgTable, rows: list[int], seq) -> list[bool] | None:
        """Which of ``rows`` (row numbers of ``table``, in the order they are to be encoded
        on ``seq``, after all encoded there so far) may be encoded at once, after the
        others (``encode_later``): encoding them in their place would define no entry on
        ``seq`` and change no cache, once the others are encoded in order (``encode``).
        None where ``table`` has no plan yet.  Not later: a row added after the plan; the
        first row to use a run the sequence has not seen; a string's first use here where
        its entries are not all defined on ``seq``, and its first two where it is not in
        the cache (written inline first, interned from the next); a list's or dict's
        (one string, cached by the object: ``_ArgEncoder.pair``) first use here where it
        is not cached or its entries are not defined on ``seq``; any other value that is
        not None in a dynamic column (none of a table with a ``Derived`` column: its values
        are new lists or dicts at each read)."""
        plan = self.plans.get(table)
        if plan is None:
            return None
        planned, segs = plan
        later = [r < planned for r in rows]
        cache, defined, seen = self.cache, seq.defined, seq.seen
        for seg in segs:
            if seg.__class__ is _Run:
                if seg in seen or not rows:
                    continue
                if seg.optional:                    # the first row that uses it
                    at = np.array(rows, dtype=np.int64)
                    planned_ = at < planned
                    uses = ~planned_
                    sized = at[planned_]
                    uses[planned_] = seg.at[sized + 1] > seg.at[sized]
                    if uses.any():
                        later[int(uses.argmax())] = False
                else:
                    later[0] = False
                continue
            c, name = seg
            if table.columns[c].__class__ is Derived:
                return [False] * len(rows)      # (a new list or dict in every row)
            column = table.take(c, rows)
            first: dict[Any, int] = {}          # each string's first place
            if _STR_OR_NONE.issuperset(map(type, column)):
                list(map(first.setdefault, column, count()))
            else:
                nested: dict[int, int] = {}     # each list's or dict's first place
                for j, v in enumerate(column):
                    if v.__class__ is str:
                        first.setdefault(v, j)
                    elif v.__class__ in _NESTED:
                        nested.setdefault(id(v), j)
                    elif v is not None:
                        later[j] = False
                for key, j in nested.items():   # (made one string: ``_ArgEncoder.pair``)
                    hit = cache.get((name, key))
                    if hit is None or not defined.issuperset(hit[1]):
                        later[j] = False
            new: set[str] = set()           # strings not cached: inline here, interned at
            for v, j in first.items():      # their next use
                if v is None:
                    continue
                hit = cache.get((name, str, v))
                if hit is None:
                    later[j] = False
                    new.add(v)
                elif not defined.issuperset(hit[1]):
                    later[j] = False
            if new:                         # (their next uses, in one pass)
                for j, v in enumerate(column):
                    if v.__class__ is str and v in new and first[v] != j:
                        later[j] = False
                        new.discard(v)
                        if not new:
                            break
        return later

    def encode_later(self, table: ArgTable, rows: list[int]) -> tuple[bytes, np.ndarray]:
        """The DebugAnnotations of ``rows`` of ``table`` that ``later`` let wait, once the
        rows before them were encoded: each run's piece, each string, list or dict from
        the cache; the rows' end to end, and each row's length.  A column at a time: the
        runs' pieces and the distinct values' bytes gathered by numpy."""
        segs = self.plans[table][1]
        n = len(rows)
        if not segs:
            return b"", np.zeros(n, dtype=np.int64)
        at = np.array(rows, dtype=np.int64)
        cache = self.cache
        pools: list[np.ndarray] = []
        starts, lengths = np.empty((n, len(segs)), np.int64), np.empty((n, len(segs)), np.int64)
        base = 0
        for j, seg in enumerate(segs):
            if seg.__class__ is _Run:
                # (the rows' pieces gathered first: a lane's rows of a table may lie
                # far apart in it, among other lanes')
                first = seg.at[at]
                size = seg.at[at + 1] - first
                made, _ = gather_rows(np.frombuffer(seg.data, dtype=np.uint8),
                                      first[:, None], size[:, None])
                pool = np.frombuffer(made, dtype=np.uint8)
                starts[:, j] = np.cumsum(size) - size
            else:
                c, name = seg
                values, number = _distinct(table, c, rows, at)
                made = [b"" if v is None else cache[name, str, v][0] if v.__class__ is str
                        else cache[name, id(v)][0] for v in values]
                made_len = np.fromiter(map(len, made), np.int64, len(made))
                size = made_len[number]
                starts[:, j] = (np.cumsum(made_len) - made_len)[number]
                pool = np.frombuffer(b"".join(made), dtype=np.uint8)
            lengths[:, j] = size
            starts[:, j] += base
            base += len(pool)
            pools.append(pool)
        return gather_rows(np.concatenate(pools), starts, lengths)


def _distinct(table: ArgTable, c: int, rows: list[int], at: np.ndarray
              ) -> tuple[list, np.ndarray]:
    """The distinct values of column ``c`` of ``rows`` (``at`` as an array), and each
    row's number among them; a list or dict is one by itself (by identity).  A ``Coded``
    column's rows are told apart by their numbers; other columns' by ``factor``."""
    column = table.settle()[c]
    if column.__class__ is Coded:
        used, number = distinct_places(
            np.frombuffer(column.codes, dtype=_CODES[column.codes.typecode])[at])
        return list(map(column.values.__getitem__, used.tolist())), number
    values = table.take(c, rows)
    if _STR_OR_NONE.issuperset(map(type, values)):
        firsts, number = factor(values)
    else:
        firsts, number = factor([v if v is None or v.__class__ is str else id(v)
                                 for v in values])
    return list(map(values.__getitem__, firsts)), number


def _plan(table: ArgTable, names: dict[str, tuple[bytes, bytes]]) -> tuple[int, list]:
    """How ``table``'s rows (the number it has now, then how) are encoded, in column
    order: a ``_Run`` per run of static columns, (column, name) per dynamic column; columns
    of None only are left out (they write nothing)."""
    plan: list = []
    run: list[tuple[bytes, _Column]] = []
    for c, values in enumerate(table.settle()):
        column = _column(values)
        if column is _NONE:
            continue                # (neither ends a run nor starts one)
        name = table.names[c]
        if column is _DYNAMIC or column.optional:
            if run:
                plan.append(_make_run(run))
                run = []
            # a number or None: a run of its own, whose entry is defined where it has one;
            # dynamic where the row encoded first had None (its name has no iid yet)
            plan.append(_make_run([(names[name], column)], True)
                        if column is not _DYNAMIC and name in names else (c, name))
        else:
            run.append((names[name], column))
    if run:
        plan.append(_make_run(run))
    return len(table), plan


class _Column:
    """A static column's values: its floats and its ints (rows ``at_float``, ``at_int``
    where both are there; None: every row) as arrays; rows of None have neither."""

    __slots__ = ("n", "floats", "ints", "at_float", "at_int", "optional")

    def __init__(self, n, floats, ints, at_float=None, at_int=None, optional=False):
        self.n, self.floats, self.ints = n, floats, ints
        self.at_float, self.at_int, self.optional = at_float, at_int, optional


_NONE, _DYNAMIC = object(), object()
_FLOATS, _INTS = frozenset({float}), frozenset({int})
_ONLY_NONE = frozenset({type(None)})
_NUMBERS = frozenset({int, float, type(None)})
_CLASS_CODE = {float: 0, int: 1, type(None): 2}
_STR_OR_NONE = frozenset({str, type(None)})
_CODES = {"H": np.uint16, "I": np.uint32}       # ``Coded.codes`` as numpy reads them
_NESTED = frozenset({list, dict, tuple})


def _column(values: tuple):
    """A column's values as a ``_Column`` where it is static (every value a float, an int
    in [0, 2^63) or None, not all None), else ``_NONE`` (every value None) or
    ``_DYNAMIC``."""
    if values.__class__ is Derived:         # (lists or dicts, made when read)
        return _DYNAMIC
    n = len(values)
    if values.__class__ is array and n:     # ints of int64 (``ArgTable.settle``)
        ints = np.array(values, dtype=np.int64)
        return _Column(n, None, ints) if not n or int(ints.min()) >= 0 else _DYNAMIC
    if values.__class__ is Coded:           # (few distinct values: their kinds first)
        classes = frozenset(map(type, values.values))
        if classes == _ONLY_NONE:
            return _NONE
        if not classes <= _NUMBERS:
            return _DYNAMIC
        values = list(values)
    classes = frozenset(map(type, values))
    if classes == _ONLY_NONE:
        return _NONE
    if not classes or not classes <= _NUMBERS:
        return _DYNAMIC
    try:
        if classes == _FLOATS:
            return _Column(n, np.fromiter(values, dtype="<f8", count=n), None)
        if classes == _INTS:
            ints = np.fromiter(values, dtype=np.int64, count=n)
            return _Column(n, None, ints) if int(ints.min()) >= 0 else _DYNAMIC
        code = np.fromiter(map(_CLASS_CODE.__getitem__, map(type, values)), dtype=np.int8,
                           count=n)
        at_float, at_int = np.flatnonzero(code == 0), np.flatnonzero(code == 1)
        floats = np.array([values[k] for k in at_float.tolist()], dtype="<f8")
        ints = np.array([values[k] for k in at_int.tolist()], dtype=np.int64)
    except OverflowError:               # an int from 2^63 on
        return _DYNAMIC
    if len(ints) and int(ints.min()) < 0:
        return _DYNAMIC
    return _Column(n, floats, ints, at_float, at_int, type(None) in classes)


def _make_run(columns: list[tuple[tuple[bytes, bytes], _Column]],
              optional: bool = False) -> _Run:
    """The run of ``columns`` ((name field, entry), values): each row's DebugAnnotations."""
    entries = tuple(dict.fromkeys(e for (_, e), _ in columns))
    n = columns[0][1].n
    data: list[bytes] = []
    sizes: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    for first in range(0, n, _CHUNK):
        rows = slice(first, min(n, first + _CHUNK))
        cells = [_cells(column, rows, head) for (head, _), column in columns]
        if len(cells) == 1:
            matrix, keep = cells[0]
        else:
            matrix = np.concatenate([m for m, _ in cells], axis=1)
            keep = np.concatenate([k for _, k in cells], axis=1)
        data.append(matrix[keep].tobytes())
        sizes.append(keep.sum(axis=1))
    return _Run(entries, b"".join(data), np.cumsum(np.concatenate(sizes)), optional)


def _cells(column: _Column, rows: slice, head: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Each value's DebugAnnotation (``_TE_DEBUG``, the body's length, ``head``: the name
    field, the value field) as a row of a uint8 matrix, and which of its bytes are used
    (none for a None), for ``rows`` of ``column``."""
    if column.at_float is None:         # one kind in every row
        if column.floats is not None:
            return _float_cells(column.floats[rows], head)
        return _int_cells(column.ints[rows].astype(np.uint64), head)
    n = rows.stop - rows.start
    parts = []
    for at, values, cells in ((column.at_float, column.floats, _float_cells),
                              (column.at_int, column.ints, _int_cells)):
        lo, hi = np.searchsorted(at, (rows.start, rows.stop))
        if hi > lo:
            m, k = cells(values[lo:hi] if cells is _float_cells
                         else values[lo:hi].astype(np.uint64), head)
            parts.append((at[lo:hi] - rows.start, m, k))
    if not parts:
        return np.zeros((n, 0), dtype=np.uint8), np.zeros((n, 0), dtype=bool)
    width = max(m.shape[1] for _, m, _ in parts)
    matrix = np.zeros((n, width), dtype=np.uint8)
    keep = np.zeros((n, width), dtype=bool)             # (a None: nothing)
    for at, m, k in parts:
        matrix[at, :m.shape[1]] = m
        keep[at, :m.shape[1]] = k
    return matrix, keep


def _float_cells(values: np.ndarray, head: bytes) -> tuple[np.ndarray, np.ndarray]:
    h = len(head)
    matrix = np.empty((len(values), 3 + h + 8), dtype=np.uint8)
    matrix[:, :3 + h] = np.frombuffer(_TE_DEBUG + bytes((h + 9,)) + head + _DOUBLE_VALUE,
                                      dtype=np.uint8)
    matrix[:, 3 + h:] = values.view(np.uint8).reshape(-1, 8)
    return matrix, np.ones(matrix.shape, dtype=bool)


def _int_cells(values: np.ndarray, head: bytes) -> tuple[np.ndarray, np.ndarray]:
    h = len(head)
    groups, sizes = varint_matrix(values) if len(values) else \
        (np.zeros((0, 1), dtype=np.uint8), np.zeros(0, dtype=np.int64))
    matrix = np.empty((len(values), 3 + h + groups.shape[1]), dtype=np.uint8)
    matrix[:, 0] = _TE_DEBUG[0]
    matrix[:, 1] = h + 1 + sizes                # the body's length (< 128: one byte)
    matrix[:, 2:2 + h] = np.frombuffer(head, dtype=np.uint8)
    matrix[:, 2 + h] = _INT_VALUE[0]
    matrix[:, 3 + h:] = groups
    return matrix, np.arange(matrix.shape[1]) < (3 + h + sizes)[:, None]
