"""The slices' tracks and times as numpy columns, made once for a pass that reads them all
(the Perfetto writer's set-up, flows and riding samples), so that it does not walk the
``Slice`` objects again for each; a forked writing process shares them without copying
their pages (reading a Python object writes its reference count).

Within one conversion (``columns_kept``: read, analyses, written, with nothing of a user's
between them), the columns are made once for all of them (``kept_columns``): the reader's
``model.split_overlaps``, the analyses' timeline and the writers take the same ones, those
of slices added meanwhile (the derived tracks) appended.  A reader that changes no slice's
track or times once it has made it may make them sooner (the database reader's clock
skew, measured before ``split_overlaps``).  Nothing in a conversion changes a
slice's track or times once ``split_overlaps`` has moved them (it changes its columns
too); tests/test_kept_columns.py checks the columns kept against new ones for every sample.
"""

from __future__ import annotations

from array import array
from contextlib import contextmanager
from contextvars import ContextVar
from operator import attrgetter
from typing import Iterator, NamedTuple

import numpy as np

from .model import Slice

_TRACK, _TS, _DUR = attrgetter("track"), attrgetter("ts"), attrgetter("dur")
_SRC, _DST = attrgetter("src"), attrgetter("dst")


class SliceColumns(NamedTuple):
    """Per slice (by index): its track, start and end (int64)."""

    track: np.ndarray
    ts: np.ndarray
    end: np.ndarray

    def extended(self, slices: list[Slice]) -> SliceColumns | None:
        """These columns with those of the slices after them in ``slices`` (added since),
        or None where one of those does not fit (``columns_of``)."""
        more = columns_of(slices, len(self.ts))
        if more is None:
            return None
        return SliceColumns(*(np.concatenate(pair) for pair in zip(self, more)))


def columns_of(slices: list[Slice], first: int = 0) -> SliceColumns | None:
    """The columns of ``slices[first:]``, or None where a track, start or end is not an int
    of int64 (the callers then take each slice as it is)."""
    part = slices[first:] if first else slices
    times = times_of(part)
    if times is None:
        return None
    try:
        track = np.fromiter(map(_TRACK, part), dtype=np.int64, count=len(part))
    except (OverflowError, TypeError, ValueError):
        return None
    return SliceColumns(track, *times)


# id(slices) -> (slices, how many had columns made, their columns or None), in a conversion
_KEPT: ContextVar[dict | None] = ContextVar("tracecvt_kept_columns", default=None)


@contextmanager
def columns_kept() -> Iterator[None]:
    """Within: ``kept_columns`` makes each list of slices' columns once (one conversion: no
    caller's code runs between the read and the writing)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def kept_columns(slices: list[Slice], make: bool = True,
                 first: SliceColumns | None = None) -> SliceColumns | None:
    """``columns_of(slices)``: within ``columns_kept``, those made before for this list,
    with the slices added since appended; outside, made now (from ``first``, the columns
    of the first slices, where the caller has them).  ``make=False``: only those kept
    (None where none are, or outside)."""
    kept = _KEPT.get()
    hit = kept.get(id(slices)) if kept is not None else None
    if hit is not None and hit[0] is slices and hit[1] <= len(slices):
        cols = hit[2]
        if hit[1] == len(slices) or cols is None:       # (None: some slice does not fit)
            return cols
        cols = cols.extended(slices)
    elif not make:
        return None
    elif first is not None and len(first.ts) <= len(slices):
        cols = first.extended(slices) if len(first.ts) < len(slices) else first
    else:
        cols = columns_of(slices)
    if kept is not None:
        kept[id(slices)] = (slices, len(slices), cols)
    return cols


def forget_columns(slices: list[Slice]) -> None:
    """Let go of the columns kept for ``slices`` (a writer done with them, before its
    merge: they need not outlive it)."""
    kept = _KEPT.get()
    if kept is not None:
        kept.pop(id(slices), None)


def times_of(slices: list[Slice]) -> tuple[np.ndarray, np.ndarray] | None:
    """The starts and ends (int64) of ``slices``, or None where a start or a duration is
    not an int within ±2^62 (so that every end fits int64)."""
    got = int_columns(slices, (_TS, _DUR), -_BOUND, _BOUND)
    if got is None:
        return None
    ts, dur = got
    return ts, ts + dur


def int_columns(items: list, getters: tuple, low: int, high: int) -> list[np.ndarray] | None:
    """One int64 column per getter (``attrgetter``) over ``items``, or None where a value
    is not an int in [``low``, ``high``)."""
    try:
        out = [np.fromiter(map(get, items), dtype=np.int64, count=len(items))
               for get in getters]
    except (OverflowError, TypeError, ValueError):
        return None
    if items and any(int(c.min()) < low or int(c.max()) >= high for c in out):
        return None
    return out


def flow_ends(flows: list, n_slices: int) -> list[np.ndarray] | None:
    """The sources and destinations of ``flows`` as int64 columns, or None where an end
    is not the index of one of ``n_slices`` slices."""
    return int_columns(flows, (_SRC, _DST), 0, n_slices)


_BOUND = 1 << 62


def start_order(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The order lanes are walked in (``split_overlaps``, the writer, the analyses): by
    start, the longer first at one start, then as given (a stable sort)."""
    return np.lexsort((-dur, ts))


def by_track(track: np.ndarray, first: int = 0, packed: bool = False
             ) -> dict[int, list[int] | array]:
    """``Trace.slices_by_track`` from the track column (of the slices from index ``first``):
    slice indexes per track in index order, the tracks in the order of their first slice
    (fresh lists; ``packed``: fresh ``array("q")``s, 8 bytes an index where a list's
    int objects take 36: a 1 M-task database's writer holds 3 M of them)."""
    keys, order, bounds = track_groups(track)
    ids = (order + first).astype(np.int64)
    ids = array("q", ids.tobytes()) if packed else ids.tolist()
    groups = [(keys[k], ids[bounds[k]:bounds[k + 1]]) for k in range(len(keys))]
    groups.sort(key=lambda g: g[1][0])          # by the index of their first slice
    return dict(groups)


def refill(ids: list[int] | array, values: np.ndarray) -> None:
    """Put ``values`` (slice indexes, int64) in place of a lane's ``ids`` (a list, or
    ``by_track(packed=True)``'s array), keeping its kind: a lane reordered in place."""
    ids[:] = values.tolist() if ids.__class__ is list else array("q", values.tobytes())


def track_groups(track: np.ndarray) -> tuple[list[int], np.ndarray, list[int]]:
    """The slices grouped by track: the tracks (ascending), the slice indexes ordered by
    track and then index (a stable sort), and where each track's begin in that order
    (with its end last)."""
    order = np.argsort(track, kind="stable")
    sorted_track = track[order]
    firsts = np.flatnonzero(np.concatenate(([True], sorted_track[1:] != sorted_track[:-1]))) \
        if len(track) else np.zeros(0, dtype=np.int64)
    return sorted_track[firsts].tolist(), order, np.append(firsts, len(order)).tolist()
