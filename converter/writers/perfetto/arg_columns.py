"""A lane's own args encoded a column at a time (issue 26): per slice, the same
``debug_annotations`` bytes ``_ArgEncoder.encode`` builds one arg at a time, and the interned
entries they use, for ``SequenceWriter.write_slices`` to take instead of encoding each slice.

An arg name's ints and floats are encoded by numpy (``columns``) and each slice's fragments
joined by one gather; only what depends on order is done value by value, in the order the
loop would do it (by slice, then by the arg's place in its dict): the calls that give iids
(``_name_part``; ``_str_pair``, where a string is written inline at the writer's first use
and interned from its second; ``encode_all`` of the lane's shared args, which use the same
tables) and the args of any other kind (``pair``: bools, negative or huge ints, nested
values, an int and a float under one name).  So iids, inline strings and the entries each
BEGIN defines are those of the loop.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any

import numpy as np

from .columns import double_annotations, gather, int_annotations

# Lanes with fewer slices with args: each slice is encoded by ``_ArgEncoder.encode``
# (numpy's cost per call is more than it saves there).
ARGS_FROM = 64

_ARGS, _SHARED = attrgetter("args"), attrgetter("shared_args")
_INT, _FLOAT, _STR, _OTHER = range(4)
_NONE = type(None)


class _Column:
    """One arg name's values of one kind over a lane (Nones left out), in pieces: one per
    set of arg names (a group), in the groups' order."""

    __slots__ = ("name", "kind", "rows", "places", "values", "pieces", "data")

    def __init__(self, name: Any, kind: int):
        self.name, self.kind = name, kind
        self.rows: list[np.ndarray] = []        # per piece: the lane rows (slices) it has
        self.places: list[np.ndarray] = []      # per piece: the arg's place in their dicts
        self.values: list[Any] = []             # per piece: the values (numpy for numbers)
        self.pieces: list[tuple[int, int, np.ndarray | None]] = []   # (group, place, mask)
        self.data: list[bytes] | None = None    # per value: its fragment (str, other)


def lane_args(w: Any, ids: list[int]) -> tuple[list[bytes], dict[int, tuple]] | None:
    """Per slice of ``ids`` (a lane, in order; ``w`` its ``SequenceWriter``): its own args'
    bytes, and per slice (its place in ``ids``) the entries they use there first in the
    lane, in order.  None where too few slices have args.  Makes every iid the lane's
    args and shared args need, as the loop would, before the loop runs."""
    slices = list(map(w.slices.__getitem__, ids))
    args_l = list(map(_ARGS, slices))
    n = len(args_l)
    if n - args_l.count(None) < ARGS_FROM:
        return None
    groups, cols = _columns(args_l)
    enc = w.args_enc
    ops: list[tuple] = []
    _shared_ops(w, slices, ops)
    lane_order = {}
    for key, col in cols.items():
        rows = np.concatenate(col.rows)
        perm = np.argsort(rows, kind="stable")
        lane_rows, places = rows[perm], np.concatenate(col.places)[perm]
        lane_order[key] = (perm, lane_rows, places)
        if col.kind != _OTHER and col.name not in enc.names:
            ops.append((int(lane_rows[0]), 1 + int(places[0]), 0, enc._name_part,
                        (col.name,)))
    strings = [_Strings(enc, col, *lane_order[key]) for key, col in cols.items()
               if col.kind == _STR]
    for s in strings:
        s.plan(ops)
    others = [_Others(enc, col, *lane_order[key]) for key, col in cols.items()
              if col.kind == _OTHER]
    for o in others:
        o.plan(ops)
    ops.sort(key=itemgetter(0, 1, 2))
    for op in ops:
        op[3](*op[4])
    cands: list[tuple[int, int, int, bytes]] = []
    for key, col in cols.items():
        if col.kind in (_INT, _FLOAT):
            _, lane_rows, places = lane_order[key]
            cands.append((int(lane_rows[0]), 1 + int(places[0]), 0, enc.names[col.name][1]))
    for s in strings:
        s.col.data = s.fragments(cands)
    for o in others:
        o.col.data = o.fragments(cands)
    cands.sort(key=itemgetter(0, 1, 2))
    seen: set[bytes] = set()
    first: dict[int, list[bytes]] = {}
    for row, _, _, entry in cands:
        if entry not in seen:
            seen.add(entry)
            first.setdefault(row, []).append(entry)
    out = _joined(n, groups, cols, enc)
    return out, {row: tuple(e) for row, e in first.items()}


