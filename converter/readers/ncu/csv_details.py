"""``ncu --csv --page details`` and ``ncu --csv --metrics …``: one row per metric (or rule
result), kernels repeated per row.

Two layouts share the page.  An export of a report with sections (``--page details``) names
sections by display name and metrics by display label (not unique across sections, so they
are keyed on both), ends metric rows with a trailing comma (16 fields instead of 20) and adds
rule rows that name the section by identifier; values carry 2 decimals of an auto-scaled unit.
``ncu --csv --metrics a,b,…`` (Nsight Compute 2023.1) has no rule columns: its section is
"Command line profiler metrics" and ``Metric Name`` is the metric's identifier
(``gpu__time_duration.sum``), read like a column of the raw page.  Both are told apart by
content, row by row: a label in ``DETAILS_LABELS`` or a metric identifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..base import ReadOptions
from . import csv_page
from .kernels import Kernel
from .csv_page import cell
from .metrics import (DETAILS_LABELS, DEVICE_NAME, KEY_METRICS, PM_INTERVAL, base_unit,
                      parse_cell, parse_ns, to_kind)

# A metric identifier as ncu prints it with --metrics (``unit__counter.rollup…``, optionally
# group-prefixed like ``TPC.TriageCompute.sm__cycles_active.avg``); display labels have none.
_METRIC_ID = re.compile(r"[A-Za-z0-9_.]*[A-Za-z0-9]__[A-Za-z0-9_.]+")
# metric identifier -> (preference among the names of its arg, arg, kind)
_BY_NAME = {name: (rank, arg, kind) for arg, names, kind in KEY_METRICS
            for rank, name in enumerate(names)}


@dataclass
class Details:
    """What the page gave beyond its kernels: for the run's note."""

    rules: bool                         # the rule columns are there
    # coarsest duration resolution in ns (a printed digit times the unit), and the unit and
    # decimals that gave it; None when no kernel has a duration
    resolution_ns: Fraction | None = None
    unit: str = ""
    places: int = 0

    def note(self) -> str:
        what = "Values come from a details-page CSV export"
        if not self.rules:
            what += (" without rule columns (ncu --csv --metrics: the requested metrics by "
                     "name, no rule results)")
        if self.resolution_ns is None:
            return f"{what}; PM-sampling timelines and NVTX ranges are not in this export."
        if self.places and base_unit(self.unit)[1] != 1:
            how = f"printed with {self.places} decimals of an auto-scaled unit"
        else:
            how = f"printed in {self.unit or 'ns'}"
        res = self.resolution_ns
        res_text = str(res.numerator) if res.denominator == 1 else f"{float(res):g}"
        approx = ", so the serialized timeline is approximate" if res > 1 else ""
        return (f"{what}, {how}: durations have {res_text} ns resolution{approx}; PM-sampling "
                "timelines and NVTX ranges are not in this export.")


