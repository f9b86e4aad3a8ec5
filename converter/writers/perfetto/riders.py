"""Counter samples riding on slice events: a sample at the time a slice begins or ends is
written as one of that BEGIN's or END's extra counter values instead of a packet of its own.
"""

from __future__ import annotations

import collections
from itertools import repeat
from typing import Any

import numpy as np

from ...distinct import distinct, distinct_places, repeats, within
from ...model import INT64_END, INT64_MIN, Slice
from ..protowire import varint
from ...slice_columns import SliceColumns, kept_columns
from .columns import flat_rows, gather, varint_matrix
from .keyed import KeyedFields, cut, pooled
from .wire import _TE_XC_INT, _TE_XC_TRACK

_MAX_EXTRA = 8                  # extra counter values Trace Processor reads per event
_FEW = 4                        # samples fewer than the slices / _FEW: those at their times


class Riders:
    """The extra counter fields riding on slice events (``ride``), held as columns: per
    slice, those of its BEGIN (``keyed.KeyedFields``); per track and end time, those of
    the first END written there: each track's end times (sorted), a pool of bytes and
    each time's place and length in it.  A slice rides once, so its BEGIN's are added
    once (``ride``).  A 1 M-task database's derived counters ride on
    a million events, and a dict entry and a ``bytes`` for each took 170 MB at the
    writer's peak.  End times added again on a track replace theirs."""

    __slots__ = ("begins", "ends")

    def __init__(self) -> None:
        self.begins = KeyedFields()
        self.ends: dict[int, tuple[np.ndarray, bytes, np.ndarray, np.ndarray, Any]] = {}

    def clear(self) -> None:
        self.begins.clear()
        self.ends.clear()

    def add_ends(self, track: int, times: np.ndarray, pool: bytes, starts: np.ndarray,
                 lengths: np.ndarray) -> None:
        """The fields of the first END at each of ``times`` (distinct) on ``track``."""
        if not len(times):
            return
        old = self.ends.get(track)
        if old is not None:             # (merged: the new ones replace equal times)
            keep = slice(None) if old[4] is None else ~old[4]
            fields = dict(zip(old[0][keep].tolist(),
                              cut(old[1], old[2][keep], old[3][keep])))
            fields.update(zip(times.tolist(), cut(pool, starts, lengths)))
            self.ends[track] = (*pooled(dict(sorted(fields.items()))), None)
            return
        order = np.argsort(times, kind="stable")
        self.ends[track] = (times[order], pool, starts[order], lengths[order], None)

    def end_dict(self, track: int) -> dict[int, bytes] | None:
        """The fields of ``track``'s ENDs as end time -> bytes (those not taken yet), for
        a writer that takes them out one at a time; the track's are its from now on."""
        hit = self.ends.pop(track, None)
        if hit is None:
            return None
        times, pool, starts, lengths, taken = hit
        if taken is not None:
            keep = ~taken
            times, starts, lengths = times[keep], starts[keep], lengths[keep]
        return dict(zip(times.tolist(), cut(pool, starts, lengths)))

    def end_column(self, track: int, end: np.ndarray) -> tuple[bytes, np.ndarray] | None:
        """Per END time of ``end`` (int64, in the order written), the fields it carries:
        those of its time on ``track`` on the first END written there (none elsewhere);
        those taken are not given again.  Their bytes end to end in that order, and each
        one's length (0: none); None where none is given."""
        hit = self.ends.get(track)
        if hit is None or not len(end):
            return None
        times, pool, starts, lengths, taken = hit
        if times.dtype != np.int64:
            got = self._end_pieces_each(track, end)
            return None if got is None else \
                (b"".join(got), np.fromiter(map(len, got), np.int64, len(got)))
        k = np.minimum(np.searchsorted(times, end), len(times) - 1)
        ok = times[k] == end
        if taken is not None:
            ok &= ~taken[k]
        if not ok.any():
            return None
        places = np.flatnonzero(ok)
        keys, first = np.unique(k[places], return_index=True)
        places = places[first]
        if taken is None:
            taken = np.zeros(len(times), dtype=bool)
            self.ends[track] = (times, pool, starts, lengths, taken)
        taken[keys] = True
        sizes = np.zeros(len(end), dtype=np.int64)
        sizes[places] = lengths[keys]
        # (the places in order, their keys with them: ``keys`` are in the order of time)
        at = np.argsort(places, kind="stable")
        return gather(np.frombuffer(pool, dtype=np.uint8), starts, lengths, keys[at]), sizes

    def _end_pieces_each(self, track: int, end: np.ndarray) -> list[bytes] | None:
        """``end_column``'s fields, one ``bytes`` per END, where the track's times are
        not all int64: one at a time."""
        at = self.end_dict(track) or {}
        out = list(map(at.pop, end.tolist(), repeat(b"")))
        if at:
            self.ends[track] = (*pooled(at), None)
        return out if any(out) else None


