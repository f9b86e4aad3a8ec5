"""msprof op (single-operator tuning): the pipe that bounds each block, the roofline verdict
and advice from ``visualize_data.bin``, and block counts that do not fill the cores.

Input: ``trace.meta.extra["msprof_op"]`` as the msprof reader fills it (see docs/analyses.md):
``{"blocks": [{"block", "duration_us", "pipes": {pipe: ratio 0..1}, "pipe_time_us": {...}}],
"block_dim", "core_count", "op_name", "roofline": [{"name", "bound", ...}], "advice": [str]}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PIPES = ("cube", "vector", "scalar", "mte1", "mte2", "mte3", "fixpipe")


def _num(v: Any) -> float | None:
    """A finite number, or None (NaN and infinities from damaged files are no value)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        f = float(v)
    except (ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


@dataclass
class MsprofOpResult:
    op_name: str
    blocks: list[dict[str, Any]]
    bound_counts: dict[str, int]
    dominant_bound: str | None
    roofline: list[dict[str, Any]]
    advice: list[str]
    block_dim: int | None
    core_count: int | None
    fill_note: str | None
    scalar_share_pct: float | None
    issues: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"op_name": self.op_name, "blocks": self.blocks,
                "bound_counts": self.bound_counts, "dominant_bound": self.dominant_bound,
                "roofline": self.roofline, "advice": self.advice,
                "block_dim": self.block_dim, "core_count": self.core_count,
                "fill_note": self.fill_note, "scalar_share_pct": self.scalar_share_pct,
                "issues": self.issues}


def analyze_msprof_op(extra: dict[str, Any]) -> MsprofOpResult | None:
    data = extra.get("msprof_op")
    if not isinstance(data, dict):
        return None
    blocks_out = []
    counts: dict[str, int] = {}
    weight: dict[str, float] = {}
    scalar_time = 0.0
    busy_time = 0.0
    for b in data.get("blocks") or []:
        if not isinstance(b, dict):
            continue
        pipes = {p: _num(v) for p, v in (b.get("pipes") or {}).items() if _num(v) is not None}
        dur = _num(b.get("duration_us"))
        if pipes:
            top = max(pipes.items(), key=lambda kv: (kv[1], -PIPES.index(kv[0])
                                                     if kv[0] in PIPES else 0))
            bound, ratio = top
        else:
            bound, ratio = None, None
        blocks_out.append({"block": b.get("block"), "duration_us": dur, "bound_pipe": bound,
                           "bound_ratio": ratio, "pipes": pipes})
        if bound is not None:
            counts[bound] = counts.get(bound, 0) + 1
            weight[bound] = weight.get(bound, 0.0) + (dur or 0.0)
        pt = b.get("pipe_time_us") or {}
        st = _num(pt.get("scalar"))
        if st is None and pipes.get("scalar") is not None and dur:
            st = pipes["scalar"] * dur
        if st is not None and dur:
            scalar_time += st
            busy_time += dur
    dominant = max(weight.items(), key=lambda kv: kv[1])[0] if weight else (
        max(counts.items(), key=lambda kv: kv[1])[0] if counts else None)
    block_dim = _num(data.get("block_dim"))
    cores = _num(data.get("core_count"))
    fill = None
    issues = []
    if block_dim and cores:
        bd, cc = int(block_dim), int(cores)
        if bd < cc:
            fill = (f"block_dim {bd} uses {bd} of {cc} cores: {cc - bd} cores stay idle "
                    f"({100 * (cc - bd) / cc:.0f} % of the device)")
        elif bd % cc:
            waves = bd / cc
            fill = (f"block_dim {bd} on {cc} cores is {waves:.2f} waves: the last wave runs "
                    f"{bd % cc} blocks while {cc - bd % cc} cores wait")
        if fill:
            issues.append(fill)
    roofline = [r for r in (data.get("roofline") or []) if isinstance(r, dict)]
    advice = [str(a) for a in (data.get("advice") or []) if a]
    return MsprofOpResult(str(data.get("op_name") or ""), blocks_out, counts, dominant,
                          roofline, advice, int(block_dim) if block_dim else None,
                          int(cores) if cores else None, fill,
                          round(100 * scalar_time / busy_time, 3) if busy_time else None,
                          issues)
