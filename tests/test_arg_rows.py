"""Own args held as rows of a table (``tracecvt.arg_rows``): a row is the dict it stands
for, to every reader of the model; and the Perfetto writer's column-at-a-time encoding of
rows (``writers.perfetto.row_args``) writes the very bytes the dict way writes, on tables
made of the pathologies it must tell apart, on every database sample (whose device tasks
the reader gives as rows) and on mutated databases."""

from __future__ import annotations

import gc
import io
import math
from collections.abc import Mapping
import pickle

import pytest

from tracecvt.arg_rows import ArgRow, ArgTable, as_dict
from tracecvt.model import RunMeta, Slice, Trace
from tracecvt.modelfile.compare import model_differences
from tracecvt.writers import perfetto
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import row_args
from fuzzing import family, on_mutated, read_model


def test_a_row_is_the_dict_it_stands_for():
    table = ArgTable(("b", "a", "none", "nested"))
    nested = [1, {"x": 2}]
    row = table.add((2, "text", None, nested))
    plain = {"b": 2, "a": "text", "none": None, "nested": nested}
    assert isinstance(row, Mapping) and not gc.is_tracked(row)  # (32 bytes, no GC header)
    assert row == plain and plain == row and not (row != plain)
    assert list(row) == ["b", "a", "none", "nested"] and len(row) == 4
    assert list(row.items()) == list(plain.items())
    assert list(row.keys()) == list(plain) and tuple(row.values()) == tuple(plain.values())
    assert row["a"] == "text" and row.get("none", 5) is None and row.get("zz", 5) == 5
    assert "none" in row and "zz" not in row
    with pytest.raises(KeyError):
        row["zz"]
    assert {**row} == plain and dict(row) == plain and row.copy() == plain
    assert type(as_dict(row)) is dict and as_dict(row) == plain and as_dict(plain) is plain
    back = pickle.loads(pickle.dumps(row))
    assert type(back) is dict and list(back.items()) == list(plain.items())
    assert row != {**plain, "b": 3} and row != {"b": 2}
    with pytest.raises(TypeError):
        hash(row)
    with pytest.raises(TypeError):
        row["a"] = 1                        # read-only, as the model's args are


def test_slice_all_args_of_a_row_is_a_dict():
    table = ArgTable(("x", "y"))
    s = Slice(0, 0, 1, "s", args=table.add((1, 2)))
    assert type(s.all_args) is dict and s.all_args == {"x": 1, "y": 2}
    s.shared_args = {"y": 0, "z": 3}
    assert list(s.all_args.items()) == [("y", 2), ("z", 3), ("x", 1)]


def test_settled_columns_keep_every_value_and_its_type():
    """A column settles into an ``array('q')`` only while every value is an int of int64
    (not a bool, not past int64); a later value of another kind turns it into a list of
    the same values; rows read the same, waiting as tuples or settled."""
    table = ArgTable(("i", "b", "big", "mixed", "late", "none"))
    rows = [table.add((r, r % 2 == 0, (1 << 63) + r, r if r % 2 else float(r), r, None))
            for r in range(5)]
    before = [tuple(r.values()) for r in rows]
    columns = table.settle()
    assert table.size == 5 and not table.rows and len(table) == 5
    assert [c.__class__.__name__ for c in columns] == ["array", "list", "list", "list",
                                                       "array", "list"]
    assert [tuple(r.values()) for r in rows] == before
    assert [type(v) for r in rows for v in r.values()] == \
        [type(v) for b in before for v in b]
    later = table.add((5, True, 0, 5, "text", None))      # waits as a tuple
    assert later["late"] == "text" and len(table) == 6 and table.size == 5
    assert table.take(4, [0, 5]) == [0, "text"] and table.size == 6
    assert table.columns[4].__class__ is list and table.columns[4] == [0, 1, 2, 3, 4, "text"]
    assert later["late"] == "text" and rows[2]["late"] == 2
    assert [tuple(r.values()) for r in rows] == before


