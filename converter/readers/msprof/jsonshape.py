"""Defensive access to JSON values whose shape the file may not respect (a damaged or
hand-edited file must give a warning or one-line error, never a crash)."""

from __future__ import annotations

import math
from typing import Any

INT32 = (1 << 31) - 1


def obj(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def seq(value: Any) -> list:
    return value if isinstance(value, list) else []


def number(value: Any) -> float | None:
    """A finite float, or None for a value that is not one (text that is not a number,
    NaN, infinities, objects)."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def hkey(value: Any) -> Any:
    """A dict key for a pid/tid of any JSON type (lists and objects are not hashable)."""
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def rank(value: Any) -> int | None:
    """A sibling order rank that fits the int32 ``sibling_order_rank`` of a Perfetto track."""
    if value is None or isinstance(value, bool):
        return None
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(-INT32, min(INT32, v))
