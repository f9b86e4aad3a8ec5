"""Two runs side by side: the key figures of a baseline (previous) and a current run.

``compare_rows`` works on summary dicts, so a baseline can come from a run read now or from a
JSON summary written earlier.
"""

from __future__ import annotations

from typing import Any

from .. import __version__
from ..analyses.key_figures import rows as key_figure_rows
from .baseline import read_summary

SCHEMA = "tracecvt-compare/3"      # docs/summary.schema.json: its heads carry key_figures


def _change(prev: float, cur: float) -> tuple[float, float | None]:
    diff = cur - prev
    rel = None if prev == 0 else 100.0 * diff / abs(prev)
    return diff, rel


def compare_rows(base: dict[str, Any], cur: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per key figure present in either run: previous, current, change (absolute
    and %), and whether the change is an improvement (None when neither or no change)."""
    a = {r[0]: r for r in key_figure_rows(base.get("key_figures") or {})}
    b = {r[0]: r for r in key_figure_rows(cur.get("key_figures") or {})}
    rows = []
    for name in list(b) + [n for n in a if n not in b]:
        fa, fb = a.get(name), b.get(name)
        _, _, unit, better = fb or fa
        prev = fa[1] if fa else None
        now = fb[1] if fb else None
        row: dict[str, Any] = {"figure": name, "unit": unit, "previous": prev,
                               "current": now, "change": None, "change_pct": None,
                               "improved": None}
        if isinstance(prev, (int, float)) and isinstance(now, (int, float)):
            diff, rel = _change(prev, now)
            row["change"] = round(diff, 3)
            row["change_pct"] = None if rel is None else round(rel, 2)
            if diff and better in ("lower", "higher"):
                row["improved"] = (diff < 0) == (better == "lower")
        rows.append(row)
    return rows


def comparison_data(base: dict[str, Any], cur: dict[str, Any]) -> dict[str, Any]:
    """What ``tracecvt compare`` renders: both runs' headline facts and the figure rows
    (either run may be a JSON summary of the previous schema: ``baseline.read_summary``)."""
    base, cur = read_summary(base), read_summary(cur)

    def head(d):
        return {"run": d.get("run"), "configuration": d.get("configuration"),
                "bottleneck": d.get("bottleneck"),
                "ratings": d.get("ratings"), "kinds": (d.get("bubbles") or {}).get("kinds"),
                # the summary's agent-facing parts, as they are there
                "bottlenecks": d.get("bottlenecks") or [],
                "opportunities": d.get("opportunities") or [],
                "key_figures": d.get("key_figures") or {}}
    return {"schema": SCHEMA, "tracecvt_version": __version__,
            "baseline": head(base), "current": head(cur), "rows": compare_rows(base, cur),
            "labels": _label_rows(base, cur)}


def _label_rows(base: dict[str, Any], cur: dict[str, Any]) -> list[dict[str, Any]]:
    """Time per label in both runs, for the first label table they share."""
    ta = {t["key"]: t for t in base.get("time_by_label") or []}
    for t in cur.get("time_by_label") or []:
        other = ta.get(t["key"])
        if other is None:
            continue
        prev = {r["label"]: r for r in other["rows"]}
        rows = []
        seen = set()
        for r in t["rows"]:
            p = prev.get(r["label"])
            rows.append(_label_row(t["title"], r["label"], p, r))
            seen.add(r["label"])
        for label, p in prev.items():
            if label not in seen:
                rows.append(_label_row(t["title"], label, p, None))
        return rows[:40]
    return []


def _label_row(title, label, p, r) -> dict[str, Any]:
    prev = p["total_us"] if p else None
    now = r["total_us"] if r else None
    diff = round(now - prev, 3) if prev is not None and now is not None else None
    return {"table": title, "label": label, "previous_total_us": prev,
            "current_total_us": now, "change_us": diff,
            "previous_count": p["count"] if p else None,
            "current_count": r["count"] if r else None}
