"""``model.split_overlaps`` on lanes whose slices follow each other in time order (the usual
lane, which it passes over without sorting) and on those just short of it."""

from __future__ import annotations

import random

import pytest

from tracecvt.model import GROUP, RunMeta, Trace, split_overlaps


def lane(times: list[tuple[int, int]], nesting: bool) -> tuple[Trace, int]:
    tr = Trace(RunMeta("t", "test"))
    core = tr.add_track("core", tr.add_track("dev", None, GROUP), nesting=nesting)
    for k, (ts, dur) in enumerate(times):
        tr.add_slice(core, ts, dur, f"s{k}")
    return tr, core


@pytest.mark.parametrize("nesting", [False, True])
@pytest.mark.parametrize("times, moved", [
    ([(0, 10), (10, 5), (15, 0), (20, 3)], []),          # touching: one after the other
    ([(0, 10), (9, 5), (20, 3)], [1]),                   # 1 ns over: the second moves
    ([(0, 10), (12, -5), (13, 1)], []),                  # a negative duration ends early
    ([(5, 10), (0, 3), (20, 1)], []),                    # out of order, no overlap
])
def test_lanes_in_order_keep_their_slices_and_overlaps_move(times, moved, nesting):
    tr, core = lane(times, nesting)
    assert split_overlaps(tr) == len(moved)
    assert [k for k, s in enumerate(tr.slices) if s.track != core] == moved
    assert len(tr.tracks) == 2 + bool(moved)


def test_in_order_slices_that_cross_a_call_leave_a_nesting_lane():
    tr, core = lane([(0, 100), (10, 20), (50, 60), (200, 1)], True)
    assert split_overlaps(tr) == 1                     # (50, 60) ends past its caller
    assert [s.track == core for s in tr.slices] == [True, True, False, True]
    tr, core = lane([(0, 100), (10, 20), (50, 50), (200, 1)], True)
    assert split_overlaps(tr) == 0                     # (50, 50) ends with it: nested


def test_slices_at_one_time_are_not_one_after_the_other():
    # sorted by (start, longest first): the empty slice is inside the other one
    tr, core = lane([(0, 0), (0, 5), (7, 1)], False)
    assert split_overlaps(tr) == 1 and tr.slices[0].track != core
    tr, core = lane([(0, 0), (0, 5), (7, 1)], True)
    assert split_overlaps(tr) == 0


def test_numpy_says_a_lane_needs_no_walk_exactly_when_the_walk_moves_nothing():
    # ``overlaps.moves_none`` against the walk itself, on random lanes of ties, touching,
    # nested, crossing, empty and negative slices
    from tracecvt.overlaps import moves_none
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for _ in range(3000):
        span = rng.choice([4, 20, 100])
        times = [(rng.randint(0, span), rng.choice([0, -1, rng.randint(1, span // 2),
                                                     rng.randint(1, span)]))
                 for _ in range(rng.randint(2, 12))]
        nesting = rng.random() < 0.5
        tr, _ = lane(times, nesting)
        none = moves_none([t for t, _ in times], [d for _, d in times], nesting)
        assert none == (split_overlaps(tr) == 0), (times, nesting)
        seen[none] += 1
    assert min(seen.values()) > 500
    assert moves_none([0, 1 << 62], [1 << 62, 1], True) is None      # past int64 / 2: walked


def test_a_long_lane_of_nested_calls_is_checked_by_numpy_and_kept():
    calls = [(k * 10, 10) for k in range(40)] + [(k * 10 + 2, 5) for k in range(40)]
    tr, core = lane(calls, True)
    assert split_overlaps(tr) == 0
    tr, core = lane([*calls, (395, 10)], True)                # crosses the last call
    assert split_overlaps(tr) == 1 and tr.slices[-1].track != core