def read_details(path: Path, rows: list[list[str]], options: ReadOptions,
                 units_out: dict[str, str], warnings: list[str], skipped: int = 0
                 ) -> tuple[list[Kernel], Details]:
    """``skipped``: lines before the header (ncu's log), for line numbers in messages."""
    header = rows[0]
    ident = csv_page.Identity(header)
    pos = {h: i for i, h in enumerate(header)}
    missing = [c for c in csv_page.DETAILS_COLUMNS if c not in pos]
    if missing:
        raise InputError(path, f"details-page CSV without the column(s) {', '.join(missing)}")
    c_section, c_label, c_unit, c_value = (pos[c] for c in csv_page.DETAILS_COLUMNS)
    has_rules = all(c in pos for c in csv_page.RULE_COLUMNS)
    c_rule = pos.get("Rule Name") if has_rules else None
    # the last cell each kind of row is read up to (metric rows end after "Rule Name")
    metric_need = max(ident.id, c_section, c_label, c_unit, c_value)
    rule_need = metric_need
    if has_rules:
        c_type, c_desc = pos["Rule Type"], pos["Rule Description"]
        c_stype, c_speed = pos["Estimated Speedup Type"], pos["Estimated Speedup"]
        rule_need = max(metric_need, c_type, c_desc, c_stype, c_speed)
    short = csv_page.ShortRows(len(header), ident.id)
    kernels: dict[int, Kernel] = {}
    # kernel -> {metric identifier: (text, unit)}: resolved after the page is read, in the
    # preference order of KEY_METRICS (as the raw page picks among its columns)
    named: dict[int, dict[str, tuple[str, str]]] = {}
    durations: dict[int, tuple[str, str]] = {}          # kernel -> (text, unit) of duration
    total = len(rows) - 1
    stage = f"reading {path.name}"
    for n, row in enumerate(rows[1:]):
        if not any(c.strip() for c in row):
            continue
        line = n + 2 + skipped
        rule = cell(row, c_rule).strip()         # metric rows may end before it
        row = short.fit(row, rule_need if rule else metric_need, line)
        if row is None:
            continue
        index = csv_page.int_cell(row[ident.id])
        if index is None:
            raise InputError(path, f"line {line}: ID {row[ident.id]!r} is not a kernel "
                             "number")
        k = kernels.get(index)
        if k is None:
            k = kernels[index] = ident.kernel(row, path, line)
            if options.all_metrics:
                k.metrics = {}
        if rule:
            speed = parse_cell(row[c_speed])
            k.rules.append({
                "rule": rule,
                "section": row[c_section],
                "type": row[c_type],
                "message": row[c_desc],
                "estimated_speedup_pct": float(speed) if isinstance(speed, (int, float))
                else None,
                "speedup_type": row[c_stype] or None,
            })
            continue
        section, label, unit, text = row[c_section], row[c_label], row[c_unit], row[c_value]
        base, factor = base_unit(unit)
        is_name = _METRIC_ID.fullmatch(label) is not None
        target = DETAILS_LABELS.get((section, label))
        if target is not None:
            arg, kind = target
            v = parse_ns(text, factor) if kind == "ns" else to_kind(parse_cell(text, factor),
                                                                     kind)
            if v is not None:
                if arg == "pm_sampling_interval_ns":
                    k.pm_interval_ns = v
                elif arg not in k.args:
                    k.args[arg] = v
                    if arg == "duration_ns":
                        durations[index] = (text, unit)
        elif is_name:
            named.setdefault(index, {}).setdefault(label, (text, unit))
        if k.metrics is not None:
            v = parse_cell(text, factor)
            if v is not None:
                key = label if is_name else f"{section}: {label}"
                k.metrics[key] = v
                units_out.setdefault(key, base)
        if n % 1024 == 0:
            options.report(stage, n, total)
    options.report(stage, total, total)
    for index, cells in named.items():
        _resolve(kernels[index], cells, durations)
    if warning := short.warning(path):
        warnings.append(warning)
    return sorted(kernels.values(), key=lambda k: k.index), _details(has_rules, durations)


def _resolve(k: Kernel, cells: dict[str, tuple[str, str]],
             durations: dict[int, tuple[str, str]]) -> None:
    """A kernel's rows named by metric identifier -> its key args, the best-preferred name of
    each arg first; an arg a display label already gave keeps that value."""
    best: dict[str, tuple[int, Any, str, str]] = {}
    for name, (text, unit) in cells.items():
        if name == DEVICE_NAME:
            dev = parse_cell(text)
            k.device_name = dev if isinstance(dev, str) else ""
            continue
        factor = base_unit(unit)[1]
        if name == PM_INTERVAL:
            k.pm_interval_ns = parse_ns(text, factor)
            continue
        hit = _BY_NAME.get(name)
        if hit is None:
            continue
        rank, arg, kind = hit
        v = parse_ns(text, factor) if kind == "ns" else to_kind(parse_cell(text, factor), kind)
        if v is not None and (arg not in best or rank < best[arg][0]):
            best[arg] = (rank, v, text, unit)
    for arg, (_, v, text, unit) in best.items():
        if arg not in k.args:
            k.args[arg] = v
            if arg == "duration_ns":
                durations[k.index] = (text, unit)


def _details(has_rules: bool, durations: dict[int, tuple[str, str]]) -> Details:
    out = Details(has_rules)
    for text, unit in durations.values():
        t = text.strip().replace(",", "")
        places = len(t.split(".", 1)[1]) if "." in t else 0
        res = Fraction(1, 10 ** places) * base_unit(unit)[1]
        if out.resolution_ns is None or res > out.resolution_ns:
            out.resolution_ns, out.unit, out.places = res, unit.strip(), places
    return out
