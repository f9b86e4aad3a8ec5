"""Slices' own args encoded a column at a time (issue 26).

Readers give many slices args dicts with the same keys in the same order (a table's row:
msprof's op summary and PMU figures, simpler's scheduler records).  Their numbers (per-slice
ids, cycles, ratios: mostly all different, about 1 µs each to encode one by one) are
encoded here for all rows at once: per column with numpy, then consecutive number columns
of a row joined into one ``bytes`` (a *run*).  The writer then puts a row's runs, and its
other args one by one as before, into the slice's BEGIN.

The bytes are those ``_ArgEncoder.encode`` gives, arg by arg: a DebugAnnotation with the
arg name's iid and ``int_value`` (an int in [0, 2^63)) or ``double_value`` (a float); a
None value is left out.  Two things keep the output byte-identical:

* an arg name gets its iid where ``encode`` first meets it, so a run is built only once
  every name in it has one (``ready``): the rows before go the usual way and give them;
* a sequence defines an arg name's InternedData entry on first use, so a row takes the
  fast way only where every name it uses is defined on its sequence already (``Sequence``
  keeps a mask per table of the names it knows to be defined there); otherwise the row goes
  the usual way, which defines them in the usual order.
"""

from __future__ import annotations

import operator
from itertools import repeat
from typing import Any

import numpy as np

from ...model import INT64_END
from .columns import _rows, _varint_matrix
from .wire import _DOUBLE_VALUE, _INT_VALUE, _TE_DEBUG

MIN_ROWS = 32           # a table with fewer rows is encoded arg by arg
MIN_KEYS = 4            # nor are rows with fewer args worth a table
MAX_NUMBER_COLUMNS = 63  # a row's mask of number columns is one int64


_NUMBER_TYPES = {int, float, type(None)}


def _column(vals: list) -> tuple | None:
    """A column of arg values as arrays, or None when it is not all numbers (an int in
    [0, 2^63), a float, or None): (present, is_float or None, ints, floats or None)."""
    types = set(map(type, vals))
    if not types <= _NUMBER_TYPES:
        return None
    n = len(vals)
    present = None
    if type(None) in types:
        present = np.fromiter(map(operator.is_not, vals, repeat(None)), dtype=bool, count=n)
        vals = [0 if v is None else v for v in vals]
    else:
        present = np.ones(n, dtype=bool)
    if float not in types:
        try:
            ints = np.array(vals, dtype=np.int64)
        except OverflowError:
            return None
        if n and int(ints.min()) < 0:
            return None
        return present, None, ints.astype(np.uint64), None
    if int not in types:
        return present, np.ones(n, dtype=bool), np.zeros(n, dtype=np.uint64), \
            np.array(vals, dtype=np.float64)
    is_float = np.fromiter(map(float.__instancecheck__, vals), dtype=bool, count=n)
    try:
        ints = np.array([0 if f else v for v, f in zip(vals, is_float.tolist())],
                        dtype=np.int64)
    except OverflowError:
        return None
    if n and int(ints.min()) < 0:
        return None
    floats = np.array([v if f else 0.0 for v, f in zip(vals, is_float.tolist())],
                      dtype=np.float64)
    return present, is_float, ints.astype(np.uint64), floats


