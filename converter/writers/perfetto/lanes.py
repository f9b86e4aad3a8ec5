"""A lane's slice packets built a column at a time (issue 26): the same bytes, in the same
order, as ``SequenceWriter.write_slices``'s loop builds one slice at a time, for a lane long
enough that numpy's cost per call is paid back.

What the loop decides in order (the iids a name, arg name or string gets, whether a string
arg is written inline or interned, which interned entries a BEGIN defines) is decided here
in the same order, once per distinct value: the calls that give iids (``name_field``,
``cat_field``, ``_ArgEncoder.encode_all`` for shared args, ``_name_part`` and
``_str_pair`` for own args) are made in the order of the slice and the arg that first needs
them.  Everything else is built per column: int and float args by numpy (``columns``), the
packets' parts joined by ``map``.

A lane is left to the loop (``write_lane`` returns False, having changed nothing) where an
END carries more than itself (flows that end at one ns, counter samples riding on an END), or
an arg is other than a str, a float or an int in [0, 2^63) of one type per slice and name.
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter, invert, itemgetter
from typing import Any

import numpy as np

from . import columns
from .times import _one_after_another
from .wire import _BEGIN, _INTERNED, _LEN, _PACKET, _TRACK_EVENT, _len
from ..protowire import varint

# Lanes of fewer slices take the loop: the columns' fixed cost is more than they save.
BATCH_FROM = 64

_NAME, _CAT = attrgetter("name"), attrgetter("cat")
_ARGS, _SHARED = attrgetter("args"), attrgetter("shared_args")
_INT64_END = 1 << 63
_STR, _INT, _FLOAT = 0, 1, 2
_KINDS = {str: _STR, int: _INT, float: _FLOAT}


class _Column:
    """One arg name's values over a lane, in pieces (one per set of arg names, in the
    pieces' order): rows, places in the args dict, values."""

    __slots__ = ("name", "kind", "rows", "places", "values", "pieces")

    def __init__(self, name: str, kind: int):
        self.name, self.kind = name, kind
        self.rows: list[np.ndarray] = []
        self.places: list[int] = []
        self.values: list[Any] = []
        self.pieces: list[tuple[int, int, int]] = []    # (group, key place, count)


def _args_plan(args_l: list) -> tuple[list, dict[str, _Column]] | None:
    """The lane's args grouped by their names in order (a group: its rows, its names), and
    per arg name its values (``_Column``); None where one is not of a kind built here."""
    sigs = [tuple(d) if d else () for d in args_l]
    index: dict[tuple, int] = dict.fromkeys(sigs)          # type: ignore[arg-type]
    for k, sig in enumerate(index):
        index[sig] = k
    codes = np.fromiter(map(index.__getitem__, sigs), dtype=np.int64, count=len(sigs))
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    groups = []
    cols: dict[str, _Column] = {}
    for rows in np.split(order, bounds):
        sig = sigs[int(rows[0])]
        if not sig:
            continue
        g = len(groups)
        groups.append((rows, sig))
        dicts = list(map(args_l.__getitem__, rows.tolist()))
        for place, name in enumerate(sig):
            if name.__class__ is not str:
                return None
            values = list(map(itemgetter(name), dicts))
            kinds = set(map(type, values))
            kind = _KINDS.get(kinds.pop()) if len(kinds) == 1 else None
            if kind is None:
                return None
            if kind == _INT:
                try:
                    values = np.array(values, dtype=np.int64)
                except OverflowError:
                    return None
                if int(values.min()) < 0:
                    return None
            elif kind == _FLOAT:
                values = np.array(values, dtype=np.float64)
            col = cols.get(name)
            if col is None:
                col = cols[name] = _Column(name, kind)
            elif col.kind != kind:
                return None
            col.rows.append(rows)
            col.places.extend(repeat(place, len(rows)))
            col.values.append(values)
            col.pieces.append((g, place, len(rows)))
    return groups, cols


