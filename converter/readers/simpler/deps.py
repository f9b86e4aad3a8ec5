"""Loading a simpler run's ``deps.json`` (format reference ../shared/docs/formats/simpler.md,
section 3) into checked, plain Python data: its tasks' functions and its dependency edges.
What is malformed is dropped here, counted and reported as in ``records``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ...errors import InputError
from ...fileio import UTF8_BOM, is_utf8, load_json, read_bytes
from ...forkpass import ForkedPass, fork_pass
from ...model import UINT64_END
from .records import Warn


# Only the fields tracecvt uses are decoded (msgspec skips the rest, e.g. every task's args,
# unparsed): 5x faster than a full parse.  Fields are Any: their checks are ours, below.

class _Task(msgspec.Struct, gc=False):
    task_id: Any = None
    kernel_ids: Any = None
    block_num: Any = None


class _Edge(msgspec.Struct, gc=False):
    pred: Any = None
    succ: Any = None
    arg: Any = None
    source: Any = None
    overlap: Any = None
    tensor_id: Any = None
    flags: Any = None


class _DepsDoc(msgspec.Struct, gc=False):
    tasks: list[_Task] | None = None
    edges: list[_Edge] | None = None


_DEPS = msgspec.json.Decoder(_DepsDoc)


def _tolerant(doc: Any) -> _DepsDoc | None:
    """The same view of a deps.json whose shape the fast decoder refused (an entry that is
    not an object, a list where an object belongs): entries kept as they are, to be counted
    as dropped."""
    if not isinstance(doc, dict):
        return None

    def entries(value: Any, cls: type) -> Any:
        if not isinstance(value, list):
            return value
        names = cls.__struct_fields__
        return [cls(**{k: e.get(k) for k in names}) if isinstance(e, dict) else e
                for e in value]

    return _DepsDoc(entries(doc.get("tasks"), _Task), entries(doc.get("edges"), _Edge))


@dataclass
class Deps:
    path: Path
    # task id -> (kernel_ids [aic, aiv0, aiv1], block_num)
    tasks: dict[int, tuple[list[int], int]]
    edges: list[tuple[int, int, dict[str, Any] | None]]   # (pred, succ, flow args) per row
    order: list[int]                            # task ids in submit order


_KERNEL_END = 1 << 62


def _id(v: Any) -> int | None:
    """A 64-bit task id: a decimal string in deps.json (a number is accepted too)."""
    if type(v) is int:
        return v if 0 <= v < UINT64_END else None
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 20:
        n = int(v)
        return n if n < UINT64_END else None
    return None


def _typed(data: bytes) -> _DepsDoc | None:
    """The file decoded typed, or None where the plain parser must read it (not UTF-8
    throughout, malformed, fields of other types)."""
    if not is_utf8(data):
        return None
    try:
        return _DEPS.decode(data[3:] if data[:3] == UTF8_BOM else data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def load_deps(path: Path, warn: Warn) -> Deps | None:
    """``deps.json``, or None (with a warning) when it cannot be used at all."""
    try:
        data = read_bytes(path)
        doc = _typed(data)
        if doc is None:
            doc = _tolerant(load_json(path, data))  # or the one-line reason it is not JSON
    except InputError as e:
        warn(f"{e}; no function names or dependencies")
        return None
    if doc is None or not isinstance(doc.tasks, list):
        warn(f"{path}: not a deps.json (no tasks list); no function names or dependencies")
        return None
    tasks: dict[int, tuple[list[int], int]] = {}
    order = []
    bad = 0
    seen: dict[str, int] = {}       # ids as written -> as numbers (the edges repeat them)
    for t in doc.tasks:
        if type(t) is not _Task:
            bad += 1
            continue
        written = t.task_id
        tid = _id(written)
        if tid is None:
            bad += 1
            continue
        if type(written) is str:
            seen[written] = tid
        k = t.kernel_ids
        if type(k) is list and len(k) == 3 and type(a := k[0]) is int \
                and type(b := k[1]) is int and type(c := k[2]) is int \
                and -1 <= a < _KERNEL_END and -1 <= b < _KERNEL_END and -1 <= c < _KERNEL_END:
            kernels = [a, b, c]                 # (the usual case, checked faster)
        else:
            kernels = [x if type(x) is int and -1 <= x < _KERNEL_END else -1 for x in k[:3]] \
                if isinstance(k, list) else []
            kernels += [-1] * (3 - len(kernels))
        block = t.block_num
        tasks[tid] = (kernels, block if type(block) is int and block >= 1 else 1)
        order.append(tid)
    if bad:
        warn(f"{path}: {bad} tasks[] entries without a valid task_id dropped")
    edges = []
    raw = doc.edges
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        warn(f"{path}: edges is not a list; no dependencies read")
        raw = []
    bad = 0
    for e in raw:
        if type(e) is not _Edge:
            bad += 1
            continue
        p = seen.get(e.pred) if type(e.pred) is str else None
        if p is None:
            p = _id(e.pred)
        s = seen.get(e.succ) if type(e.succ) is str else None
        if s is None:
            s = _id(e.succ)
        if p is None or s is None:
            bad += 1
            continue
        edges.append((p, s, _edge_args(e)))
    if bad:
        warn(f"{path}: {bad} of {len(raw)} edges dropped: pred/succ not task ids")
    return Deps(path, tasks, edges, order)


# From this size on, a deps.json is loaded by a forked process while this one loads the
# records (``start_deps``); below it the fork costs about what it saves (measured:
# docs/performance.md, tenth session).
PARALLEL_MIN_BYTES = 2 << 20


def start_deps(path: Path, workers: int) -> ForkedPass | None:
    """``load_deps(path)`` started in a forked process, where ``workers`` allows a second
    one and the file is large enough to pay for it; None where it is loaded here
    (``finish_deps`` then does it)."""
    if workers < 2:
        return None
    try:
        if path.stat().st_size < PARALLEL_MIN_BYTES:
            return None
    except OSError:
        return None                     # load_deps says why, here

    def run() -> tuple[tuple | None, list[str]]:
        said: list[str] = []
        deps = load_deps(path, said.append)
        return (None if deps is None else (deps.tasks, deps.edges, deps.order)), said
    return fork_pass(run, _WIRE)


# What the process sends back (as msgpack: ``fork_pass``): Deps's parts, in their own types,
# and the warnings.
_WIRE = tuple[tuple[dict[int, tuple[list[int], int]],
                    list[tuple[int, int, dict[str, Any] | None]], list[int]] | None,
              list[str]]


def finish_deps(helper: ForkedPass | None, path: Path, warn: Warn) -> Deps | None:
    """What ``start_deps``'s process loaded, its warnings told through ``warn``; loaded
    here where it was not started, failed or died (the same result, the same warnings)."""
    if helper is not None:
        try:
            got = helper.result()
        finally:
            helper.abandon()
        if got is not None:
            parts, said = got
            for line in said:
                warn(line)
            return None if parts is None else Deps(path, *parts)
    return load_deps(path, warn)


def _edge_args(e: _Edge) -> dict[str, Any] | None:
    """A flow's args: source, overlap, tensor_id (text), arg, flags ("wait,retain")."""
    args: dict[str, Any] = {}
    if type(e.source) is str:
        args["source"] = e.source
    if type(e.overlap) is str:
        args["overlap"] = e.overlap
    t = e.tensor_id
    if type(t) is str:
        args["tensor_id"] = t
    elif type(t) is int:
        args["tensor_id"] = str(t)
    a = e.arg
    if type(a) is int and -(1 << 63) <= a < 1 << 63:
        args["arg"] = a
    if type(e.flags) is list:
        try:
            args["flags"] = ",".join(e.flags)
        except TypeError:           # not all text
            pass
    return args or None
