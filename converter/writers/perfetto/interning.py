"""Interned strings and args of the Perfetto writer.

Iids are trace-wide (``_Interner``); each packet sequence defines, before its first use there,
the entries it uses (``_Sequence``); args dicts become DebugAnnotation bytes, repeated pairs
cached with the interned entries they use (``_ArgEncoder``).
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any, Callable

from ...arg_rows import ArgRow
from ...model import ARG_LINES, INPUTS, INT64_END, INT64_MIN, OUTPUTS, UINT64_END
from ..protowire import _pack_double, key_str, key_varint, tag, varint
from .row_args import RowPlans
from .wire import (_DOUBLE_VALUE, _I_ARG_NAME, _I_CATEGORY, _I_NAME, _I_STRING, _INT3_LO,
                   _INT_VALUE, _INTERNED, _LEN, _STRING_IID, _STRING_VALUE, _TE_DEBUG, _TS4_MID,
                   _len)


def _one_shot(separators: tuple[str, str]) -> Callable[[Any], str]:
    """``json.JSONEncoder(ensure_ascii=False, separators=separators, default=str).encode``:
    the C encoder that method makes for each value it is given (``iterencode``'s one-shot
    path), made here with the same arguments and called directly, without the two Python
    layers around it (a PMU task's ``pipe_ratio``: 7 us instead of 15).  A fresh encoder
    (and circular-reference memo) per value, as the method makes.  Where this Python has no
    C encoder, or the one it has takes other arguments (checked on a probe), the method."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=separators, default=str)
    make = json.encoder.c_make_encoder
    if make is None:
        return encoder.encode
    args = (encoder.default, json.encoder.encode_basestring, None, encoder.key_separator,
            encoder.item_separator, encoder.sort_keys, encoder.skipkeys, encoder.allow_nan)
    join = "".join

    def encode(value: Any) -> str:
        if value.__class__ is str:
            return encoder.encode(value)
        return join(make({}, *args)(value, 0))
    probe = {"a": [1, 2.5, None, True, "é\n", {"b": 1e-06}], "c": float("nan"), 3: (4,)}
    try:
        if encode(probe) == encoder.encode(probe):
            return encode
    except Exception:               # (an encoder of other arguments)
        pass
    return encoder.encode


_NESTED = frozenset({list, dict, tuple})      # (one string each: ``_ArgEncoder.pair``)

# json.dumps with these options (one line of text: compact, or with json's spaces)
_COMPACT = _one_shot((",", ":"))
_JSON = _one_shot((", ", ": "))


def compact_text(name: Any, value: Any) -> str:
    """A nested arg value as one line of text: an operand list (``model.INPUTS`` /
    ``OUTPUTS``: dicts with "dtype" and "shape") as ``FP16[512,1024] tensor=22 bytes=1048576;
    ...`` (each operand's other keys as key=value), anything else as compact JSON."""
    if name in (INPUTS, OUTPUTS) and value.__class__ is list and all(
            v.__class__ is dict and "dtype" in v and "shape" in v for v in value):
        return "; ".join(_operand_text(v) for v in value)
    return _COMPACT(value)


def _operand_text(op: dict[str, Any]) -> str:
    shape = op["shape"]
    dims = ",".join(map(str, shape)) if isinstance(shape, (list, tuple)) else str(shape)
    rest = "".join(f" {k}={_nested_text(v) if isinstance(v, (list, dict, tuple)) else v}"
                   for k, v in op.items() if k not in ("dtype", "shape") and v is not None)
    return f"{op['dtype']}[{dims}]{rest}"


def _nested_text(value: Any) -> str:
    """An operand's nested value, as JSON."""
    return _JSON(value)


def arg_lines(extra: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The run's ``model.ARG_LINES`` as {arg name: (its line, the line's arg names)}; an
    ill-formed entry is ignored, as is an arg named in two lines (the first keeps it)."""
    declared = extra.get(ARG_LINES) if isinstance(extra, dict) else None
    members: dict[str, tuple[str, tuple[str, ...]]] = {}
    if not isinstance(declared, dict):
        return members
    for line, names in declared.items():
        if not (isinstance(line, str) and isinstance(names, (list, tuple))
                and all(isinstance(n, str) for n in names)):
            continue
        names = tuple(n for n in dict.fromkeys(names) if n not in members)
        for n in names:
            members[n] = (line, names)
    return members


def fold_lines(args: dict[str, Any], members: dict[str, tuple[str, tuple[str, ...]]]
               ) -> dict[str, Any]:
    """``args`` with each line's args (``arg_lines``) written as one string arg named after
    the line, ``"name=value name=value"`` in the declared order, at the place of the first;
    None values are left out.  A line whose name is an arg of its own in ``args`` is not
    made (its args stay as they are)."""
    out: dict[str, Any] = {}
    for name, value in args.items():
        hit = members.get(name)
        if hit is None or hit[0] in args:
            out[name] = value
            continue
        line, names = hit
        if line in out:
            continue
        out[line] = " ".join(f"{n}={_line_value(n, args[n])}" for n in names
                             if args.get(n) is not None)
    return out


def _line_value(name: str, value: Any) -> str:
    if isinstance(value, (list, dict, tuple)):
        return compact_text(name, value)
    return str(value)


class _Interner:
    """Trace-wide iids: one (iid, InternedData entry) per string and table."""

    def __init__(self) -> None:
        self.tables: dict[int, dict[Any, tuple[int, bytes]]] = {
            _I_CATEGORY: {}, _I_NAME: {}, _I_ARG_NAME: {}, _I_STRING: {}}
        self.tags = {table: tag(table, 2) for table in self.tables}

    def entry(self, table: int, text: str) -> tuple[int, bytes]:
        """(iid, InternedData entry) of ``text`` in ``table``: ``key_bytes(table,
        key_varint(1, iid) + key_str(2, text))``, built flat (the four generic calls cost
        most of a new string arg: 1.5 of 2.3 us)."""
        d = self.tables[table]
        hit = d.get(text)
        if hit is None:
            iid = len(d) + 1
            b = text.encode("utf-8", "surrogatepass")
            body = b"\x08" + _len(iid) + b"\x12" + _len(len(b)) + b    # iid = 1, str = 2
            hit = d[text] = (iid, self.tags[table] + _len(len(body)) + body)
        return hit


class _Sequence:
    """A packet sequence being written: its id field and the interned entries it defined."""

    __slots__ = ("field", "defined", "pending", "seen")

    def __init__(self, seq_id: int):
        self.field = key_varint(10, seq_id)
        self.defined: set[bytes] = set()    # InternedData entries defined on this sequence
        self.pending: list[bytes] = []      # entries to define on the next packet
        self.seen: set = set()    # encoded fragments (and row_args runs) whose entries are defined

    def use(self, deps) -> None:
        defined = self.defined
        for entry in deps:
            if entry not in defined:
                defined.add(entry)
                self.pending.append(entry)

    def flush(self) -> bytes:
        if not self.pending:
            return b""
        data = b"".join(self.pending)
        self.pending.clear()
        return _INTERNED + varint(len(data)) + data


class _ArgEncoder:
    """Encodes args dicts into DebugAnnotation bytes, caching repeated (name, value) pairs
    together with the interned entries each encoding uses."""

    MIN_INTERNED_STRING = 6

    def __init__(self, interner: _Interner, lines: dict[str, tuple[str, tuple[str, ...]]]):
        self.interner = interner
        self.lines = lines          # model.ARG_LINES (``arg_lines``), for shared args
        self.line_names = {line for line, _ in lines.values()}
        self.cache: dict[Any, tuple[bytes, tuple]] = {}
        self.keep: list[Any] = []   # keeps id()-cached objects alive
        self.names: dict[str, tuple[bytes, bytes]] = {}   # arg name: name part, its entry
        self.once: set[tuple] = set()                     # string args seen once
        # arg name -> (its entry, {int below 16384: the whole annotation}): small ints
        # repeat (counts, indexes, zeros), and one lookup costs less than building them
        self.small: dict[str, tuple[bytes, dict[int, bytes]]] = {}
        self.rows = RowPlans(self.names, self.cache, self.encode_pairs,  # args as table rows
                             self.encode_new, self.encode_text)

    def clear(self) -> None:
        """Let go of the caches (the writer is done encoding)."""
        for table in (self.cache, self.names, self.small):
            table.clear()
        self.keep.clear()
        self.once.clear()
        self.rows.clear()

    def _name_part(self, name: str) -> tuple[bytes, bytes]:
        """(``name_iid`` field, its InternedData entry) of an arg name."""
        hit = self.names.get(name)
        if hit is None:
            iid, entry = self.interner.entry(_I_ARG_NAME, name)
            hit = self.names[name] = (key_varint(1, iid), entry)
        return hit

    def _str_pair(self, name: str, value: str, intern: bool) -> tuple[bytes, tuple]:
        """A top-level string arg, built directly (the same bytes as the general path)."""
        head, entry = self._name_part(name)
        if intern and len(value) >= self.MIN_INTERNED_STRING:
            iid, string_entry = self.interner.entry(_I_STRING, value)
            body = head + _STRING_IID + _len(iid)
            return _TE_DEBUG + _len(len(body)) + body, (entry, string_entry)
        b = value.encode("utf-8", "surrogatepass")
        body = head + _STRING_VALUE + _len(len(b)) + b
        return _TE_DEBUG + _len(len(body)) + body, (entry,)

    def _uncached_str(self, key: tuple, name: str, value: str) -> tuple[bytes, tuple]:
        """A string arg not in the cache (``key``: its cache key).  A string is interned
        from its second use on: the first may be its only one (e.g. a bubble's
        "waiting_for"), and inline is then smaller."""
        if key not in self.once:
            self.once.add(key)
            return self._str_pair(name, value, False)
        hit = self.cache[key] = self._str_pair(name, value, True)
        return hit

    def pair(self, name: Any, value: Any) -> tuple[bytes, tuple] | None:
        """(DebugAnnotation bytes, the InternedData entries they use) of one arg, or None
        for a None value.  Repeated pairs come from a cache; ints are encoded directly (per
        slice ids such as taskId are all different)."""
        cls = value.__class__
        if name.__class__ is str:
            if cls is int and 0 <= value < INT64_END:
                head, entry = self._name_part(name)
                body = head + _INT_VALUE + (_LEN[value] if value < 16384
                                            else varint(value))
                return _TE_DEBUG + _LEN[len(body)] + body, (entry,)
            if cls is str:
                key = (name, str, value)
                return self.cache.get(key) or self._uncached_str(key, name, value)
        if value is None:
            return None
        if cls is list or cls is dict or cls is tuple:
            # Nested values become one string (``compact_text``): Trace Processor stores
            # every leaf of a nested annotation as an args row of its own (3.4 M rows
            # against 0.6 M on a 90,112-task PyPTO run), and the rows cost load time.
            key = (name, id(value))
            hit = self.cache.get(key)
            if hit is None:
                self.keep.append(value)
                hit = self.cache[key] = self._str_pair(str(name), compact_text(name, value),
                                                       True)
            return hit
        try:
            key = (name, cls, value)
            hash(key)
        except TypeError:
            key = (name, id(value))
            if key not in self.cache:
                self.keep.append(value)
        hit = self.cache.get(key)
        if hit is None:
            head, entry = self._name_part(str(name))
            body = head + self._value(value)
            hit = self.cache[key] = (_TE_DEBUG + varint(len(body)) + body, (entry,))
        return hit

    def encode_all(self, args: dict[str, Any], shared: bool = False) -> tuple[bytes, tuple]:
        """A whole args dict: (bytes, the entries they use, in order of first use).  A
        slice's ``shared`` args have their lines (``model.ARG_LINES``) made."""
        if len(args) == 1:
            # one string arg that is no line and in none (the bubbles' "waiting_for": one
            # dict per task waited for): ``pair``'s, without folding or joining
            ((name, value),) = args.items()
            if value.__class__ is str and name.__class__ is str and not (
                    shared and (name in self.lines or name in self.line_names)):
                return self.pair(name, value)
        made: set[str] = set()
        if shared and self.lines:
            args = fold_lines(args, self.lines)
            made = self.line_names
        parts = []
        deps: dict[bytes, None] = {}
        pair = self.pair
        for name, value in args.items():
            if name in made and value.__class__ is str:
                # A line is every slice of the call's: interned at once (``pair`` would
                # write its first use inline, and the shared args' bytes are reused).
                key = (name, str, value)
                hit = self.cache.get(key)
                if hit is None:
                    hit = self.cache[key] = self._str_pair(name, value, True)
            else:
                hit = pair(name, value)
            if hit is not None:
                parts.append(hit[0])
                for entry in hit[1]:
                    deps[entry] = None
        return b"".join(parts), tuple(deps)

    def encode(self, args: dict[str, Any], seq: _Sequence) -> bytes:
        """A slice's own args, defining on ``seq`` the entries they use (a row of a table
        of args: ``row_args``)."""
        if args.__class__ is ArgRow:
            return self.rows.encode(args, seq)
        return self.encode_pairs(args.items(), seq)

    def encode_pairs(self, pairs, seq: _Sequence) -> bytes:
        """Args given as (name, value) pairs, defining on ``seq`` the entries they use.  Ints
        and floats (per-slice ids, times, PMU figures: mostly all different) are built
        here, without the cache, but for ints below 16384 (``small``); strings come from the
        cache (or ``_uncached_str``, the one string rule), the rest from ``pair``.  The
        entries are defined inline (``seq.use`` for one or two is mostly a call)."""
        defined, pending = seq.defined, seq.pending
        names, cache, small = self.names, self.cache, self.small
        parts = []
        for name, value in pairs:
            cls = value.__class__
            if name.__class__ is str:
                if cls is int and 0 <= value < 16384:
                    hit = small.get(name)
                    if hit is None:
                        hit = small[name] = (self._name_part(name)[1], {})
                    made = hit[1].get(value)
                    if made is None:
                        body = names[name][0] + _INT_VALUE + _LEN[value]
                        made = hit[1][value] = _TE_DEBUG + _LEN[len(body)] + body
                    parts.append(made)
                    if hit[0] not in defined:
                        defined.add(hit[0])
                        pending.append(hit[0])
                    continue
                if cls is str:
                    key = (name, str, value)
                    hit = cache.get(key) or self._uncached_str(key, name, value)
                    parts.append(hit[0])
                    for entry in hit[1]:
                        if entry not in defined:
                            defined.add(entry)
                            pending.append(entry)
                    continue
                if cls is float or cls is int and 0 <= value < INT64_END:
                    if cls is float:
                        field = _DOUBLE_VALUE + _pack_double(value)
                    elif value < 2097152:       # three bytes (at least 2^14 here): lookups,
                        field = _INT3_LO[value & 127] + _LEN[value >> 7]   # not a call
                    elif value < 268435456:     # four bytes
                        field = (_INT3_LO[value & 127] + _TS4_MID[(value >> 7) & 127]
                                 + _LEN[value >> 14])
                    else:
                        field = _INT_VALUE + varint(value)
                    head = names.get(name) or self._name_part(name)
                    body = head[0] + field
                    parts.append(_TE_DEBUG + _LEN[len(body)] + body)
                    entry = head[1]
                    if entry not in defined:
                        defined.add(entry)
                        pending.append(entry)
                    continue
            if value is None:
                continue
            hit = self.pair(name, value)     # (ints outside [0, 2^63), bools, nested, ...)
            parts.append(hit[0])
            seq.use(hit[1])                 # (rare: the call costs nothing that counts)
        return b"".join(parts)

    def encode_new(self, name: str, value: Any, seq: _Sequence) -> bytes:
        """One arg whose value is a new object (a ``Derived`` column's), defining on ``seq``
        the entries it uses: ``encode_pairs``' bytes, without caching a list or dict by an
        identity that a later one may take."""
        if value.__class__ not in _NESTED or name.__class__ is not str:
            return self.encode_pairs(((name, value),), seq)
        hit = self._str_pair(name, compact_text(name, value), True)
        seq.use(hit[1])
        return hit[0]

    def encode_text(self, name: str, text: str, seq: _Sequence) -> bytes:
        """``encode_new`` of a list or dict whose text (``compact_text``) is ``text``."""
        hit = self._str_pair(name, text, True)
        seq.use(hit[1])
        return hit[0]

    @staticmethod
    def _value(value: Any) -> bytes:
        """A scalar value's DebugAnnotation field (strings and nested values go through
        ``_str_pair`` and ``compact_text``; anything else as its text)."""
        if isinstance(value, bool):
            return key_varint(2, int(value))
        if isinstance(value, int):
            if not INT64_MIN <= value < UINT64_END:
                return key_str(6, str(value))          # beyond 64 bits: its exact digits
            if value >= INT64_END:
                return key_varint(3, value)            # uint_value
            return key_varint(4, value)                # int_value (two's complement)
        if isinstance(value, float):
            return _DOUBLE_VALUE + _pack_double(value)
        return key_str(6, str(value))
