"""An opportunity of the summary: what to change, the figure that shows it, its estimated
gain and where in the trace (``findings``, ``ncu_findings``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bubbles import us
from .places import Place


@dataclass
class Opportunity:
    title: str
    metric: str                   # the figure that triggers it, with its value
    gain_ns: float | None         # estimated gain on the run, None when it cannot be said
    how: str                      # how the gain was estimated
    source: str                   # which analysis raised it
    bottleneck: str | None = None  # its label in actions.LABELS
    actions: list[dict[str, str]] = field(default_factory=list)   # knobs and pages to use
    place: Place | None = None    # where in the trace (places.at_dict makes ``at``)
    at: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "metric": self.metric,
                "estimated_gain_us": us(self.gain_ns) if self.gain_ns is not None else None,
                "estimate": self.how, "source": self.source, "bottleneck": self.bottleneck,
                "actions": self.actions, "at": self.at}


def percent(v: float | None, unit: str = " %", digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}{unit}"


def us_text(ns: float) -> str:
    v = ns / 1000
    return f"{v:,.3f} µs" if v < 100 else f"{v:,.1f} µs"
