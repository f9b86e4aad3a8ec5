"""The args of the device tasks ``task_rows`` makes: their tables' names by the shape of a
task's args, the pipe ratios of its PMU figures, its lane; and the ids of a batch's
columns (``ids_of``)."""

from __future__ import annotations

import json
from array import array
from typing import Any

import numpy as np

from ...arg_rows import ArgTable, Derived
from ..msprof.jsontrace import _describe_lane, _describe_process
from ..msprof.layout import Layout
from ..msprof.tasks import pipe_ratios
from ..msprof.timefmt import UINT32_MAX

HW_ORDER = 13
TASK_ARGS = ("model_id", "task_type", "stream_id", "task_id", "context_id", "connection_id",
             "device_id")
HARDWARE = ("hardware_task_start_ns", "hardware_task_dur_ns", "hardware_global_task_id")
_INT_OR_NONE = frozenset({int, type(None)})


def ids_of(column, ids: bool) -> list | None:
    """A column of ints or None as a list (``ids``: UINT32_MAX and -1, "no id", as None, as
    ``tasks._id``); None where it holds anything else (floats too: an ``array('d')``)."""
    if column.__class__ is array:
        if column.typecode != "q":
            return None
        out = column.tolist()
        if ids:
            a = np.frombuffer(column, np.int64)
            for k in np.flatnonzero((a == UINT32_MAX) | (a == -1)).tolist():
                out[k] = None
        return out
    if not _INT_OR_NONE.issuperset(map(type, column)):
        return None
    if not ids:
        return list(column)
    return [None if v is not None and (v == UINT32_MAX or v == -1) else v for v in column]


def args_table(shape: tuple, more: dict | None, pmu: dict | None):
    """The ``ArgTable`` of the args of a task of ``shape`` (``TaskRows``: (task info
    names, PMU names or None, no pipe ratios?) for an op, (task info names, no HCCL task
    type?) for a communication task, () for the rest; ``more``, ``pmu``: that task's task
    info and PMU figures): the names in the order a dict of them had; where a name repeats
    (a PMU metric spelled as a task arg), the names as a tuple: the args are then a dict,
    built as ``dict.update`` would (the value of the last, at the place of the first)."""
    names = TASK_ARGS
    if len(shape) == 3:
        names += (*more, "op_name")
        if shape[1] is not None:
            names += (*pmu, *(() if shape[2] else ("pipe_ratio",)))
    elif shape:
        names += ("op_name", *more, *(() if shape[1] else ("hccl_task_type",)))
    names += ("global_task_id", "source")
    return ArgTable(names) if len(set(names)) == len(names) else names


def wider_table(table: ArgTable, names: tuple[str, ...]):
    """The table of ``table``'s names and ``names`` after them (as ``args_table``: the names
    alone where one repeats)."""
    wider = table.names + names
    return ArgTable(wider) if len(set(wider)) == len(wider) else wider


def pipe_plan(pmu: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(metric, side, pipe) of the metrics of ``pmu`` that are pipe ratios
    (``msprof.tasks.pipe_ratios``), in its order: the same for every task with these
    metrics."""
    plan = []
    for k in pmu:
        got = pipe_ratios({k: 0.0})
        where = next(((side, pipe) for side, d in got.items() for pipe in d), None)
        if where is not None:
            plan.append((k, *where))
    return plan


class PipeRatios:
    """The pipe ratios (``msprof.tasks.pipe_ratios``) of a task's PMU figures of the
    metrics of a ``pipe_plan`` (``metrics``, in its order; their (side, pipe) in
    ``sides``): of a tuple of those figures (a ``Derived`` column's ``make``), or of a
    dict of them (``of``)."""

    __slots__ = ("metrics", "sides")

    def __init__(self, plan: list[tuple[str, str, str]]):
        self.metrics = tuple(k for k, _, _ in plan)
        self.sides = tuple((side, pipe) for _, side, pipe in plan)

    def __call__(self, values: tuple) -> dict:
        out: dict[str, dict[str, float]] = {}
        for v, (side, pipe) in zip(values, self.sides):
            if v.__class__ is float or v.__class__ is int:
                d = out.get(side)
                if d is None:
                    d = out[side] = {}
                d[pipe] = float(v)
        return out

    def texts(self, figures: list) -> list[str] | None:
        """The compact JSON text (``json.dumps``, separators ``(",", ":")``,
        ``ensure_ascii=False``) of the pipe ratios of each row of ``figures`` (one sequence
        per metric, in ``metrics``' order), all at once: the same text a row's dict
        (``__call__``) gives, where every figure is a finite float or an int and no two
        metrics are one pipe of one side; else None (each row is then made alone)."""
        if len(set(self.sides)) != len(self.sides) or not figures:
            return None
        reprs = []
        for values in figures:
            kinds = set(map(type, values))
            if not kinds <= _FIGURES:
                return None
            if int in kinds:
                values = list(map(float, values))
            if not np.isfinite(np.array(values, dtype=np.float64)).all():
                return None
            reprs.append(list(map(float.__repr__, values)))
        by_side: dict[str, list[int]] = {}
        for j, (side, _) in enumerate(self.sides):
            by_side.setdefault(side, []).append(j)
        parts, order = [], []
        for side, js in by_side.items():
            pipes = ",".join(_json_key(self.sides[j][1]) + "%s" for j in js)
            parts.append(f"{_json_key(side)}{{{pipes}}}")
            order.extend(js)
        template = "{" + ",".join(parts) + "}"
        return list(map(template.__mod__, zip(*map(reprs.__getitem__, order))))

    def of(self, pmu: dict[str, Any]) -> dict:
        return self(tuple(map(pmu.__getitem__, self.metrics)))

    def any_of(self, pmu: dict[str, Any]) -> bool:
        """Whether ``pmu`` has pipe ratios: a figure of the plan is a number."""
        for k in self.metrics:
            v = pmu[k]
            if v.__class__ is float or v.__class__ is int:
                return True
        return False


_FIGURES = frozenset({float, int})


def _json_key(key: str) -> str:
    """``"key":`` as compact JSON writes it, with any "%" doubled (a %-template's text)."""
    return (json.dumps(key, ensure_ascii=False) + ":").replace("%", "%%")


def pipe_column(table: ArgTable, ratios: PipeRatios) -> Derived:
    """The ``Derived`` column of ``table``'s "pipe_ratio": made from its figures of
    ``ratios``' metrics."""
    return Derived(ratios, tuple(table.index[k] for k in ratios.metrics))


def task_lane(layout: Layout, dev, stream) -> int:
    d = layout.device(dev if isinstance(dev, int) else None)
    g = layout.group(d, "Ascend Hardware", HW_ORDER,
                     _describe_process("Ascend Hardware", f"NPU {dev}"))
    name = f"Stream {stream}" if stream is not None else "No stream"
    return layout.lane(g, name, order=stream if isinstance(stream, int) else 1 << 20,
                       nesting=False, description=_describe_lane("Ascend Hardware", name))
