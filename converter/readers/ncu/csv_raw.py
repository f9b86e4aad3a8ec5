"""``ncu --csv --page raw``: a header row, a units row, then one row per kernel.

Values are converted by the unit of their column (row 2) into the report's base units, so the
same report read both ways gives equal args (up to the CSV's printed precision).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..base import ReadOptions
from . import csv_page
from .kernels import Kernel
from .metrics import (DEVICE_NAME, KEY_METRICS, PM_INTERVAL, base_unit, parse_cell, parse_ns,
                      to_kind)
from .nvtx import parse_push_pop, parse_start_end


def read_raw(path: Path, rows: list[list[str]], options: ReadOptions,
             units_out: dict[str, str], warnings: list[str], skipped: int = 0
             ) -> list[Kernel]:
    """``skipped``: lines before the header (ncu's log), for line numbers in messages."""
    header = rows[0]
    ident = csv_page.Identity(header)
    short = csv_page.ShortRows(len(header), ident.id)
    last = len(header) - 1
    # (line, row) of every non-blank row after the header
    body = [(n + 1 + skipped, row) for n, row in enumerate(rows)
            if n and any(c.strip() for c in row)]
    units = [""] * len(header)
    if body and not csv_page.cell(body[0][1], ident.id).strip():   # the units row: no ID
        line, row = body.pop(0)
        if len(row) <= last:
            short.note(line, len(row))
        units = row[:len(header)] + [""] * (len(header) - len(row))
    elif body:
        warnings.append(f"{path}: no units row (a second row with an empty ID cell): values "
                        "are read as if printed in base units (--print-units base)")
    factors: list[tuple[str, Fraction]] = [base_unit(u) for u in units]
    col = {h: i for i, h in enumerate(header)}
    picks = []
    for arg, names, kind in KEY_METRICS:
        cols = [col[n] for n in names if n in col]
        if cols:
            picks.append((arg, cols, kind))
    name_col = col.get(DEVICE_NAME)
    pm_col = col.get(PM_INTERVAL)
    metric_cols = [i for i in range(ident.last + 1, len(header))]
    if options.all_metrics:
        for i in metric_cols:
            units_out.setdefault(header[i], factors[i][0])
    kernels: list[Kernel] = []
    total = len(body)
    stage = f"reading {path.name}"
    for n, (line, row) in enumerate(body):
        row = short.fit(row, last, line)
        if row is None:
            continue
        k = ident.kernel(row, path, line)
        args = k.args
        for arg, cols, kind in picks:
            for i in cols:
                text = row[i]
                if kind == "ns":
                    v = parse_ns(text, factors[i][1])
                else:
                    v = to_kind(parse_cell(text, factors[i][1]), kind)
                if v is not None:
                    args[arg] = v
                    break
        if name_col is not None:
            dev = parse_cell(row[name_col])
            k.device_name = dev if isinstance(dev, str) else ""
        if pm_col is not None:
            k.pm_interval_ns = parse_ns(row[pm_col], factors[pm_col][1])
        if ident.push_pop is not None:
            k.nvtx_thread, k.nvtx = parse_push_pop(row[ident.push_pop])
        if ident.start_end is not None and row[ident.start_end].strip():
            parse_start_end(row[ident.start_end], k.nvtx)
        if options.all_metrics:
            metrics = {}
            for i in metric_cols:
                v = parse_cell(row[i], factors[i][1])
                if v is not None:
                    metrics[header[i]] = v
            k.metrics = metrics
        kernels.append(k)
        if n % 256 == 0:
            options.report(stage, n, total)
    options.report(stage, total, total)
    if warning := short.warning(path):
        warnings.append(warning)
    return kernels
