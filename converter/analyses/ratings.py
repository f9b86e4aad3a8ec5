"""Five-level ratings in the style PyPTO users know, each with the figure behind it.

| rating | figure | excellent | good | fair | poor | critical |
|---|---|---|---|---|---|---|
| lane utilization | busy / (lanes used x makespan) | > 98 % | > 95 % | > 90 % | > 80 % | else |
| bubble rate | total wait / Σ lane spans | < 2 % | < 5 % | < 10 % | < 20 % | else |
| memory efficiency | achieved / peak memory throughput | > 70 % | > 50 % | > 30 % | > 20 % | else |
| control-overhead share | control time / the time it is a share of | < 30 % | < 50 % | < 70 % | < 80 % | else |

A figure that cannot be computed from the data gets no level, only the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEVELS = ("excellent", "good", "fair", "poor", "critical")

SPECS = {
    "lane_utilization": ("lane utilization", ">", (98.0, 95.0, 90.0, 80.0)),
    "bubble_rate": ("bubble rate", "<", (2.0, 5.0, 10.0, 20.0)),
    "memory_efficiency": ("memory efficiency", ">", (70.0, 50.0, 30.0, 20.0)),
    "control_overhead": ("control-overhead share", "<", (30.0, 50.0, 70.0, 80.0)),
}


@dataclass
class Rating:
    key: str
    title: str
    value_pct: float | None
    figure: str                   # what the value is, in words
    level: str | None
    reason: str | None = None     # why there is no value

    @property
    def score(self) -> int | None:
        """5 = excellent ... 1 = critical."""
        return None if self.level is None else 5 - LEVELS.index(self.level)

    @property
    def thresholds(self) -> str:
        _, op, limits = SPECS[self.key]
        return " / ".join(f"{op} {v:g} %" for v in limits)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "value_pct": self.value_pct,
                "figure": self.figure, "level": self.level, "score": self.score,
                "thresholds": self.thresholds, "reason": self.reason}


def level(key: str, value: float) -> str:
    _, op, limits = SPECS[key]
    for name, limit in zip(LEVELS, limits):
        if (value > limit) if op == ">" else (value < limit):
            return name
    return LEVELS[-1]


def rate(key: str, value: float | None, figure: str, reason: str | None = None) -> Rating:
    title = SPECS[key][0]
    if value is None:
        return Rating(key, title, None, figure, None, reason or "not computable")
    return Rating(key, title, round(value, 3), figure, level(key, value))