def ride(slices: list[Slice], units: list[tuple[int, list[int]]], counters: list,
         riders: Riders, rides: dict[int, np.ndarray], cols: SliceColumns | None = None
         ) -> None:
    """Let the samples of ``counters`` ride on the BEGIN or END events of the slices of
    ``units`` (track, slice ids) that have their timestamp, as the event's extra counter
    values (``TrackEvent.extra_counter_values``): Trace Processor stores them as the same
    counter rows without a packet of their own to parse, which is most of a sample's cost
    (derived counters change where slices begin or end).  Trace Processor v58 rejects an
    event with more than 8 of them, counts them up to the first 0 and reads extra doubles
    back wrong, so only int64 values other than 0 ride (a negative one as a 10-byte
    varint), 8 at most per event; a sample whose time its counter repeats keeps its packet
    too (the order of equal times is the file's).  A sample at a time where slices begin
    rides on the BEGIN of the first of them (in the order of ``units``), else on the END
    of the first track where one ends then; an event's values are in the order of
    ``counters``.

    Adds to ``riders`` (``Riders``: per slice, the extra counter fields of its BEGIN; per
    track and end time, those of the first END there) and ``rides`` (id of a counter ->
    per sample, whether it rides: then it gets no packet).  Every process that
    writes some of these slices or counters must know the result (``write_perfetto`` rides
    before it forks, or in the process that writes both); a slice or counter rides once.

    Done a column at a time with numpy, from ``cols`` (the slices' columns: made here where
    not given); times outside ±2^62 take ``_ride_each``."""
    if not units or not counters:
        return
    try:
        times = [np.array(c.ts, dtype=np.int64) for c in counters]
    except OverflowError:
        _ride_each(slices, units, counters, riders, rides)
        return
    if cols is None:
        cols = kept_columns(slices)
        if cols is None:
            _ride_each(slices, units, counters, riders, rides)
            return
    flat = np.concatenate([np.asarray(ids, dtype=np.int64) for _, ids in units]) if units \
        else np.zeros(0, dtype=np.int64)
    begin, end = cols.ts[flat], cols.end[flat]
    track = np.repeat(np.array([t for t, _ in units], dtype=np.int64),
                      [len(ids) for _, ids in units])
    if _FEW * sum(map(len, times)) < len(flat):
        # Few samples for the slices (the run's own counters of an msprof database): only
        # the slices that begin or end at a sample's time can carry one, in the same order.
        at = distinct(np.concatenate(times))
        kept = within(begin, at) | within(end, at)
        flat, begin, end, track = flat[kept], begin[kept], end[kept], track[kept]
    # The times where slices begin (each with the first slice to begin there) and end
    # (each with the first track where one ends): the keys samples ride on, numbered
    # 0.. (begins) and len(begins).. (ends).
    begins, first = np.unique(begin, return_index=True)
    begin_slice = flat[first]
    ends, first = np.unique(end, return_index=True)
    end_track = track[first]
    held = np.zeros(len(begins) + len(ends), dtype=np.int64)     # values on each key
    # Each sample's extra counter fields are those of its (counter, value): a few values
    # repeat (counts), so each distinct one is encoded once (``rows``, ``lengths``) and
    # each sample refers to it (``which``).
    keys, rows, lengths, which = [], [], [], []
    made = 0
    for counter, t in zip(counters, times):
        key = _keys(t, begins, ends)
        ok = key >= 0
        values = _int64_values(counter.values, ok)
        ok &= values != 0
        if not ok.any():
            continue
        if not (t[1:] > t[:-1]).all() and repeats(t):
            # a time its counter repeats: no riding
            _, where, n = np.unique(t, return_inverse=True, return_counts=True)
            ok &= n[where] == 1
        at = np.flatnonzero(ok)
        at = at[held[key[at]] < _MAX_EXTRA]     # keys differ: a counter's times do
        if not len(at):
            continue
        held[key[at]] += 1
        rode = rides[id(counter)] = np.zeros(len(t), dtype=bool)
        rode[at] = True
        head = _TE_XC_TRACK + varint(counter.track + 1) + _TE_XC_INT
        once, inverse = distinct_places(values[at])
        row, length = flat_rows(varint_matrix(once.astype(np.uint64)), head)
        keys.append(key[at])
        rows.append(row)
        lengths.append(length)
        which.append(inverse + made)
        made += len(once)
    if not keys:
        return
    # Each key's values, in the order of ``counters``: a stable sort of the rows by key,
    # the keys of BEGINs first (by slice time), then those of ENDs by track and time.
    key = np.concatenate(keys)
    data = np.concatenate(rows)
    row_length = np.concatenate(lengths)
    row_start = np.cumsum(row_length) - row_length
    which = np.concatenate(which)
    n_begins = len(begins)
    on_end = key >= n_begins
    track = np.where(on_end, end_track[np.where(on_end, key - n_begins, 0)], -1)
    order = np.lexsort((key, track, on_end))
    key, track, which = key[order], track[order], which[order]
    firsts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    # each key's fields: where they are in ``pool`` (no bytes object per key: a 1 M-task
    # database's derived counters ride on a million events)
    if len(firsts) == len(key):         # one value per key: each key's is a row
        pool = data.tobytes()
        starts, lengths = row_start[which], row_length[which]
    else:
        pool = gather(data, row_start, row_length, which)
        at_out = np.cumsum(row_length[which]) - row_length[which]
        bounds = np.append(at_out[firsts], len(pool))
        starts, lengths = bounds[:-1], np.diff(bounds)
    key, track = key[firsts], track[firsts]
    on_begin = int(np.searchsorted(track, -1, side="right"))    # (BEGIN keys: track -1)
    riders.begins.add(begin_slice[key[:on_begin]], pool, starts[:on_begin],
                      lengths[:on_begin])
    if on_begin == len(key):
        return
    # per track, its ends in time order
    tracks = track[on_begin:]
    times = ends[key[on_begin:] - n_begins]
    starts, lengths = starts[on_begin:], lengths[on_begin:]
    cut = np.flatnonzero(np.concatenate(([True], tracks[1:] != tracks[:-1])))
    bounds = np.append(cut, len(tracks)).tolist()
    for t, a, b in zip(tracks[cut].tolist(), bounds, bounds[1:]):
        riders.add_ends(t, times[a:b], pool, starts[a:b], lengths[a:b])


