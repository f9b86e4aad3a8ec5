"""The record every NCU path produces for one profiled kernel (one report "action")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NvtxDomain:
    """The NVTX state of one domain at a kernel launch."""

    name: str                                   # "<default domain>" or the domain's name
    push_pop: tuple[str, ...] = ()              # range stack, outermost first
    # attributes of push/pop ranges by stack level, where known (message, color, payload…)
    attrs: dict[int, dict[str, Any]] = field(default_factory=dict)
    start_end: tuple[str, ...] = ()             # start/end ranges active at the launch


@dataclass
class PmSeries:
    """One PM-sampling timeline of one kernel: sample times relative to the workload start."""

    metric: str             # full name, e.g. "TPC.TriageCompute.sm__cycles_active.avg"
    title: str              # readable name, e.g. "SM Active Cycles"
    unit: str
    rel_ns: list[int]
    values: list[float]
    description: str = ""   # Nsight Compute's description of the metric


@dataclass
class Kernel:
    index: int                          # result ID in the report / CSV, in profiling order
    name: str                           # demangled name
    short_name: str                     # function name
    device_id: int | None = None
    context: int | None = None
    stream: int | None = None
    device_name: str = ""
    compute_capability: str = ""
    workload: str = "kernel"            # report workload type: kernel, range, graph, …
    args: dict[str, Any] = field(default_factory=dict)   # key args (metrics.KEY_METRICS)
    nvtx: list[NvtxDomain] = field(default_factory=list)
    nvtx_thread: int | None = None      # CSV only: the launching thread
    rules: list[dict[str, Any]] = field(default_factory=list)
    pm: list[PmSeries] = field(default_factory=list)
    pm_interval_ns: int | None = None
    metrics: dict[str, Any] | None = None   # --all-metrics: every metric, base units

    @property
    def duration_ns(self) -> int | None:
        return self.args.get("duration_ns")
