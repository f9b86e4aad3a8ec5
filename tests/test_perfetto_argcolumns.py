"""Slices' own args encoded a column at a time (writers/perfetto/argcolumns.py) give the
bytes of the arg-by-arg path: the same .pftrace, whatever the values (ints at every varint
length, floats incl. -0.0 and NaN, None, bools, ints outside [0, 2^63), text), whichever
names are new on a sequence, and whether a slice's args were replaced after the table was
made."""

from __future__ import annotations

import io
import math
import random
from fractions import Fraction

import pytest

from tracecvt.model import LANE, Clock, RunMeta, Trace
from tracecvt.writers.perfetto import argcolumns, write_perfetto

EDGE_INTS = sorted({v for k in range(1, 10) for v in ((1 << (7 * k)) - 1, 1 << (7 * k))
                    if v < 1 << 63} | {0, (1 << 63) - 1})


def _trace(seed: int) -> Trace:
    """Three lanes of slices whose args share keys (tables), with every kind of value."""
    rnd = random.Random(seed)
    t = Trace(RunMeta("argcolumns", "test", "test", "", "", Clock("ns", "ns", Fraction(1))))
    g = t.add_track("group")
    lanes = [t.add_track(f"lane {n}", g, LANE) for n in range(3)]
    floats = [0.0, -0.0, 1.5, 1e-300, 1e300, math.inf, -math.inf, math.nan, 0.94]
    others = [None, True, False, -1, -(1 << 63), 1 << 63, 1 << 70, "KERNEL", "AIC", "x" * 40,
              [1, 2], {"a": 1}]
    for n in range(400):
        lane = lanes[n % 3]
        args = {
            "task_id": n,                                    # ints, all different
            "cycles": rnd.choice(EDGE_INTS),                 # every varint length
            "ratio": rnd.choice(floats),                     # floats
            "mixed": rnd.choice([0, 7, 0.5, None, -0.0]),    # int, float and None
            "rare": 5 if n % 97 == 96 else None,             # a name first met late
            "never": None,                                   # None in every row
            "kind": rnd.choice(["KERNEL_AIC", "KERNEL_AIV", None]),   # text
            "odd": rnd.choice(others) if n % 5 == 0 else 3,  # not numbers: one by one
            "last": n * 1000,
        }
        if n % 2:
            args = {k: args[k] for k in ("task_id", "ratio", "kind", "last", "cycles")}
        t.add_slice(lane, 1000 * n, 500, f"task {n % 7}", "", args)
    return t


def _bytes(trace: Trace, tables: bool, monkeypatch) -> bytes:
    with monkeypatch.context() as m:
        if not tables:
            m.setattr(argcolumns, "MIN_ROWS", 1 << 60)
        out = io.BytesIO()
        write_perfetto(trace, out)
    return out.getvalue()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tables_give_the_bytes_of_the_arg_by_arg_path(seed, monkeypatch):
    trace = _trace(seed)
    units = [(tr, ids) for tr, ids in trace.slices_by_track().items()]
    found = argcolumns.tables(trace.slices, units)
    # both key layouts make a table, and every row of them is in one
    assert len({id(tb) for tb, _ in found.values()}) == 2 and len(found) == 400
    assert _bytes(trace, True, monkeypatch) == _bytes(_trace(seed), False, monkeypatch)


def test_a_slice_whose_args_were_replaced_goes_arg_by_arg(monkeypatch):
    """Slices given new args dicts before writing (``enrich``, as the critical path's step
    is added) are written from their new args, tables or not."""
    trace = _trace(4)

    def enrich(t):
        for s in t.slices[::3]:
            s.args = {**s.args, "critical_path_step": 1}
    with_tables, without = io.BytesIO(), io.BytesIO()
    write_perfetto(trace, with_tables, enrich=enrich)
    other = _trace(4)
    with monkeypatch.context() as m:
        m.setattr(argcolumns, "MIN_ROWS", 1 << 60)
        write_perfetto(other, without, enrich=enrich)
    assert with_tables.getvalue() == without.getvalue()
    assert b"critical_path_step" in with_tables.getvalue()
