"""``ncu --csv --page details``: one row per metric or rule result, kernels repeated per row.

Metric rows name sections by display name and metrics by display label (not unique across
sections, so they are keyed on both) and end with a trailing comma (16 fields instead of 20);
rule rows name the section by identifier.  Values carry 2 decimals of an auto-scaled unit.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ..base import ReadOptions
from . import csv_page
from .kernels import Kernel
from .csv_page import cell
from .metrics import DETAILS_LABELS, base_unit, parse_cell, parse_ns, to_kind


def read_details(path: Path, rows: list[list[str]], options: ReadOptions,
                 units_out: dict[str, str], warnings: list[str]) -> list[Kernel]:
    header = rows[0]
    ident = csv_page.Identity(header)
    pos = {h: i for i, h in enumerate(header)}
    missing = [c for c in csv_page.DETAILS_COLUMNS if c not in pos]
    if missing:
        raise InputError(path, f"details-page CSV without the column(s) {', '.join(missing)}")
    c_section, c_label, c_unit, c_value = (pos["Section Name"], pos["Metric Name"],
                                           pos["Metric Unit"], pos["Metric Value"])
    c_rule, c_type, c_desc = pos["Rule Name"], pos["Rule Type"], pos["Rule Description"]
    c_stype, c_speed = pos["Estimated Speedup Type"], pos["Estimated Speedup"]
    # the last cell each kind of row is read up to (metric rows end after "Rule Name")
    metric_need = max(ident.id, c_section, c_label, c_unit, c_value)
    rule_need = max(metric_need, c_type, c_desc, c_stype, c_speed)
    short = csv_page.ShortRows(len(header), ident.id)
    kernels: dict[int, Kernel] = {}
    total = len(rows) - 1
    stage = f"reading {path.name}"
    for n, row in enumerate(rows[1:]):
        if not any(c.strip() for c in row):
            continue
        line = n + 2
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
        target = DETAILS_LABELS.get((section, label))
        if target is not None:
            arg, kind = target
            v = parse_ns(text, factor) if kind == "ns" else to_kind(parse_cell(text, factor),
                                                                     kind)
            if v is not None:
                if arg == "pm_sampling_interval_ns":
                    k.pm_interval_ns = v
                else:
                    k.args.setdefault(arg, v)
        if k.metrics is not None:
            v = parse_cell(text, factor)
            if v is not None:
                key = f"{section}: {label}"
                k.metrics[key] = v
                units_out.setdefault(key, base)
        if n % 1024 == 0:
            options.report(stage, n, total)
    options.report(stage, total, total)
    if warning := short.warning(path):
        warnings.append(warning)
    return sorted(kernels.values(), key=lambda k: k.index)