def _keys(t: np.ndarray, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per time of ``t``: the key a sample there rides on (the place of its time in
    ``begins``, else len(begins) + its place in ``ends``), or -1."""
    key = np.full(len(t), -1, dtype=np.int64)
    if len(ends):
        at = np.searchsorted(ends, t)
        hit = at < len(ends)
        hit[hit] = ends[at[hit]] == t[hit]
        key[hit] = len(begins) + at[hit]
    if len(begins):
        at = np.searchsorted(begins, t)
        hit = at < len(begins)
        hit[hit] = begins[at[hit]] == t[hit]
        key[hit] = at[hit]
    return key


def _int64_values(values: list, wanted: np.ndarray) -> np.ndarray:
    """``values`` as int64, 0 for any that cannot ride (not an int, or outside int64);
    only the places ``wanted`` matter."""
    if set(map(type, values)) == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    return np.array([v if w and v.__class__ is int and INT64_MIN <= v < INT64_END else 0
                     for v, w in zip(values, wanted.tolist())], dtype=np.int64)


def _ride_each(slices: list[Slice], units: list[tuple[int, list[int]]], counters: list,
               riders: Riders, rides: dict[int, np.ndarray]) -> None:
    """``ride`` one sample at a time, for times outside int64."""
    # The first slice (in the order of ``units``) to begin at each time, and the first
    # track where one ends: built backwards, so that the first one stays.
    begins: dict[int, int] = {}
    ends: dict[int, int] = {}
    for track, ids in reversed(units):
        for i in reversed(ids):
            s = slices[i]
            begins[s.ts] = i
            ends[s.ts + s.dur] = track
    on_begin: dict[int, list[bytes]] = {}
    on_end: dict[int, dict[int, list[bytes]]] = {}
    for counter in counters:
        times = counter.ts
        repeated = {t for t, n in collections.Counter(times).items() if n > 1}
        head = _TE_XC_TRACK + varint(counter.track + 1) + _TE_XC_INT
        rode = [False] * len(times)
        for k, (ts, value) in enumerate(zip(times, counter.values)):
            i = begins.get(ts)
            if i is None and ts not in ends or value.__class__ is not int \
                    or not value or not INT64_MIN <= value < INT64_END or ts in repeated:
                continue
            at, key = (on_begin, i) if i is not None else \
                (on_end.setdefault(ends[ts], {}), ts)
            on = at.setdefault(key, [])
            if len(on) < _MAX_EXTRA:
                on.append(head + varint(value))
                rode[k] = True
        if any(rode):
            rides[id(counter)] = np.array(rode, dtype=bool)
    riders.begins.add_dict({i: b"".join(v) for i, v in on_begin.items()})
    for track, at in on_end.items():
        riders.add_ends(track, *pooled({ts: b"".join(v) for ts, v in at.items()}))

