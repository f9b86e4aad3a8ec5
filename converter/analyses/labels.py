"""Time by label: count, total, mean, max and share of slice time per label the reader
declared (``meta.extra["label_args"]``, e.g. PyPTO's semantic label and leaf function) or
kernel name.

Slices are first grouped by their shared args dict (PyPTO: one per CALL, shared by all its
tasks), so the per-slice work is one dictionary lookup; labels are then read once per group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import INVENTED_TIMES, KERNEL, LABEL_ARGS, MARKER, SEMANTIC_LABEL, Trace
from .bubbles import pct, us
from .timeline import source_lanes

MAX_ROWS = 200                    # per table; the rest is summed into one "(other)" row

_OWN_TABLES = ("kernel", "name")  # table keys of this module: a declaration cannot take them
_MARKER_LABEL = f"({MARKER})"     # an unlabelled marker task
_NO_LABEL = ("(none)", _MARKER_LABEL)


def label_args(trace: Trace) -> list[tuple[str, str]]:
    """(table key, arg name) of each label the reader declared (model.LABEL_ARGS), in order;
    entries that are not two non-empty strings (a damaged model file) are ignored."""
    declared = trace.meta.extra.get(LABEL_ARGS)
    if type(declared) is not dict:
        return []
    return [(k, a) for k, a in declared.items()
            if type(k) is str and type(a) is str and k and a and k not in _OWN_TABLES]


def semantic_label_arg(trace: Trace) -> str | None:
    """The arg holding a slice's semantic label, if the reader declared one."""
    return dict(label_args(trace)).get(SEMANTIC_LABEL)


@dataclass
class LabelRow:
    label: str
    count: int = 0
    total: int = 0
    max: int = 0
    critical: int = 0             # time on the critical path
    example: str = ""             # one slice name with this label

    def to_dict(self, grand_total: int) -> dict[str, Any]:
        return {"label": self.label, "count": self.count, "total_us": us(self.total),
                "mean_us": us(self.total / self.count) if self.count else None,
                "max_us": us(self.max), "share_pct": pct(self.total, grand_total),
                "critical_path_us": us(self.critical), "example": self.example}


@dataclass
class LabelTable:
    key: str
    title: str
    rows: list[LabelRow] = field(default_factory=list)
    total: int = 0
    truncated: int = 0            # rows folded into "(other)"

    @property
    def labelled(self) -> bool:
        return any(r.label not in _NO_LABEL for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "total_us": us(self.total),
                "rows_folded": self.truncated,
                "rows": [r.to_dict(self.total) for r in self.rows]}


class _Group:
    """Slices with the same shared args dict (and category, and own label args)."""

    __slots__ = ("args", "cat", "name", "count", "total", "max", "critical")

    def __init__(self, args: dict, cat: str, name: str):
        self.args = args
        self.cat = cat
        self.name = name
        self.count = 0
        self.total = 0
        self.max = 0
        self.critical = 0


def slice_groups(trace: Trace, critical: set[int]) -> list[_Group]:
    """One pass over the slices of source lanes (fake ones out)."""
    ok = source_lanes(trace)
    groups: dict[Any, _Group] = {}
    keys = {a for _, a in label_args(trace)}
    for i, s in enumerate(trace.slices):
        if not ok[s.track] or s.cat == INVENTED_TIMES:
            continue
        sh = s.shared_args
        own = s.args
        cat = s.cat
        labels = tuple((k, own[k]) for k in keys if k in own) \
            if own and not keys.isdisjoint(own) else None
        key = (id(sh) if sh is not None else None, cat, labels,
               s.name if sh is None or cat == KERNEL else None)
        g = groups.get(key)
        if g is None:
            args = sh if sh is not None else {}
            if labels:
                args = {**args, **dict(labels)}
            g = groups[key] = _Group(args, s.cat, s.name)
        d = s.dur
        g.count += 1
        g.total += d
        if d > g.max:
            g.max = d
        if critical and i in critical:
            g.critical += d
    return list(groups.values())


def time_by_label(trace: Trace, critical: set[int] | None = None,
                  groups: list[_Group] | None = None) -> list[LabelTable]:
    """Tables for the labels this trace has: those its reader declared (PyPTO: semantic
    labels and leaf functions), kernel names (Nsight Compute, msprof), else slice names when
    they repeat."""
    if groups is None:
        groups = slice_groups(trace, critical or set())
    tables: list[LabelTable] = []
    for key, arg in label_args(trace):
        if not any(arg in g.args for g in groups):
            continue
        table = _table(key, key.replace("_", " "), groups,
                       lambda g, a=arg: _label(g.args.get(a), g.cat))
        if table.labelled:
            tables.append(table)
    kernels = [g for g in groups if g.cat == KERNEL]
    if kernels:
        # (names that never repeat label nothing another table does not: simpler names each
        # task "QK(r2t5)", and its "function" table is the one by kernel)
        # (counted on the names: a table shows MAX_ROWS of them at most)
        if not tables or _repeat(kernels):
            tables.append(_table("kernel", "kernel", kernels, lambda g: g.name))
    elif not tables and groups:
        named = [g for g in groups if not g.args]     # slices without shared args
        if named and _repeat(named):
            tables.append(_table("name", "name", named, lambda g: g.name))
    return tables


def _repeat(groups: list[_Group]) -> bool:
    """Whether some name is on more than one slice of ``groups``."""
    return len({g.name for g in groups}) < sum(g.count for g in groups)


def _label(value: Any, cat: str) -> str:
    if value is None or value == "":
        return _MARKER_LABEL if cat == MARKER else "(none)"
    return str(value)


def _table(key: str, title: str, groups: list[_Group], label_of) -> LabelTable:
    rows: dict[str, LabelRow] = {}
    total = 0
    for g in groups:
        label = label_of(g)
        row = rows.get(label)
        if row is None:
            row = rows[label] = LabelRow(label, example=g.name)
        row.count += g.count
        row.total += g.total
        if g.max > row.max:
            row.max = g.max
        row.critical += g.critical
        total += g.total
    ordered = sorted(rows.values(), key=lambda r: (-r.total, r.label))
    table = LabelTable(key, title, ordered, total)
    if len(ordered) > MAX_ROWS:
        rest = ordered[MAX_ROWS - 1:]
        other = LabelRow("(other)", sum(r.count for r in rest), sum(r.total for r in rest),
                         max(r.max for r in rest), sum(r.critical for r in rest))
        table.rows = ordered[:MAX_ROWS - 1] + [other]
        table.truncated = len(rest)
    return table
