"""Model archive writer (.tcmodel): the whole intermediate model, losslessly, in the compact
columnar protobuf layout of ``proto/tracecvt_model.proto``.

The message is built with the generated upb classes: packed columns go in with one
``extend`` each and are encoded in C, which measured faster than assembling them with
``protowire`` varint by varint (see docs/performance.md).  The CRC-32 End record is appended
to the serialized bytes.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import operator
import zlib
from typing import IO, Any, Callable

import orjson

from .. import __version__
from ..arg_rows import as_dict
from ..model import INT64_END, INT64_MIN, UINT64_END, RunMeta, Trace
from ..modelfile import (DICT, DICT_TYPED_KEYS, END_PREFIX, FORMAT_VERSION, JSON, LIST,
                         MAGIC_TEXT, META_FIELDS, REF, TUPLE, pack_crc)
from ..modelfile import tracecvt_model_pb2 as pb
from ..modelfile.compare import same_value

# gzip level of written files: level 1 makes the largest run's file 2.8 x smaller than
# uncompressed (2.05 MB vs 5.70 MB) for 15 ms of its ~200 ms load (docs/performance.md).
COMPRESSLEVEL = 1


class ModelWriteError(ValueError):
    """The model holds something the format cannot store exactly (a reader broke the model's
    contract, e.g. a float timestamp or an args value that is not JSON-like)."""


def _unstorable(v: Any) -> ModelWriteError:
    return ModelWriteError(f"cannot store a {type(v).__name__} value ({v!r:.60}): model "
                           "values are None, bool, int, float, str, list, tuple or dict")


class _Strings:
    """The string table: index 0 is ""."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            if not isinstance(text, str):
                raise ModelWriteError(f"expected a str, got {type(text).__name__} {text!r}")
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return i

    def column(self, texts) -> list[int]:
        index = self.index
        get = index.get
        out = []
        append = out.append
        for t in texts:
            i = get(t)
            if i is None:
                i = self(t)
            append(i)
        return out


