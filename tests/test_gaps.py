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
