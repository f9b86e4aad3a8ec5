"""The metric-name table both NCU paths share, units, kernel names and rule messages.

Everything here is plain data and small pure functions: the report path (``report.py``) and
the CSV paths (``csv_raw.py``, ``csv_details.py``) turn what they read into the same
``Kernel`` records with the same arg names, in the same base units (ns, byte, hz, %, byte/s),
so a trace made from a ``.ncu-rep`` and one made from its CSV export compare equal.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from ...model import INT64_END, INT64_MIN

# -- key metrics ----------------------------------------------------------------------------
# (arg name, metric names in order of preference, kind).  kind: "ns" = integer nanoseconds
# (exact), "int" = an integer count, "float" = a float in the metric's base unit.
KEY_METRICS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("duration_ns", ("gpu__time_duration.sum",), "ns"),
    ("elapsed_cycles", ("gpc__cycles_elapsed.max",), "int"),
    ("sm_frequency_hz", ("gpc__cycles_elapsed.avg.per_second",
                         "sm__cycles_elapsed.avg.per_second"), "float"),
    ("dram_frequency_hz", ("dram__cycles_elapsed.avg.per_second",), "float"),
    ("sm_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",), "float"),
    ("memory_throughput_pct",
     ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",), "float"),
    ("dram_throughput_pct", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed"), "float"),
    ("l1_throughput_pct", ("l1tex__throughput.avg.pct_of_peak_sustained_active",), "float"),
    ("l2_throughput_pct", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",), "float"),
    ("tensor_throughput_pct", ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                               "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
                               "sm__pipe_tensor_op_hmma_cycles_active.avg."
                               "pct_of_peak_sustained_active"), "float"),
    ("dram_bandwidth_bytes_per_s", ("dram__bytes.sum.per_second",), "float"),
    ("dram_read_bytes", ("dram__bytes_read.sum",), "int"),
    ("dram_write_bytes", ("dram__bytes_write.sum",), "int"),
    ("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",), "float"),
    ("theoretical_occupancy_pct", ("sm__maximum_warps_per_active_cycle_pct",), "float"),
    ("registers_per_thread", ("launch__registers_per_thread",), "int"),
    ("shared_memory_static_bytes", ("launch__shared_mem_per_block_static",), "int"),
    ("shared_memory_dynamic_bytes", ("launch__shared_mem_per_block_dynamic",), "int"),
    ("shared_memory_driver_bytes", ("launch__shared_mem_per_block_driver",), "int"),
    ("shared_memory_config_bytes", ("launch__shared_mem_config_size",), "int"),
    ("waves_per_sm", ("launch__waves_per_multiprocessor",), "float"),
    ("grid_size", ("launch__grid_size",), "int"),
    ("block_size", ("launch__block_size",), "int"),
    ("threads", ("launch__thread_count",), "int"),
    ("l1_hit_rate_pct", ("l1tex__t_sector_hit_rate.pct",), "float"),
    ("l2_hit_rate_pct", ("lts__t_sector_hit_rate.pct",), "float"),
    ("local_spill_requests", ("derived__local_spilling_requests",), "int"),
    ("ipc_active", ("sm__inst_executed.avg.per_cycle_active",), "float"),
    ("sm_count", ("launch__sm_count", "device__attribute_multiprocessor_count"), "int"),
    ("replay_passes", ("profiler__replayer_passes",), "int"),
    # The roofline's floating-point instruction rates (thread instructions per SMSP cycle,
    # summed over the SMSPs) and the SMSP clock: achieved FLOP/s (analyses/ncu_bounds.py).
    *((f"inst_{op}_per_cycle",
       (f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed",), "float")
      for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")),
    ("smsp_frequency_hz", ("smsp__cycles_elapsed.avg.per_second",), "float"),
)

# Metrics read for the kernel's identity and placement (not args by themselves).
GRID_DIMS = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z")
BLOCK_DIMS = ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z")
DEVICE_ID = "launch__device_id"
CONTEXT_ID = "launch__context_id"
STREAM_ID = "launch__stream_id"
DEVICE_NAME = "device__attribute_display_name"
CC_MAJOR = "device__attribute_compute_capability_major"
CC_MINOR = "device__attribute_compute_capability_minor"
PM_INTERVAL = "profiler__pmsampler_interval_time"

IDENTITY_METRICS = (*GRID_DIMS, *BLOCK_DIMS, DEVICE_ID, CONTEXT_ID, STREAM_ID, DEVICE_NAME,
                    CC_MAJOR, CC_MINOR, PM_INTERVAL)

# Every metric name either path reads (the benchmark's floor reads exactly these).
ALL_READ_METRICS = tuple(dict.fromkeys(
    [m for _, names, _ in KEY_METRICS for m in names] + list(IDENTITY_METRICS)))

# Counter tracks stepping at kernel boundaries: (arg, track name).
BOUNDARY_COUNTERS = (
    ("sm_throughput_pct", "SM throughput"),
    ("dram_throughput_pct", "DRAM throughput"),
    ("achieved_occupancy_pct", "Achieved occupancy"),
)

# -- details page: (section display name, metric label) -> (arg, kind) ---------------------
DETAILS_LABELS: dict[tuple[str, str], tuple[str, str]] = {
    ("GPU Speed Of Light Throughput", "Duration"): ("duration_ns", "ns"),
    ("GPU Speed Of Light Throughput", "Elapsed Cycles"): ("elapsed_cycles", "int"),
    ("GPU Speed Of Light Throughput", "SM Frequency"): ("sm_frequency_hz", "float"),
    ("GPU Speed Of Light Throughput", "DRAM Frequency"): ("dram_frequency_hz", "float"),
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"): ("sm_throughput_pct", "float"),
    ("GPU Speed Of Light Throughput", "Memory Throughput"): ("memory_throughput_pct", "float"),
    ("GPU Speed Of Light Throughput", "DRAM Throughput"): ("dram_throughput_pct", "float"),
    ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"): ("l1_throughput_pct", "float"),
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput"): ("l2_throughput_pct", "float"),
    ("Memory Workload Analysis", "Memory Throughput"): ("dram_bandwidth_bytes_per_s", "float"),
    ("Memory Workload Analysis", "L1/TEX Hit Rate"): ("l1_hit_rate_pct", "float"),
    ("Memory Workload Analysis", "L2 Hit Rate"): ("l2_hit_rate_pct", "float"),
    ("Memory Workload Analysis", "Local Memory Spilling Requests"):
        ("local_spill_requests", "int"),
    ("Compute Workload Analysis", "Executed Ipc Active"): ("ipc_active", "float"),
    ("Occupancy", "Achieved Occupancy"): ("achieved_occupancy_pct", "float"),
    ("Occupancy", "Theoretical Occupancy"): ("theoretical_occupancy_pct", "float"),
    ("Launch Statistics", "Registers Per Thread"): ("registers_per_thread", "int"),
    ("Launch Statistics", "Static Shared Memory Per Block"):
        ("shared_memory_static_bytes", "int"),
    ("Launch Statistics", "Dynamic Shared Memory Per Block"):
        ("shared_memory_dynamic_bytes", "int"),
    ("Launch Statistics", "Driver Shared Memory Per Block"):
        ("shared_memory_driver_bytes", "int"),
    ("Launch Statistics", "Shared Memory Configuration Size"):
        ("shared_memory_config_bytes", "int"),
    ("Launch Statistics", "Waves Per SM"): ("waves_per_sm", "float"),
    ("Launch Statistics", "Grid Size"): ("grid_size", "int"),
    ("Launch Statistics", "Block Size"): ("block_size", "int"),
    ("Launch Statistics", "Threads"): ("threads", "int"),
    ("Launch Statistics", "# SMs"): ("sm_count", "int"),
    ("PM Sampling", "Maximum Sampling Interval"): ("pm_sampling_interval_ns", "ns"),
}

# -- units ----------------------------------------------------------------------------------
_PREFIX = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
# A time in a numerator becomes ns (like gpu__time_duration in the report) ...
_TIME_NUM = {"ns": 1, "nsecond": 1, "us": 10**3, "usecond": 10**3, "ms": 10**6,
             "msecond": 10**6, "s": 10**9, "second": 10**9}
# ... and in a denominator becomes seconds (byte/s, sector/s in the report).
_TIME_DEN = {"ns": Fraction(10**9), "nsecond": Fraction(10**9), "us": Fraction(10**6),
             "usecond": Fraction(10**6), "ms": Fraction(10**3), "msecond": Fraction(10**3),
             "s": Fraction(1), "second": Fraction(1)}      # per unit -> per second

_unit_cache: dict[str, tuple[str, Fraction]] = {}


def _part(part: str, denominator: bool) -> tuple[str, Fraction]:
    """(base part, factor to multiply the printed value by)."""
    if part in _TIME_NUM:
        if denominator:                     # 33.995 sector/ns = 33,995,072,614 sector/s
            return "s", _TIME_DEN[part]
        return "ns", Fraction(_TIME_NUM[part])
    if len(part) > 1 and part[0] in _PREFIX and part[1:].isalpha() and part[1:].islower():
        # Nsight Compute scales the value and puts the prefix on the first non-time part,
        # also in a denominator: 1.591 %/Kbyte is 1,591 %/byte (checked against the report).
        return part[1:], Fraction(_PREFIX[part[0]])
    return part, Fraction(1)


def base_unit(unit: str) -> tuple[str, Fraction]:
    """(base unit, factor): a value printed in ``unit`` times factor is in the base unit.

    ``us`` -> (``ns``, 1000); ``Kbyte/block`` -> (``byte/block``, 1000); ``Ghz`` -> (``hz``,
    1e9); ``sector/us`` -> (``sector/s``, 1e6); ``%/Kbyte`` -> (``%/byte``, 1000: the value
    was divided by 1000 for display, whatever side of the slash the prefix lands on).
    Prefixes are decimal, as Nsight Compute prints them.
    """
    hit = _unit_cache.get(unit)
    if hit is not None:
        return hit
    unit_s = unit.strip()
    if not unit_s:
        result = ("", Fraction(1))
    else:
        num, _, den = unit_s.partition("/")
        nu, nf = _part(num, False)
        if den:
            du, df = _part(den, True)
            result = (f"{nu}/{du}", nf * df)
        else:
            result = (nu, nf)
    _unit_cache[unit] = result
    return result


_MISSING = {"", "nan", "-nan", "no data", "n/a", "N/A", "(none)"}


def bounded(value: Any) -> Any:
    """A number as the trace can hold it: an int within int64 (a larger one as a float), a
    finite float; None for NaN, infinities and ints beyond any float.  Other values as is."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if INT64_MIN <= value < INT64_END:
            return value
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def int64(value: Any) -> int | None:
    """An int within int64, else None (IDs, streams, thread ids)."""
    return value if isinstance(value, int) and INT64_MIN <= value < INT64_END else None


