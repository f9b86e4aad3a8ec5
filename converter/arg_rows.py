"""Slices' own args held as rows of a table (issue 26's columnar model, first piece).

A reader that makes many slices whose own args have the same names in the same order (an
msprof database's device tasks: ids, op info, 20 or more PMU figures each) may give each
slice an ``ArgRow`` instead of a dict: the names are held once, in an ``ArgTable``, and each
slice's values as one tuple.  An ``ArgRow`` is a read-only mapping with the dict's order and
values, so every reader of ``Slice.args`` works unchanged (``Slice.all_args`` gives a dict);
writers that know tables take a row's numbers a column at a time
(``writers.perfetto.row_args``).  A row of an args dict costs a third of its memory (the
names and the hash table are the table's), and the Perfetto writer need not visit each
number.

A caller that wants to change a row's args replaces them with a dict (``dict(row)``, then
its changes), as for any args (the model's args are read-only).  A row pickles as the dict
it stands for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


class ArgTable:
    """Arg names (distinct, in order) and one tuple of values per row."""

    __slots__ = ("names", "index", "rows")

    def __init__(self, names: tuple[str, ...]):
        if len(set(names)) != len(names) or not all(n.__class__ is str for n in names):
            raise ValueError(f"arg names must be distinct strings: {names!r}")
        self.names = tuple(names)
        self.index = {n: k for k, n in enumerate(self.names)}
        self.rows: list[tuple] = []

    def add(self, values: tuple) -> ArgRow:
        """A new row of ``values`` (one per name, in order)."""
        if len(values) != len(self.names):
            raise ValueError(f"{len(values)} values for {len(self.names)} arg names")
        self.rows.append(values)
        return ArgRow(self, len(self.rows) - 1)

    def __repr__(self) -> str:
        return f"ArgTable({len(self.names)} names, {len(self.rows)} rows)"


class ArgRow(Mapping):
    """One row of an ``ArgTable`` as a read-only mapping name -> value (in the table's
    order, None values included, as a dict holds them)."""

    __slots__ = ("table", "row")

    def __init__(self, table: ArgTable, row: int):
        self.table = table
        self.row = row

    def __getitem__(self, name: str) -> Any:
        return self.table.rows[self.row][self.table.index[name]]

    def get(self, name: str, default: Any = None) -> Any:
        k = self.table.index.get(name)
        return default if k is None else self.table.rows[self.row][k]

    def __contains__(self, name: object) -> bool:
        return name in self.table.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.names)

    def __len__(self) -> int:
        return len(self.table.names)

    def keys(self):
        return self.table.index.keys()

    def values(self):
        return self.table.rows[self.row]

    def items(self):
        return zip(self.table.names, self.table.rows[self.row])

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


def as_dict(args: Mapping | None) -> dict[str, Any] | None:
    """``args`` as a dict (a row's values in a new dict; a dict as it is)."""
    return dict(args.items()) if args.__class__ is ArgRow else args
