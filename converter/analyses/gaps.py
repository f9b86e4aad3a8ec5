"""The bubble analysis' gaps (``bubbles.Bubbles.gaps``), in the order found: (lane index,
start, end, cause code, next slice, waited-for slice or -1) each, as Python ints.

A lane whose gaps come as columns (``lane_columns.idle_lane``: every gap of a lane without
a task graph) keeps them so, three int64 columns and three numbers for the lane, instead
of a tuple and its ints per gap: a 1 M-task database's lanes have 860,000 gaps, 165 MB as
tuples and 21 MB as columns, held while the derived tracks are made of them.  Gaps found
one at a time stay tuples.  A reader of the gaps iterates them (as often as it likes) and
gets the tuples it always got, made a block at a time.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Iterable, Iterator

import numpy as np

_BLOCK = 1 << 16            # columns' gaps made tuples at a time while iterating

Gap = tuple[int, int, int, int, int, int]


class Gaps:
    """A sequence of gaps: blocks of tuples (``append``, ``extend``) and of columns
    (``add_columns``), in the order added.  ``blocks``: each a list of gaps, or the columns
    (lane, starts, ends, cause, next slices, waited-for) of one lane's (for a reader that
    takes them a column at a time: ``derived``)."""

    __slots__ = ("blocks", "size")

    def __init__(self, gaps: Iterable[Gap] = ()):
        self.blocks: list[Any] = []     # a list of tuples, or (lane, starts, ends, cause,
        self.size = 0                   # next slices, waited-for)
        self.extend(gaps)

    def append(self, gap: Gap) -> None:
        if not self.blocks or self.blocks[-1].__class__ is not list:
            self.blocks.append([])
        self.blocks[-1].append(gap)
        self.size += 1

    def extend(self, gaps: Iterable[Gap]) -> None:
        more = gaps if gaps.__class__ is list else list(gaps)
        if not more:
            return
        if not self.blocks or self.blocks[-1].__class__ is not list:
            self.blocks.append([])
        self.blocks[-1].extend(more)
        self.size += len(more)

    def add_columns(self, lane: int, starts: np.ndarray, ends: np.ndarray, cause: int,
                    nexts: np.ndarray, by: int) -> None:
        """Gaps of one ``lane``, ``cause`` and waited-for slice ``by``: (``starts[k]``,
        ``ends[k]``, ``nexts[k]``) each (int64 columns)."""
        if len(starts):
            self.blocks.append((lane, starts, ends, cause, nexts, by))
            self.size += len(starts)

    def lanes(self) -> set[int]:
        """The lanes that have a gap."""
        return {g[0] for block in self.blocks for g in
                (block if block.__class__ is list else (block,))}

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Gap]:
        for block in self.blocks:
            yield from block_gaps(block)

    def __getitem__(self, k: int) -> Gap:
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError("gap index out of range")
        for block in self.blocks:
            n = len(block) if block.__class__ is list else len(block[1])
            if k < n:
                if block.__class__ is list:
                    return block[k]
                lane, starts, ends, cause, nexts, by = block
                return lane, int(starts[k]), int(ends[k]), cause, int(nexts[k]), by
            k -= n
        raise IndexError("gap index out of range")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Gaps, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None         # (a sequence, as a list)

    def __repr__(self) -> str:
        return f"Gaps({len(self)} gaps)"


def block_gaps(block: Any) -> Iterator[Gap]:
    """The gaps of one of ``Gaps.blocks``, as tuples (a block of columns made so a part at
    a time)."""
    if block.__class__ is list:
        yield from block
        return
    lane, starts, ends, cause, nexts, by = block
    for k in range(0, len(starts), _BLOCK):
        yield from zip(repeat(lane), starts[k:k + _BLOCK].tolist(),
                       ends[k:k + _BLOCK].tolist(), repeat(cause),
                       nexts[k:k + _BLOCK].tolist(), repeat(by))
