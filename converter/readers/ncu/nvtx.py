"""NVTX: the CSV's encoded range columns, and ranges rebuilt as spans of their kernels.

Nsight Compute stores only the NVTX state at each kernel launch (the push/pop stack and the
active start/end ranges), not when ranges started or ended.  A range therefore becomes a slice
from the start of the first to the end of the last of a run of consecutive kernels launched
inside it, on the serialized timeline.  Two back-to-back ranges with the same name and the
same parents cannot be told apart and show as one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...model import INT64_END
from .kernels import Kernel, NvtxDomain

DEFAULT_DOMAIN = "<default domain>"
PUSH_POP_COLUMN = "thread Domain:Push/Pop_Range"
START_END_COLUMN = "Id:Domain:Start/Stop_Range"
_ATTR_FIELDS = 6          # PL_Type, PL_Value, CLR_Type, Color, Msg_Type, Msg


# -- CSV cells ------------------------------------------------------------------------------
def _entries(text: str) -> list[str]:
    """The double-quoted entries of an NVTX cell, separated by two spaces."""
    s = text.strip()
    if not s:
        return []
    if s.startswith('"') and s.endswith('"') and len(s) >= 2:
        return s[1:-1].split('"  "')
    return [e for e in s.split("  ") if e]


def _attrs(fields: list[str]) -> dict[str, Any]:
    pl_type, pl_value, _clr_type, color, _msg_type, msg = fields
    out: dict[str, Any] = {}
    if msg and msg != "none":
        out["message"] = msg
    if color and color != "none":
        out["color"] = color
    if pl_value and pl_value != "none":
        out["payload"] = pl_value
        if pl_type and pl_type != "none":
            out["payload_type"] = pl_type
    return out


def parse_push_pop(cell: str) -> tuple[int | None, list[NvtxDomain]]:
    """``2199  "<default domain>:step 0:none:…"  "<default domain>:layer1:none:…" ``
    -> (thread id, domains with their stacks, outermost first)."""
    s = cell.strip()
    if not s:
        return None, []
    tid_text, _, rest = s.partition(" ")
    try:
        tid: int | None = int(tid_text) if len(tid_text) <= 20 else None
    except ValueError:
        tid, rest = None, s
    if tid is not None and not 0 <= tid < INT64_END:
        tid = None
    domains: dict[str, NvtxDomain] = {}
    for entry in _entries(rest):
        fields = entry.split(":")
        if len(fields) >= 2 + _ATTR_FIELDS:
            domain, name = fields[0], ":".join(fields[1:-_ATTR_FIELDS])
            attrs = _attrs(fields[-_ATTR_FIELDS:])
        else:
            domain, name, attrs = fields[0], ":".join(fields[1:]), {}
        d = domains.get(domain)
        if d is None:
            d = domains[domain] = NvtxDomain(domain)
        if attrs:
            d.attrs[len(d.push_pop)] = attrs
        d.push_pop = d.push_pop + (name,)
    return tid, list(domains.values())


def parse_start_end(cell: str, domains: list[NvtxDomain]) -> None:
    """Start/end ranges (``Id:Domain:Start/Stop_Range:…``) into ``domains``.

    No sample export has start/end ranges; this follows the column title (id, domain, name,
    then the six attribute fields) and the push/pop column's quoting.
    """
    by_name = {d.name: d for d in domains}
    for entry in _entries(cell):
        fields = entry.split(":")
        if len(fields) >= 3 + _ATTR_FIELDS:
            domain, name = fields[1], ":".join(fields[2:-_ATTR_FIELDS])
        elif len(fields) >= 3:
            domain, name = fields[1], ":".join(fields[2:])
        else:
            domain, name = DEFAULT_DOMAIN, entry
        d = by_name.get(domain)
        if d is None:
            d = by_name[domain] = NvtxDomain(domain)
            domains.append(d)
        d.start_end = d.start_end + (name,)


def nvtx_path(domains: list[NvtxDomain]) -> str:
    """The push/pop path of a kernel: ``step 3/layer1``; other domains as ``domain@a/b``,
    joined with ``; `` (the syntax of ``ncu --nvtx-include``)."""
    parts = []
    for d in sorted(domains, key=lambda d: d.name != DEFAULT_DOMAIN):
        if not d.push_pop:
            continue
        path = "/".join(d.push_pop)
        parts.append(path if d.name == DEFAULT_DOMAIN else f"{d.name}@{path}")
    return "; ".join(parts)


# -- ranges on the serialized timeline ------------------------------------------------------
@dataclass
class RangeSpan:
    domain: str
    name: str
    path: tuple[str, ...]
    depth: int
    start: int                      # ns
    end: int
    first: int                      # position of the first kernel in the kernel list
    last: int
    kernels: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)   # kernel short names (top level only)
    kind: str = "push/pop"


def build_ranges(kernels: list[Kernel], starts: list[int],
                 ends: list[int]) -> dict[tuple[str, str], list[RangeSpan]]:
    """Range spans per (domain, kind), parents before children, in time order."""
    out: dict[tuple[str, str], list[RangeSpan]] = {}
    open_pp: dict[str, list[RangeSpan]] = {}
    open_se: dict[str, dict[str, RangeSpan]] = {}
    seen_domains: list[str] = []
    for pos, k in enumerate(kernels):
        present = {d.name: d for d in k.nvtx}
        for name in present:
            if name not in open_pp:
                open_pp[name] = []
                open_se[name] = {}
                seen_domains.append(name)
        for dname in seen_domains:
            d = present.get(dname)
            stack = d.push_pop if d is not None else ()
            opened = open_pp[dname]
            common = 0
            for span, name in zip(opened, stack):
                if span.name != name:
                    break
                common += 1
            while len(opened) > common:
                opened.pop()
            for level in range(common, len(stack)):
                span = RangeSpan(dname, stack[level], stack[:level + 1], level, starts[pos],
                                 ends[pos], pos, pos,
                                 attrs=dict(d.attrs.get(level, {})) if d is not None else {})
                out.setdefault((dname, "push/pop"), []).append(span)
                opened.append(span)
            for span in opened:
                span.end = ends[pos]
                span.last = pos
                span.kernels += 1
            if opened:
                opened[0].names.append(k.short_name)
            # start/end ranges: runs of consecutive kernels with the range active
            active = open_se[dname]
            names = set(d.start_end) if d is not None else set()
            for name in [n for n in active if n not in names]:
                del active[name]
            for name in (d.start_end if d is not None else ()):
                span = active.get(name)
                if span is None:
                    span = active[name] = RangeSpan(dname, name, (name,), 0, starts[pos],
                                                    ends[pos], pos, pos, kind="start/end")
                    out.setdefault((dname, "start/end"), []).append(span)
                span.end = ends[pos]
                span.last = pos
                span.kernels += 1
    return out


def cut_short(kernels: list[Kernel], spans: list[RangeSpan]) -> dict[str, Any] | None:
    """Evidence that the report stops early: it ends inside a top-level range whose kernels
    are a strict prefix of the kernels of the top-level range before it."""
    top = [s for s in spans if s.depth == 0]
    if len(top) < 2:
        return None
    last, prev = top[-1], top[-2]
    if last.last != len(kernels) - 1:
        return None
    n, m = len(last.names), len(prev.names)
    if n < m and prev.names[:n] == last.names:
        return {"range": last.name, "previous_range": prev.name, "kernels_in_range": n,
                "kernels_in_previous_range": m, "missing_at_least": m - n}
    return None