def test_coded_columns_hold_each_value_once_and_give_it_back_as_it_was():
    """A ``Coded`` column holds each distinct value once, by identity (1, 1.0 and True
    stay apart); columns added in batches share the values held before; past 65,536
    values the numbers take 4 bytes; a row added one at a time turns the column into a
    list of the same values."""
    from array import array
    from tracecvt.arg_rows import Coded, coded
    text = "x" * 40
    table = ArgTable(("k", "v"))
    first = coded([1, 1.0, True, text, 1], array("H", [0, 1, 2, 3, 4, 0]))
    assert len(first.values) == 4                   # (the same 1 given twice)
    assert table.extend([list(range(6)), first], 6) == 0
    second = coded([2.5, text], array("H", [1, 0, 1]))
    assert table.extend([[6, 7, 8], second], 3) == 6
    column = table.columns[1]
    assert column.__class__ is Coded and column.values == [1, 1.0, True, text, 2.5]
    want = [1, 1.0, True, text, 1, 1, text, 2.5, text]
    assert list(column) == want and [type(v) for v in column] == list(map(type, want))
    assert table.take(1, [8, 2, 1]) == [text, True, 1.0]
    assert [ArgRow(table, r)["v"] for r in range(9)] == want
    taken = table.take_columns([8, 0, 2])       # (each column of its kind)
    assert [c.__class__.__name__ for c in taken] == ["array", "Coded"]
    assert [list(c) for c in taken] == [[8, 0, 2], [text, 1, True]]
    table.add((9, None))
    assert table.settle()[1] == [*want, None] and table.columns[1].__class__ is list
    wide = ArgTable(("v",))
    many = [object() for _ in range(70000)]
    wide.extend([Coded(many[:65536], array("H", range(65536)))], 65536)
    wide.extend([Coded(many[65536:], array("H", range(70000 - 65536)))], 70000 - 65536)
    assert wide.columns[0].codes.typecode == "I" and list(wide.columns[0]) == many
    with pytest.raises(ValueError):
        Coded([text, text], array("H", [0, 1]))
    with pytest.raises(ValueError):
        wide.extend([[1, 2]], 3)


def test_rows_of_coded_columns_write_the_bytes_their_dicts_write(monkeypatch):
    """Tables filled a batch of columns at a time, strings, nested values and numbers
    (with None) as ``Coded`` columns, ints as arrays: the bytes of their dicts, in one
    process and in two."""
    from array import array
    from tracecvt.arg_rows import coded
    shared = {"shared": [1, 2]}

    def trace(as_rows: bool) -> Trace:
        t = Trace(RunMeta("coded", "test"))
        dev = t.add_track("device", kind="group")
        lanes = [t.add_track(f"lane {k}", dev, nesting=False) for k in range(3)]
        table = ArgTable(("n", "text", "nested", "f", "none"))
        texts = ["name-long-0", "short", "name-long-1"]
        nested = [shared, [1, {"a": 2}]]
        numbers = [0.5, 3, None]
        rows = []
        for batch in range(3):
            ks = range(20 * batch, 20 * batch + 20)
            first = table.extend([list(ks), coded(texts, array("H", [k % 3 for k in ks])),
                                  coded(nested, array("H", [k % 2 for k in ks])),
                                  coded(numbers, array("H", [k % 3 for k in ks])),
                                  coded([None], array("H", [0] * 20))], 20)
            rows += [ArgRow(table, r) for r in range(first, first + 20)]
        for r, args in enumerate(rows):
            t.add_slice(lanes[r % 3], 1000 * r, 500, f"task {r % 4}", "kernel",
                        args if as_rows else as_dict(args))
        return t
    from tracecvt.writers.perfetto import events
    coded_rows = []
    real = row_args.distinct_places
    monkeypatch.setattr(row_args, "distinct_places", lambda v: coded_rows.append(len(v))
                        or real(v))
    want = _written(trace(False))
    assert _written(trace(True)) == want
    monkeypatch.setattr(events, "PLAIN_FROM", 1)        # (rows that wait: by their codes)
    assert _written(trace(True)) == want and coded_rows
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    assert _written(trace(True), 2) == _written(trace(False), 2)


def _ratios(values: tuple) -> dict:
    """A ``Derived`` column's ``make`` for the tests: nested values from two numbers."""
    a, b = values
    out = {"x": {"a": float(a)}} if a.__class__ is int else {}
    out.setdefault("y", {})["b"] = [b, {"twice": None if b is None else b * 2}]
    return out


