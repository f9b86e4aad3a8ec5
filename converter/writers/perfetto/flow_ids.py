"""The flow ids each slice event carries (``TrackEvent.flow_ids`` on the source's BEGIN,
``terminating_flow_ids`` on the destination's BEGIN, or on its END when both start at one
ns), made a column at a time from the slices' columns (``slice_columns``).  Flow ids are
the flows' places in ``Trace.flows`` from 1, the same in every writing process."""

from __future__ import annotations

from operator import attrgetter, eq
from itertools import repeat
from typing import NamedTuple

import numpy as np

from ...model import UNTRUSTED_FLOW
from ...slice_columns import SliceColumns, flow_ends
from ..flows import drawable_columns
from .keyed import KeyedFields
from .wire import _TE_FLOW, _TE_TERM_FLOW

_NAME = attrgetter("name")


class FlowColumns(NamedTuple):
    """Per flow (by place in ``Trace.flows``): its source and destination slices, and
    whether it is untrusted (``model.UNTRUSTED_FLOW``: a .pftrace does not draw it)."""

    src: np.ndarray
    dst: np.ndarray
    untrusted: np.ndarray


def flow_columns(flows: list, n_slices: int) -> FlowColumns | None:
    """The columns of ``flows``, or None where an end is not the index of one of
    ``n_slices`` slices."""
    ends = flow_ends(flows, n_slices)
    if ends is None:
        return None
    untrusted = np.fromiter(map(eq, map(_NAME, flows), repeat(UNTRUSTED_FLOW)), dtype=bool,
                            count=len(flows))
    return FlowColumns(*ends, untrusted)


def add_flow_ids(flows: FlowColumns, cols: SliceColumns, tracks: set[int] | None,
                 begin_ids: KeyedFields, end_ids: KeyedFields) -> tuple[int, int]:
    """Add to ``begin_ids`` (slice i: its flow ids, ~i: its terminating ids) and
    ``end_ids`` (slice: the terminating ids of its END) the fields of the flows with an
    end on ``tracks`` (None: all) that the .pftrace draws (``writers.flows.drawable``);
    returns how many of those it does not draw have their destination there, and how many
    of these are untrusted."""
    src, dst, untrusted = flows
    n = len(src)
    if tracks is None:
        here_src = here_dst = np.ones(n, dtype=bool)
    else:
        wanted = np.fromiter(tracks, dtype=np.int64, count=len(tracks))
        here_src = np.isin(cols.track[src], wanted)
        here_dst = np.isin(cols.track[dst], wanted)
    s0, d0 = cols.ts[src], cols.ts[dst]
    bad = ~drawable_columns(s0, d0, cols.end[dst], "perfetto", untrusted)
    fid = np.arange(1, n + 1, dtype=np.uint64)
    out = ~bad & here_src
    _add(begin_ids, src[out], fid[out], _TE_FLOW)
    term = ~bad & here_dst
    on_end = term & (d0 == s0)
    _add(end_ids, dst[on_end], fid[on_end], _TE_TERM_FLOW)
    on_begin = term & (d0 != s0)
    _add(begin_ids, ~dst[on_begin], fid[on_begin], _TE_TERM_FLOW)
    out = bad & here_dst
    return int(np.count_nonzero(out)), int(np.count_nonzero(out & untrusted))


def _add(fields: KeyedFields, keys: np.ndarray, fids: np.ndarray, tag: bytes) -> None:
    """``fields[key] += tag + fixed64(fid)`` for each pair, in order (the ids of one key in
    the order given)."""
    if not len(keys):
        return
    order = np.argsort(keys, kind="stable")
    keys, fids = keys[order], fids[order]
    width = len(tag) + 8
    rows = np.empty((len(keys), width), dtype=np.uint8)
    rows[:, :len(tag)] = np.frombuffer(tag, dtype=np.uint8)
    rows[:, len(tag):] = fids.astype("<u8").view(np.uint8).reshape(-1, 8)
    firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    bounds = np.append(firsts, len(keys)) * width
    fields.add(keys[firsts], rows.tobytes(), bounds[:-1], np.diff(bounds))