def _columns(args_l: list) -> tuple[list, dict]:
    """The lane's args grouped by their names in order (a group: its rows, its names), and
    per (arg name, kind) its values (``_Column``)."""
    sigs = list(map(tuple, [d or () for d in args_l]))
    index: dict[tuple, int] = {}
    for sig in dict.fromkeys(sigs):
        index[sig] = len(index)
    codes = np.fromiter(map(index.__getitem__, sigs), dtype=np.int64, count=len(sigs))
    order = np.argsort(codes, kind="stable")
    groups: list[tuple[np.ndarray, tuple]] = []
    cols: dict[tuple, _Column] = {}
    for rows in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        sig = sigs[int(rows[0])]
        if not sig:
            continue
        g = len(groups)
        groups.append((rows, sig))
        dicts = map(args_l.__getitem__, rows.tolist())
        # one C-level pass: the dicts of a group have one key order
        for place, (name, values) in enumerate(zip(sig, zip(*map(dict.values, dicts)))):
            kinds = set(map(type, values))
            mask = None
            present = rows
            if _NONE in kinds:
                kinds.discard(_NONE)
                if not kinds:
                    continue
                mask = np.fromiter(map(is_not, values, repeat(None)), dtype=bool,
                                   count=len(values))
                values = list(compress(values, mask.tolist()))
                present = rows[mask]
            kind, values = _kind(name, kinds, values)
            col = cols.get((name, kind))
            if col is None:
                col = cols[name, kind] = _Column(name, kind)
            col.rows.append(present)
            col.places.append(np.full(len(present), place, dtype=np.int64))
            col.values.append(values)
            col.pieces.append((g, place, mask))
    return groups, cols


def _kind(name: Any, kinds: set, values: list) -> tuple[int, Any]:
    """How a column of ``values`` (of the classes ``kinds``, no None) is encoded, and its
    values (numpy for ints in [0, 2^63) and floats)."""
    if name.__class__ is not str or len(kinds) != 1:
        return _OTHER, values
    cls = next(iter(kinds))
    if cls is int:
        try:
            got = np.array(values, dtype=np.int64)
        except OverflowError:
            return _OTHER, values
        return (_INT, got) if int(got.min()) >= 0 else (_OTHER, values)
    if cls is float:
        return _FLOAT, np.array(values, dtype=np.float64)
    if cls is str:
        return _STR, values
    return _OTHER, values


def _shared_ops(w: Any, slices: list, ops: list) -> None:
    """The ``encode_all`` of each shared args dict the lane uses first, at its first slice
    (before the slice's own args): it makes iids in the same tables."""
    shared_l = list(map(_SHARED, slices))
    ids = list(map(id, shared_l))
    firsts = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1)))
    cache = w.shared_cache
    for sid, row in firsts.items():
        sh = shared_l[row]
        if sh is not None and sid not in cache:
            ops.append((row, 0, 0, _encode_shared, (w, sh)))


def _encode_shared(w: Any, sh: dict) -> None:
    if id(sh) not in w.shared_cache:
        w.shared_cache[id(sh)] = w.args_enc.encode_all(sh, True)


class _Strings:
    """A string column: per distinct value, the encoding the loop gives each occurrence
    (``_ArgEncoder.encode``: from the cache; else inline at the writer's first use,
    interned from the second: ``_uncached_str``)."""

    def __init__(self, enc: Any, col: _Column, perm: np.ndarray, rows: np.ndarray,
                 places: np.ndarray):
        self.enc, self.col, self.perm, self.rows, self.places = enc, col, perm, rows, places
        values = list(chain.from_iterable(col.values))
        self.values = list(map(values.__getitem__, perm.tolist()))      # in lane order
        n = len(self.values)
        self.first = dict(zip(reversed(self.values), range(n - 1, -1, -1)))
        self.hits: dict[str, tuple] = {}        # value -> its encoding from its last step on
        self.inline: dict[str, tuple] = {}      # value -> its inline encoding (first use)
        self.second: dict[str, int] = {}        # value -> place of its second occurrence

    def plan(self, ops: list) -> None:
        """The ``_uncached_str`` calls, at the occurrences that make them, into ``ops``."""
        name = self.col.name
        cache, once = self.enc.cache, self.enc.once
        rows, places = self.rows, self.places
        second = None
        for value, at in self.first.items():
            key = (name, str, value)
            hit = cache.get(key)
            if hit is not None:
                self.hits[value] = hit
                continue
            where = (int(rows[at]), 1 + int(places[at]), 1)
            if key in once:
                ops.append((*where, self._intern, (key,)))
                continue
            ops.append((*where, self._inline, (key,)))
            if second is None:
                second = _second_places(self.values, self.first)
            at2 = second.get(at)
            if at2 is not None:
                self.second[value] = at2
                ops.append((int(rows[at2]), 1 + int(places[at2]), 1, self._intern, (key,)))

    def _inline(self, key: tuple) -> None:
        self.enc.once.add(key)
        hit = self.inline[key[2]] = self.enc._str_pair(key[0], key[2], False)
        self.hits.setdefault(key[2], hit)

    def _intern(self, key: tuple) -> None:
        self.hits[key[2]] = self.enc.cache[key] = self.enc._str_pair(key[0], key[2], True)

    def fragments(self, cands: list) -> list[bytes]:
        """Per value, in the column's own order: its fragment; adds to ``cands`` each entry
        where it is first used."""
        rows, places, hits, inline, first = (self.rows, self.places, self.hits, self.inline,
                                             self.first)
        lane = list(map(itemgetter(0), map(hits.__getitem__, self.values)))
        for value, hit in inline.items():
            lane[first[value]] = hit[0]
        uses = [(at, inline.get(value) or hits[value]) for value, at in first.items()]
        uses += [(at, hits[value]) for value, at in self.second.items()]
        for at, hit in uses:
            row, place = int(rows[at]), 1 + int(places[at])
            cands.extend((row, place, j, e) for j, e in enumerate(hit[1]))
        out: list[bytes] = [b""] * len(lane)
        for k, frag in zip(self.perm.tolist(), lane):
            out[k] = frag
        return out


