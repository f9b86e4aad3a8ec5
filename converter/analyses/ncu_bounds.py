"""Nsight Compute: what bounds each kernel, which health checks fail, and NCU's own advice.

Classification (the Speed-of-Light reading NCU's own "GPU Speed Of Light Throughput" rule
uses): compute throughput = max(SM, tensor) %, memory throughput = max(memory, DRAM) % of peak.

* **memory-bound**: memory throughput >= 60 % and >= compute throughput;
* **compute-bound**: compute throughput >= 60 % and above memory throughput;
* **latency-bound**: both below 60 %: the kernel keeps neither the SMs nor memory busy
  (too few warps, stalls, a small grid); the checks below say which.

Health checks (healthy when): tensor or SM throughput > 60 %, DRAM throughput > 70 %,
achieved occupancy > 25 %, L2 hit rate > 80 %, no local-memory spilling, waves per SM > 1.

The kernel table (``KernelBound.figures``) adds tensor-core utilization, achieved TFLOP/s
(CUDA cores, as NCU's roofline counts them) and DRAM GB/s, and each kernel's key issue.
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
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)   # the kernel table
    key_issue: str = "—"

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["ok"] is False]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "duration_us": us(self.duration), "bound": self.bound,
                "compute_throughput_pct": self.compute_pct,
                "memory_throughput_pct": self.memory_pct, "checks": self.checks,
                "failed_checks": [c["check"] for c in self.failed],
                "figures": self.figures, "key_issue": self.key_issue}


@dataclass
class NcuResult:
    kernels: list[KernelBound]
    advice: list[dict[str, Any]]   # NCU rules with an estimated speedup, best first
    serialized: bool
    memory_efficiency_pct: float | None
    # per advice entry: the launch it is about (its kernel's place in ``kernels``), or None
    # where the rule names its kernel only by name (not in the summary's JSON)
    launches: list[int | None] = field(default_factory=list)

    def bound_time(self) -> dict[str, int]:
        """Bound class -> the kernels' time in it (ns), in the kernels' order."""
        time: dict[str, int] = {}
        for k in self.kernels:
            time[k.bound] = time.get(k.bound, 0) + k.duration
        return time

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for k in self.kernels:
            counts[k.bound] = counts.get(k.bound, 0) + 1
        return {"kernels": [k.to_dict() for k in self.kernels],
                "bounds": [{"bound": b, "kernels": counts[b], "time_us": us(t)}
                           for b, t in self.bound_time().items()],
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


# Floating-point operations per thread instruction, as NCU's roofline counts them (an FMA is
# two; the half-precision instructions work on pairs).  Tensor-core work is not in these.
FLOPS_PER_INST = {"dadd": 1, "dmul": 1, "dfma": 2, "fadd": 1, "fmul": 1, "ffma": 2,
                  "hadd": 2, "hmul": 2, "hfma": 4}


def achieved_flops(args: dict[str, Any]) -> float | None:
    """FLOP/s on the CUDA cores: Σ instructions per SMSP cycle x FLOPs each x SMSP clock."""
    hz = _num(args.get("smsp_frequency_hz"))
    rates = [(_num(args.get(f"inst_{op}_per_cycle")), n) for op, n in FLOPS_PER_INST.items()]
    if hz is None or all(r is None for r, _ in rates):
        return None
    return sum((r or 0.0) * n for r, n in rates) * hz


def _figure(value, unit: str, healthy: str | None = None, ok: bool | None = None,
            note: str = "") -> dict[str, Any]:
    if value is not None:
        value = int(value) if unit == "requests" else round(value, 3)
    return {"value": value, "unit": unit,
            "healthy": healthy, "ok": ok if value is not None else None, "note": note}


def kernel_figures(args: dict[str, Any], duration: int, checks_: list[dict[str, Any]]
                   ) -> dict[str, dict[str, Any]]:
    """The per-kernel table: what GPU kernel engineers read first, each with the threshold
    it is judged against (the health checks above; figures without a fixed healthy value,
    which depends on the GPU's peak, have ``healthy`` None)."""
    by = {c["check"]: c for c in checks_}

    def checked(name: str, unit: str) -> dict[str, Any]:
        c = by[name]
        return _figure(c["value"], unit, c["threshold"], c["ok"], c["note"])

    tensor = _num(args.get("tensor_throughput_pct"))
    flops = achieved_flops(args)
    gbps = _num(args.get("dram_bandwidth_bytes_per_s"))
    return {
        "duration_us": _figure(us(duration), "µs"),
        "tensor_core_utilization_pct": _figure(
            tensor, "%", f"> {BOUND_PCT:g} %", tensor > BOUND_PCT if tensor else None,
            "no tensor-core work" if tensor == 0 else
            "" if tensor is None or tensor > BOUND_PCT else "tensor pipes mostly idle"),
        "dram_throughput_pct": checked("DRAM throughput", "%"),
        "achieved_occupancy_pct": checked("achieved occupancy", "%"),
        "l2_hit_rate_pct": checked("L2 hit rate", "%"),
        "local_spill_requests": checked("local spilling", "requests"),
        "waves_per_sm": checked("waves per SM", "waves"),
        "achieved_tflops": _figure(None if flops is None else flops / 1e12, "TFLOP/s",
                                   note="CUDA-core FP64/FP32/FP16 (roofline); tensor-core "
                                        "FLOPs not counted"),
        "achieved_dram_gbps": _figure(None if gbps is None else gbps / 1e9, "GB/s",
                                      note="dram__bytes.sum.per_second"),
    }


# The failed checks that matter most, per bound class, for the key issue.
_ISSUE_ORDER = {
    "memory-bound": ("L2 hit rate", "DRAM throughput", "local spilling", "achieved occupancy",
                     "waves per SM"),
    "compute-bound": ("compute throughput", "local spilling", "achieved occupancy",
                      "waves per SM"),
}
_ISSUE_DEFAULT = ("waves per SM", "achieved occupancy", "local spilling", "L2 hit rate",
                  "compute throughput", "DRAM throughput")


def key_issue(k: "KernelBound", advice: list[dict[str, Any]]) -> str:
    """NCU's own rule with the largest estimated speedup for the kernel, else the failed
    check that matters most for its bound class."""
    mine = [a for a in advice if a["kernel"] == k.name and a["estimated_speedup_pct"]]
    if mine:
        top = max(mine, key=lambda a: a["estimated_speedup_pct"])
        return (f"{top['rule']} (NCU estimated speedup {top['estimated_speedup_pct']:.1f} %)"
                + (f": {str(top['message'])[:140]}" if top.get("message") else ""))
    failed = {c["check"]: c for c in k.failed}
    for name in _ISSUE_ORDER.get(k.bound, _ISSUE_DEFAULT):
        c = failed.get(name)
        if c is not None:
            return f"{c['text']} (healthy {c['threshold']}): {c['note']}"
    return "—"


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
        kc = checks(args)
        out.append(KernelBound(i, name, dur, bound, comp, memory, kc,
                               kernel_figures(args, dur, kc)))
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
        for n, k in enumerate(out):
            for r in trace.slices[k.index].all_args.get("rules") or []:
                if isinstance(r, dict):
                    rules.append({"kernel": k.name, **r, "kernel_index": n})
    for r in rules:
        if not isinstance(r, dict):
            continue
        sp = _num(r.get("estimated_speedup_pct"))
        kernel_dur = launch = None
        ki = r.get("kernel_index")
        if isinstance(ki, int) and 0 <= ki < len(out):
            kernel_dur, launch = out[ki].duration, ki
        else:
            match = [k for k in out if k.name == r.get("kernel")]
            if len(match) == 1:
                kernel_dur = match[0].duration
        gain = sp / 100.0 * kernel_dur if sp is not None and kernel_dur else None
        advice.append(({"kernel": r.get("kernel"), "rule": r.get("rule"),
                        "message": r.get("message"), "estimated_speedup_pct": sp,
                        "speedup_type": r.get("speedup_type"),
                        "estimated_gain_us": us(gain) if gain is not None else None}, launch))
    advice.sort(key=lambda a: (-(a[0]["estimated_speedup_pct"] or 0.0), str(a[0]["kernel"]),
                               str(a[0]["rule"])))
    advice_only = [a for a, _ in advice]
    for k in out:
        k.key_issue = key_issue(k, advice_only)
    eff = round(mem_weighted / mem_time, 3) if mem_time else None
    return NcuResult(out, advice_only, bool(extra.get("ncu_serialized")), eff,
                     [launch for _, launch in advice])
