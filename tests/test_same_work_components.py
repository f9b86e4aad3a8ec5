"""``same_work._components`` (label propagation with numpy, or each edge on its own where
no slice is in two) finds the components a plain union-find finds, each named by its least
slice, on random graphs, long chains (the worst case for propagation), stars and pairs that
share no slice; ``distinct.distinct_places`` (a table of the indexes, or numpy's sort),
which it numbers them by, is ``np.unique``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracecvt.distinct import distinct_places
from tracecvt.same_work import _components


def _union_find(pairs):
    parent = {}

    def find(i):
        while parent.get(i, i) != i:
            i = parent[i]
        return i
    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
        parent.setdefault(a, parent.get(a, a))
        parent.setdefault(b, parent.get(b, b))
    return {i: find(i) for i in parent}


def _graphs():
    rng = random.Random(7)
    for n in (2, 5, 50, 500):
        for m in (1, n // 2 + 1, 3 * n):
            yield [(rng.randrange(n), rng.randrange(n)) for _ in range(m)]
    chain = list(range(0, 3000, 3))
    rng.shuffle(chain)
    yield list(zip(chain, chain[1:]))                       # one long chain, shuffled
    yield [(999, i) for i in range(1000, 1200)] + [(5, 7)]  # a star and a pair
    for spread in (1, 3, 100):          # pairs that share no slice, close together or not
        ends = rng.sample(range(400 * spread), 400)
        yield list(zip(ends[::2], ends[1::2]))


@pytest.mark.parametrize("pairs", list(_graphs()))
def test_unique_is_numpys(pairs):
    values = np.array(pairs, dtype=np.int64).ravel()
    members, at = distinct_places(values)
    want, want_at = np.unique(values, return_inverse=True)
    assert members.tolist() == want.tolist() and at.tolist() == want_at.ravel().tolist()


@pytest.mark.parametrize("pairs", list(_graphs()))
def test_components_are_union_finds(pairs):
    pairs = [(a, b) for a, b in pairs if a != b] or [(1, 2)]
    members, root = _components(np.array(pairs, dtype=np.int64))
    assert dict(zip(members.tolist(), root.tolist())) == _union_find(pairs)
