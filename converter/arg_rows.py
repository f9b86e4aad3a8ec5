"""Slices' own args held as rows of a table (issue 26's columnar model, first piece).

A reader that makes many slices whose own args have the same names in the same order (an
msprof database's device tasks: ids, op info, 20 or more PMU figures each) may give each
slice an ``ArgRow`` instead of a dict: the names are held once, in an ``ArgTable``, and the
values a column per name.  An ``ArgRow`` is a read-only mapping with the dict's order and
values, so every reader of ``Slice.args`` works unchanged (``Slice.all_args`` gives a dict);
writers that know tables take a row's numbers a column at a time
(``writers.perfetto.row_args``).  A row of an args dict costs a third of its memory (the
names and the hash table are the table's), and the Perfetto writer need not visit each
number.

Rows are added one at a time (``ArgTable.add``, as a reader makes them) and wait as tuples
until a column is first read (``ArgTable.settle``: what a writer does anyway to encode a
column at a time): then each column becomes an ``array('q')`` where every value is an int
of int64 (8 bytes a value, no int object), else a list; the tuples are let go.  A reader
that has its rows as columns adds them so (``ArgTable.extend``), a column of few distinct
values (an op's info, repeated for each of its tasks) as a ``Coded`` column: the values
once, and a number of 2 bytes per row.

A column whose values follow from the row's others (a PMU task's pipe ratios, from its
figures) may be a ``Derived`` column: nothing is held per row, and each read of a value
makes it anew (equal each time, a new object each time: a writer that caches values by
identity must not cache these; ``writers.perfetto.row_args`` encodes them as they come).

A caller that wants to change a row's args replaces them with a dict (``dict(row)``, then
its changes), as for any args (the model's args are read-only).  A row pickles as the dict
it stands for.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from operator import itemgetter
from typing import Any, Callable, Iterator

import msgspec


class ArgTable:
    """Arg names (distinct, in order) and their values: a column per name (``columns``,
    the rows settled: an ``array('q')``, a ``Coded``, a ``Derived`` or a list), and the
    tuples of the rows added since (``rows``)."""

    __slots__ = ("names", "index", "columns", "rows", "size")

    def __init__(self, names: tuple[str, ...]):
        if len(set(names)) != len(names) or not all(n.__class__ is str for n in names):
            raise ValueError(f"arg names must be distinct strings: {names!r}")
        self.names = tuple(names)
        self.index = {n: k for k, n in enumerate(self.names)}
        self.columns: list[Any] = [[] for _ in self.names]
        self.rows: list[tuple] = []
        self.size = 0                   # rows settled into the columns

    def add(self, values: tuple) -> ArgRow:
        """A new row of ``values`` (one per name, in order)."""
        if len(values) != len(self.names):
            raise ValueError(f"{len(values)} values for {len(self.names)} arg names")
        self.rows.append(values)
        return ArgRow(self, self.size + len(self.rows) - 1)

    def __len__(self) -> int:
        return self.size + len(self.rows)

    def settle(self) -> list[Any]:
        """The columns, the rows added since moved into them (a column an ``array('q')``
        while every value is an int of int64, else a list); the tuples let go."""
        if self.rows:
            rows, self.rows = self.rows, []
            for k, values in enumerate(zip(*rows)):
                self._extend(k, values)
            self.size += len(rows)
        return self.columns

    def extend(self, columns: list, n: int) -> int:
        """``n`` rows given as their columns (one per name, in order, of ``n`` values
        each); the first one's row number."""
        if len(columns) != len(self.names) or any(len(c) != n for c in columns
                                                      if c.__class__ is not Derived):
            raise ValueError(f"{len(columns)} columns for {len(self.names)} arg names, or "
                             f"not {n} values each")
        self.settle()
        first = self.size
        for k, values in enumerate(columns):
            if values.__class__ is Derived:
                values = self._derive(k, values, columns)
                if values is None:
                    continue
            self._extend(k, values)
        self.size += n
        return first

    def _derive(self, k: int, derived: Derived, columns: list) -> list | None:
        """The ``k``-th column made of ``derived`` for the rows given as ``columns``
        (``extend``): None where the column is (now) that ``Derived``; else its values for
        those rows, made now (the column holds values)."""
        column = self.columns[k]
        if not self.size and column.__class__ is list and not column:
            self.columns[k] = Derived(derived.make, derived.sources, self)
            return None
        if column.__class__ is Derived and column.make is derived.make and \
                column.sources == derived.sources:
            return None
        return list(map(derived.make, zip(*(columns[j] for j in derived.sources))))

    def _extend(self, k: int, values) -> None:
        """The ``k``-th column with ``values`` after its own (kept an ``array('q')`` while
        every value is an int of int64, ``Coded`` while both are)."""
        column = self.columns[k]
        if values.__class__ is Coded:
            if not self.size:
                self.columns[k] = Coded(values.values, array(values.codes.typecode,
                                                             values.codes))
                return
            if column.__class__ is Coded:
                column.extend(values)
                return
        elif column.__class__ is Coded or column.__class__ is Derived:
            column = self.columns[k] = list(column)
        if column.__class__ is array or not self.size:
            if values.__class__ is array:
                more = values
            elif values.__class__ is not Coded and \
                    (len(values) == 0 or values[0].__class__ is int) and \
                    _INT.issuperset(map(type, values)):     # (a float first: no need to look)
                try:
                    more = array("q", values)
                except OverflowError:
                    more = None
            else:
                more = None
            if more is not None:
                if column.__class__ is array:
                    column.extend(more)
                else:
                    self.columns[k] = array("q", more)
                return
            if column.__class__ is array:
                column = self.columns[k] = column.tolist()
        column.extend(values)

    def row(self, r: int) -> tuple:
        """Row ``r``'s values, in the names' order."""
        if r >= self.size:
            return self.rows[r - self.size]
        return tuple([column[r] for column in self.columns])

    def value(self, r: int, k: int) -> Any:
        """Row ``r``'s value of the ``k``-th name."""
        if r >= self.size:
            return self.rows[r - self.size][k]
        return self.columns[k][r]

    def take(self, k: int, rows: list[int] | range) -> list:
        """The values of the ``k``-th name of ``rows`` (a ``range`` of them is sliced)."""
        column = self.settle()[k]
        if column.__class__ is Coded:
            return column.take(rows)
        if rows.__class__ is range and rows.step == 1 and (column.__class__ is array
                                                          or column.__class__ is list):
            return column[rows.start:rows.stop].tolist() if column.__class__ is array \
                else column[rows.start:rows.stop]
        return list(map(column.__getitem__, rows))

    def take_columns(self, rows: list[int]) -> list:
        """The columns of ``rows``, each of its column's kind (``taker``)."""
        if not rows:
            return [[] for _ in self.names]
        return list(map(taker(rows), self.settle()))

    def __repr__(self) -> str:
        return f"ArgTable({len(self.names)} names, {len(self)} rows)"