def _derived_table(batches: int = 3, added: int = 0) -> tuple[ArgTable, list[ArgRow]]:
    """A table of ("a", "b", "ratios", "n"), "ratios" made from "a" and "b" (``_ratios``),
    filled ``batches`` batches of 7 rows at a time, then ``added`` rows one at a time."""
    from array import array
    from tracecvt.arg_rows import Derived, coded
    table, rows = ArgTable(("a", "b", "ratios", "n")), []
    for batch in range(batches):
        ks = range(7 * batch, 7 * batch + 7)
        first = table.extend([array("q", ks), coded([0.5, "text-long", None],
                                                    array("H", [k % 3 for k in ks])),
                              Derived(_ratios, (0, 1)), [k * 1.5 for k in ks]], 7)
        rows += [ArgRow(table, r) for r in range(first, first + 7)]
    for k in range(7 * batches, 7 * batches + added):
        b = [0.5, "text-long", None][k % 3]
        rows.append(table.add((k, b, _ratios((k, b)), k * 1.5)))
    return table, rows


def test_rows_that_follow_one_another_are_taken_as_the_others_are():
    """``taker`` slices rows that follow one another (a list or a range of them) and gathers
    the rest one at a time: the same column kinds, values and types either way, for array,
    ``Coded``, ``Derived``, list and tuple columns; and a column of floats after ints stays
    a list of them (the first value tells ``ArgTable`` at once it is no column of ints)."""
    from array import array
    from tracecvt.arg_rows import Coded, Derived, coded, taker
    text = "y" * 30
    columns = [array("q", range(10)), coded([1, 1.0, True, text], array("H", [0, 1, 2, 3] * 2
                                                                       + [0, 3])),
               Derived(sum, (0,)), [None, 1, 2.5, text, b"x", 5, 6, 7, 8, 9], tuple(range(10))]

    def seen(cols):
        return [(c.__class__, getattr(c, "make", None), getattr(c, "sources", None),
                 None if c.__class__ is Derived else (list(c), list(map(type, c))))
                for c in cols]

    for rows in ([3, 4, 5, 6], range(2, 9), [0, 1], list(range(10)), [0, 2, 1, 3]):
        by_slice = list(map(taker(rows), columns))
        gathered = []               # the same rows and one more out of order, that one left out
        for c in map(taker([*rows, rows[0]]), columns):
            gathered.append(c if c.__class__ is Derived else Coded(c.values, c.codes[:-1])
                            if c.__class__ is Coded else c[:-1])
        assert seen(by_slice) == seen(gathered)
        assert [c.__class__ for c in by_slice] == [array, Coded, Derived, list, list]
    table = ArgTable(("a",))
    table.extend([[1.5, 2, 3]], 3)
    table.extend([[4, 5]], 2)
    assert table.settle()[0] == [1.5, 2, 3, 4, 5] and table.columns[0].__class__ is list
    ints = ArgTable(("a",))
    ints.extend([[1, 2]], 2)
    ints.extend([[3, True]], 2)
    assert ints.settle()[0] == [1, 2, 3, True] and type(ints.columns[0][3]) is bool


def test_derived_columns_make_each_rows_value_from_its_others():
    """A ``Derived`` column holds nothing per row: each read makes the row's value from its
    other columns (equal each time, a new object each time); taken rows take it along, to
    be made from the columns taken with it; rows added one at a time turn it into a list
    of the same values."""
    from tracecvt.arg_rows import Derived
    table, rows = _derived_table()
    column = table.settle()[2]
    assert column.__class__ is Derived and column.table is table and len(column) == 21
    for r, row in enumerate(rows):
        want = _ratios((r, [0.5, "text-long", None][r % 3]))
        assert row["ratios"] == want and dict(row)["ratios"] == want
        assert row["ratios"] is not row["ratios"]
    assert table.take(2, [20, 3]) == [rows[20]["ratios"], rows[3]["ratios"]]
    taken = table.take_columns([20, 3, 4])
    assert taken[2].__class__ is Derived and taken[2].table is None
    wider = ArgTable(("a", "b", "ratios", "n", "more"))
    assert wider.extend([*taken, [1, 2, 3]], 3) == 0
    assert wider.columns[2].__class__ is Derived and wider.columns[2].table is wider
    assert [dict(ArgRow(wider, r)) for r in range(3)] == \
        [{**rows[k], "more": m} for k, m in ((20, 1), (3, 2), (4, 3))]
    # a second batch of another table's rows after a batch of values: made when given
    wider.extend([[9], [None], [{"given": 1}], [0.0], [4]], 1)
    wider.extend([*table.take_columns([5]), [5]], 1)
    assert wider.columns[2].__class__ is list and wider.columns[2][3:] == \
        [{"given": 1}, rows[5]["ratios"]]
    mixed, mixed_rows = _derived_table(2, added=3)
    assert mixed.settle()[2].__class__ is list
    assert [dict(r) for r in mixed_rows] == [dict(r) for r in _derived_table(3)[1]][:17]


