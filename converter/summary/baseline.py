"""A JSON summary written earlier (a baseline, either side of ``compare``), read as this
version's schema.

Schema 3 (this version) is taken as it is.  Schema 2 (tracecvt 0.1.0 before schema 3) kept
data in keys: ``key_figures`` by printed figure name ("busy time", "AIC utilization",
"semantic label 'gelu' total"), ``configuration.lanes`` and ``critical_path.time_by_kind_us``
by lane kind, ``ncu.bound_counts`` and ``ncu.bound_time_us`` by bound class.  Those maps are
rewritten into schema 3's lists and identifier keys (the figures are the same numbers); every
other part is the same in both.  Any other schema is refused with one line.
"""

from __future__ import annotations

import re
from typing import Any

from ..analyses.key_figures import FIXED, KIND
from ..errors import InputError
from . import SCHEMA

EARLIER = "tracecvt-summary/2"
_LABEL_TOTAL = re.compile(r"(.*?) '(.*)' total", re.S)


def read_summary(data: Any, where: object = None) -> dict[str, Any]:
    """``data`` (a JSON summary of schema 3 or 2) as schema 3; InputError naming ``where``
    (the file, or None for a dict given to the API) for anything else."""
    what = where if where is not None else "baseline"
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == SCHEMA:
        return data
    if schema != EARLIER:
        found = f"schema {schema!r}" if isinstance(schema, str) else "no tracecvt schema"
        raise InputError(what, f"not a summary this tracecvt reads ({found}; it reads "
                               f"{SCHEMA} and {EARLIER}): write it again with "
                               "`tracecvt summary --format json RUN`")
    out = dict(data, schema=SCHEMA)
    out["key_figures"] = _key_figures(data.get("key_figures") or {}, what)
    conf = data.get("configuration")
    if isinstance(conf, dict) and isinstance(conf.get("lanes"), dict):
        out["configuration"] = dict(conf, lanes=[
            {"kind": k, "lanes": v.get("lanes"), "used": v.get("used")}
            for k, v in conf["lanes"].items()])
    cp = data.get("critical_path")
    if isinstance(cp, dict) and "time_by_kind_us" in cp:
        cp = {k: v for k, v in cp.items() if k != "time_by_kind_us"}
        cp["time_by_kind"] = [{"kind": k, "time_us": v} for k, v in
                              (data["critical_path"]["time_by_kind_us"] or {}).items()]
        out["critical_path"] = cp
    ncu = data.get("ncu")
    if isinstance(ncu, dict) and "bound_counts" in ncu:
        counts = ncu.get("bound_counts") or {}
        time = ncu.get("bound_time_us") or {}
        out["ncu"] = {**{k: v for k, v in ncu.items()
                         if k not in ("bound_counts", "bound_time_us")},
                      "bounds": [{"bound": b, "kernels": n, "time_us": time.get(b)}
                                 for b, n in counts.items()]}
    return out


def _key_figures(kf: dict[str, Any], what: object) -> dict[str, Any]:
    """Schema 2's name-keyed key figures ({name: {value, unit, better}}) as schema 3's."""
    by_name = {name: key for key, name, _, _ in FIXED}
    kind_suffix = [(f" {name}", key) for key, name, _, _ in KIND]
    out: dict[str, Any] = {}
    kinds: dict[str, dict[str, Any]] = {}
    totals = []
    for name, fig in kf.items():
        value = fig.get("value") if isinstance(fig, dict) else None
        if name in by_name:
            out[by_name[name]] = value
            continue
        m = _LABEL_TOTAL.fullmatch(name)
        if m:
            totals.append({"table": m[1], "label": m[2], "total_us": value})
            continue
        for suffix, key in kind_suffix:
            if name.endswith(suffix):
                kind = name[:-len(suffix)]
                row = kinds.setdefault(kind, {"kind": kind, "utilization_pct": None,
                                              "bubble_rate_pct": None})
                row[key] = value
                break
        else:
            raise InputError(what, f"key figure {name!r} is not one {EARLIER} writes")
    if kinds:
        out["kinds"] = list(kinds.values())
    if totals:
        out["label_totals"] = totals
    return out