_INT = frozenset({int})


class Coded:
    """A column of few distinct values (a reader's: the op info of many tasks of the same
    op): the values once each (by identity: 1, 1.0 and True stay apart), and each row's
    number of its value (``codes``, an ``array`` of 2 bytes a row, or 4 past 65,535
    values)."""

    __slots__ = ("values", "codes", "where")

    def __init__(self, values: list, codes: Any):
        self.values = list(values)
        self.where = {id(v): k for k, v in enumerate(self.values)}
        if len(self.where) != len(self.values):
            raise ValueError("a value given twice")
        self.codes = codes if codes.__class__ is array and codes.typecode == _code_type(
            len(self.values)) else array(_code_type(len(self.values)), codes)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, r: int) -> Any:
        return self.values[self.codes[r]]

    def __iter__(self) -> Iterator[Any]:
        return map(self.values.__getitem__, self.codes)

    def take(self, rows: list[int] | range) -> list:
        codes = self.codes[rows.start:rows.stop] if rows.__class__ is range and \
            rows.step == 1 else map(self.codes.__getitem__, rows)
        return list(map(self.values.__getitem__, codes))

    def extend(self, other: Coded) -> None:
        """``other``'s rows after these (its values added where they are new)."""
        where, values = self.where, self.values
        moved = []
        for v in other.values:
            k = where.get(id(v))
            if k is None:
                k = where[id(v)] = len(values)
                values.append(v)
            moved.append(k)
        if self.codes.typecode != _code_type(len(values)):
            self.codes = array(_code_type(len(values)), self.codes)
        self.codes.extend(array(self.codes.typecode, map(moved.__getitem__, other.codes))
                          if moved != list(range(len(moved))) else other.codes)


