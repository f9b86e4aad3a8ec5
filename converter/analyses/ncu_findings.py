"""Nsight Compute's opportunities: NCU's own rule findings, or where the report has none,
the kernels' failed health checks (``ncu_bounds``), each once per kernel however many times
it was launched."""

from __future__ import annotations

import re
from typing import Any

from ..model import Trace
from .actions import LATENCY, NCU_BOUND_LABEL, ncu_check_actions, ncu_rule_actions
from .bubbles import pct
from .opportunity import Opportunity, percent as _f, us_text as _us
from .places import Place


def ncu_opportunities(trace: Trace, ncu: Any) -> list[Opportunity]:
    """``ncu`` (``ncu_bounds.NcuResult``): its rule findings, else its failed checks."""
    return _rule_advice(trace, ncu) if ncu.advice else _failed_checks(trace, ncu.kernels)


# A rule's finding without its figures (not the digits of a name: L1, FP32, sm_90): a rule
# may make several findings for one launch (WorkloadImbalance: SMs, SMSPs, L1 slices), each
# made again for every launch of a kernel
_FIGURES = re.compile(r"(?<![A-Za-z_])\d+(?:[.,]\d+)*")


def _rule_advice(trace: Trace, ncu: Any) -> list[Opportunity]:
    """NCU's rule results (``ncu.advice``, the largest estimated speedup first): one
    opportunity per kernel name, rule and finding, however many launches NCU made it for;
    its estimated gain the sum over those launches of the speedup × the launch's duration
    (where NCU estimates one), its figure the largest speedup, with that one's message."""
    groups: dict[tuple, list[tuple[dict[str, Any], Any]]] = {}
    # Findings of one launch alike but for their figures stay apart: the n-th of them in
    # one launch goes with the n-th in another.
    seen: dict[tuple, int] = {}
    launches = ncu.launches or [None] * len(ncu.advice)
    for adv, launch in zip(ncu.advice, launches):
        key = (adv.get("kernel"), adv.get("rule"),
               _FIGURES.sub("#", str(adv.get("message") or "")))
        at = (launch if launch is not None else id(adv), key)
        seen[at] = seen.get(at, 0) + 1
        groups.setdefault((*key, seen[at]), []).append((adv, launch))
    by_name = {k.name: k for k in ncu.kernels}
    places: dict[Any, Place | None] = {}        # kernel name -> its launches (every one)
    out = []
    for (kernel, rule, _, _), found in groups.items():
        top = found[0][0]
        gains = [adv.get("estimated_gain_us") for adv, _ in found]     # one a launch
        known = [g for g in gains if g is not None]
        best = top.get("estimated_speedup_pct")
        metric = f"NCU estimated speedup {_f(best)}"
        if len(gains) > 1:
            up_to = "up to " if best is not None else ""
            metric = f"{len(gains)} launches, NCU estimated speedup {up_to}{_f(best)}"
        k = by_name.get(kernel)
        out.append(Opportunity(
            f"{kernel}: {rule}",
            metric + (f": {top['message'][:160]}" if top.get("message") else ""),
            sum(known) * 1000 if known else None,
            "NCU's estimated speedup x the kernel's duration" + (
                ", summed over its launches" if len(gains) > 1 else ""), "ncu rules",
            NCU_BOUND_LABEL.get(k.bound if k is not None else "", LATENCY),
            ncu_rule_actions(str(rule)),
            place=_launches(trace, ncu.kernels, kernel, places)))
    return out


def _launches(trace: Trace, kernels: list, name: Any, places: dict) -> Place | None:
    """The place of every launch of kernel ``name``, made once per name (``places``)."""
    if name not in places:
        places[name] = Place.of_slices(trace, [k.index for k in kernels if k.name == name])
    return places[name]


def _failed_checks(trace: Trace, kernels: list) -> list[Opportunity]:
    """Without NCU's rule results: one opportunity per kernel name and bound class whose
    launches failed health checks, those with the most time first (the launches' total
    duration: a kernel launched 500 times before one launched once if it takes longer in
    all); its figures are its longest launch's, its actions those of every check any of its
    launches failed."""
    groups: dict[tuple[str, str], list] = {}
    for k in kernels:
        if k.failed:
            groups.setdefault((k.name, k.bound), []).append(k)
    total = sum(k.duration for k in kernels) or 1
    time = {key: sum(k.duration for k in ks) for key, ks in groups.items()}
    out = []
    for key in sorted(groups, key=lambda key: -time[key]):     # (stable: first launch first)
        ks = groups[key]
        longest = max(ks, key=lambda k: k.duration)
        checks = "; ".join(f"{c['text']} (healthy {c['threshold']})" for c in longest.failed)
        if len(ks) > 1:
            checks = (f"{len(ks)} launches, {_us(time[key])} = {_f(pct(time[key], total))} "
                      f"of kernel time; the longest: {checks}")
        failed: dict[str, dict] = {}        # every check failed, the longest's first
        for k in [longest, *ks]:
            for c in k.failed:
                failed.setdefault(c["check"], c)
        out.append(Opportunity(
            f"{longest.name}: {longest.bound}", checks, None,
            "no estimate without NCU rule results", "ncu checks",
            NCU_BOUND_LABEL.get(longest.bound, LATENCY),
            ncu_check_actions(list(failed.values())),
            place=Place.of_slices(trace, [k.index for k in ks])))
    return out
