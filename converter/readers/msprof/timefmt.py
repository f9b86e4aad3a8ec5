"""Exact time values: decimal µs text (or JSON numbers) -> integer ns, and the clocks.

msprof and torch_npu write absolute timestamps as Unix-epoch microseconds with three
decimals, as strings in JSON and with a trailing TAB in CSV.  A float64 cannot hold
``1784216647596110.805`` (it resolves 0.25 µs at that magnitude), so text goes through
``Decimal`` and never through a float.  JSON numbers (durations, simulator times) arrive as
floats from the JSON parser; their shortest ``repr`` is the decimal that was written whenever
it had at most 15-17 significant digits, which every duration does.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fractions import Fraction

from ...model import INT64_END, Clock

UINT32_MAX = 4294967295

EPOCH_US = Clock("epoch-us", "us", Fraction(1000),
                 "Unix-epoch microseconds as msprof/torch_npu write them (3 decimals = ns), "
                 "parsed exactly")
KERNEL_US = Clock("kernel-us", "us", Fraction(1000),
                  "microseconds from kernel start (msprof op simulator); no wall-clock anchor")
BLOCK_US = Clock("per-block-us", "us", Fraction(1000),
                 "msprof op per-block view: each block's measured time drawn from 0; "
                 "not a timeline")

# Cell texts that mean "no value" (never 0).
_MISSING = frozenset({"", "n/a", "na", str(UINT32_MAX)})


def is_missing(text: str) -> bool:
    return text.strip().strip('"').strip().lower() in _MISSING


def decimal_of(value) -> Decimal | None:
    """The exact decimal a cell or JSON value holds, or None for "no value"."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, int):
        return None if value == UINT32_MAX else Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = str(value).strip().strip('"').strip()
    if text.lower() in _MISSING:
        return None
    try:
        d = Decimal(text)
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


# The latest end (inclusive) of an msprof slice: the int64 maximum, not the model's MAX_NS.
# msprof times are Unix-epoch based, not bounded by MAX_NS (``us_to_ns`` takes anything up to
# int64), and nothing packs them into wider keys; 2^62 would zero durations that fit today.
MAX_END_NS = INT64_END - 1
_MAX_US = MAX_END_NS // 1000      # 9223372036854775 µs: beyond it, no int64 ns


def event_span(e: dict) -> tuple[int, int, bool] | None:
    """(ts, dur, dur_bad) in ns of a Chrome ``X`` event; None when it has no usable start.
    A negative duration, or one running past the ns range, becomes 0 with ``dur_bad`` set."""
    ts = us_to_ns(e.get("ts"))
    if ts is None or ts < 0:
        return None
    dur = us_to_ns(e.get("dur", 0)) or 0
    if dur < 0 or ts + dur > MAX_END_NS:
        return ts, 0, True
    return ts, dur, False


def us_to_ns(value) -> int | None:
    """Microseconds (text, int, float or Decimal) -> integer ns, rounded half up; None for no
    value or a value beyond the signed 64-bit ns range of a trace."""
    d = decimal_of(value)
    if d is None or abs(d) > _MAX_US:
        return None
    return int((d * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def ms_to_us(value) -> float | None:
    """Milliseconds -> microseconds (for metadata; exact decimal scaling, then float)."""
    d = decimal_of(value)
    if d is None:
        return None
    f = float(d * 1000)
    return f if math.isfinite(f) else None


def is_scientific(text: str) -> bool:
    """``1.69512E+15``: a timestamp that went through a spreadsheet and lost its digits."""
    t = text.strip().lower()
    return "e" in t and any(c.isdigit() for c in t)
