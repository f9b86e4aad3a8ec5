"""Bytes per slice, held as columns: the fields a writer adds to some slices' events (flow
ids, riding counter values), for millions of slices on a large run.

A dict of a ``bytes`` per slice costs about 150 bytes an entry (DB 1 M: hundreds of MB at
the writer's peak); here each part added is its keys (sorted), one pool of bytes and each
key's place and length in it, and a lane takes the fields of its slices at once
(``pieces``) by numpy.
"""

from __future__ import annotations

from array import array
from typing import Iterable

import numpy as np

from .columns import gather, gather_rows


class KeyedFields:
    """Bytes per int key (int64).  A key added in several parts has their bytes end to
    end, in the order added."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]] = []

    def __bool__(self) -> bool:
        return bool(self.parts)

    def clear(self) -> None:
        self.parts.clear()

    def add(self, keys: np.ndarray, pool: bytes, starts: np.ndarray,
            lengths: np.ndarray) -> None:
        """Key ``keys[j]`` (distinct) gets ``pool[starts[j]:starts[j] + lengths[j]]``."""
        if len(keys):
            order = np.argsort(keys, kind="stable")
            self.parts.append((keys[order], pool, starts[order], lengths[order]))

    def add_dict(self, fields: dict[int, bytes]) -> None:
        """``add`` of a dict key -> bytes."""
        self.add(*pooled(fields))

    def pieces(self, keys: Iterable[int] | np.ndarray) -> list[bytes] | None:
        """Per key of ``keys``, its bytes (b"" where it has none); None where none has:
        ``column``'s, one ``bytes`` per key."""
        if not self.parts:
            return None
        got = self.column(np.asarray(keys if isinstance(keys, (np.ndarray, array))
                                     else list(keys), dtype=np.int64))
        return None if got is None else split(got)

    def column(self, keys: np.ndarray) -> tuple[bytes, np.ndarray] | None:
        """``pieces`` as a column: per key of ``keys`` (int64), its bytes, end to end in
        the order of ``keys``, and each one's length (0 where it has none); None where none
        has.  No ``bytes`` per key: a lane of a database's tasks has a flow per slice."""
        got = []
        for part_keys, pool, starts, lengths in self.parts:
            k = np.minimum(np.searchsorted(part_keys, keys), len(part_keys) - 1)
            hit = part_keys[k] == keys
            if not hit.any():
                continue
            sizes = np.where(hit, lengths[k], 0)
            k = k[hit]
            got.append((gather(np.frombuffer(pool, dtype=np.uint8), starts, lengths, k),
                        sizes))
        return joined_columns(got)

    def get(self, key: int) -> bytes:
        """The bytes of ``key`` (b"" where none)."""
        got = self.pieces((key,))
        return got[0] if got is not None else b""

    def subset(self, keys: Iterable[int]) -> dict[int, bytes]:
        """The keys of ``keys`` that have bytes, with them."""
        keys = list(keys)
        got = self.pieces(keys)
        return {} if got is None else {k: b for k, b in zip(keys, got) if b}


def pooled(fields: dict[int, bytes]) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray]:
    """``fields`` (key -> bytes) as columns: the keys (int64, or objects where one is
    outside it), one pool of the bytes end to end, each one's start and length there."""
    lengths = np.fromiter(map(len, fields.values()), dtype=np.int64, count=len(fields))
    keys = np.array(list(fields), dtype=object if fields and max(map(abs, fields)) >> 63
                    else np.int64)
    return keys, b"".join(fields.values()), np.cumsum(lengths) - lengths, lengths


def joined_columns(columns: list[tuple[bytes, np.ndarray]]) -> tuple[bytes, np.ndarray] | None:
    """Columns of bytes per row (each its rows' bytes end to end, and each row's length;
    all of as many rows) as one: per row, its bytes of each column in that order; None for
    no column."""
    if len(columns) < 2:
        return columns[0] if columns else None
    sizes = np.stack([lengths for _, lengths in columns], axis=1)
    base = np.cumsum([0] + [len(data) for data, _ in columns[:-1]])
    starts = np.cumsum(sizes, axis=0) - sizes + base
    return gather_rows(np.frombuffer(b"".join(data for data, _ in columns), dtype=np.uint8),
                       starts, sizes)


def split(column: tuple[bytes, np.ndarray]) -> list[bytes]:
    """A column of bytes per row (its rows' bytes end to end, and each row's length) as one
    ``bytes`` per row."""
    data, lengths = column
    return cut(data, np.cumsum(lengths) - lengths, lengths)


def cut(pool: bytes, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """``pool[s:s + n]`` per place."""
    return [pool[a:a + n] for a, n in zip(starts.tolist(), lengths.tolist())]
