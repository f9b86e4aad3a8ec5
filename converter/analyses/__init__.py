"""Analyses: computed once from the model, shared by the derived tracks and every summary.

``analyze(trace)`` returns an ``Analysis`` (every analysis: what the summaries are made
from, in ``full.py``, imported when first asked for); ``analyze_tracks(trace)`` only what
the derived tracks need, and ``add_derived(trace, analysis)`` puts the bubble lanes,
counters and the critical path into the trace.  A conversion imports no more than that.
Definitions of every figure: docs/analyses.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model import Trace
from .bubbles import Bubbles, compute_bubbles
from .critical_path import CriticalPath, compute_critical_path
from .timeline import Timeline

if TYPE_CHECKING:
    from .full import Analysis

__all__ = ["Analysis", "TrackAnalysis", "analyze", "analyze_tracks", "add_derived", "SCHEMA"]


@dataclass
class TrackAnalysis:
    """What the derived tracks are made from (``add_derived``): a trace written without a
    summary needs no more than this."""

    timeline: Timeline
    bubbles: Bubbles
    critical_path: CriticalPath
    # simpler runs: scheduler-loop idle gaps per AICPU thread lane (analyses/simpler/loop.py)
    loop_idle: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def analyze_tracks(trace: Trace) -> TrackAnalysis:
    """The timeline, bubbles and critical path of ``trace``."""
    tl = Timeline.build(trace)
    bubbles = compute_bubbles(trace, tl)
    out = TrackAnalysis(tl, bubbles, compute_critical_path(trace, tl, bubbles))
    if "simpler" in trace.meta.extra:
        from .simpler.loop import loop_idle
        out.loop_idle = loop_idle(trace)
    return out


def add_derived(trace: Trace, analysis: TrackAnalysis | None = None) -> dict[str, int]:
    """Put the bubble lanes, counters and critical path of ``analysis`` (an ``Analysis``
    is one too) into ``trace``
    (docs/analyses.md); a trace that has them already (``derived.has_derived_tracks``) is
    left alone.
    Without ``analysis``, ``analyze_tracks(trace)`` is computed, and only when the tracks
    are added."""
    from .derived import add_derived_tracks, has_derived_tracks
    if has_derived_tracks(trace):
        return {}
    return add_derived_tracks(trace, analysis if analysis is not None else analyze_tracks(trace))


def __getattr__(name: str) -> Any:
    # analyze, Analysis and SCHEMA: the summary's analyses, loaded when first asked for
    if name in ("analyze", "Analysis", "SCHEMA"):
        from . import full
        return getattr(full, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
