"""``bubbles.step_series`` (numpy) gives the samples the one-change-at-a-time
``_step_series_each`` gives: changes before, at and after t0, changes that cancel out,
zero changes, floats and ints past int64 (these take the one-at-a-time way, as lists; the
numpy way gives array("q") columns)."""

from __future__ import annotations

import random
from array import array

import pytest

from tracecvt.analyses.bubbles import _step_series_each, step_series


def _deltas():
    rng = random.Random(3)
    for n in (1, 2, 10, 1000):
        for with_t0 in (True, False):
            d = {rng.randrange(-50, 5000): rng.choice([-2, -1, 0, 1, 1, 3])
                 for _ in range(n)}
            if with_t0:
                d[0] = 4
            yield d, 0
    yield {5: 1, 7: -1, 9: 1, 11: -1}, 5                # back to 0 and up again
    yield {10: 1, 20: 2.5, 30: -3.5}, 10                 # floats
    yield {10: 1 << 70, 20: -(1 << 70)}, 10              # past int64
    yield {1 << 64: 1, 3: 1}, 3                          # a time past int64
    yield {}, 7


@pytest.mark.parametrize("delta, t0", list(_deltas()))
def test_columns_and_one_at_a_time_alike(delta, t0):
    got = step_series(delta, t0)
    each = _step_series_each(delta, t0)
    assert tuple(map(list, got)) == each
    assert all(type(v) is type(w) for v, w in zip(got[1], each[1]))
    # the numpy way's columns: 8 bytes a sample (ints of int64 only; else lists)
    plain = all(v.__class__ is int and -(1 << 62) < v < 1 << 62
                for v in (*delta, *delta.values()))
    assert all((c.__class__ is array and c.typecode == "q") if plain else c.__class__ is list
               for c in got)
