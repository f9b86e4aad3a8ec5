"""Pieces shared by the PyPTO merged-file and raw-file paths.

Format facts: ../shared/docs/formats/pypto.md (sections 2, 3 and 5).
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from typing import Any

from ...model import (ARG_LINES, GROUP, INPUTS, INT64_MIN, INVENTED_TIMES, LABEL_ARGS, LANE,
                      MARKER, OUTPUTS, SEMANTIC_LABEL, TASK_GRAPH, UINT64_END, Clock, Trace)

# Clocks (section 2.3).  Cost-model cycles are converted at 1800 cycles/us in SIM.
SIM_CYCLES_PER_US = 1800
NPU_TICKS_PER_US = {"A2/A3": 50, "950": 1000}

# The roles of PyPTO's own task-graph inputs, in the order a run's graph is taken from them
# (raw._pick_topo; a task list found beside the times, role "task_graph", comes after them).
GRAPH_ROLES = ("dyn_topo", "tmp_topo", "static_topo")

# The cause (Trace.warn) of every warning about PyPTO's HUB seqNo quirk (5.6).
HUB_QUIRK = "PyPTO's HUB seqNo quirk (HUB tasks of every device task recorded with seqNo 0)"

MERGED_US = Clock("pypto-us", "us", Fraction(1000),
                  "microseconds as written by PyPTO's draw_swim_lane.py (raw count / clock MHz)")


def cycles_clock(mhz: Fraction | int, what: str) -> Clock:
    mhz = Fraction(mhz)
    return Clock(f"pypto-{what}", "cycle" if what == "sim" else "tick", Fraction(1000) / mhz,
                 f"{what} counts at {float(mhz):g} per us")


# -- lanes --------------------------------------------------------------------------------

_CORE_RE = re.compile(r"^(.*?)[_-]?(\d+)$")
GROUP_ORDER = {"AIC": 0, "AIV": 1}


def core_lane_name(core_type: str, core_idx: int) -> str:
    """Thread name PyPTO gives a core in merged_swimlane.json (core_idx = blockIdx + 1)."""
    if "AIC" in core_type and core_type != "AI-CPU":
        return f"AIC_{core_idx}"
    if "AIV" in core_type:
        return f"AIV_{core_idx}"
    return f"{core_type}_{core_idx}"


def lane_sort_key(name: str) -> tuple[int, int, str]:
    m = _CORE_RE.match(name)
    kind, num = (m.group(1), int(m.group(2))) if m else (name, -1)
    return (GROUP_ORDER.get(kind, 2), num, name)


class MachineView:
    """The device group of a PyPTO run: AIC lanes, AIV lanes, the rest, then counters."""

    GROUPS = (("AIC", "AIC cores (cube)"), ("AIV", "AIV cores (vector)"),
              ("other", "HUB, fake and other cores"))

    def __init__(self, trace: Trace, title: str, description: str, order: int = 0):
        self.trace = trace
        self.device = trace.add_track(title, None, GROUP, order, description)
        self.groups: dict[str, int] = {}
        self.lanes: dict[str, int] = {}
        self.counter_group: int | None = None

    def _group(self, key: str) -> int:
        g = self.groups.get(key)
        if g is None:
            title = dict(self.GROUPS)[key]
            g = self.groups[key] = self.trace.add_track(
                title, self.device, GROUP, [k for k, _ in self.GROUPS].index(key))
        return g

    def lane(self, name: str) -> int:
        lane = self.lanes.get(name)
        if lane is None:
            rank = lane_sort_key(name)[0]
            key = ("AIC", "AIV", "other")[rank]
            lane = self.lanes[name] = self.trace.add_track(
                name, self._group(key), LANE, 0, nesting=False)
        return lane

    def counter(self, name: str, unit: str, description: str = ""):
        if self.counter_group is None:
            self.counter_group = self.trace.add_track("Counters", self.device, GROUP, 10)
        return self.trace.add_counter(name, self.counter_group, unit, description=description)

    def finish(self) -> None:
        """Number lanes within each group: AIC, AIV, then the rest, by core index."""
        for group in self.groups.values():
            children = self.trace.tracks[group].children
            children.sort(key=lambda i: lane_sort_key(self.trace.tracks[i].name))
            for rank, i in enumerate(children):
                self.trace.tracks[i].order = rank


# -- task args ----------------------------------------------------------------------------

DTYPES = ["INT4", "INT8", "INT16", "INT32", "INT64", "FP8", "FP16", "FP32", "BF16", "HF4",
          "HF8", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL", "DOUBLE", "FP8E5M2",
          "FP8E4M3", "FP8E8M0"]
DTYPE_BITS = [4, 8, 16, 32, 64, 8, 16, 32, 16, 4, 8, 8, 16, 32, 64, 8, 64, 8, 8, 8]

MAX_HINT_CHARS = 1 << 20


class HintParser:
    """Parses PyPTO's operand and execution hints, caching by the hint text.

    Operand hints are Python literals (single quotes, int keys): they are parsed with
    ``ast.literal_eval``, never evaluated.  Tasks of the same CALL share one hint string, so
    the cache makes this cheap and lets tasks share one parsed object.
    """

    def __init__(self) -> None:
        self.operands: dict[str, Any] = {"": None}
        self.exec_stats: dict[str, Any] = {"": None}
        self.bad: int = 0

    def parse_operands(self, hint: str) -> Any:
        try:
            return self.operands[hint]
        except KeyError:
            pass
        value = self.operands[hint] = self._operands(hint)
        return value

    def _operands(self, hint: str) -> Any:
        if len(hint) > MAX_HINT_CHARS:
            self.bad += 1
            return hint[:200] + "…"
        try:
            data = ast.literal_eval(hint)
            out = []
            for entry in data:
                (magic, info), = entry.items()
                out.append(operand(magic, info.get("shape"), info.get("dtype"),
                                   info.get("rawmagic")))
            return out
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError,
                AttributeError):
            self.bad += 1
            return hint

    def parse_exec(self, hint: str) -> Any:
        try:
            return self.exec_stats[hint]
        except KeyError:
            pass
        value = self.exec_stats[hint] = parse_exec_hint(hint)
        return value


_WIDE = range(INT64_MIN, UINT64_END)     # what a trace can hold as an integer


def _fits(v: Any) -> Any:
    """Integers beyond 64 bits (hints are Python literals: unbounded) are kept as text."""
    if isinstance(v, int) and not isinstance(v, bool) and v not in _WIDE:
        return str(v)
    if isinstance(v, list):
        return [_fits(x) for x in v]
    return v


def operand(magic: Any, shape: Any, dtype: Any, rawmagic: Any) -> dict[str, Any]:
    """One tensor operand as an args dict: magic, shape, dtype name, raw tensor, bytes."""
    out: dict[str, Any] = {"tensor": _fits(magic)}
    if isinstance(shape, (list, tuple)):
        out["shape"] = _fits(list(shape))
    if isinstance(dtype, int) and 0 <= dtype < len(DTYPES):
        out["dtype"] = DTYPES[dtype]
        if isinstance(shape, (list, tuple)) and all(isinstance(d, int) and d >= 0
                                                    for d in shape):
            n = 1
            for d in shape:
                n *= d
            if n * DTYPE_BITS[dtype] // 8 in _WIDE:
                out["bytes"] = n * DTYPE_BITS[dtype] // 8
    elif dtype is not None:
        out["dtype"] = _fits(dtype)
    if rawmagic is not None:
        out["raw_tensor"] = _fits(rawmagic)
    return out


_EXEC_RE = re.compile(
    r"Average Execution Time:\s*(?P<avg>\S+)\s*"
    r"Max Execution Time:\s*(?P<max>[^,\s]+),\s*Task:\s*\[(?P<maxt>[^\]]*)\]\s*"
    r"Min Execution Time:\s*(?P<min>[^,\s]+),\s*Task:\s*\[(?P<mint>[^\]]*)\]")


def parse_exec_hint(hint: str) -> Any:
    if not hint:
        return None
    m = _EXEC_RE.search(hint)
    if not m:
        return hint
    try:
        return {"avg_us": float(m["avg"]), "max_us": float(m["max"]), "max_task": m["maxt"],
                "min_us": float(m["min"]), "min_task": m["mint"]}
    except ValueError:
        return hint


def declarations() -> dict[str, Any]:
    """What every PyPTO run declares to the analyses, whatever its files: its flows are the
    task graph (model.TASK_GRAPH: a task waits for every predecessor), and which args of
    SharedTaskArgs label tasks, by "time by label" table (model.LABEL_ARGS), and which of them
    a .pftrace writes as one line (model.ARG_LINES: a call's label, hashes and its leaf
    function's execution statistics, facts of the call that PyPTO's own args spread over
    ``event-hint``, ``color`` and ``execution-hint``)."""
    return {TASK_GRAPH: True,
            LABEL_ARGS: {SEMANTIC_LABEL: "semanticLabel", "leaf_function": "leafHash"},
            ARG_LINES: {"call": ["semanticLabel", "rootHash", "leafHash", "callOpMagic",
                                 "exec_stats"]}}


class SharedTaskArgs:
    """Args that every task of one CALL has in common, built once and shared by reference.

    A slice then carries only ``{"seqNo", "taskId"}`` of its own (``Slice.shared_args``);
    the dict is the same whichever file the task was read from.  What the task's name and
    category already say is not repeated (every arg is a row per task in Trace Processor):
    rootIndex and psgId are in the name (``seq-func-op-rootIndex-psgId(label)``), a fake
    task is category ``fake`` (``model.INVENTED_TIMES``), and an operand's bytes are in its
    dict; the semantic label stays, as the analyses' "time by label" key.
    """

    def __init__(self) -> None:
        self.cache: dict[Any, dict[str, Any]] = {}

    def get(self, key: Any, root_hash: Any, leaf_hash: Any, op_magic: Any, label: str,
            inputs: Any, outputs: Any, exec_stats: Any) -> dict[str, Any]:
        shared = self.cache.get(key)
        if shared is None:
            shared = self.cache[key] = {
                "rootHash": root_hash,
                "leafHash": leaf_hash,
                "callOpMagic": op_magic,
                "semanticLabel": label,
            }
            for name, operands in ((INPUTS, inputs), (OUTPUTS, outputs)):
                if operands is not None:
                    shared[name] = operands
            if exec_stats is not None:
                shared["exec_stats"] = exec_stats
        return shared


def task_category(core_name: str, fake: bool) -> str:
    if fake:
        return INVENTED_TIMES          # format reference 5.5
    if core_name.startswith("HUB"):
        return MARKER                  # 1-cycle markers on a pseudo-core
    return "task"