class _Dicts:
    """The dict table: one entry per distinct dict object, numbered in first-use order until
    ``groups`` renumbers them group by group."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.objs: list[dict] = []

    def column(self, dicts, what: str) -> list[int]:
        """Table index + 1 per entry (0 for None), in first-use numbering."""
        ids = self.ids
        objs = self.objs
        out = []
        append = out.append
        for d in dicts:
            if d is None:
                append(0)
                continue
            k = ids.get(id(d))
            if k is None:
                if not isinstance(d, dict):
                    raise ModelWriteError(f"{what}: expected a dict or None, got "
                                          f"{type(d).__name__}")
                k = ids[id(d)] = len(objs) + 1
                objs.append(d)
            append(k)
        return out


_CONTAINERS = (list, tuple, dict)




class _Values:
    """Encodes JSON-like values; containers go to the container table once per object,
    children before parents."""

    def __init__(self, strings: _Strings) -> None:
        self.strings = strings
        self.memo: dict[int, int] = {}   # id(container) -> table index
        self.keep: list[Any] = []        # keeps every memoized object alive
        self.busy: set[int] = set()
        self.kinds: list[int] = []
        self.sizes: list[int] = []
        self.items: list[Any] = []
        self.keys: list[str] = []
        self.typed_keys: list[Any] = []
        self.json: list[bytes] = []
        self.counts: dict[int, int] = {}  # id(container) -> references to it in the model

    def count(self, values) -> None:
        """Count the references to containers among ``values`` and, once, inside them.
        Called for every value of the model before anything is encoded."""
        types = set(map(type, values))
        if not any(issubclass(t, _CONTAINERS) for t in types):
            return
        counts = self.counts
        stack: list = []
        children = values
        while True:
            for v in children:
                if isinstance(v, _CONTAINERS):
                    n = counts.get(id(v), 0)
                    counts[id(v)] = n + 1
                    if not n:                   # first reference: look inside it once
                        stack.append(v)
            if not stack:
                break
            c = stack.pop()
            children = [*c.values(), *c] if isinstance(c, dict) else c

    def _as_json(self, v) -> bytes | None:
        """``v`` as JSON when that is exact: only dicts with str keys, lists, None, bool,
        int64 ints, finite floats and strs, and no container inside ``v`` is referenced from
        anywhere else (its sharing would be lost).  Verified by decoding it back."""
        counts, memo = self.counts, self.memo
        stack = [v]
        while stack:
            c = stack.pop()
            t = type(c)
            if t is dict:
                if not all(type(k) is str for k in c):
                    return None
                items = c.values()
            elif t is list:
                items = c
            else:
                return None
            for x in items:
                tx = type(x)
                if tx is str or tx is bool or x is None:
                    continue
                if tx is int:
                    if not INT64_MIN <= x < INT64_END:
                        return None
                elif tx is float:
                    if not math.isfinite(x):
                        return None
                elif tx is dict or tx is list:
                    if counts.get(id(x), 0) != 1 or id(x) in memo:
                        return None
                    stack.append(x)
                else:
                    return None
        try:
            blob = orjson.dumps(v)
        except (TypeError, orjson.JSONEncodeError):      # e.g. a str with lone surrogates
            return None
        return blob if same_value(orjson.loads(blob), v) else None

    def set(self, msg, v: Any) -> None:
        """Store the scalar or container ``v`` in the Value message ``msg``."""
        if v is None:
            msg.null = True
        elif isinstance(v, bool):
            msg.bool_value = v
        elif isinstance(v, int):
            if INT64_MIN <= v < INT64_END:
                msg.int_value = v
            else:
                msg.big_int = str(int(v))
        elif isinstance(v, float):
            msg.double_value = v
        elif isinstance(v, str):
            msg.string_value = self.strings(str(v))
        elif isinstance(v, _CONTAINERS):
            msg.ref = self.ref(v)
        else:
            raise _unstorable(v)

    def ref(self, v) -> int:
        """The container table index of ``v``, adding it (children first) if new."""
        key = id(v)
        i = self.memo.get(key)
        if i is not None:
            return i
        if not isinstance(v, _CONTAINERS):
            raise _unstorable(v)
        if key in self.busy:
            raise ModelWriteError("a value contains itself")
        blob = self._as_json(v)
        if blob is not None:
            self.json.append(blob)
            self.kinds.append(JSON)
            self.sizes.append(0)
            i = self.memo[key] = len(self.kinds) - 1
            self.keep.append(v)
            return i
        self.busy.add(key)
        ref = self.ref
        keys: list = []
        if isinstance(v, dict):
            items = list(v.values())
            keys = list(v)
            kind = DICT if all(type(k) is str for k in keys) else DICT_TYPED_KEYS
        else:
            kind = LIST if isinstance(v, list) else TUPLE
            items = v
        # Children first: their items and keys go into the flat lists before this one's.
        for x in items:
            if isinstance(x, _CONTAINERS):
                ref(x)
        if kind == DICT_TYPED_KEYS:
            for k in keys:
                if isinstance(k, _CONTAINERS):
                    ref(k)
            self.typed_keys.extend(keys)
        elif kind == DICT:
            self.keys.extend(keys)
        self.items.extend(items)
        self.kinds.append(kind)
        self.sizes.append(len(items))
        i = self.memo[key] = len(self.kinds) - 1
        self.keep.append(v)
        self.busy.discard(key)
        return i

    def write_table(self, mc) -> None:
        """Fill the Containers message (after every value has been encoded)."""
        mc.kinds.extend(self.kinds)
        mc.sizes.extend(self.sizes)
        _set_column(mc.items, self.items, self)
        mc.keys.extend(self.strings.column(self.keys))
        _set_column(mc.typed_keys, self.typed_keys, self)
        mc.json.extend(self.json)


# Column field numbers, used as the per-value kinds of a mixed column (0: None).
_K_INT, _K_UINT, _K_DOUBLE, _K_STR, _K_BOOL, _K_VALUE, _K_REF = range(1, REF + 1)


def _set_column(col, values: list, enc: _Values) -> None:
    """Store ``values`` in the Column message ``col``: one typed field when they share a
    type, per-value kinds otherwise."""
    if not values:
        return
    types = set(map(type, values))
    if len(types) == 1:
        t = next(iter(types))
        if t is int:
            lo, hi = min(values), max(values)
            if INT64_MIN <= lo and hi < INT64_END:
                col.ints.extend(values)
                return
            if lo >= 0 and hi < UINT64_END:
                col.uints.extend(values)
                return
        elif t is float:
            col.doubles.extend(values)
            return
        elif t is str:
            col.strings.extend(enc.strings.column(values))
            return
        elif t is bool:
            col.bools.extend(values)
            return
        elif t in _CONTAINERS:
            col.refs.extend(map(enc.ref, values))
            return
    kinds = []
    append = kinds.append
    buckets: list[list] = [[] for _ in range(8)]
    for v in values:
        t = type(v)
        if v is None:
            append(0)
            continue
        if t is int:
            k = _K_INT if INT64_MIN <= v < INT64_END else \
                _K_UINT if 0 <= v < UINT64_END else _K_VALUE
        elif t is float:
            k = _K_DOUBLE
        elif t is str:
            k = _K_STR
        elif t is bool:
            k = _K_BOOL
        elif t in _CONTAINERS:
            k = _K_REF
        else:
            k = _K_VALUE
        append(k)
        buckets[k].append(v)
    col.kinds.extend(kinds)
    col.ints.extend(buckets[_K_INT])
    col.uints.extend(buckets[_K_UINT])
    col.doubles.extend(buckets[_K_DOUBLE])
    col.strings.extend(enc.strings.column(buckets[_K_STR]))
    col.bools.extend(buckets[_K_BOOL])
    add = col.values.add
    for v in buckets[_K_VALUE]:
        enc.set(add(), v)
    col.refs.extend(map(enc.ref, buckets[_K_REF]))


def _group_dicts(dicts: _Dicts) -> tuple[list[int], list[tuple]]:
    """Group the dict table by key sequence.  Returns the renumbering (old index + 1 -> new
    index + 1) and, per group, (keys, member dicts, columns or None)."""
    groups: dict[tuple, list[int]] = {}
    for pos, d in enumerate(dicts.objs):
        keys = tuple(d)
        g = groups.get(keys)
        if g is None:
            groups[keys] = [pos]
        else:
            g.append(pos)
    perm = [0] * (len(dicts.objs) + 1)
    new = 1
    objs = dicts.objs
    plan = []
    for keys, members in groups.items():
        for pos in members:
            perm[pos + 1] = new
            new += 1
        ds = [objs[pos] for pos in members]
        columns = None
        if keys and all(type(k) is str for k in keys):
            columns = [list(c) for c in zip(*[tuple(d.values()) for d in ds])]
        plan.append((keys, ds, columns))
    return perm, plan


def _write_groups(m, plan: list[tuple], enc: _Values) -> None:
    for keys, ds, columns in plan:
        group = m.dict_groups.add()
        group.count = len(ds)
        if not keys:
            continue
        if columns is None:                      # a key that is not a str
            group.whole.extend(map(enc.ref, ds))
            continue
        group.keys.extend(enc.strings.column(keys))
        for values in columns:
            _set_column(group.columns.add(), values, enc)


def _deltas(values: list[int]) -> list[int]:
    if not values:
        return []
    return [values[0], *map(operator.sub, values[1:], values)]


def _extend(field, values: list, what: str) -> None:
    try:
        field.extend(values)
    except (TypeError, ValueError) as e:
        bad = next((v for v in values if type(v) is not int), None)
        detail = f"{type(bad).__name__} {bad!r}" if bad is not None else str(e)
        raise ModelWriteError(f"{what}: cannot store {detail} (integers only, 64 bits)") \
            from None


def _remap(perm: list[int], column: list[int]) -> list[int]:
    return [perm[k] for k in column] if any(column) else []


def encode_model(trace: Trace) -> bytes:
    """The model file's bytes (uncompressed) for ``trace``."""
    m = pb.ModelFile()
    m.magic = MAGIC_TEXT
    m.format_version = FORMAT_VERSION
    m.written_by = f"tracecvt {__version__}"
    strings = _Strings()
    dicts = _Dicts()
    enc = _Values(strings)

    # Tracks.
    for t in trace.tracks:
        msg = m.tracks.add()
        try:
            msg.name = strings(t.name)
            msg.kind = strings(t.kind)
            msg.parent = 0 if t.parent is None else t.parent + 1
            msg.order = t.order
            msg.description = strings(t.description)
            msg.unit = strings(t.unit)
            msg.nesting = t.nesting
            msg.derived = t.derived
            msg.children.extend(t.children)
        except (TypeError, ValueError) as e:
            raise ModelWriteError(f"track {t.index} ({t.name!r}): {e}") from None
    _extend(m.roots, list(trace.roots), "roots")

    # Slices.
    sl = trace.slices
    s_args = dicts.column([as_dict(s.args) for s in sl], "slice args")    # (rows: dicts)
    s_shared = dicts.column([s.shared_args for s in sl], "slice shared_args")
    i_args = dicts.column([i.args for i in trace.instants], "instant args")
    f_args = dicts.column([f.args for f in trace.flows], "flow args")
    perm, plan = _group_dicts(dicts)
    more = {f.name: getattr(trace.meta, f.name) for f in dataclasses.fields(trace.meta)
            if f.name not in META_FIELDS and not _is_default(trace.meta, f)}
    # Count every reference to a container first: a container may be stored as JSON only if
    # nothing inside it is shared.
    for keys, ds, columns in plan:
        for values in (columns if columns is not None else [ds]):
            enc.count(values)
    for c in trace.counters:
        enc.count(list(c.values))
    enc.count([trace.meta.extra, more])
    _write_groups(m, plan, enc)

    ms = m.slices
    ms.SetInParent()
    _extend(ms.track, [s.track for s in sl], "slice track")
    _extend(ms.ts, _deltas([s.ts for s in sl]), "slice ts")
    _extend(ms.dur, [s.dur for s in sl], "slice dur")
    ms.name.extend(strings.column([s.name for s in sl]))
    cats = strings.column([s.cat for s in sl])
    if any(cats):
        ms.cat.extend(cats)
    ms.args.extend(_remap(perm, s_args))
    ms.shared_args.extend(_remap(perm, s_shared))

    # Instants.
    ins = trace.instants
    mi = m.instants
    mi.SetInParent()
    _extend(mi.track, [i.track for i in ins], "instant track")
    _extend(mi.ts, _deltas([i.ts for i in ins]), "instant ts")
    mi.name.extend(strings.column([i.name for i in ins]))
    cats = strings.column([i.cat for i in ins])
    if any(cats):
        mi.cat.extend(cats)
    mi.args.extend(_remap(perm, i_args))

    # Counters.
    for c in trace.counters:
        mc = m.counters.add()
        mc.track = c.track
        _extend(mc.ts, _deltas(list(c.ts)), "counter ts")
        _set_column(mc.values, list(c.values), enc)

    # Flows.
    fl = trace.flows
    mf = m.flows
    mf.SetInParent()
    _extend(mf.src, [f.src for f in fl], "flow src")
    _extend(mf.dst, [f.dst for f in fl], "flow dst")
    names = strings.column([f.name for f in fl])
    if any(names):
        mf.name.extend(names)
    mf.args.extend(_remap(perm, f_args))

    _set_meta(m.meta, trace.meta, more, enc)
    ncontainers = len(enc.kinds)
    enc.write_table(m.containers)
    if len(enc.kinds) != ncontainers:                # pragma: no cover - a bug guard
        raise ModelWriteError("container table changed while it was written")
    _set_strings(m, strings.items)
    data = m.SerializeToString()
    return data + END_PREFIX + pack_crc(zlib.crc32(data))


