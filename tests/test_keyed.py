"""``writers.perfetto.keyed.KeyedFields`` (flow ids and riding counter values per slice, as
columns): its lookups give what a dict of ``bytes`` per key, each part added to it in turn
(``d[k] = d.get(k, b"") + piece``), gives."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracecvt.writers.perfetto.keyed import KeyedFields, joined_columns


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
    column = fields.column(np.array(keys, dtype=np.int64))
    if any(want):
        assert column[0] == b"".join(want) and column[1].tolist() == list(map(len, want))
    else:
        assert column is None
    assert [fields.get(k) for k in keys] == want
    assert fields.subset(keys) == {k: reference[k] for k in keys if k in reference}
    assert as_dict(fields) == reference
    fields.clear()
    assert not fields and fields.pieces(keys) is None


@pytest.mark.parametrize("seed", range(20))
def test_columns_joined_give_each_row_its_bytes_of_each_column_in_turn(seed):
    """``joined_columns``: columns of bytes per row (rows with none among them) as one
    column whose row is the row's bytes of each column in the order given."""
    rng = random.Random(seed)
    n = rng.randrange(0, 50)
    rows = [[bytes(rng.randrange(256) for _ in range(rng.choice((0, 0, 1, 9, 20))))
             for _ in range(n)] for _ in range(rng.randrange(0, 5))]
    got = joined_columns([(b"".join(col), np.array(list(map(len, col)), dtype=np.int64))
                          for col in rows])
    if not rows:
        assert got is None
        return
    want = [b"".join(parts) for parts in zip(*rows)] if n else []
    assert got[0] == b"".join(want) and list(got[1]) == list(map(len, want))
