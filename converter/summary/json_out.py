"""JSON summary: the analysis dict as is (stable keys, units in key names: ``_us``, ``_ns``,
``_pct``), indented for people and diffs."""

from __future__ import annotations

from typing import Any

import orjson


def render_json(data: dict[str, Any]) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
                        default=str) + b"\n"
