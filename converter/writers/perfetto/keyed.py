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
        """Per key of ``keys``, its bytes (b"" where it has none); None where none has."""
        out = None
        if not self.parts:
            return out
        at = np.asarray(keys if isinstance(keys, (np.ndarray, array)) else list(keys),
                        dtype=np.int64)
        for part_keys, pool, starts, lengths in self.parts:
            k = np.minimum(np.searchsorted(part_keys, at), len(part_keys) - 1)
            hit = part_keys[k] == at
            if not hit.any():
                continue
            places = np.flatnonzero(hit)
            k = k[places]
            got = cut(pool, starts[k], lengths[k])
            if out is None:
                out = [b""] * len(at)
                for p, piece in zip(places.tolist(), got):
                    out[p] = piece
            else:
                for p, piece in zip(places.tolist(), got):
                    out[p] += piece
        return out

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


def cut(pool: bytes, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """``pool[s:s + n]`` per place."""
    return [pool[a:a + n] for a, n in zip(starts.tolist(), lengths.tolist())]
