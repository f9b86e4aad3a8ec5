"""Counter samples riding on slice events: a sample at the time a slice begins or ends is
written as one of that BEGIN's or END's extra counter values instead of a packet of its own.
"""

from __future__ import annotations

import collections

from ...model import INT64_END, INT64_MIN, Slice
from ..protowire import varint
from .wire import _TE_XC_INT, _TE_XC_TRACK

_MAX_EXTRA = 8                  # extra counter values Trace Processor reads per event


def ride(slices: list[Slice], units: list[tuple[int, list[int]]], counters: list,
         riders: dict[int, list[bytes]], end_riders: dict[int, dict[int, list[bytes]]],
         rides: dict[int, set[int]]) -> None:
    """Let the samples of ``counters`` ride on the BEGIN or END events of the slices of
    ``units`` (track, slice ids) that have their timestamp, as the event's extra counter
    values (``TrackEvent.extra_counter_values``): Trace Processor stores them as the same
    counter rows without a packet of their own to parse, which is most of a sample's cost
    (derived counters change where slices begin or end).  Trace Processor v58 rejects an
    event with more than 8 of them, counts them up to the first 0 and reads extra doubles
    back wrong, so only int64 values other than 0 ride (a negative one as a 10-byte
    varint), 8 at most per event; a sample whose time its counter repeats keeps its packet
    too (the order of equal times is the file's).

    Fills ``riders`` (slice id -> the extra counter fields of its BEGIN), ``end_riders``
    (track -> end time -> those of the first END there) and ``rides`` (id of a counter ->
    the times of its samples that ride, which then get no packet).  Every process that
    writes some of these slices or counters must know the result (``write_perfetto`` rides
    before it forks, or in the process that writes both)."""
    # The first slice (in the order of ``units``) to begin at each time, and the first
    # track where one ends: built backwards, so that the first one stays.
    begins: dict[int, int] = {}
    ends: dict[int, int] = {}
    for track, ids in reversed(units):
        for i in reversed(ids):
            s = slices[i]
            begins[s.ts] = i
            ends[s.ts + s.dur] = track
    begin_of = begins.get
    for counter in counters:
        times = counter.ts
        repeated: set[int] = set()
        if len(set(times)) != len(times):
            repeated = {t for t, n in collections.Counter(times).items() if n > 1}
        head = _TE_XC_TRACK + varint(counter.track + 1) + _TE_XC_INT
        extras: dict[int, bytes] = {}           # int value -> its extra fields
        rode = set()
        for ts, value, i in zip(times, counter.values, map(begin_of, times)):
            if i is None and ts not in ends or value.__class__ is not int:
                continue
            extra = extras.get(value)
            if extra is None:
                if not value or not INT64_MIN <= value < INT64_END:
                    continue
                extra = extras[value] = head + varint(value)
            if repeated and ts in repeated:
                continue
            # On the BEGIN of slice i, else on the first END at ts.
            at, key = (riders, i) if i is not None else \
                (end_riders.setdefault(ends[ts], {}), ts)
            on = at.get(key)
            if on is None:
                at[key] = [extra]
            elif len(on) < _MAX_EXTRA:
                on.append(extra)
            else:
                continue
            rode.add(ts)
        if rode:
            rides[id(counter)] = rode