def _event_order(starts: list[int], ends: list[int]) -> list[int] | None:
    """The lane's BEGINs (k) and ENDs (~k) in the order the loop writes them (an END before
    the first BEGIN at or after its time, the innermost first); None for a lane whose
    slices come one after another (BEGIN, END, BEGIN, ...)."""
    if _one_after_another(ends, starts):
        return None
    stack: list[int] = []
    order: list[int] = []
    push, pop, emit = stack.append, stack.pop, order.append
    for k, ts in enumerate(starts):
        while stack and ends[stack[-1]] <= ts:
            emit(~pop())
        emit(k)
        push(k)
    order.extend(map(invert, reversed(stack)))
    return order


def _firsts(values: list) -> dict:
    """Each distinct value of ``values``: the place of its first occurrence."""
    n = len(values)
    return dict(zip(reversed(values), range(n - 1, -1, -1)))


def write_lane(w: Any, track_id: int, ids: list[int], starts: list[int], ends: list[int],
               begin_ts: list[bytes], end_pk: list[bytes], head: bytes) -> bool:
    """Append the packets of the lane ``ids`` (in order; ``starts``, ``ends`` their times,
    ``begin_ts`` their BEGINs' timestamp fields, ``end_pk`` their plain END packets, ``head``
    their sequence id and flags) to ``w``'s chunk (``w``: a ``SequenceWriter``, after its
    sequence start), or return False where the lane needs the per-slice loop."""
    if w.end_riders.get(track_id):
        return False
    end_flows = w.end_flow_bytes
    if end_flows and not end_flows.keys().isdisjoint(ids):
        return False
    slices = list(map(w.slices.__getitem__, ids))
    args_l = list(map(_ARGS, slices))
    plan = _args_plan(args_l)
    if plan is None:
        return False
    groups, cols = plan
    order = _event_order(starts, ends)
    n = len(ids)
    # -- what gets an iid, in the loop's order --------------------------------------
    names_l = list(map(_NAME, slices))
    known = w.names
    first_name = _firsts(names_l)
    for name in dict.fromkeys(names_l):
        if name not in known:
            w.name_field(name)
    cats_l = list(map(_CAT, slices))
    cat_bytes: dict[Any, bytes] = {}
    first_cat = _firsts(cats_l)
    for cat in dict.fromkeys(cats_l):
        if cat:
            hit = w.cats.get(cat) or w.cat_field(cat)
            cat_bytes[cat] = hit[0]
        else:
            cat_bytes[cat] = b""
    shared_l = list(map(_SHARED, slices))
    first_shared = _firsts(list(map(id, shared_l)))
    enc = w.args_enc
    # ops: (row, place in the slice, step, what to do), run in that order
    ops: list[tuple[int, int, int, Any]] = []
    for sid, row in first_shared.items():
        sh = shared_l[row]
        if sh is not None and sid not in w.shared_cache:
            ops.append((row, 2, 0, (_op_shared, w, sh)))
    strings = []
    for col in cols.values():
        rows = np.concatenate(col.rows)
        perm = np.argsort(rows, kind="stable")
        lane_rows = rows[perm]
        places = np.array(col.places, dtype=np.int64)[perm]
        first = int(lane_rows[0])
        name = col.name
        if name not in enc.names:
            ops.append((first, 3 + int(places[0]), 0, (enc._name_part, name)))
        if col.kind == _STR:
            strings.append(_plan_strings(enc, col, perm, lane_rows, places, ops))
    ops.sort(key=itemgetter(0, 1, 2))
    for op in ops:
        f, *a = op[3]
        f(*a)
    # -- the entries each BEGIN defines (first use on this sequence) ------------------
    cands: list[tuple[int, int, int, bytes]] = []
    for name, row in first_name.items():
        entry = known[name][1]
        if entry is not None:
            cands.append((row, 0, 0, entry))
    for cat, row in first_cat.items():
        if cat:
            cands.append((row, 1, 0, w.cats[cat][1]))
    shared_bytes: dict[int, bytes] = {id(None): b""}
    for sid, row in first_shared.items():
        sh = shared_l[row]
        if sh is None:
            continue
        hit = w.shared_cache.get(sid)
        if hit is None:       # (made by an op above)
            hit = w.shared_cache[sid]
        shared_bytes[sid] = hit[0]
        cands.extend((row, 2, j, e) for j, e in enumerate(hit[1]))
    frags: dict[str, list[bytes]] = {}
    for col in cols.values():
        rows = np.concatenate(col.rows)
        entry = enc.names[col.name][1]
        first = int(rows.min())
        places = col.places
        cands.append((first, 3 + places[int(np.argmin(rows))], 0, entry))
        if col.kind == _INT:
            frags[col.name] = columns.int_annotations(np.concatenate(col.values),
                                                      enc.names[col.name][0])
        elif col.kind == _FLOAT:
            frags[col.name] = columns.double_annotations(np.concatenate(col.values),
                                                         enc.names[col.name][0])
    for s in strings:
        frags[s.col.name] = s.fragments(cands)
    cands.sort(key=itemgetter(0, 1, 2))
    defined: set[bytes] = set()
    pending: dict[int, list[bytes]] = {}
    for row, _, _, entry in cands:
        if entry not in defined:
            defined.add(entry)
            pending.setdefault(row, []).append(entry)
    # -- the args of each slice, in its dict's order ----------------------------------
    args_b = _args_bytes(n, groups, cols, frags)
    # -- the BEGIN events and packets --------------------------------------------------
    flow_get = w.flow_bytes.get
    events = list(map(b"".join, zip(
        repeat(_BEGIN),
        map(itemgetter(0), map(known.__getitem__, names_l)),
        map(cat_bytes.__getitem__, cats_l),
        map(shared_bytes.__getitem__, map(id, shared_l)),
        args_b,
        map(flow_get, ids, repeat(b"")),
        map(flow_get, map(invert, ids), repeat(b"")),
        map(w.riders.get, ids, repeat(b"")),
        map(w.work.get, ids, repeat(b"")))))
    ev_len = np.fromiter(map(len, events), dtype=np.int64, count=n)
    ts_len = np.fromiter(map(len, begin_ts), dtype=np.int64, count=n)
    if int(ev_len.max()) >= 16384:
        ev_lb = list(map(_len, ev_len.tolist()))
        lb_len = np.fromiter(map(len, ev_lb), dtype=np.int64, count=n)
    else:
        ev_lb = list(map(_LEN.__getitem__, ev_len.tolist()))
        lb_len = (ev_len >= 128) + 1
    body = ts_len + (len(head) + len(_TRACK_EVENT)) + lb_len + ev_len
    body_l = body.tolist()
    body_lb = list(map(_len, body_l)) if int(body.max()) >= 16384 else \
        list(map(_LEN.__getitem__, body_l))
    packets = list(map(b"".join, zip(repeat(_PACKET), body_lb, begin_ts, repeat(head),
                                     repeat(_TRACK_EVENT), ev_lb, events)))
    for row, entries in pending.items():
        data = b"".join(entries)
        b = b"".join((begin_ts[row], head, _INTERNED, varint(len(data)), data, _TRACK_EVENT,
                      ev_lb[row], events[row]))
        packets[row] = _PACKET + _len(len(b)) + b
    # -- in the loop's order -----------------------------------------------------------
    base = w.base
    if order is None:
        w.chunk.extend(chain.from_iterable(zip(packets, end_pk)))
        times = np.empty(2 * n, dtype=np.int64)
        times[0::2] = starts
        times[1::2] = ends
    else:
        at = np.array(order, dtype=np.int64)
        ends_at = at < 0
        at[ends_at] = ~at[ends_at] + n
        w.chunk.extend(map((packets + end_pk).__getitem__, at.tolist()))
        times = np.concatenate((np.array(starts, dtype=np.int64),
                                np.array(ends, dtype=np.int64)))[at]
    w.stamps.frombytes((times - base).astype(np.int64).tobytes())
    return True