def printable(text: str) -> str:
    """``text`` for a one-line message: characters that are not printable (line and
    paragraph separators, control characters) escaped as Python does."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def parse_cell(text: str, factor: Fraction = Fraction(1)) -> Any:
    """A CSV cell as int, float, str or None, scaled to the base unit by ``factor``.

    Thousands separators are dropped; integral results become ints (so 1.024000 Kbyte is the
    int 1024, like the report's value), others floats; text stays text.
    """
    s = text.strip()
    if s in _MISSING:
        return None
    t = s.replace(",", "") if "," in s else s
    if factor == 1:
        try:
            if t.isdigit():
                return bounded(int(t)) if len(t) < 400 else None
            return bounded(float(t)) if _looks_numeric(t) else s
        except ValueError:                   # digits int() does not take ("²"), "1.2.3"
            return s
    try:
        d = Decimal(t)
    except InvalidOperation:
        return s
    if not d.is_finite():
        return None
    if abs(d.adjusted()) > 400:            # beyond any float (and slow as a Fraction)
        return None if d.adjusted() > 0 else 0.0
    v = Fraction(d) * factor
    if v.denominator == 1:
        return bounded(int(v))
    return bounded(float(v))


def _looks_numeric(t: str) -> bool:
    c = t[0]
    return c.isdigit() or c in "+-." and len(t) > 1


def parse_ns(text: str, factor: Fraction) -> int | None:
    """A duration cell to integer ns exactly (decimal arithmetic, half up)."""
    s = text.strip().replace(",", "")
    if s in _MISSING:
        return None
    try:
        d = Decimal(s)
        if not d.is_finite() or d.adjusted() > 30:       # NaN, inf, or beyond any run
            return None
        v = Fraction(d) * factor
    except (InvalidOperation, ValueError):
        return None
    return int64(_round_half_up(v))


def float_ns(value: float) -> int | None:
    """A report duration (a double in ns) to integer ns, rounded half up like the CSV path;
    None if it is not finite or beyond int64."""
    if not math.isfinite(value):
        return None
    if value == int(value):
        return int64(int(value))
    return int64(_round_half_up(Fraction(Decimal(repr(value)))))


def _round_half_up(v: Fraction) -> int:
    q, r = divmod(v.numerator, v.denominator)
    return q + 1 if 2 * r >= v.denominator else q


def to_kind(value: Any, kind: str) -> Any:
    """Normalise a value for its key-metric kind."""
    value = bounded(value)
    if value is None or isinstance(value, str):
        return value
    if kind == "int":
        if isinstance(value, float) and value == int(value):
            return int64(int(value))
        return value
    if kind == "float":
        return float(value)
    if kind == "ns":
        return float_ns(value) if isinstance(value, float) else value
    return value


# -- kernel names ---------------------------------------------------------------------------
_OPEN = {"(": ")", "<": ">", "[": "]"}


def short_name(demangled: str) -> str:
    """The function name of a demangled kernel signature.

    ``void cublasLt::splitKreduce_kernel<32, 16, ...>(cublasLt::cublasSplitKParams<T6>, ...)``
    -> ``splitKreduce_kernel``; ``void at::<unnamed>::distribution_kernel<...>(...)``
    -> ``distribution_kernel``; a plain name (Triton) is returned as is.  This is the name the
    report gives with its default (function) name base, so both paths agree.
    """
    s = demangled.strip()
    if not s or not (s.endswith(")") or s.endswith(">")):
        return _last_component(s)
    # drop the parameter list, then the template arguments, scanning from the end
    for closer, opener in ((")", "("), (">", "<")):
        s = s.rstrip()
        if s.endswith(" const"):
            s = s[:-6].rstrip()
        if s.endswith(closer):
            depth = 0
            for i in range(len(s) - 1, -1, -1):
                c = s[i]
                if c == closer:
                    depth += 1
                elif c == opener:
                    depth -= 1
                    if depth == 0:
                        if opener == "<" and s[i + 1:i + 8] == "unnamed":
                            break
                        s = s[:i]
                        break
    return _last_component(s)


def _last_component(s: str) -> str:
    """The text after the last top-level ``::`` and after a top-level return type."""
    depth = 0
    start = 0
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        elif depth == 0:
            if c == ":" and i + 1 < n and s[i + 1] == ":":
                start = i + 2
                i += 1
            elif c == " ":
                start = i + 1
        i += 1
    return s[start:] or s


# -- rule messages --------------------------------------------------------------------------
_MARKUP = re.compile(r"@(section|url|metric|table|rule|[a-z]+):([^@]*)@")


def render_message(message: str) -> str:
    """A rule message as the CSV export prints it.

    ``@section:LaunchStats:Launch Statistics@`` -> ``Launch Statistics``;
    ``@url:Profiling Guide:https://...@`` -> ``Profiling Guide (https://...)``.
    """
    if "@" not in message:
        return message

    def sub(m: re.Match) -> str:
        kind, body = m.group(1), m.group(2)
        if kind == "url":
            label, sep, url = body.partition(":")
            return f"{label} ({url})" if sep else body
        # section:IDENTIFIER:Label, and other references: the last field is the label
        return body.rsplit(":", 1)[-1]

    return _MARKUP.sub(sub, message)


RULE_TYPES = {0: "INF", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}
