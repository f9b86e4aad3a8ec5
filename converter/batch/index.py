"""The batch index: ``index.json`` for scripts and a self-contained ``index.html`` table, both
at the top of OUT_DIR, with output links relative to it.

index.json::

    {"tracecvt_batch_index": 2,            # schema version (1: outputs keyed by target)
     "tracecvt_version": "0.1.0", "generated_utc": "2026-11-21T06:30:00Z",
     "archive": "/abs/ARCHIVE_DIR", "out_dir": "/abs/OUT_DIR",
     "engine": "local" | "dask", "targets": ["perfetto", ...],
     "runs_total": 3, "runs_converted": 1, "runs_skipped": 1, "runs_failed": 1,
     "runs": [ROW, ...]}                   # sorted by source

ROW (every key always present; null when unknown)::

    run              str    output name of the run (folder or file name)
    source           str    run root relative to ARCHIVE_DIR, POSIX ("." = ARCHIVE_DIR itself)
    format, variant  str    reader format ("pypto") and flavour ("merged", "raw", ...)
    status           str    "converted" | "skipped" (up to date) | "failed" | "not run"
    outputs          [{"target": str, "path": relative to OUT_DIR, POSIX}], in --to order
    tasks            int    tasks (slices for formats without a task notion)
    makespan_ns      int    first task start .. last task end
    utilization_pct  float  from tracecvt.analyses
    bubble_rate_pct  float  from tracecvt.analyses
    bottleneck       str    from tracecvt.analyses
    figures_note     str    why some figures are null
    warnings         [str]  what the reader could not convert, one line each
    error            str    the one-line error of a failed run
    seconds          float  wall time of the job (0 for skipped runs)
"""

from __future__ import annotations

import html
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ..fileio import atomic_output

SCHEMA = 2
# Versions whose rows a resumed batch reads the figures of (unchanged since version 1; version
# 2 made ``outputs`` a list, as target names such as "summary-json" are no identifiers).
READABLE = (1, 2)
ROW_KEYS = ("run", "source", "format", "variant", "status", "outputs", "tasks", "makespan_ns",
            "utilization_pct", "bubble_rate_pct", "bottleneck", "figures_note", "warnings",
            "error", "seconds")
TIMING_KEYS = ("seconds",)
FIGURES = ("tasks", "makespan_ns", "utilization_pct", "bubble_rate_pct", "bottleneck",
           "figures_note", "warnings")


def relative_outputs(outputs: dict[str, str], out_dir: Path) -> dict[str, str]:
    return {t: Path(os.path.relpath(p, out_dir)).as_posix() for t, p in outputs.items()}


def normalise(row: dict[str, Any]) -> dict[str, Any]:
    """The row with exactly ``ROW_KEYS``, in that order, its outputs (target -> path while
    the batch runs) a list of {target, path}."""
    out = {k: row.get(k) for k in ROW_KEYS}
    outputs = out["outputs"] or {}
    out["outputs"] = [{"target": t, "path": p} for t, p in outputs.items()] \
        if isinstance(outputs, dict) else list(outputs)
    return out


def load_previous(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Rows of an earlier index.json by source, to keep the figures of skipped runs; an
    index of a version this tracecvt does not know gives none (the figures are recomputed
    with --force, and the row says so)."""
    try:
        doc = orjson.loads((out_dir / "index.json").read_bytes())
        if doc.get("tracecvt_batch_index") not in READABLE:
            return {}
        return {r["source"]: r for r in doc.get("runs", []) if isinstance(r, dict)
                and isinstance(r.get("source"), str)}
    except (OSError, orjson.JSONDecodeError, AttributeError, TypeError):
        return {}


def document(rows: list[dict[str, Any]], *, archive: Path, out_dir: Path, engine: str,
             targets: list[str], version: str) -> dict[str, Any]:
    rows = sorted((normalise(r) for r in rows), key=lambda r: r["source"])
    count = lambda s: sum(1 for r in rows if r["status"] == s)  # noqa: E731
    return {
        "tracecvt_batch_index": SCHEMA,
        "tracecvt_version": version,
        "generated_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "archive": os.path.abspath(archive),
        "out_dir": os.path.abspath(out_dir),
        "engine": engine,
        "targets": list(targets),
        "runs_total": len(rows),
        "runs_converted": count("converted"),
        "runs_skipped": count("skipped"),
        "runs_failed": count("failed"),
        "runs": rows,
    }


def write_index(doc: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write index.json and index.html into ``out_dir`` (atomically); returns their paths."""
    j, h = out_dir / "index.json", out_dir / "index.html"
    with atomic_output(j) as f:
        f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    with atomic_output(h) as f:
        f.write(render_html(doc).encode("utf-8"))
    return j, h


# -- HTML ------------------------------------------------------------------------------
def _duration(ns: int | None) -> str:
    if ns is None:
        return ""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns} ns"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:.1f} %"