def _op_shared(w: Any, sh: dict) -> None:
    sid = id(sh)
    if sid not in w.shared_cache:
        w.shared_cache[sid] = w.args_enc.encode_all(sh, True)


class _Strings:
    """A string column's fragments: per distinct value the encoding the loop would use at
    each of its occurrences (``_ArgEncoder.encode``: cached; else inline at the writer's
    first occurrence, interned from the second)."""

    def __init__(self, enc: Any, col: _Column, perm: np.ndarray, lane_rows: np.ndarray,
                 places: np.ndarray):
        self.enc, self.col, self.perm = enc, col, perm
        self.rows, self.places = lane_rows, places
        values = list(chain.from_iterable(col.values))
        self.values = list(map(values.__getitem__, perm.tolist()))    # in lane order
        self.first = _firsts(self.values)
        self.hits: dict[str, Any] = {}          # value -> its encoding from its last step on
        self.inline: dict[str, Any] = {}        # value -> its inline encoding (first use)
        self.second: dict[str, int] = {}        # value -> place of its second occurrence

    def fragments(self, cands: list) -> list[bytes]:
        """Per occurrence, in the column's own order: its fragment; adds to ``cands`` the
        interned string entries and where they are first used."""
        rows, places = self.rows, self.places
        hits, inline, first = self.hits, self.inline, self.first
        lane = list(map(itemgetter(0), map(hits.__getitem__, self.values)))
        for value, hit in inline.items():
            lane[first[value]] = hit[0]
        for value, at in first.items():
            hit = inline.get(value) or hits[value]
            if len(hit[1]) > 1:
                cands.append((int(rows[at]), 3 + int(places[at]), 1, hit[1][1]))
        for value, at in self.second.items():
            hit = hits[value]
            if len(hit[1]) > 1:
                cands.append((int(rows[at]), 3 + int(places[at]), 1, hit[1][1]))
        out = [b""] * len(lane)
        for k, frag in zip(self.perm.tolist(), lane):
            out[k] = frag
        return out


