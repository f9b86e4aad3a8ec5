"""``writers.perfetto.keyed.KeyedFields`` (flow ids and riding counter values per slice, as
columns): its lookups give what a dict of ``bytes`` per key, each part added to it in turn
(``d[k] = d.get(k, b"") + piece``), gives."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracecvt.writers.perfetto.keyed import KeyedFields


def as_dict(fields: KeyedFields) -> dict[int, bytes]:
    """Every key of ``fields`` with its bytes, read from its parts as they are held."""
    out: dict[int, bytes] = {}
    for keys, pool, starts, lengths in fields.parts:
        for k, a, n in zip(keys.tolist(), starts.tolist(), lengths.tolist()):
            out[k] = out.get(k, b"") + pool[a:a + n]
    return out


@pytest.mark.parametrize("seed", range(40))
def test_lookups_are_those_of_the_dict(seed):
    rng = random.Random(seed)
    fields = KeyedFields()
    reference: dict[int, bytes] = {}
    for _ in range(rng.randrange(0, 4)):
        # keys of both signs (a flow's destination BEGIN is ~i), in no order
        part = {k: bytes(rng.randrange(1, 255) for _ in range(rng.randrange(1, 6)))
                for k in rng.sample(range(-100, 100), rng.randrange(0, 60))}
        if rng.random() < 0.5:
            fields.add_dict(part)
        else:                           # a shared pool, pieces in another order
            order = rng.sample(list(part), len(part))
            pool = b"".join(part[k] for k in order)
            lengths = np.array([len(part[k]) for k in order], dtype=np.int64)
            fields.add(np.array(order, dtype=np.int64), pool,
                       np.cumsum(lengths) - lengths, lengths)
        for k, piece in part.items():
            reference[k] = reference.get(k, b"") + piece
    assert bool(fields) == bool(reference)
    keys = [rng.randrange(-110, 110) for _ in range(rng.randrange(0, 80))]
    want = [reference.get(k, b"") for k in keys]
    assert fields.pieces(keys) == (want if any(want) else None)
    assert fields.pieces(np.array(keys, dtype=np.int64)) == (want if any(want) else None)
    assert [fields.get(k) for k in keys] == want
    assert fields.subset(keys) == {k: reference[k] for k in keys if k in reference}
    assert as_dict(fields) == reference
    fields.clear()
    assert not fields and fields.pieces(keys) is None