def _link(path: str) -> str:
    return "/".join(quote(part) for part in path.split("/"))


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em;margin:0 0 .2em} p.meta{color:#666;margin:.2em 0 1em}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4;position:sticky;top:0} td.num{text-align:right;white-space:nowrap}
tr.failed td{background:#fff0f0} tr.skipped td{color:#555}
.status{font-weight:600} tr.failed .status{color:#b00} tr.converted .status{color:#070}
.err{color:#b00;font-family:monospace;font-size:12px} .note{color:#777;font-size:12px}
td.notes{max-width:36em;overflow-wrap:anywhere} td.src{overflow-wrap:anywhere}
code{font-size:12px}
"""


def render_html(doc: dict[str, Any]) -> str:
    e = html.escape
    rows = []
    for r in doc["runs"]:
        links = " ".join(f'<a href="{e(_link(p))}">{e(t)}</a>'
                         for t, p in ((o["target"], o["path"])
                                      for o in r.get("outputs") or []))
        notes = []
        if r.get("error"):
            notes.append(f'<div class="err">{e(r["error"])}</div>')
        if r.get("status") == "skipped":
            notes.append('<div class="note">up to date; --force to redo</div>')
        if r.get("warnings"):
            notes.append(f'<div class="note">{len(r["warnings"])} warning(s): '
                         f'{e(r["warnings"][0])}{" …" if len(r["warnings"]) > 1 else ""}</div>')
        if r.get("figures_note"):
            notes.append(f'<div class="note">{e(r["figures_note"])}</div>')
        fmt = r["format"] + (f"/{r['variant']}" if r.get("variant") else "")
        name = "" if r["source"].rsplit("/", 1)[-1].startswith(r["run"]) \
            else f'<br>{e(r["run"])}'
        rows.append(
            f'<tr class="{e(r["status"])}"><td class="src"><code>{e(r["source"])}</code>{name}'
            f'</td><td>{e(fmt)}</td><td class="status">{e(r["status"])}</td>'
            f'<td class="num">{"" if r["tasks"] is None else r["tasks"]}</td>'
            f'<td class="num">{_duration(r["makespan_ns"])}</td>'
            f'<td class="num">{_pct(r["utilization_pct"])}</td>'
            f'<td class="num">{_pct(r["bubble_rate_pct"])}</td>'
            f'<td class="notes">{e(r["bottleneck"] or "")}</td><td>{links}</td>'
            f'<td class="notes">{"".join(notes)}</td></tr>')
    title = f"tracecvt batch: {doc['archive']}"
    meta = (f"{doc['runs_total']} runs: {doc['runs_converted']} converted, "
            f"{doc['runs_skipped']} skipped (up to date), {doc['runs_failed']} failed "
            f"&middot; outputs: {e(', '.join(doc['targets']))} &middot; engine {e(doc['engine'])}"
            f" &middot; {e(doc['generated_utc'])} &middot; tracecvt {e(doc['tracecvt_version'])}")
    head = ("<tr><th>run</th><th>format</th><th>status</th><th>tasks</th><th>makespan</th>"
            "<th>utilization</th><th>bubble rate</th><th>bottleneck</th><th>outputs</th>"
            "<th>notes</th></tr>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{e(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{e(title)}</h1><p class=\"meta\">{meta}</p>\n"
            f"<table><thead>{head}</thead><tbody>\n" + "\n".join(rows)
            + "\n</tbody></table>\n</body></html>\n")