def _plan_strings(enc: Any, col: _Column, perm: np.ndarray, lane_rows: np.ndarray,
                  places: np.ndarray, ops: list) -> _Strings:
    """A string column's ops (the loop's ``_uncached_str`` calls, at the occurrences that
    make them) added to ``ops``."""
    s = _Strings(enc, col, perm, lane_rows, places)
    name = col.name
    cache, once = enc.cache, enc.once
    second = None
    for value, at in s.first.items():
        key = (name, str, value)
        hit = cache.get(key)
        if hit is not None:
            s.hits[value] = hit
            continue
        row, place = int(lane_rows[at]), 3 + int(places[at])
        if key in once:
            ops.append((row, place, 1, (_op_intern, s, key, value)))
            continue
        ops.append((row, place, 1, (_op_inline, s, key, value, at)))
        if second is None:
            second = _second_places(s.values, s.first)
        at2 = second.get(at)
        if at2 is not None:
            s.second[value] = at2
            ops.append((int(lane_rows[at2]), 3 + int(places[at2]), 1,
                        (_op_intern, s, key, value)))
    return s


def _op_inline(s: _Strings, key: tuple, value: str, at: int) -> None:
    """A string's first use in the writer: inline, remembered (``_uncached_str``)."""
    s.enc.once.add(key)
    hit = s.enc._str_pair(key[0], value, False)
    s.inline[value] = hit
    s.hits.setdefault(value, hit)


def _op_intern(s: _Strings, key: tuple, value: str) -> None:
    """A string's next use: interned (if long enough) and cached (``_uncached_str``)."""
    hit = s.enc.cache[key] = s.enc._str_pair(key[0], value, True)
    s.hits[value] = hit


def _second_places(values: list, first: dict) -> dict[int, int]:
    """Per first place (``first``'s values) of a value that occurs again: the place of its
    second occurrence."""
    code = np.fromiter(map(first.__getitem__, values), dtype=np.int64, count=len(values))
    again = np.flatnonzero(code != np.arange(len(values)))
    if not len(again):
        return {}
    firsts, at = np.unique(code[again], return_index=True)
    return dict(zip(firsts.tolist(), again[at].tolist()))


def _args_bytes(n: int, groups: list, cols: dict, frags: dict) -> list[bytes]:
    """Per row of the lane: its args' fragments joined in its dict's order."""
    out = [b""] * n
    taken = {name: 0 for name in cols}
    per_group: list[list[list[bytes]]] = [[] for _ in groups]
    for name, col in cols.items():
        got = frags[name]
        for g, place, count in col.pieces:
            a = taken[name]
            per_group[g].append((place, got[a:a + count]))
            taken[name] = a + count
    for (rows, _), parts in zip(groups, per_group):
        parts.sort(key=itemgetter(0))
        joined = map(b"".join, zip(*(p for _, p in parts)))
        for r, b in zip(rows.tolist(), joined):
            out[r] = b
    return out
