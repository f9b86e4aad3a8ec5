"""Is one model exactly the same as another?  (The model archive's round-trip check.)

``model_differences(a, b)`` lists what differs, strictly: every field of every track, slice,
instant, counter and flow, and of the run's meta; values compare with their exact types (1 vs
1.0 vs True, list vs tuple, NaN equal to NaN, -0.0 unequal to 0.0, dict key order); and the
sharing of args dicts: the args / shared_args dicts that were one object in ``a`` must be one
object in ``b``, and distinct ones distinct; the same for the lists, tuples and dicts inside
args, counter values and meta.extra.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from typing import Any

from ..arg_rows import ArgRow
from ..model import Trace

_TRACK_FIELDS = ("index", "name", "kind", "parent", "order", "description", "unit",
                 "nesting", "derived", "children")


def same_value(x: Any, y: Any) -> bool:
    """Deep equality that also requires equal types (and key order for dicts); an
    ``array`` (a counter's samples as a column: ``model.Counter``) is the list it reads as."""
    if x.__class__ is array:
        x = x.tolist()
    if y.__class__ is array:
        y = y.tolist()
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        if x != x:
            return y != y
        return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)
    if isinstance(x, dict):
        return len(x) == len(y) and all(same_value(k1, k2) and same_value(v1, v2)
                                        for (k1, v1), (k2, v2) in zip(x.items(), y.items()))
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(same_value(a, b) for a, b in zip(x, y))
    return x == y


class _Differences:
    def __init__(self, limit: int) -> None:
        self.items: list[str] = []
        self.limit = limit

    def add(self, text: str) -> None:
        if len(self.items) < self.limit:
            self.items.append(text)

    @property
    def full(self) -> bool:
        return len(self.items) >= self.limit


class _Sharing:
    """Compares values deeply and checks that container identity maps one-to-one between the
    two models: what was one list/tuple/dict object must be one object, and distinct objects
    distinct."""

    def __init__(self, diffs: _Differences) -> None:
        self.diffs = diffs
        self.a_to_b: dict[int, int] = {}
        self.b_to_a: dict[int, int] = {}
        self.done: set[tuple[int, int]] = set()
        self.rows: dict[int, tuple[ArgRow, dict]] = {}     # id of a row -> (it, its dict)

    def _as_dict(self, row: ArgRow) -> dict:
        """``row`` as a dict, one per row (held: the ids stay theirs)."""
        hit = self.rows.get(id(row))
        if hit is None:
            hit = self.rows[id(row)] = (row, dict(row.items()))
        return hit[1]

    def check(self, where: str, x: Any, y: Any) -> None:
        problem = self._walk(x, y)
        if problem:
            self.diffs.add(f"{where}: {problem}" if problem[0] != " " else
                           f"{where}: {x!r:.120} != {y!r:.120}")

    def _walk(self, x: Any, y: Any) -> str:
        """"" when equal with the same sharing; a reason otherwise (" " for plain unequal).
        A row of a table of args (``arg_rows``) is the dict it stands for."""
        if x.__class__ is ArgRow:
            x = self._as_dict(x)
        if y.__class__ is ArgRow:
            y = self._as_dict(y)
        if not isinstance(x, (list, tuple, dict)) or type(x) is not type(y):
            return "" if same_value(x, y) else " "
        pair = (id(x), id(y))
        if pair in self.done:
            return ""
        bx = self.a_to_b.setdefault(pair[0], pair[1])
        ay = self.b_to_a.setdefault(pair[1], pair[0])
        if bx != pair[1]:
            return "an object shared in the first model is not shared in the second"
        if ay != pair[0]:
            return "distinct objects of the first model are one in the second"
        self.done.add(pair)
        if len(x) != len(y):
            return " "
        if isinstance(x, dict):
            for (k1, v1), (k2, v2) in zip(x.items(), y.items()):
                problem = self._walk(k1, k2) or self._walk(v1, v2)
                if problem:
                    return problem
        else:
            for v1, v2 in zip(x, y):
                problem = self._walk(v1, v2)
                if problem:
                    return problem
        return ""


def model_differences(a: Trace, b: Trace, limit: int = 20) -> list[str]:
    """What differs between ``a`` and ``b`` (at most ``limit`` lines); [] when identical."""
    d = _Differences(limit)
    sharing = _Sharing(d)
    _meta(d, a, b, sharing)
    if a.roots != b.roots:
        d.add(f"roots: {a.roots} != {b.roots}")
    _items(d, "track", a.tracks, b.tracks, _TRACK_FIELDS)
    _items(d, "slice", a.slices, b.slices, ("track", "ts", "dur", "name", "cat"), sharing,
           ("args", "shared_args"))
    _items(d, "instant", a.instants, b.instants, ("track", "ts", "name", "cat"), sharing,
           ("args",))
    _items(d, "flow", a.flows, b.flows, ("src", "dst", "name"), sharing, ("args",))
    _items(d, "counter", a.counters, b.counters, ("track", "ts"), sharing, ("values",))
    compared = {"meta", "tracks", "slices", "instants", "counters", "flows", "_roots"}
    for name in sorted((set(vars(a)) | set(vars(b))) - compared):
        if not same_value(getattr(a, name, None), getattr(b, name, None)):
            d.add(f"trace.{name} differs")
    return d.items


def _meta(d: _Differences, a: Trace, b: Trace, sharing: _Sharing) -> None:
    ma, mb = a.meta, b.meta
    names = [f.name for f in dataclasses.fields(ma)]
    names += sorted((set(vars(ma)) | set(vars(mb))) - set(names))
    for name in names:
        x, y = getattr(ma, name, None), getattr(mb, name, None)
        if name == "clock":
            for f in ("name", "unit", "ns_per_unit", "description"):
                cx, cy = getattr(x, f), getattr(y, f)
                if type(cx) is not type(cy) or cx != cy:
                    d.add(f"meta.clock.{f}: {cx!r} != {cy!r}")
            if type(x) is not type(y):
                d.add(f"meta.clock: {type(x).__name__} != {type(y).__name__}")
        elif name == "extra":
            sharing.check("meta.extra", x, y)
        elif not same_value(x, y):
            d.add(f"meta.{name}: {x!r:.120} != {y!r:.120}")


def _items(d: _Differences, what: str, xs: list, ys: list, fields: tuple[str, ...],
           sharing: _Sharing | None = None, dict_fields: tuple[str, ...] = ()) -> None:
    if len(xs) != len(ys):
        d.add(f"{what}s: {len(xs)} != {len(ys)}")
        return
    for i, (x, y) in enumerate(zip(xs, ys)):
        if type(x) is not type(y):
            d.add(f"{what} {i}: {type(x).__name__} != {type(y).__name__}")
        for f in fields:
            vx, vy = getattr(x, f), getattr(y, f)
            if not same_value(vx, vy):
                d.add(f"{what} {i}.{f}: {vx!r:.80} != {vy!r:.80}")
        for f in dict_fields:
            sharing.check(f"{what} {i}.{f}", getattr(x, f), getattr(y, f))
        if d.full:
            return
