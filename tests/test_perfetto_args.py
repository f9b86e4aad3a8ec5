"""The args encoder's fast paths (``interning._ArgEncoder``, ``_Interner.entry``) against a
plain model built from the generic ``protowire`` helpers, byte for byte: the DebugAnnotation
bytes, which strings are interned (from their second use, 6 bytes or more), the iids, the
InternedData entries and the order they are defined in on each packet sequence."""

from __future__ import annotations

import random

import pytest

from tracecvt.writers.perfetto.interning import (_ArgEncoder, _Interner, _Sequence,
                                                 compact_text)
from tracecvt.writers.protowire import _pack_double, key_bytes, key_str, key_varint, tag

_I_ARG_NAME, _I_STRING = 3, 29


class _Model:
    """The encoder's rules, written the slow and plain way."""

    def __init__(self) -> None:
        self.tables: dict[int, dict[str, tuple[int, bytes]]] = {_I_ARG_NAME: {}, _I_STRING: {}}
        self.used: set = set()      # (name, value) string pairs used once already

    def entry(self, table: int, text: str) -> tuple[int, bytes]:
        d = self.tables[table]
        if text not in d:
            iid = len(d) + 1
            d[text] = (iid, key_bytes(table, key_varint(1, iid) + key_str(2, text)))
        return d[text]

    def string(self, name: str, text: str, intern: bool) -> tuple[bytes, list[bytes]]:
        name_iid, name_entry = self.entry(_I_ARG_NAME, name)
        if intern and len(text) >= _ArgEncoder.MIN_INTERNED_STRING:
            iid, entry = self.entry(_I_STRING, text)
            return key_varint(1, name_iid) + key_varint(17, iid), [name_entry, entry]
        return key_varint(1, name_iid) + key_str(6, text), [name_entry]

    def arg(self, name, value) -> tuple[bytes, list[bytes]]:
        if name.__class__ is str and value.__class__ is str:
            again = (name, value) in self.used
            self.used.add((name, value))
            body, deps = self.string(name, value, again)
        elif value.__class__ in (list, dict, tuple):
            body, deps = self.string(str(name), compact_text(name, value), True)
        else:
            name_iid, name_entry = self.entry(_I_ARG_NAME, str(name))
            if value.__class__ is bool:
                field = key_varint(2, int(value))
            elif value.__class__ is int and -2**63 <= value < 2**63:
                field = key_varint(4, value)
            elif value.__class__ is int and 2**63 <= value < 2**64:
                field = key_varint(3, value)
            elif value.__class__ is float:
                field = tag(5, 1) + _pack_double(value)
            else:
                field = key_str(6, str(value))
            body, deps = key_varint(1, name_iid) + field, [name_entry]
        return key_bytes(4, body), deps


def _value(rng: random.Random, strings: list[str]):
    kind = rng.randrange(12)
    if kind < 4:
        return rng.choice(strings)
    if kind == 4:
        return rng.choice([0, 1, 127, 128, 16383, 16384, rng.randrange(1 << 14)])
    if kind == 5:
        return rng.choice([rng.randrange(1 << 21), rng.randrange(1 << 28), rng.randrange(1 << 40),
                           2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**63 - 1, 2**63, 2**64 - 1,
                           2**64, 10**30])
    if kind == 6:
        return rng.choice([-1, -2**63, -2**63 - 1, -rng.randrange(1 << 40)])
    if kind == 7:
        return rng.choice([0.0, -1.5, 1e300, float("inf"), rng.random()])
    if kind == 8:
        return rng.choice([True, False])
    if kind == 9:
        return None
    if kind == 10:
        return rng.choice([[1, "a"], {"k": [2, 3]}, (4,), [], {"x": "longer text"}])
    return "é" * rng.randrange(1, 12)      # non-ASCII, inline and interned


@pytest.mark.parametrize("seed", range(40))
def test_fast_paths_match_the_plain_model(seed):
    rng = random.Random(seed)
    # Each string used a few times (1 to 4), short and long, some shared between arg names.
    strings = [rng.choice(["r1t%d" % i, "task_%06d" % i, "x" * rng.randrange(0, 300), "abcdef"])
               for i in range(60)]
    strings = [s for s in strings for _ in range(rng.randrange(1, 5))]
    names = ["task", "phase", "core", "a_longer_arg_name", 7, 3.5, ("t",), None]
    enc = _ArgEncoder(_Interner(), {})
    model = _Model()
    seqs = [(_Sequence(i + 2), set()) for i in range(4)]
    for _ in range(300):
        seq, model_defined = rng.choice(seqs)
        args = {}
        for _ in range(rng.choice([0, 1, 1, 2, 3, 8])):
            args[rng.choice(names[:4] if rng.random() < 0.85 else names[4:])] = _value(rng, strings)
        # the model of this dict: the args in order, each with the entries it needs defined
        want, want_pending = b"", []
        for name, value in args.items():
            if value is None:
                continue
            body, deps = model.arg(name, value)
            want += body
            for entry in deps:
                if entry not in model_defined:
                    model_defined.add(entry)
                    want_pending.append(entry)
        if rng.random() < 0.7:
            got = enc.encode(args, seq)
        else:
            got, deps = enc.encode_all(args)
            seq.use(deps)
        assert got == want, args
        assert seq.pending == want_pending, args
        seq.pending.clear()
    assert enc.interner.tables[_I_ARG_NAME] == model.tables[_I_ARG_NAME]
    assert enc.interner.tables[_I_STRING] == model.tables[_I_STRING]


class _Named:
    def __str__(self) -> str:
        return "named object"


_NESTED_VALUES = [
    {"aic": {"cube": 0.0, "scalar": 0.9405580914379239, "mte1": 9.976696930145412e-06},
     "aiv": {"vector": 1e16, "mte3": -0.0}},                  # a PMU task's pipe_ratio
    [1, "a", None, True, False, 2.5, 10**30, -2**63],
    (4, (5, [6])), [], {}, {"": ""},
    {1: "int key", 2.5: "float key", None: "none key", True: "bool key"},
    {"nan": float("nan"), "inf": float("inf"), "-inf": -float("inf")},
    ["é\u2028\x00\x1f\x7f\"\\/\n\t", "\U0001f600"],             # escapes, non-ASCII
    [_Named(), {"k": _Named()}],                                # default=str
    "a string", 7, 2.5, None,
]


@pytest.mark.parametrize("spaced", [False, True])
def test_nested_values_are_json_dumps_text(spaced):
    """The one-line text of a nested value is ``json.dumps``' with the writer's options
    (compact; or json's spaces, as an operand's nested values), made by json's C encoder
    called directly: the same text for every kind of value, the same error for a value
    that holds itself."""
    import json

    from tracecvt.writers.perfetto import interning
    fast = interning._JSON if spaced else interning._COMPACT
    seps = (", ", ": ") if spaced else (",", ":")
    for value in _NESTED_VALUES:
        assert fast(value) == json.dumps(value, ensure_ascii=False, separators=seps,
                                         default=str), value
    loop: list = [1]
    loop.append({"again": loop})
    with pytest.raises(ValueError, match="Circular reference"):
        fast(loop)
    assert fast([loop[0]]) == "[1]"         # (nothing of the failed call stays behind)