def _is_default(meta: RunMeta, f: dataclasses.Field) -> bool:
    """A RunMeta field at its default (not written: a reader gets the default back)."""
    if f.default_factory is not dataclasses.MISSING:
        return getattr(meta, f.name) == f.default_factory()
    return f.default is not dataclasses.MISSING and getattr(meta, f.name) == f.default


def _set_meta(mm, meta: RunMeta, more: dict[str, Any], enc: _Values) -> None:
    strings = enc.strings
    mm.name = strings(meta.name)
    mm.format = strings(meta.format)
    mm.tool = strings(meta.tool)
    mm.tool_version = strings(meta.tool_version)
    mm.device = strings(meta.device)
    clock = meta.clock
    mc = mm.clock
    mc.name = strings(clock.name)
    mc.unit = strings(clock.unit)
    mc.description = strings(clock.description)
    num, den = clock.ns_per_unit.numerator, clock.ns_per_unit.denominator
    if INT64_MIN <= num < INT64_END and 0 < den < UINT64_END:
        mc.numerator = num
        mc.denominator = den
    else:
        mc.big_ns_per_unit = f"{num}/{den}"
    mm.source_files.extend(strings.column(meta.source_files))
    enc.set(mm.extra, meta.extra)
    mm.warnings.extend(strings.column(meta.warnings))
    if more:
        enc.set(mm.more, more)


