"""tracecvt model archives (.tcmodel, written by `tracecvt to-model`).

Detected by content: the file (gzip-compressed or not) starts with the magic bytes of
``proto/tracecvt_model.proto``.  Reading one returns the stored run exactly as its reader
made it: ``meta.format`` stays the original format (e.g. "pypto") and nothing is added to
``meta``, so a run exported, summarized or compared from its archive gives the same result as
from its source files.  (One exception keeps that true for older files: a PyPTO run written
before its reader made a declaration the analyses read, such as PyPTO's
``meta.extra["task_graph"]``, gets the declarations its reader makes now.)
That it came from an archive shows in the Source (format "model", file role "model").
"""

from __future__ import annotations

import gc
from collections import Counter as Counter_
from fractions import Fraction
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any
from zlib import crc32

from orjson import loads

from ..errors import InputError
from ..fileio import logical_name, read_bytes, read_head
from ..model import Clock, Counter, Flow, Instant, RunMeta, Slice, Track, Trace
from ..modelfile import (DICT, DICT_TYPED_KEYS, END_PREFIX, END_SIZE, FORMAT_NAME,
                         FORMAT_VERSION, JSON, LIST, MAGIC, META_FIELDS, REF, SUFFIX, TUPLE,
                         sniff, unpack_crc)
from .base import ReadOptions, Source, apply_declarations


class _Corrupt(Exception):
    """The file parsed but its content is inconsistent."""


def _varint_at(data: bytes, pos: int) -> int | None:
    value = shift = 0
    while pos < len(data) and shift < 64:
        b = data[pos]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        pos += 1
        shift += 7
    return None


def _upgrade(meta: RunMeta) -> None:
    """A file written before its reader made a declaration the analyses read (a PyPTO run's
    task graph and label args, a serialized or per-block run's reason for having no bubbles)
    gets the declarations that reader makes now (``Reader.declarations``), so its analyses
    come out as from its source files."""
    from . import reader_for        # the registry imports this module
    apply_declarations(reader_for(meta.format), meta)


def check_file(data: bytes, path) -> None:
    """Magic, format version and End record (CRC-32); a one-line InputError otherwise."""
    if not data.startswith(MAGIC):
        raise InputError(path, "not a tracecvt model file (no tracecvt-model header)")
    pos = len(MAGIC)
    version = _varint_at(data, pos + 1) if data[pos:pos + 1] == b"\x10" else None
    if version is None:
        raise InputError(path, "corrupt model file: no format version after the header")
    if version != FORMAT_VERSION:
        newer = " (written by a newer tracecvt; upgrade to read it)" \
            if version > FORMAT_VERSION else ""
        raise InputError(path, f"unsupported model file format version {version}: this "
                         f"tracecvt reads version {FORMAT_VERSION}{newer}")
    if len(data) < pos + END_SIZE or data[-END_SIZE:-4] != END_PREFIX:
        raise InputError(path, "truncated model file (no end record)")
    (stored,) = unpack_crc(data[-4:])
    if crc32(memoryview(data)[:-END_SIZE]) != stored:
        raise InputError(path, "corrupt model file (checksum mismatch)")


