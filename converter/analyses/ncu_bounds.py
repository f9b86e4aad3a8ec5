"""Nsight Compute: what bounds each kernel, which health checks fail, and NCU's own advice.

Classification (the Speed-of-Light reading NCU's own "GPU Speed Of Light Throughput" rule
uses): compute throughput = max(SM, tensor) %, memory throughput = max(memory, DRAM) % of peak.

* **memory-bound**: memory throughput >= 60 % and >= compute throughput;
* **compute-bound**: compute throughput >= 60 % and above memory throughput;
* **latency-bound**: both below 60 %: the kernel keeps neither the SMs nor memory busy
  (too few warps, stalls, a small grid); the checks below say which.

Health checks (healthy when): tensor or SM throughput > 60 %, DRAM throughput > 70 %,
achieved occupancy > 25 %, L2 hit rate > 80 %, no local-memory spilling, waves per SM > 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import KERNEL, Trace
from .bubbles import us

BOUND_PCT = 60.0

# (check, arg(s), comparison, threshold, what failing means)
CHECKS = (
    ("compute throughput", ("tensor_throughput_pct", "sm_throughput_pct"), ">", 60.0,
     "SM and tensor pipes are mostly idle"),
    ("DRAM throughput", ("dram_throughput_pct",), ">", 70.0,
     "DRAM bandwidth is not saturated"),
    ("achieved occupancy", ("achieved_occupancy_pct",), ">", 25.0,
     "too few warps resident to hide latency"),
    ("L2 hit rate", ("l2_hit_rate_pct",), ">", 80.0, "many L2 misses go to DRAM"),
    ("local spilling", ("local_spill_requests",), "==", 0.0,
     "registers spill to local memory"),
    ("waves per SM", ("waves_per_sm",), ">", 1.0,
     "the grid does not fill the GPU once (tail effect, idle SMs)"),
)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


@dataclass
class KernelBound:
    index: int                    # slice index
    name: str
    duration: int
    bound: str                    # memory-bound / compute-bound / latency-bound / unknown
    compute_pct: float | None
    memory_pct: float | None
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["ok"] is False]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "duration_us": us(self.duration), "bound": self.bound,
                "compute_throughput_pct": self.compute_pct,
                "memory_throughput_pct": self.memory_pct, "checks": self.checks,
                "failed_checks": [c["check"] for c in self.failed]}


@dataclass
class NcuResult:
    kernels: list[KernelBound]
    advice: list[dict[str, Any]]   # NCU rules with an estimated speedup, best first
    serialized: bool
    memory_efficiency_pct: float | None

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        time: dict[str, int] = {}
        for k in self.kernels:
            counts[k.bound] = counts.get(k.bound, 0) + 1
            time[k.bound] = time.get(k.bound, 0) + k.duration
        return {"kernels": [k.to_dict() for k in self.kernels],
                "bound_counts": counts,
                "bound_time_us": {b: us(t) for b, t in time.items()},
                "advice": self.advice, "serialized": self.serialized,
                "memory_efficiency_pct": self.memory_efficiency_pct}


def classify(args: dict[str, Any]) -> tuple[str, float | None, float | None]:
    sm = _num(args.get("sm_throughput_pct"))
    tensor = _num(args.get("tensor_throughput_pct"))
    mem = _num(args.get("memory_throughput_pct"))
    dram = _num(args.get("dram_throughput_pct"))
    comp = max((v for v in (sm, tensor) if v is not None), default=None)
    memory = max((v for v in (mem, dram) if v is not None), default=None)
    if comp is None and memory is None:
        return "unknown", None, None
    c = comp or 0.0
    m = memory or 0.0
    if m >= BOUND_PCT and m >= c:
        return "memory-bound", comp, memory
    if c >= BOUND_PCT and c > m:
        return "compute-bound", comp, memory
    return "latency-bound", comp, memory


def checks(args: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, keys, op, limit, meaning in CHECKS:
        vals = [_num(args.get(k)) for k in keys]
        vals = [v for v in vals if v is not None]
        unit = " %" if keys[0].endswith("_pct") else ""
        if not vals:
            out.append({"check": name, "value": None, "threshold": f"{op} {limit:g}{unit}",
                        "ok": None, "note": "not measured in this report",
                        "text": f"{name} not measured"})
            continue
        v = max(vals)
        ok = v > limit if op == ">" else v == limit
        out.append({"check": name, "value": round(v, 3), "threshold": f"{op} {limit:g}{unit}",
                    "ok": ok, "note": "" if ok else meaning,
                    "text": f"{name} {v:.1f}{unit}" if unit else f"{name} {v:g}"})
    return out


def analyze_ncu(trace: Trace) -> NcuResult | None:
    extra = trace.meta.extra
    if trace.meta.format != "ncu" and "ncu_rules" not in extra and not extra.get(
            "ncu_serialized"):
        return None
    kernels = [i for i, s in enumerate(trace.slices) if s.cat == KERNEL]
    out: list[KernelBound] = []
    mem_weighted = 0.0
    mem_time = 0
    for i in kernels:
        s = trace.slices[i]
        args = s.all_args
        bound, comp, memory = classify(args)
        dur = args.get("duration_ns")
        dur = int(dur) if isinstance(dur, (int, float)) and not isinstance(dur, bool) else s.dur
        name = str(args.get("short_name") or s.name)
        out.append(KernelBound(i, name, dur, bound, comp, memory, checks(args)))
        dram = _num(args.get("dram_throughput_pct"))
        if dram is None:
            dram = _num(args.get("memory_throughput_pct"))
        if dram is not None and dur:
            mem_weighted += dram * dur
            mem_time += dur
    advice = []
    rules = extra.get("ncu_rules")
    if rules is None:           # fall back to the per-kernel lists
        rules = []
        for k in out:
            for r in trace.slices[k.index].all_args.get("rules") or []:
                if isinstance(r, dict):
                    rules.append({"kernel": k.name, **r})
    for r in rules:
        if not isinstance(r, dict):
            continue
        sp = _num(r.get("estimated_speedup_pct"))
        kernel_dur = None
        ki = r.get("kernel_index")
        if isinstance(ki, int) and 0 <= ki < len(out):
            kernel_dur = out[ki].duration
        else:
            match = [k for k in out if k.name == r.get("kernel")]
            if len(match) == 1:
                kernel_dur = match[0].duration
        gain = sp / 100.0 * kernel_dur if sp is not None and kernel_dur else None
        advice.append({"kernel": r.get("kernel"), "rule": r.get("rule"),
                       "message": r.get("message"), "estimated_speedup_pct": sp,
                       "speedup_type": r.get("speedup_type"),
                       "estimated_gain_us": us(gain) if gain is not None else None})
    advice.sort(key=lambda a: (-(a["estimated_speedup_pct"] or 0.0), str(a["kernel"]),
                               str(a["rule"])))
    eff = round(mem_weighted / mem_time, 3) if mem_time else None
    return NcuResult(out, advice, bool(extra.get("ncu_serialized")), eff)
