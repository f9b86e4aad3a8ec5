"""The model's ``Slice`` (and ``Flow`` and ``Instant``, made the same way): what callers rely on when they hold slices (in sets and dicts, as
the analyses and writers do), make them (positionally or by name, with defaults) and send
them to other processes (pickled)."""

from __future__ import annotations

import copy
import gc
import pickle

import pytest

from tracecvt.model import Flow, Instant, Slice


def test_a_slice_is_itself_only():
    a = Slice(1, 10, 5, "task")
    b = Slice(1, 10, 5, "task")
    assert a == a and a != b                    # equal only to itself, as any object
    assert len({a, b}) == 2 and {a: 1, b: 2}[a] == 1
    assert hash(a) == hash(a) != hash(b)


def test_made_positionally_or_by_name_with_defaults():
    s = Slice(2, 100, 7, "op")
    assert (s.track, s.ts, s.dur, s.name, s.cat, s.args, s.shared_args) == \
        (2, 100, 7, "op", "", None, None)
    shared = {"call": "x"}
    t = Slice(3, 1, 2, "k", "kernel", args={"a": 1}, shared_args=shared)
    assert t.cat == "kernel" and t.args == {"a": 1} and t.shared_args is shared
    assert t.all_args == {"call": "x", "a": 1} and t.end == 3
    t.args = None                               # fields are assignable
    assert t.all_args is shared
    with pytest.raises(AttributeError):
        t.other = 1                             # nothing else is


def test_one_arg_is_the_one_all_args_holds():
    from tracecvt.arg_rows import ArgTable
    shared = {"call": "x", "a": 0, "b": None}
    rows = ArgTable(("a", "c"))
    for own in (None, {}, {"a": 1, "c": None}, rows.add((1, None))):
        for sh in (None, shared):
            s = Slice(3, 1, 2, "k", args=own, shared_args=sh)
            for name in ("a", "b", "c", "call", "missing"):
                assert s.arg(name) == s.all_args.get(name)
                assert s.arg(name, 7) == s.all_args.get(name, 7)        # (None values kept)
    assert Slice(0, 0, 1, "k", args={"a": 1}, shared_args=shared).arg("a") == 1  # own first


def test_pickled_and_copied_whole():
    s = Slice(4, 5, 6, "n", "c", {"k": [1, 2]}, {"s": "v"})
    for other in (pickle.loads(pickle.dumps(s, pickle.HIGHEST_PROTOCOL)), copy.copy(s)):
        assert other is not s
        assert (other.track, other.ts, other.dur, other.name, other.cat, other.args,
                other.shared_args) == (4, 5, 6, "n", "c", {"k": [1, 2]}, {"s": "v"})


def test_not_walked_by_the_garbage_collector():
    # (millions per run: a slice holds its args and names, never what holds it)
    assert not gc.is_tracked(Slice(0, 0, 0, "n", args={"a": 1}))


def test_flows_and_instants_likewise():
    f, g = Flow(1, 2), Flow(1, 2, "dep", {"k": 1})
    assert (f.src, f.dst, f.name, f.args) == (1, 2, "", None) and g.args == {"k": 1}
    assert f == f and f != Flow(1, 2) and len({f, Flow(1, 2)}) == 2
    i = Instant(3, 4, "mark")
    assert (i.track, i.ts, i.name, i.cat, i.args) == (3, 4, "mark", "", None)
    assert i != Instant(3, 4, "mark")
    for x in (f, g, i):
        y = pickle.loads(pickle.dumps(x))
        assert y is not x and all(getattr(y, k) == getattr(x, k) for k in x.__struct_fields__)
        assert not gc.is_tracked(x)