def test_rows_of_derived_columns_write_the_bytes_their_dicts_write(monkeypatch):
    """A table with a ``Derived`` column (its values new objects at each read) writes the
    bytes of its dicts to a .pftrace, in one process and in two and with rows that may
    wait, to Chrome JSON and to a model file; the Perfetto writer keeps none of its
    values (``_ArgEncoder.keep``: only those of each table's first row, written the dict
    way)."""
    from tracecvt.writers.model import write_model
    from tracecvt.writers.perfetto import events, interning

    def trace(as_rows: bool) -> Trace:
        t = Trace(RunMeta("derived", "test"))
        dev = t.add_track("device", kind="group")
        lanes = [t.add_track(f"lane {k}", dev, nesting=False) for k in range(3)]
        for r, args in enumerate(_derived_table(4)[1]):
            t.add_slice(lanes[r % 3], 1000 * r, 500, f"task {r % 4}", "kernel",
                        args if as_rows else as_dict(args))
        return t
    kept = []
    real = interning._ArgEncoder.clear
    monkeypatch.setattr(interning._ArgEncoder, "clear",
                        lambda self: kept.append(len(self.keep)) or real(self))
    want = _written(trace(False))
    assert kept and max(kept) >= 28
    kept.clear()
    assert _written(trace(True)) == want and kept and max(kept) == 1
    monkeypatch.setattr(events, "PLAIN_FROM", 1)        # (rows that may wait)
    assert _written(trace(True)) == want
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    assert _written(trace(True), 2) == _written(trace(False), 2)
    for write in (write_chrome, write_model):
        a, b = io.BytesIO(), io.BytesIO()
        write(trace(True), a)
        write(trace(False), b)
        assert a.getvalue() == b.getvalue()
    assert model_differences(trace(True), trace(False)) == []


def test_a_table_refuses_repeated_names_and_rows_of_another_width():
    with pytest.raises(ValueError):
        ArgTable(("a", "b", "a"))
    with pytest.raises(ValueError):
        ArgTable(("a", 1))
    with pytest.raises(ValueError):
        ArgTable(("a", "b")).add((1,))


# -- the writer ---------------------------------------------------------------------------

_NAMES = ("none_first", "mixed", "with_none", "neg", "big", "flag", "nested", "text",
          "f", "i", "huge", "all_none", "small", "late_none")
_SHARED_NESTED = {"shared": [1, 2]}


def _values(r: int) -> tuple:
    floats = (0.5, -0.0, math.nan, math.inf, -math.inf, 1e-300, 3.0)
    return (None if r == 0 else r * 3,                          # interned after the plan
            r * 1.5 if r % 2 else r,                            # ints and floats
            None if r % 3 == 1 else r * 1000,                   # a number or None
            -r,                                                 # negative: as it is
            (1 << 63) + r,                                      # past int64
            r % 2 == 0,                                         # bools
            _SHARED_NESTED if r % 4 == 0 else [r, {"a": r}],    # nested values
            f"name-{r % 4}-long" if r % 5 else "short",         # inline first, then interned
            floats[r % len(floats)],
            r << (r % 50),                                      # varints of every length
            (1 << 62) + r,
            None,
            r % 7,                                              # ints below 2^14
            r if r < 5 else None)                               # None from the sixth row on


def _trace(as_rows: bool, tables: int = 2, settle_at: int | None = None) -> Trace:
    """Three lanes whose slices take turns; their own args rows of ``tables`` tables (the
    second with some of the first's names), or the dicts they stand for; a few slices with
    dict args of the same names between them.  ``settle_at``: the tables' rows made
    columns after that many slices (those after wait as tuples)."""
    t = Trace(RunMeta("rows", "test"))
    dev = t.add_track("device", kind="group")
    lanes = [t.add_track(f"lane {k}", dev, nesting=False) for k in range(3)]
    made = [ArgTable(_NAMES), ArgTable(("i", "text", "extra", "f"))][:tables]
    for r in range(60):
        lane = lanes[r % 3]
        if r % 11 == 10:
            args = dict(zip(_NAMES, _values(r)))
        elif r % 2 or len(made) == 1:
            args = made[0].add(_values(r))
        else:
            args = made[1].add((r * 5, f"name-{r % 3}-long", r * 0.25, float(r)))
        if not as_rows:
            args = as_dict(args)
        t.add_slice(lane, 1000 * r, 500, f"task {r % 6}", "kernel", args)
        if r + 1 == settle_at:
            for table in made:
                table.settle()
    return t


