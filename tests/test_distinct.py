"""``tracecvt.distinct`` gives what ``np.unique`` and ``np.isin`` give, on integer columns
of every shape the conversion meets: empty, one value, all equal, negative, int64's ends."""

from __future__ import annotations

import numpy as np
import pytest

from tracecvt.distinct import distinct, distinct_places, repeats, within

I64 = np.iinfo(np.int64)

CASES = {
    "empty": [],
    "one": [7],
    "all_equal": [3, 3, 3, 3],
    "sorted_distinct": [1, 2, 5, 9],
    "unsorted_with_repeats": [9, -4, 9, 0, -4, 2, 2, 2],
    "int64_ends": [I64.max, I64.min, 0, I64.max, I64.min + 1],
    "random": np.random.default_rng(26).integers(-50, 50, 1000).tolist(),
    "small_and_not_negative": np.random.default_rng(27).integers(0, 300, 500).tolist(),
    "past_the_table": [0, 1 << 16, 5, 1 << 16, 70_000],
}


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_distinct_and_repeats_are_numpys(values):
    a = np.array(values, dtype=np.int64)
    got = distinct(a)
    assert got.dtype == np.int64 and got.tolist() == np.unique(a).tolist()
    assert repeats(a) == (len(np.unique(a)) != len(a))
    members, places = distinct_places(a)
    want, want_places = np.unique(a, return_inverse=True)
    assert members.tolist() == want.tolist()
    assert places.tolist() == want_places.ravel().tolist()
    assert a.tolist() == list(values)           # the input is left as it was


@pytest.mark.parametrize("known", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_within_is_isin(values, known):
    v, k = np.array(values, dtype=np.int64), np.array(known, dtype=np.int64)
    assert within(v, distinct(k)).tolist() == np.isin(v, k).tolist()
