"""Host orchestration on the device timeline: the clock anchors (format reference 2.5).

simpler maps device cycles onto host nanoseconds through two anchors, A (before host
orchestration) and B (after device execution): nominal rate plus a linear drift correction
that makes B land exactly, i.e. the straight line through A and B.  tracecvt keeps the device
timeline and maps host ns onto it through the same line, inverted:

    device_ns(h) = ns(A.cycles) + (h - A.host_mid) * ns(B.cycles - A.cycles) / (B.host_mid - A.host_mid)

with exact rational rounding.  Anchor choice and the calibration test are simpler's: per
position the error-free sample with the smallest ``rtt_ns`` (ties: smallest ``sample_idx``),
``host_mid = host_before + rtt // 2``; calibrated only if B is after A on both clocks and every
non-zero device timestamp lies in [A.cycles, B.cycles].  Otherwise ("unaligned") the host
records are placed so that the last one ends where the device's first record starts, as
simpler's causal composite does; the gap is unknown and a warning says so.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

PRE, POST = "pre_host_orchestration", "post_device_execution"


def _pick(samples: list, position: str) -> dict[str, Any] | None:
    best = None
    for s in samples:
        if not isinstance(s, dict) or s.get("position") != position or s.get("error"):
            continue
        vals = [s.get(k) for k in ("host_before_ns", "device_cycles", "rtt_ns", "sample_idx")]
        if not all(type(v) is int and v >= 0 for v in vals):
            continue
        key = (s["rtt_ns"], s["sample_idx"])
        if best is None or key < best[0]:
            best = (key, s)
    return None if best is None else best[1]


def host_mapping(anchors: Any, ns_per_cycle: Fraction, device_lo: int | None,
                 device_hi: int | None, host_end: int | None,
                 device_first_ns: int | None) -> tuple[Callable[[int], int], dict[str, Any]]:
    """(host ns -> device ns, alignment facts).  ``device_lo``/``device_hi``: smallest and
    largest non-zero device timestamp (cycles); ``host_end``: the last host record end;
    ``device_first_ns``: the device's first record (ns), for the unaligned placement."""
    reason = None
    a = b = None
    if not isinstance(anchors, dict) or not isinstance(anchors.get("samples"), list):
        reason = "no clock_anchors"
    else:
        a = _pick(anchors["samples"], PRE)
        b = _pick(anchors["samples"], POST)
        if a is None or b is None:
            reason = f"no usable {PRE if a is None else POST} anchor sample"
    if reason is None:
        a_mid = a["host_before_ns"] + a["rtt_ns"] // 2
        b_mid = b["host_before_ns"] + b["rtt_ns"] // 2
        ac, bc = a["device_cycles"], b["device_cycles"]
        if b_mid <= a_mid or bc <= ac:
            reason = "the post-execution anchor is not after the pre-orchestration one"
        elif device_lo is not None and (device_lo < ac or device_hi > bc):
            reason = "device timestamps lie outside the anchor window"
    if reason is None:
        rate = Fraction(bc - ac) * ns_per_cycle / (b_mid - a_mid)   # device ns per host ns
        base = Fraction(ac) * ns_per_cycle
        den = base.denominator * rate.denominator
        base_num = base.numerator * rate.denominator
        rate_num = rate.numerator * base.denominator

        def to_device(h: int) -> int:
            q, r = divmod(base_num + (h - a_mid) * rate_num, den)
            return q + 1 if 2 * r >= den else q

        unc = max((a["rtt_ns"] + 1) // 2, (b["rtt_ns"] + 1) // 2)
        return to_device, {"status": "calibrated", "anchor_uncertainty_ns": unc,
                           "device_ns_per_host_ns": float(rate),
                           "selected_sample_idx": [a["sample_idx"], b["sample_idx"]],
                           "provider": anchors.get("provider")}
    offset = 0
    if host_end is not None and device_first_ns is not None:
        offset = device_first_ns - host_end
    return (lambda h: h + offset), {"status": "unaligned", "reason": reason}