def _written(trace: Trace, workers: int = 1) -> bytes:
    buf = io.BytesIO()
    perfetto.write_perfetto(trace, buf, None, workers=workers)
    return buf.getvalue()


@pytest.mark.parametrize("alone", [1024, 0])
def test_rows_write_the_bytes_their_dicts_write(monkeypatch, alone):
    """(``alone``: rows encoded one at a time before a run's bytes are cut per row at
    once; 0: from the first.)"""
    monkeypatch.setattr(row_args, "_ALONE", alone)
    planned = []
    real = row_args._plan
    monkeypatch.setattr(row_args, "_plan", lambda *a: planned.append(1) or real(*a))
    assert _written(_trace(True)) == _written(_trace(False))
    assert len(planned) == 2, "the rows were not encoded by their plans"
    for settle_at in (1, 30, 60):       # the first row, half of them, all settled before
        assert _written(_trace(True, settle_at=settle_at)) == _written(_trace(False))
    for tables in (1, 2):
        rows, dicts = _trace(True, tables), _trace(False, tables)
        assert model_differences(rows, dicts) == []
        a, b = io.BytesIO(), io.BytesIO()
        write_chrome(rows, a)
        write_chrome(dicts, b)
        assert a.getvalue() == b.getvalue()


def test_a_row_added_after_its_tables_plan_is_written_the_dict_way():
    from tracecvt.writers.perfetto.interning import _ArgEncoder, _Interner, _Sequence
    table = ArgTable(_NAMES)
    rows = [table.add(_values(r)) for r in range(8)]
    enc, seq = _ArgEncoder(_Interner(), {}), _Sequence(2)
    got = [enc.encode(r, seq) for r in rows[:4]]
    rows.append(table.add(_values(8)))          # after the plan: not in it
    got += [enc.encode(r, seq) for r in rows[4:]]
    plain, seq2 = _ArgEncoder(_Interner(), {}), _Sequence(2)
    assert got == [plain.encode(as_dict(r), seq2) for r in rows]
    assert seq.pending == seq2.pending


def test_rows_write_the_bytes_their_dicts_write_in_two_processes(monkeypatch):
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    assert _written(_trace(True), 2) == _written(_trace(False), 2)


def test_the_plan_sorts_columns_as_the_dict_way_needs():
    """Which columns the plan builds a column at a time: numbers only, never a column whose
    first row was None (its name has no iid yet), nor ints outside [0, 2^63), bools,
    strings or nested values; columns of None only are left out."""
    table = ArgTable(_NAMES)
    for r in range(40):
        table.add(_values(r))
    names = {n: (b"\x08" + bytes((k + 1,)), b"entry " + n.encode())
             for k, n in enumerate(_NAMES) if n != "none_first"}
    rows, plan = row_args._plan(table, names)
    assert rows == 40
    dynamic = [seg[1] for seg in plan if seg.__class__ is tuple]
    runs = [seg for seg in plan if seg.__class__ is row_args._Run]
    assert dynamic == ["none_first", "neg", "big", "flag", "nested", "text"]
    static = [e.decode()[6:] for run in runs for e in run.entries]
    assert static == ["mixed", "with_none", "f", "i", "huge", "small", "late_none"]
    assert [run.optional for run in runs] == [False, True, False, True]
    assert all(len(run.at) == 41 and run.at[-1] == len(run.data) for run in runs)


# -- the database reader ------------------------------------------------------------------

def _with_dicts(trace: Trace) -> Trace:
    """``trace`` with every row of args replaced by the dict it stands for (a copy of the
    slices)."""
    out = Trace(trace.meta)
    out.tracks, out.instants, out.counters, out.flows = (trace.tracks, trace.instants,
                                                         trace.counters, trace.flows)
    out._roots = trace._roots
    out.slices = [Slice(s.track, s.ts, s.dur, s.name, s.cat, as_dict(s.args), s.shared_args)
                  for s in trace.slices]
    return out


def _same_both_ways(trace: Trace) -> None:
    dicts = _with_dicts(trace)
    assert model_differences(trace, dicts) == []
    assert _written(trace) == _written(dicts)


def test_database_samples_write_the_same_as_dicts():
    seeds = family("msprof-db").seeds()
    assert seeds, "no database sample runs"
    rows = 0
    for seed in seeds:
        trace, error = read_model(seed.root, "msprof-db")
        assert error is None, error
        rows += sum(s.args.__class__ is ArgRow for s in trace.slices)
        _same_both_ways(trace)
    assert rows, "the database reader gave no rows of args"