def taker(rows: list[int]) -> Callable[[Any], Any]:
    """A function that takes the items ``rows`` (not empty) of a column, of its kind: of
    an ``array`` an array, of a ``Coded`` a ``Coded`` of the same values, of a ``Derived``
    the same (unbound: made from the other columns taken), else a list.  Rows that follow
    one another (a whole table's, or a batch's) are sliced."""
    first, n = rows[0], len(rows)
    if n > 1 and rows[-1] - first == n - 1 and (rows.__class__ is range or
                                                rows == list(range(first, first + n))):
        part = slice(first, first + n)
        get = (lambda c: c[part])
    else:
        get = itemgetter(*rows) if n > 1 else (lambda c: (c[first],))

    def take(column):
        if column.__class__ is array:
            return array(column.typecode, get(column))
        if column.__class__ is Coded:
            return Coded(column.values, array(column.codes.typecode, get(column.codes)))
        if column.__class__ is Derived:     # (made from the rows' other columns, taken
            return Derived(column.make, column.sources)     # with it)
        return list(get(column))
    return take


class Derived:
    """A column of values made when read, each from the values of other columns of its row
    (``sources``, their places in the table) by ``make`` (a function of one tuple of those
    values, in that order): nothing is held per row.  Each read makes a new object (equal
    each time); a ``make`` never gives None.  Given to ``ArgTable.extend`` unbound (no
    ``table``), it becomes the table's column where it is the first of it, else its values
    are made then; a table whose rows come both ways holds them as values."""

    __slots__ = ("make", "sources", "table")

    def __init__(self, make: Callable[[tuple], Any], sources: tuple[int, ...],
                 table: ArgTable | None = None):
        self.make, self.sources, self.table = make, tuple(sources), table

    def __len__(self) -> int:
        return self.table.size

    def __getitem__(self, r: int) -> Any:
        columns = self.table.columns
        return self.make(tuple([columns[k][r] for k in self.sources]))

    def __iter__(self) -> Iterator[Any]:
        return map(self.__getitem__, range(self.table.size))

    def texts(self, first: int, stop: int) -> list[str] | None:
        """Each value of rows ``first`` to ``stop`` as compact JSON text (``json.dumps``,
        separators ``(",", ":")``, ``ensure_ascii=False``), where ``make`` writes them so a
        column at a time (a ``texts`` method of it, given the rows' values of each source,
        in order, that gives those texts or None; only a make whose values are dicts or
        lists has one); else None."""
        made = getattr(self.make, "texts", None)
        if made is None:
            return None
        rows = range(first, stop)
        return made([self.table.take(k, rows) for k in self.sources])


def coded(values: list, codes: Any) -> Coded:
    """The ``Coded`` column whose row r has ``values[codes[r]]`` (a value given twice held
    once)."""
    distinct = {id(v): v for v in values}
    if len(distinct) == len(values):
        return Coded(values, codes)
    place = {k: j for j, k in enumerate(distinct)}
    moved = [place[id(v)] for v in values]
    return Coded(list(distinct.values()), array(_code_type(len(distinct)),
                                                map(moved.__getitem__, codes)))


def _code_type(values: int) -> str:
    return "H" if values <= 1 << 16 else "I"


class ArgRow(msgspec.Struct, gc=False, eq=False):
    """One row of an ``ArgTable`` as a read-only mapping name -> value (in the table's
    order, None values included, as a dict holds them).  A struct the garbage collector
    does not track (it refers to its table only, which never refers back): 32 bytes, made
    without running Python code (a slice of a database's device task or CANN call has
    one); a ``Mapping`` by registration."""

    table: ArgTable
    row: int

    def __getitem__(self, name: str) -> Any:
        return self.table.value(self.row, self.table.index[name])

    def get(self, name: str, default: Any = None) -> Any:
        k = self.table.index.get(name)
        return default if k is None else self.table.value(self.row, k)

    def __contains__(self, name: object) -> bool:
        return name in self.table.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.names)

    def __len__(self) -> int:
        return len(self.table.names)

    def keys(self):
        return self.table.index.keys()

    def values(self):
        return self.table.row(self.row)

    def items(self):
        return zip(self.table.names, self.table.row(self.row))

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None         # (a mapping, as a dict)

    def __reduce__(self):
        return dict, (dict(self.items()),)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __ne__(self, other: object) -> bool:
        same = self.__eq__(other)
        return same if same is NotImplemented else not same


Mapping.register(ArgRow)


def as_dict(args: Mapping | None) -> dict[str, Any] | None:
    """``args`` as a dict (a row's values in a new dict; a dict as it is)."""
    return dict(args.items()) if args.__class__ is ArgRow else args