def _set_strings(m, items: list[str]) -> None:
    try:
        m.strings.extend(items)
        return
    except (UnicodeError, ValueError, TypeError):
        pass
    # Rare: strings that are not valid Unicode (lone surrogates) go to odd_strings.
    del m.strings[:]
    for i, text in enumerate(items):
        try:
            m.strings.append(text)
        except (UnicodeError, ValueError, TypeError):
            m.strings.append("")
            odd = m.odd_strings.add()
            odd.index = i
            odd.utf8 = text.encode("utf-8", "surrogatepass")


def write_model(trace: Trace, out: IO[bytes],
                progress: Callable[[int], None] | None = None,
                compresslevel: int | None = COMPRESSLEVEL) -> dict[str, int]:
    """Write ``trace`` as a model file to the binary stream ``out``.

    The file is gzip-compressed (level ``compresslevel``; None: not compressed) unless ``out``
    already compresses (an output named ``*.gz``).
    """
    data = encode_model(trace)
    size = len(data)
    if compresslevel is not None and not isinstance(out, gzip.GzipFile):
        data = gzip.compress(data, compresslevel, mtime=0)
    out.write(data)
    if progress:
        progress(len(trace.slices))
    counts = trace.stats()
    counts["bytes_uncompressed"] = size
    return counts
