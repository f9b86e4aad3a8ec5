"""``analyses.gaps.Gaps``: the bubble analysis' gaps, some held as columns, read as the
tuples of Python ints they stand for, in the order added, as often as asked."""

from __future__ import annotations

import numpy as np
import pytest

from tracecvt.analyses import gaps as gaps_module
from tracecvt.analyses.gaps import Gaps


@pytest.mark.parametrize("block", [1 << 16, 2])
def test_gaps_in_columns_and_tuples_read_as_tuples_in_order(monkeypatch, block):
    monkeypatch.setattr(gaps_module, "_BLOCK", block)
    g = Gaps([(0, 1, 2, 0, 5, 7)])
    g.add_columns(3, np.array([10, 20, 30], dtype=np.int64),
                  np.array([15, 25, 1 << 62], dtype=np.int64), 2,
                  np.array([4, 5, 6], dtype=np.int64), -1)
    g.add_columns(4, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 2,
                  np.zeros(0, dtype=np.int64), -1)     # (nothing)
    g.append((1, 40, 41, 3, 8, -1))
    g.extend([(2, 50, 60, 1, 9, -1)])
    want = [(0, 1, 2, 0, 5, 7), (3, 10, 15, 2, 4, -1), (3, 20, 25, 2, 5, -1),
            (3, 30, 1 << 62, 2, 6, -1), (1, 40, 41, 3, 8, -1), (2, 50, 60, 1, 9, -1)]
    assert list(g) == want and list(g) == want          # (read again: the same)
    assert len(g) == 6 and bool(g) and not Gaps()
    assert all(type(v) is int for gap in g for v in gap)
    assert [g[k] for k in range(6)] == want and g[-3] == want[3]
    assert all(type(v) is int for v in g[2])
    with pytest.raises(IndexError):
        g[6]
    assert g == want and g == Gaps(want) and g != want[:5] and g != Gaps(want[::-1])
    assert max(g, key=lambda x: x[2] - x[1]) == want[3]
    assert g.lanes() == {0, 1, 2, 3}
    assert [x for block in g.blocks for x in gaps_module.block_gaps(block)] == want


def test_a_database_runs_idle_gaps_are_held_as_columns():
    """The lanes without a task graph (a database's streams and threads) give their gaps
    as columns: the same gaps, value for value, as one tuple each."""
    from tracecvt.analyses import analyze_tracks
    from tracecvt.readers import ReadOptions, find_runs
    from fuzzing import family
    seed = next(s for s in family("msprof-db").seeds() if s.root.name.startswith("PROF_"))
    (src,) = find_runs(seed.root, "msprof-db")
    b = analyze_tracks(src.read(ReadOptions(workers=1))).bubbles
    assert len(b.gaps) and all(block.__class__ is tuple for block in b.gaps.blocks)
    assert b.run is not None and sum(1 for _ in b.gaps) == len(b.gaps)


@pytest.mark.parametrize("run", ["pypto/ffn_medium",
                                 "simpler/a2a3sim_tmr_benchmark_bgemm_Case0_L4"])
def test_the_bubble_slices_are_made_alike_from_every_shape_of_block(run):
    """``add_derived_tracks`` makes the bubble slices a block at a time: from the gaps as
    tuples, as one tuple per block, or as columns (one lane, cause and waited-for slice per
    block, that slice none or one), the same slices, each waiting for the same task by one
    shared dict per task."""
    import itertools

    from conftest import SAMPLES
    from tracecvt.analyses import add_derived, analyze_tracks
    from tracecvt.analyses.derived import BUBBLE_CAT
    from tracecvt.readers import find_runs

    (src,) = find_runs(SAMPLES / run)
    rows = list(analyze_tracks(src.read()).bubbles.gaps)
    assert any(r[5] >= 0 for r in rows) and any(r[5] < 0 for r in rows)
    shapes = {"tuples": Gaps(rows)}
    one = shapes["one each"] = Gaps()
    for r in rows:
        one.blocks.append([r])
        one.size += 1
    runs = shapes["columns"] = Gaps()
    for (lane, cause, by), group in itertools.groupby(rows, lambda r: (r[0], r[3], r[5])):
        group = list(group)
        starts, ends, nexts = (np.array([r[k] for r in group], dtype=np.int64)
                               for k in (1, 2, 4))
        runs.add_columns(lane, starts, ends, cause, nexts, by)
    assert sum(b.__class__ is not list and b[5] >= 0 for b in runs.blocks) > 0
    made = {}
    for shape, gaps in shapes.items():
        trace = src.read()
        a = analyze_tracks(trace)
        a.bubbles.gaps = gaps
        add_derived(trace, a)
        bubbles = [s for s in trace.slices if s.cat == BUBBLE_CAT]
        made[shape] = [(s.track, s.ts, s.dur, s.name, s.args, s.shared_args) for s in bubbles]
        # one dict per task waited for
        assert len({id(s.shared_args) for s in bubbles if s.shared_args is not None}) == \
            len({r[5] for r in rows if r[5] >= 0})
        assert len(made[shape]) == len(rows) + sum(map(len, a.loop_idle.values()))
    assert made["tuples"] == made["one each"] == made["columns"]
