"""Sorted distinct values (with each value's place among them) and membership of integer
columns, as ``np.unique`` and ``np.isin`` give them, without their cost on first use:
``np.unique`` of a plain array (and ``np.isin`` where it sorts, which calls it) imports
``numpy.ma`` to rule out a masked array, about 10 ms of a conversion that needs nothing
else from it."""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D integer array: its values sorted, each once."""
    out = np.sort(values)
    if len(out) > 1:
        keep = np.empty(len(out), dtype=bool)
        keep[0] = True
        np.not_equal(out[1:], out[:-1], out=keep[1:])
        out = out[keep]
    return out


def distinct_places(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of a 1-D integer array: its distinct
    values sorted, and each value's place among them.  Where the values are not negative
    and small (below 2^16, or four times their number: slice indexes, a counter's usual
    values), by a table of them up to the largest (no sort); else by numpy's sort."""
    if len(values) and int(values.min()) >= 0 and \
            int(values.max()) < max(1 << 16, 4 * len(values)):
        seen = np.zeros(int(values.max()) + 1, dtype=bool)
        seen[values] = True
        rank = np.cumsum(seen, dtype=np.int64) - 1
        return np.flatnonzero(seen), rank[values]
    members, at = np.unique(values, return_inverse=True)
    return members, at.ravel()


def repeats(values: np.ndarray) -> bool:
    """Whether a value of the 1-D integer array ``values`` is there more than once."""
    ordered = np.sort(values)
    return bool((ordered[1:] == ordered[:-1]).any())


def within(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``np.isin(values, known)`` where ``known`` is sorted (``distinct``'s).  A few known
    values (as ``np.isin`` counts them) are compared one at a time, with one bool mask
    (a 1 M-task database's slices against its few counter samples: no int64 array the
    size of the slices); more are looked up by a binary search."""
    if len(known) < 10 * len(values) ** 0.145:
        out = np.zeros(len(values), dtype=bool)
        for k in known.tolist():
            out |= values == k
        return out
    at = np.searchsorted(known, values)
    np.minimum(at, len(known) - 1, out=at)
    return known[at] == values