def load_model(data: bytes, path=None) -> Trace:
    """The Trace stored in the model file content ``data`` (decompressed)."""
    check_file(data, path)
    from ..modelfile import tracecvt_model_pb2 as pb
    from google.protobuf.message import DecodeError
    try:
        m = pb.ModelFile.FromString(data)
    except DecodeError as e:
        raise InputError(path, f"corrupt model file ({e})") from None
    # The model is hundreds of thousands of acyclic objects: a collection while they are made
    # would walk them all, for nothing (it doubled the load time of the largest run).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _Decoder(m).trace()
    except (_Corrupt, IndexError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
        raise InputError(path, f"corrupt model file: {type(e).__name__}: {e}") from None
    finally:
        if was_enabled:
            gc.enable()


class _Decoder:
    def __init__(self, m) -> None:
        self.m = m
        strings = list(m.strings)
        for odd in m.odd_strings:
            strings[odd.index] = odd.utf8.decode("utf-8", "surrogatepass")
        if not strings:
            strings = [""]
        self.strings = strings
        self.objs: list = []           # the container table, decoded
        self.value = self._value_decoder()
        self._containers()

    # -- values ------------------------------------------------------------------------------
    def _value_decoder(self):
        strings = self.strings
        objs = self.objs

        def value(v):
            kind = v.WhichOneof("kind")
            if kind == "ref":
                return objs[v.ref]
            if kind == "string_value":
                return strings[v.string_value]
            if kind == "int_value":
                return v.int_value
            if kind == "double_value":
                return v.double_value
            if kind == "bool_value":
                return v.bool_value
            if kind == "null":
                return None
            if kind == "big_int":
                return int(v.big_int)
            raise _Corrupt("a value without a kind")

        return value

    def _column(self, c, count: int | None) -> list:
        """The values of the Column message ``c`` (``count`` of them, if given)."""
        if c.kinds:
            out = self._mixed(c, True)
        elif c.refs:
            objs = self.objs
            out = [objs[i] for i in c.refs]
        else:
            out = self._typed(c)
        if count is not None and len(out) != count:
            raise _Corrupt(f"a column of {len(out)} values where {count} belong")
        return out

    def _typed(self, c) -> list:
        """A single-type column without refs."""
        if c.ints:
            return list(c.ints)
        if c.uints:
            return list(c.uints)
        if c.doubles:
            return list(c.doubles)
        if c.strings:
            strings = self.strings
            return [strings[i] for i in c.strings]
        if c.bools:
            return list(c.bools)
        return list(map(self.value, c.values))

    def _mixed(self, c, resolve: bool) -> list:
        """A mixed-type column; refs stay container indexes unless ``resolve``."""
        strings = self.strings
        refs = list(c.refs)
        if resolve:
            objs = self.objs
            refs = [objs[i] for i in refs]
        parts = [None, list(c.ints), list(c.uints), list(c.doubles),
                 [strings[i] for i in c.strings], list(c.bools),
                 list(map(self.value, c.values)), refs]
        kinds = list(c.kinds)
        used = Counter_(kinds)
        if any(k > REF for k in used) or \
                any(used.get(k, 0) != len(parts[k]) for k in range(1, REF + 1)):
            raise _Corrupt("a mixed column whose kinds do not match its values")
        nexts = [repeat(None).__next__] + [iter(p).__next__ for p in parts[1:]]
        return [nexts[k]() for k in kinds]

    def _raw(self, c) -> tuple[list, Any]:
        """A column whose refs are left as container indexes, and where they are: None (no
        refs), True (all refs) or the per-value kinds."""
        if c.kinds:
            return self._mixed(c, False), list(c.kinds)
        if c.refs:
            return list(c.refs), True
        return self._typed(c), None

    def _containers(self) -> None:
        """Rebuild the container table in order (children come before parents)."""
        c = self.m.containers
        kinds = list(c.kinds)
        sizes = list(c.sizes)
        if len(sizes) != len(kinds):
            raise _Corrupt("container kinds and sizes of unequal length")
        items, item_refs = self._raw(c.items)
        tkeys, tkey_refs = self._raw(c.typed_keys)
        strings = self.strings
        keys = [strings[i] for i in c.keys]
        blobs = c.json
        objs = self.objs
        append = objs.append
        pos = kpos = tpos = jpos = 0

        def resolve(seg: list, where, start: int, end: int) -> list:
            if where is True:
                return [objs[x] for x in seg]
            ks = where[start:end]
            if REF in ks:
                return [objs[x] if k == REF else x for x, k in zip(seg, ks)]
            return seg

        for kind, n in zip(kinds, sizes):
            if kind == JSON:
                obj = loads(blobs[jpos])
                if type(obj) is not dict and type(obj) is not list:
                    raise _Corrupt("a JSON container that is not a list or dict")
                append(obj)
                jpos += 1
                continue
            end = pos + n
            seg = items[pos:end]
            if item_refs is not None:
                seg = resolve(seg, item_refs, pos, end)
            pos = end
            if kind == DICT:
                append(dict(zip(keys[kpos:kpos + n], seg)))
                kpos += n
            elif kind == LIST:
                append(seg)
            elif kind == TUPLE:
                append(tuple(seg))
            elif kind == DICT_TYPED_KEYS:
                tk = tkeys[tpos:tpos + n]
                if tkey_refs is not None:
                    tk = resolve(tk, tkey_refs, tpos, tpos + n)
                append(dict(zip(tk, seg)))
                tpos += n
            else:
                raise _Corrupt(f"unknown container kind {kind}")
        if pos != len(items) or kpos != len(keys) or tpos != len(tkeys) \
                or jpos != len(blobs):
            raise _Corrupt("container sizes do not match the items and keys stored")

    def dicts(self) -> list[dict | None]:
        """The dict table, as [None, dict 0, dict 1, ...] (indexes are table index + 1)."""
        table: list[dict | None] = [None]
        strings = self.strings
        for g in self.m.dict_groups:
            count = g.count
            if g.whole:
                objs = self.objs
                part = [objs[i] for i in g.whole]
                if not all(type(d) is dict for d in part):
                    raise _Corrupt("a whole dict group holds a value that is not a dict")
            elif not g.keys:
                part = [{} for _ in range(count)]
            else:
                keys = [strings[k] for k in g.keys]
                if len(g.columns) != len(keys):
                    raise _Corrupt("dict group with unequal keys and columns")
                columns = [self._column(c, count) for c in g.columns]
                part = list(map(dict, map(zip, repeat(keys), zip(*columns))))
            if len(part) != count:
                raise _Corrupt(f"dict group of {len(part)} dicts, count {count}")
            table.extend(part)
        return table

    # -- the run -----------------------------------------------------------------------------
    def trace(self) -> Trace:
        m = self.m
        strings = self.strings
        trace = Trace(self.meta(m.meta))
        tracks = trace.tracks
        for index, t in enumerate(m.tracks):
            track = Track(index, strings[t.name], strings[t.kind],
                          t.parent - 1 if t.parent else None, t.order,
                          strings[t.description], strings[t.unit], t.nesting, t.derived)
            track.children = list(t.children)
            tracks.append(track)
        trace._roots = list(m.roots)
        n_tracks = len(tracks)
        for t in tracks:
            if (t.parent is not None and t.parent >= n_tracks) \
                    or any(c >= n_tracks for c in t.children):
                raise _Corrupt(f"track {t.index} refers to a track that does not exist")
        if any(r >= n_tracks for r in trace._roots):
            raise _Corrupt("a root track that does not exist")

        table = self.dicts()

        def column(field, n: int, what: str, lookup=None, default=None) -> list:
            if not field:
                return [default] * n if n else []
            if len(field) != n:
                raise _Corrupt(f"{what} column of {len(field)} entries for {n}")
            return [lookup[i] for i in field]

        s = m.slices
        n = len(s.track)
        if len(s.ts) != n or len(s.dur) != n or len(s.name) != n:
            raise _Corrupt("slice columns of unequal length")
        trace.slices = list(map(
            Slice, s.track, accumulate(s.ts), s.dur,
            [strings[i] for i in s.name],
            column(s.cat, n, "slice cat", strings, ""),
            column(s.args, n, "slice args", table),
            column(s.shared_args, n, "slice shared_args", table)))

        i = m.instants
        n = len(i.track)
        if len(i.ts) != n or len(i.name) != n:
            raise _Corrupt("instant columns of unequal length")
        trace.instants = list(map(
            Instant, i.track, accumulate(i.ts), [strings[k] for k in i.name],
            column(i.cat, n, "instant cat", strings, ""),
            column(i.args, n, "instant args", table)))

        for c in m.counters:
            counter = Counter(c.track)
            counter.ts = list(accumulate(c.ts))
            counter.values = self._column(c.values, None)
            trace.counters.append(counter)

        f = m.flows
        n = len(f.src)
        if len(f.dst) != n:
            raise _Corrupt("flow columns of unequal length")
        trace.flows = list(map(Flow, f.src, f.dst,
                               column(f.name, n, "flow name", strings, ""),
                               column(f.args, n, "flow args", table)))

        # References writers follow without checking.
        if any(x.track >= n_tracks for x in trace.instants) \
                or any(c.track >= n_tracks for c in trace.counters) \
                or (s.track and max(s.track) >= n_tracks):
            raise _Corrupt("an event on a track that does not exist")
        n = len(trace.slices)
        if f.src and (max(f.src) >= n or max(f.dst) >= n):
            raise _Corrupt("a flow between slices that do not exist")
        return trace

    def meta(self, mm) -> RunMeta:
        strings = self.strings
        c = mm.clock
        if c.big_ns_per_unit:
            num, _, den = c.big_ns_per_unit.partition("/")
            ns_per_unit = Fraction(int(num), int(den))
        else:
            ns_per_unit = Fraction(c.numerator, c.denominator)
        clock = Clock(strings[c.name], strings[c.unit], ns_per_unit, strings[c.description])
        extra = self.value(mm.extra) if mm.HasField("extra") else {}
        meta = RunMeta(strings[mm.name], strings[mm.format], strings[mm.tool],
                       strings[mm.tool_version], strings[mm.device], clock,
                       [strings[i] for i in mm.source_files], extra,
                       [strings[i] for i in mm.warnings])
        if mm.HasField("more"):
            more = self.value(mm.more)
            if type(more) is not dict:
                raise _Corrupt("meta.more is not a dict")
            for name, v in more.items():
                if type(name) is not str or not name.isidentifier() or name in META_FIELDS:
                    raise _Corrupt(f"meta.more names a field it cannot hold: {name!r}")
                setattr(meta, name, v)
        _upgrade(meta)
        return meta


def _run_name(path: Path) -> str:
    name = logical_name(path)
    if name.endswith(SUFFIX):
        return name[:-len(SUFFIX)]
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


class ModelReader:
    formats = (FORMAT_NAME,)
    title = f"tracecvt model archives ({SUFFIX}, written by `tracecvt to-model`)"

    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        runs = []
        for n in filenames:
            if force or logical_name(Path(n)).endswith(SUFFIX):
                p = directory / n
                if sniff(read_head(p, len(MAGIC))):
                    runs.append(self._source(p))
        return runs

    def find_file(self, path: Path, force: bool) -> Source | None:
        if force or sniff(read_head(path, len(MAGIC))):
            return self._source(path)
        return None

    def _source(self, path: Path) -> Source:
        return Source(FORMAT_NAME, _run_name(path), path, {"model": path}, self)

    def read(self, source: Source, options: ReadOptions) -> Trace:
        path = source.files["model"]
        options.report(f"reading {path.name}", 0, 1)
        trace = load_model(read_bytes(path), path)
        # Options that shape how a source is read cannot apply to a run read long ago.
        if options.clock_mhz is not None:
            trace.warn(f"{path}: --clock-mhz ignored: a model archive holds times already "
                       "converted to ns")
        if options.all_metrics:
            trace.warn(f"{path}: --all-metrics ignored: a model archive holds the metrics its "
                       "reader kept when it was written")
        options.report(f"reading {path.name}", 1, 1)
        return trace


READER = ModelReader()