def test_mutated_databases_write_the_same_as_dicts(tmp_path_factory):
    def check(root, _):
        trace, _ = read_model(root, "msprof-db")
        if trace is not None:
            _same_both_ways(trace)

    on_mutated(family("msprof-db").seeds(), tmp_path_factory.mktemp("rows-db"), check,
               share=4)


def _pipe_plan() -> list:
    """A plan of two sides' pipes, one side's pipes apart in the metrics' order, with a
    side and a pipe whose names need JSON's escapes or hold a "%"."""
    return [("aic_mac_ratio", "aic", "mac"), ("aiv_vec_ratio", "aiv", "vec"),
            ("aic_scalar_ratio", "aic", "scalar"), ("odd_ratio", "e%s\"ü", "p%%\n")]


def test_pipe_ratios_texts_are_the_json_of_their_dicts():
    """``PipeRatios.texts`` writes a column of rows' pipe ratios at once: each the compact
    JSON of the row's dict (finite floats of every form, ints written as floats); None,
    for the rows to be made one at a time, where a figure is None, not finite, a bool or
    no number, or two metrics are one pipe."""
    import json
    import random

    from tracecvt.readers.ascend_db.task_args import PipeRatios

    rng = random.Random(5)
    ratios = PipeRatios(_pipe_plan())
    values = [0.0, -0.0, 1.0, 0.1, 1e-06, 9.976696930145412e-06, 1e16, 1.5e300, -2.5, 7, 0,
              -3, 2 ** 53 + 1]
    for n in (1, 2, 50):
        columns = [[rng.choice(values) if rng.random() < 0.5 else rng.random() * 10 **
                    rng.randrange(-8, 8) for _ in range(n)] for _ in range(4)]
        want = [json.dumps(ratios(row), separators=(",", ":"), ensure_ascii=False)
                for row in zip(*columns)]
        assert ratios.texts(columns) == want
    for bad in (None, float("nan"), float("inf"), True, "0.5"):
        assert ratios.texts([[0.5, bad], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]) is None
    twice = PipeRatios([("aic_mac_ratio", "aic", "mac"), ("mac_ratio", "aic", "mac")])
    assert twice.texts([[0.5], [0.25]]) is None


def test_rows_of_pipe_ratio_columns_write_the_bytes_their_dicts_write(monkeypatch):
    """A ``Derived`` column whose make writes its texts a column at a time (a database's
    pipe ratios) is written from those texts, a block of rows at a time, with the bytes of
    its dicts: in one process and two, with blocks of a few rows and the rows met out of
    their order (each lane holds every third row)."""
    import random
    from array import array

    from tracecvt.arg_rows import Derived
    from tracecvt.readers.ascend_db.task_args import PipeRatios, pipe_column

    rng = random.Random(9)
    plan = _pipe_plan()
    names = ("task_id", *[m for m, _, _ in plan], "pipe_ratio")
    n = 40

    figures = [[rng.choice((0.5, 1.0)) * k + rng.random() for k in range(n)] for _ in plan]

    def trace(as_rows: bool) -> Trace:
        table = ArgTable(names)
        columns = [array("q", range(n))] + [list(f) for f in figures]
        table.extend([*columns, Derived(PipeRatios(plan), ())], n)
        table.columns[-1] = pipe_column(table, PipeRatios(plan))
        table.columns[-1].table = table
        t = Trace(RunMeta("pipes", "test"))
        dev = t.add_track("device", kind="group")
        lanes = [t.add_track(f"Stream {k}", dev, nesting=False) for k in range(3)]
        for r in range(n):
            row = ArgRow(table, r)
            t.add_slice(lanes[r % 3], 1000 * r, 500, f"op {r % 5}", "kernel",
                        row if as_rows else as_dict(row))
        return t
    made = []
    real = Derived.texts
    monkeypatch.setattr(Derived, "texts",
                        lambda self, a, b: made.append((a, b)) or real(self, a, b))
    for workers in (1, 2):
        monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0 if workers == 2 else 1 << 40)
        want = _written(trace(False), workers)
        for texts in (4096, 4):
            monkeypatch.setattr(row_args, "_TEXTS", texts)
            made.clear()
            assert _written(trace(True), workers) == want
            assert made and (texts == 4096 or len(made) >= n // 4)