class ArgTable:
    """Rows (slice ids, their args dicts) whose args have the same keys in the same order.

    ``plan``: the keys in order as parts, each an int (the index of a run of number
    columns) or a tuple of keys (other args, encoded one by one).  ``runs``: per run, its
    keys; ``bits``: per run, the bit of each of its keys in the masks.  ``masks``: per row,
    the bits of the number columns it has a value in.  ``blobs``: per run, once built, its
    bytes per row."""

    __slots__ = ("keys", "ids", "args", "plan", "runs", "bits", "masks", "blobs", "built")

    def __init__(self, keys: tuple, ids: list[int], args: list[dict]):
        self.keys, self.ids, self.args = keys, ids, args
        columns = [_column([a[k] for a in args]) for k in keys]
        self.plan: list[Any] = []
        self.runs: list[list[tuple[str, tuple]]] = []
        masks = np.zeros(len(args), dtype=np.int64)
        bit = 0
        i = 0
        while i < len(keys):
            j = i
            if columns[i] is not None and bit < MAX_NUMBER_COLUMNS:
                while j < len(keys) and columns[j] is not None and bit < MAX_NUMBER_COLUMNS:
                    masks |= columns[j][0].astype(np.int64) << np.int64(bit)
                    bit += 1
                    j += 1
                self.plan.append(len(self.runs))
                self.runs.append([(keys[k], columns[k]) for k in range(i, j)])
            else:
                while j < len(keys) and not (columns[j] is not None
                                             and bit < MAX_NUMBER_COLUMNS):
                    j += 1
                self.plan.append(tuple(keys[i:j]))
            i = j
        self.masks: list[int] = masks.tolist()
        self.blobs: list[list[bytes] | None] = [None] * len(self.runs)
        self.built = False

    def row_bytes(self, row: int, args: dict, seq: Any, encoder: Any) -> bytes | None:
        """Row ``row``'s args (``args``, the slice's: None unless still the table's own
        dict) for sequence ``seq``, or None where it must go arg by arg (``encode``): a
        name it uses is not known to be defined on ``seq`` yet, or a run is not built."""
        if args is not self.args[row]:
            return None
        mask = self.masks[row]
        known = seq.tables.get(self, 0)
        if mask & ~known:
            return None
        if not self.built and not self.ready(encoder.names):
            return None
        parts = []
        blobs = self.blobs
        one = encoder.one
        for part in self.plan:
            if part.__class__ is int:
                parts.append(blobs[part][row])
            else:
                parts.extend([one(k, args[k], seq) for k in part])
        return b"".join(parts)

    def went_arg_by_arg(self, row: int, seq: Any) -> None:
        """Row ``row`` was encoded arg by arg on ``seq``: the names of its number columns
        are defined there now."""
        seq.tables[self] = seq.tables.get(self, 0) | self.masks[row]

    def ready(self, names: dict[str, tuple[bytes, bytes]]) -> bool:
        """Build every run not built yet whose names all have an iid (``names``: the args
        encoder's name parts); True when all runs are built."""
        done = True
        for n, run in enumerate(self.runs):
            if self.blobs[n] is not None:
                continue
            if not all(k in names for k, c in run if c is None or c[0].any()):
                done = False
                continue
            self.blobs[n] = _encode_run(run, names, len(self.args))
            self.runs[n] = [(k, None) for k, _ in run]      # the arrays are done with
        self.built = done
        return done


def _encode_run(run: list[tuple[str, tuple]], names: dict[str, tuple[bytes, bytes]],
                n: int) -> list[bytes]:
    """Per row, the DebugAnnotations of ``run``'s columns joined (b"" where all are
    None)."""
    cells = []                  # per column: (n × w matrix, n lengths)
    for k, (present, is_float, ints, floats) in run:
        if not present.any():
            continue            # None in every row: nothing to write (and maybe no name)
        head = names[k][0]
        groups, vlen = _varint_matrix(ints)
        width = max(groups.shape[1], 8) if floats is not None else groups.shape[1]
        value = np.zeros((n, width), dtype=np.uint8)
        value[:, :groups.shape[1]] = groups
        if floats is not None:
            value[is_float, :8] = floats[is_float].astype("<f8").view(np.uint8).reshape(-1, 8)
            vlen = np.where(is_float, 8, vlen)
        lead = 2 + len(head) + 1                # _TE_DEBUG, the length, the name, the tag
        m = np.empty((n, lead + width), dtype=np.uint8)
        m[:, 0] = _TE_DEBUG[0]
        m[:, 1] = len(head) + 1 + vlen          # < 128: one byte, as encode writes it
        m[:, 2:2 + len(head)] = np.frombuffer(head, dtype=np.uint8)
        m[:, lead - 1] = _INT_VALUE[0] if is_float is None else \
            np.where(is_float, _DOUBLE_VALUE[0], _INT_VALUE[0])
        m[:, lead:] = value
        cells.append((m, np.where(present, lead + vlen, 0)))
    total = sum((c[1] for c in cells), np.zeros(n, dtype=np.int64))
    out = np.zeros((n, max(int(total.max()), 1)), dtype=np.uint8)
    at = np.zeros(n, dtype=np.int64)
    for m, length in cells:
        rows, cols = np.nonzero(np.arange(m.shape[1]) < length[:, None])
        out[rows, at[rows] + cols] = m[rows, cols]
        at += length
    return _rows(out, total)


def tables(slices: list, units: list[tuple[int, list[int]]]) -> dict[int, tuple[ArgTable, int]]:
    """Slice id -> (its table, its row) for the slices of ``units`` whose own args have
    at least ``MIN_KEYS`` keys, all strings, shared by at least ``MIN_ROWS`` slices, with
    at least one number column."""
    groups: dict[tuple, list[int]] = {}
    for _, ids in units:
        for i in ids:
            a = slices[i].args
            if a and len(a) >= MIN_KEYS:
                groups.setdefault(tuple(a), []).append(i)
    out: dict[int, tuple[ArgTable, int]] = {}
    for keys, ids in groups.items():
        if len(ids) < MIN_ROWS or not all(k.__class__ is str for k in keys):
            continue
        table = ArgTable(keys, ids, [slices[i].args for i in ids])
        if not table.runs:
            continue
        for row, i in enumerate(ids):
            out[i] = (table, row)
    return out
