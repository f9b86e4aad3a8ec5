"""One piece of work shown in several places (``model.SAME_WORK``, ``model.SAME_TASK``,
``model.COPIES``): which slices of a trace are one, for the writers that can say so (the
Perfetto writer's ``correlation_id``, which the Perfetto UI colours alike)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain, compress
from operator import attrgetter, is_
from typing import Any

import numpy as np

from .distinct import distinct_places
from .model import COPIES, SAME_WORK, Trace, task_arg


@dataclass(slots=True, eq=False)
class OwnWork:
    """The run's own part of ``work_ids`` (``own_work``), and what it was made from: the
    declared arg names, and the flows that joined slices with the name each had.

    The ids are kept as two arrays, ``members`` (slice indexes, by work id then index) and
    ``numbers`` (their work ids, 1 to ``count``): a large run has millions, and the Perfetto
    writer reads them as arrays (``writers.perfetto.work_fields.own_id_fields``).  ``ids``
    is them as a dict, made on first use; ``id_of`` looks one slice up without it."""

    members: np.ndarray
    numbers: np.ndarray
    count: int
    keys: list[tuple[str, ...]]
    flows: list[Any]
    flow_names: list[str]
    _ids: dict[int, int] | None = field(default=None, repr=False)
    _by_slice: np.ndarray | None = field(default=None, repr=False)

    @property
    def ids(self) -> dict[int, int]:
        """Slice index -> work id, in the order of ``members``; do not change it."""
        if self._ids is None:
            self._ids = dict(zip(self.members.tolist(), self.numbers.tolist()))
        return self._ids

    def id_of(self, i: int) -> int | None:
        """The work id of slice ``i``, or None."""
        if self._by_slice is None:
            top = int(self.members.max()) + 1 if len(self.members) else 0
            self._by_slice = np.zeros(top, dtype=np.int64)
            self._by_slice[self.members] = self.numbers
        w = int(self._by_slice[i]) if 0 <= i < len(self._by_slice) else 0
        return w or None


def work_ids(trace: Trace, own: OwnWork | None = None) -> dict[int, int]:
    """Slice index -> work id (1, 2, ... by first slice) of the slices that are one piece of
    work on two or more tracks: equal values of the task arg (``model.task_arg``) or of an
    arg the reader declares
    (``model.SAME_WORK``; own args first, then shared; a list of names is one id under
    several names), or joined by a flow of a declared
    name, taken together (one launch and its device task, one task's rows and its dispatch).
    Slices on derived tracks are left out of those: they are the analyses', not the run's;
    a slice an analysis drew as a copy of the run's own (``model.COPIES``: a critical-path
    task) joins the slices it copies.  ``own``: ``own_work(trace)`` when known (``still``
    says whether it still holds after the analyses); the dict returned may be its ``ids``:
    do not change it."""
    if own is None:
        own = own_work(trace)
    added = copies_work(trace, own)
    return {**own.ids, **added} if added else own.ids


def copies_work(trace: Trace, own: OwnWork) -> dict[int, int]:
    """What the analyses' copies (``model.COPIES``) add to ``own``'s ids: each copy's id,
    and its originals' where they had none.  Copies are numbered after the run's own
    work: a copy takes its task's id, or a task that had none gets the next one with its
    copy.  So the ids of the run's own slices are the same before an analysis adds its
    copies as after (a trace written while the analyses run: writers.perfetto)."""
    extra = trace.meta.extra if isinstance(trace.meta.extra, dict) else {}
    copies = extra.get(COPIES)
    added: dict[int, int] = {}
    if not isinstance(copies, dict):
        return added
    id_of = own.id_of
    wid = own.count
    n = len(trace.slices)
    for c in sorted(k for k in copies if k.__class__ is int and 0 <= k < n):
        originals = copies[c]
        if not isinstance(originals, list):
            continue
        originals = [o for o in originals if o.__class__ is int and 0 <= o < n and o != c]
        if not originals:
            continue
        have = [w for w in (added.get(o, id_of(o)) for o in originals) if w is not None]
        if have:
            w = min(have)
        else:
            wid += 1
            w = wid
        for o in originals:
            if o not in added and id_of(o) is None:
                added[o] = w
        added[c] = w
    return added


def own_work(trace: Trace, track: np.ndarray | None = None) -> OwnWork:
    """``work_ids`` of the run's own slices, without the analyses' copies.  ``track``: every
    slice's track as a column, where the caller has it (the Perfetto writer's
    ``slice_columns``)."""
    extra = trace.meta.extra if isinstance(trace.meta.extra, dict) else {}
    declared = extra.get(SAME_WORK)
    declared = declared if isinstance(declared, dict) else {}
    slices, tracks = trace.slices, trace.tracks
    # Each entry: an arg name, or a list of names of one id (the first a slice has counts).
    keys = [(k,) if isinstance(k, str) else tuple(k) for k in declared.get("args", ())
            if isinstance(k, str) or isinstance(k, (list, tuple)) and k
            and all(isinstance(n, str) for n in k)]
    task = task_arg(trace)
    if task is not None and not any(task in k for k in keys) and _has_task_ids(trace, task):
        keys.insert(0, (task,))
    flow_names = {n for n in declared.get("flows", ()) if isinstance(n, str)}
    derived = {t.index for t in tracks if t.derived}
    pairs = [_arg_pairs(slices, keys, derived)] if keys else []
    joined: list[Any] = []
    if flow_names and trace.flows:
        joined, flow_pairs = _joining_flows(trace, flow_names, derived, track)
        pairs.append(flow_pairs)
    members = numbers = np.zeros(0, dtype=np.int64)
    wid = 0
    if pairs and sum(map(len, pairs)):
        members, root = _components(np.concatenate(pairs))
        # Groups in order of their first slice; one on a single track links nothing.
        tracks_of = _slice_tracks(slices, members, track)
        order = np.lexsort((members, root))
        members, root, tracks_of = members[order], root[order], tracks_of[order]
        cut = np.flatnonzero(np.diff(root)) + 1
        starts = np.concatenate(([0], cut))
        lo = np.minimum.reduceat(tracks_of, starts)
        hi = np.maximum.reduceat(tracks_of, starts)
        linked = lo != hi
        ids = np.zeros(len(starts), dtype=np.int64)
        ids[linked] = np.arange(1, int(linked.sum()) + 1)
        per = np.repeat(ids, np.diff(np.append(starts, len(members))))
        keep = per > 0
        members, numbers = members[keep], per[keep]
        wid = int(linked.sum())
    return OwnWork(members, numbers, wid, keys, joined, list(map(attrgetter("name"), joined)))


def _arg_pairs(slices: list, keys: list[tuple[str, ...]], derived: set[int]) -> np.ndarray:
    """Pairs of slices (n x 2) that are one by a declared arg: per entry of ``keys``, each
    slice with a value joined to the first slice with an equal value of the same class (1,
    1.0 and True are not one; lists and dicts join nothing), none on a ``derived`` track.
    The values are grouped by one ``map`` of ``dict.setdefault`` per entry, not one call
    per slice."""
    out = [np.zeros((0, 2), dtype=np.int64)]
    for names in keys:
        at, values = _arg_values(slices, names)
        kinds = list(map(type, values))
        classes = set(kinds)
        if list in classes or dict in classes or derived:
            keep = [k is not list and k is not dict and slices[i].track not in derived
                    for i, k in zip(at, kinds)]
            at, values, kinds = (list(compress(c, keep)) for c in (at, values, kinds))
        first: dict[Any, int] = {}
        # of one class, the values alone are as equal, and as unequal, as (class, value)
        by = values if len(classes) == 1 else zip(kinds, values)
        a = np.array(list(map(first.setdefault, by, at)), dtype=np.int64)
        b = np.array(at, dtype=np.int64)
        joins = a != b
        out.append(np.stack((a[joins], b[joins]), axis=1))
    return np.concatenate(out)


def _arg_values(slices: list, names: tuple[str, ...]) -> tuple[list[int], list[Any]]:
    """The slices with a value of ``names`` (``_value``: the first name a slice has, own args
    first, then shared), and their values."""
    at: list[int] = []
    values: list[Any] = []
    put_at, put = at.append, values.append
    if len(names) > 1:
        for i, s in enumerate(slices):
            v = _value(s.args, s.shared_args, names)
            if v is not None:
                put_at(i)
                put(v)
        return at, values
    key = names[0]                          # most entries: one name, unrolled
    for i, s in enumerate(slices):
        a = s.args
        v = a.get(key) if a else None
        if v is None:
            shared = s.shared_args
            if not shared:
                continue
            v = shared.get(key)
            if v is None:
                continue
        put_at(i)
        put(v)
    return at, values


def _joining_flows(trace: Trace, names: set[str], derived: set[int],
                   track: np.ndarray | None) -> tuple[list[Any], np.ndarray]:
    """The flows of ``names`` that join two slices (neither on a ``derived`` track), and
    their (src, dst) as an n x 2 array.  Read a column at a time (``map`` and
    ``attrgetter``, no Python loop per flow): a run can have a million flows."""
    flows = trace.flows
    named = np.fromiter(map(names.__contains__, map(attrgetter("name"), flows)), dtype=bool,
                        count=len(flows))
    if not named.all():
        flows = list(compress(flows, named.tolist()))
    ends = np.fromiter(chain.from_iterable(map(attrgetter("src", "dst"), flows)),
                       dtype=np.int64, count=2 * len(flows)).reshape(-1, 2)
    keep = ends[:, 0] != ends[:, 1]
    if derived and len(ends):
        ends_on = _slice_tracks(trace.slices, ends.ravel(), track).reshape(-1, 2)
        keep &= ~np.isin(ends_on, list(derived)).any(axis=1)
    if not keep.all():
        flows = list(compress(flows, keep.tolist()))
        ends = ends[keep]
    return (list(flows) if flows is trace.flows else flows), ends


def _slice_tracks(slices: list, at: np.ndarray,
                  track: np.ndarray | None = None) -> np.ndarray:
    """The track of each slice of ``at`` (indexes): from ``track`` (every slice's) where
    given, or made where ``at`` names a good part of the slices (one pass over them costs
    less than a look-up per index), else one look-up per index."""
    if track is not None:
        return track[at]
    if 3 * len(at) >= len(slices):
        every = np.fromiter(map(attrgetter("track"), slices), dtype=np.int64,
                            count=len(slices))
        return every[at]
    return np.fromiter(map(attrgetter("track"), map(slices.__getitem__, at.tolist())),
                       dtype=np.int64, count=len(at))


def still(trace: Trace, own: OwnWork, replaced: dict[int, tuple[Any, Any]]) -> bool:
    """Whether ``own`` (``own_work`` of ``trace`` before an analysis ran) still holds: the
    slices whose args the analysis replaced (``replaced``: index -> their args and shared
    args before) have the same declared values, and every flow that joined two slices
    still has its name."""
    slices = trace.slices
    for i, (args, shared) in replaced.items():
        s = slices[i]
        for names in own.keys:
            now, was = _value(s.args, s.shared_args, names), _value(args, shared, names)
            if (now.__class__, now) != (was.__class__, was):
                return False
    return all(map(is_, map(attrgetter("name"), own.flows), own.flow_names))


def _value(args: dict | None, shared: dict | None, names: tuple[str, ...]) -> Any:
    """A slice's value of the first of ``names`` it has (own args first, then shared: as
    ``own_work`` reads them)."""
    for key in names:
        v = args.get(key) if args else None
        if v is None and shared:
            v = shared.get(key)
        if v is not None:
            return v
    return None


def _components(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The connected components of the graph whose edges are ``pairs`` (n x 2 slice
    indexes): (every slice of an edge, the least slice of its component).  Where no slice
    is in two edges (a flow per launch and its task), each edge is one; else by label
    propagation: each slice takes the least label of its edges' ends, then of the slice its
    label names (pointer jumping), until nothing changes."""
    members, at = distinct_places(pairs.ravel())
    a, b = at.reshape(-1, 2).T
    if len(members) == pairs.size:
        label = np.empty(len(members), dtype=np.int64)
        label[a] = label[b] = np.minimum(a, b)
        return members, members[label]
    label = np.arange(len(members))
    while True:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        while True:                         # pointer jumping to the least label
            nxt = new[new]
            if np.array_equal(nxt, new):
                break
            new = nxt
        if np.array_equal(new, label):
            return members, members[label]
        label = new


def _has_task_ids(trace: Trace, task: str) -> bool:
    """Whether the first slice of some track of the run's own has the arg ``task`` (readers
    that set it set it on every slice of a lane; a full scan only then)."""
    seen = {t.index for t in trace.tracks if t.derived}
    for s in trace.slices:
        if s.track in seen:
            continue
        seen.add(s.track)
        if task in (s.args or ()) or task in (s.shared_args or ()):
            return True
    return False