class _Others:
    """A column of values of other kinds: each through ``_ArgEncoder.pair``, in order."""

    def __init__(self, enc: Any, col: _Column, perm: np.ndarray, rows: np.ndarray,
                 places: np.ndarray):
        self.enc, self.col, self.perm, self.rows, self.places = enc, col, perm, rows, places
        values = list(chain.from_iterable(col.values))
        self.values = list(map(values.__getitem__, perm.tolist()))
        self.hits: list[Any] = [None] * len(values)

    def plan(self, ops: list) -> None:
        name, rows, places = self.col.name, self.rows.tolist(), self.places.tolist()
        for k, (row, place, value) in enumerate(zip(rows, places, self.values)):
            ops.append((row, 1 + place, 1, self._pair, (k, name, value)))

    def _pair(self, k: int, name: Any, value: Any) -> None:
        self.hits[k] = self.enc.pair(name, value)

    def fragments(self, cands: list) -> list[bytes]:
        rows, places = self.rows.tolist(), self.places.tolist()
        for row, place, hit in zip(rows, places, self.hits):
            cands.extend((row, 1 + place, j, e) for j, e in enumerate(hit[1]))
        out: list[bytes] = [b""] * len(self.hits)
        for k, hit in zip(self.perm.tolist(), self.hits):
            out[k] = hit[0]
        return out


def _second_places(values: list, first: dict) -> dict[int, int]:
    """Per first place (``first``'s values) of a value that occurs again: the place of its
    second occurrence."""
    code = np.fromiter(map(first.__getitem__, values), dtype=np.int64, count=len(values))
    again = np.flatnonzero(code != np.arange(len(values)))
    if not len(again):
        return {}
    firsts, at = np.unique(code[again], return_index=True)
    return dict(zip(firsts.tolist(), again[at].tolist()))


def _fragments(col: _Column, enc: Any) -> tuple[np.ndarray, np.ndarray]:
    """The column's fragments laid end to end (uint8), and each one's length."""
    if col.kind == _INT:
        rows = int_annotations(np.concatenate(col.values), enc.names[col.name][0], flat=True)
        return rows
    if col.kind == _FLOAT:
        return double_annotations(np.concatenate(col.values), enc.names[col.name][0],
                                  flat=True)
    data = col.data
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    return np.frombuffer(b"".join(data), dtype=np.uint8), lengths


def _joined(n: int, groups: list, cols: dict, enc: Any) -> list[bytes]:
    """Per lane row: its args' fragments joined in its dict's order (one gather per
    group)."""
    parts, starts = [], []
    at = 0
    per_col = {}
    for key, col in cols.items():
        data, lengths = _fragments(col, enc)
        parts.append(data)
        per_col[key] = (np.cumsum(lengths) - lengths + at, lengths)
        at += len(data)
    source = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    spans = [(np.zeros((len(rows), len(sig)), dtype=np.int64),
              np.zeros((len(rows), len(sig)), dtype=np.int64)) for rows, sig in groups]
    for key, col in cols.items():
        begin, lengths = per_col[key]
        a = 0
        for (g, place, mask), rows in zip(col.pieces, col.rows):
            b = a + len(rows)
            s, m = spans[g]
            if mask is None:
                s[:, place], m[:, place] = begin[a:b], lengths[a:b]
            else:
                s[mask, place], m[mask, place] = begin[a:b], lengths[a:b]
            a = b
    out = [b""] * n
    for (rows, _), (s, m) in zip(groups, spans):
        size = m.sum(axis=1)
        data = gather(source, s.ravel(), m.ravel(), np.arange(s.size))
        bounds = np.concatenate(([0], np.cumsum(size))).tolist()
        for r, a, b in zip(rows.tolist(), bounds, bounds[1:]):
            out[r] = data[a:b]
    return out
