"""Summaries of a run made from one ``Analysis``: Markdown, JSON and self-contained HTML.

Every format renders the same dict (``Analysis.to_dict()``, plus the vs-baseline rows when a
baseline is given); HTML adds pictures drawn from the analysis' lanes.
"""

from __future__ import annotations

from typing import Any

from .. import __version__
from ..model import Trace

SUFFIXES = {"md": ".summary.md", "json": ".summary.json", "html": ".summary.html"}
SUFFIX = SUFFIXES["md"]           # what write_summary writes by default
SCHEMA = "tracecvt-summary/3"      # docs/summary.schema.json


def summary_data(trace: Trace, analysis, baseline: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The dict every format renders: the analysis, and the comparison with ``baseline``
    (another run's summary data, of this schema or the previous one) when given."""
    from .baseline import read_summary
    from .compare import compare_rows
    body = analysis.to_dict()
    data = {"schema": SCHEMA, "tracecvt_version": __version__,
            **{k: v for k, v in body.items() if k != "schema"}}
    if baseline is not None:
        baseline = read_summary(baseline)
        data["baseline"] = {"run": baseline.get("run"),
                            "configuration": baseline.get("configuration")}
        data["vs_baseline"] = compare_rows(baseline, data)
    return data


def render(fmt: str, data: dict[str, Any], trace: Trace | None = None, analysis=None) -> bytes:
    """``data`` as ``fmt`` ("md", "json" or "html"); HTML pictures need trace and analysis."""
    if fmt == "md":
        from .markdown import render_markdown
        return render_markdown(data).encode("utf-8")
    if fmt == "json":
        from .json_out import render_json
        return render_json(data)
    if fmt == "html":
        from .html import render_html
        return render_html(data, trace, analysis).encode("utf-8")
    raise ValueError(f"unknown summary format {fmt!r}")


def write_summary(trace: Trace, out, fmt: str = "md", baseline: dict[str, Any] | None = None
                  ) -> dict[str, int]:
    """Analyse ``trace`` and write its summary as ``fmt`` to the binary stream ``out``
    (the entry point for batch jobs).  Returns {"bytes": n}."""
    from ..analyses import analyze
    analysis = analyze(trace)
    data = render(fmt, summary_data(trace, analysis, baseline), trace, analysis)
    out.write(data)
    return {"bytes": len(data)}
