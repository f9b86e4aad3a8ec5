"""The slices' columns kept for one conversion (``slice_columns.kept_columns`` within
``columns_kept``) are those the slices have: after every sample's read (the reader's
``split_overlaps`` made them and moved slices since), after the analyses added the derived
tracks, and where slices are added or the list is another."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tracecvt.analyses import add_derived
from tracecvt.model import RunMeta, Trace, split_overlaps
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.slice_columns import (columns_kept, columns_of, forget_columns, kept_columns)

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
import digests  # noqa: E402

FOLDERS = digests.sample_folders()


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))


@pytest.mark.parametrize("label,folder", FOLDERS, ids=[label for label, _ in FOLDERS])
def test_the_columns_kept_are_the_slices_own(label, folder):
    try:
        sources = find_runs(folder)
    except Exception:                   # (a folder whose outcome is an error: golden's)
        pytest.skip("no run")
    for source in sources:
        with columns_kept():
            try:
                trace = source.read(ReadOptions(workers=1))
            except Exception:
                continue
            kept = kept_columns(trace.slices, make=False)
            if kept is not None:        # (split_overlaps made them: 4,096 slices or more)
                assert _same(kept, columns_of(trace.slices)), source.name
            cols = kept_columns(trace.slices)
            assert _same(cols, columns_of(trace.slices))
            add_derived(trace)
            assert _same(kept_columns(trace.slices, make=False), columns_of(trace.slices))


def _overlapping(n: int) -> Trace:
    trace = Trace(RunMeta(name="t", format="test"))
    lane = trace.add_track("stream", nesting=False)
    for k in range(n):
        trace.add_slice(lane, 10 * k, 25 if k % 7 == 0 else 5, "task")
    return trace


def test_slices_moved_to_overlap_lanes_move_in_the_columns_kept():
    trace = _overlapping(5000)
    with columns_kept():
        assert split_overlaps(trace) > 0
        kept = kept_columns(trace.slices, make=False)
        assert kept is not None and len(set(kept.track.tolist())) > 1
        assert _same(kept, columns_of(trace.slices))


def test_kept_for_one_list_made_once_extended_and_let_go():
    trace = _overlapping(50)
    slices = trace.slices
    assert kept_columns(slices, make=False) is None         # outside: none kept
    with columns_kept():
        assert kept_columns(slices, make=False) is None     # none made yet
        first = kept_columns(slices)
        assert kept_columns(slices) is first
        trace.add_slice(0, 10_000, 3, "added")
        more = kept_columns(slices, make=False)
        assert len(more.ts) == 51 and _same(more, columns_of(slices))
        other = list(slices)                                # another list: its own
        assert kept_columns(other, make=False) is None and _same(kept_columns(other), more)
        forget_columns(slices)
        assert kept_columns(slices, make=False) is None
    assert kept_columns(slices, make=False) is None


def test_columns_that_do_not_fit_stay_none_when_slices_are_added():
    trace = Trace(RunMeta(name="t", format="test"))
    lane = trace.add_track("lane")
    trace.add_slice(lane, 1 << 62, 5, "late")
    with columns_kept():
        assert kept_columns(trace.slices) is None
        trace.add_slice(lane, 5, 5, "early")
        assert kept_columns(trace.slices) is None


def test_the_first_columns_given_are_extended_outside_a_conversion():
    trace = _overlapping(20)
    first = columns_of(trace.slices)
    trace.add_slice(0, 1_000, 1, "added")
    got = kept_columns(trace.slices, first=first)
    assert _same(got, columns_of(trace.slices))
    assert kept_columns(trace.slices[:20], first=first) is first
