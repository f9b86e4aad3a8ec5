"""simpler's ready-queue counters (``phases._queue_counters``), made a column at a time: per
queue, the last depth of each time (records ending at one ns: the last by thread), a sample
only where it changes; times past int64 by their ranks, with the same result."""

from __future__ import annotations

import random

import pytest

from tracecvt.model import GROUP, RunMeta, Trace
from tracecvt.readers.simpler.phases import _queue_counters


def one_at_a_time(samples: list) -> list[tuple[list, list]]:
    """The rule, a sample at a time: of equal times the last (by thread) holds; a sample
    where the depth differs from the one before."""
    out = []
    for k in range(3):
        ts_list: list = []
        values: list = []
        for ts, _, depths in sorted(samples, key=lambda x: (x[0], x[1])):
            if ts_list and ts_list[-1] == ts:
                ts_list.pop()
                values.pop()
            if not values or values[-1] != depths[k]:
                ts_list.append(ts)
                values.append(depths[k])
        out.append((ts_list, values))
    return out


def counters(samples: list) -> list[tuple[list, list]]:
    trace = Trace(RunMeta("t", "simpler"))
    _queue_counters(trace, trace.add_track("sched", None, GROUP), list(samples))
    assert [trace.tracks[c.track].name for c in trace.counters] == [
        "ready queue AIC", "ready queue AIV", "ready queue MIX"]
    return [(c.ts, c.values) for c in trace.counters]


@pytest.mark.parametrize("seed", range(200))
def test_queue_depths_are_those_of_the_rule(seed):
    rng = random.Random(seed)
    far = rng.random() < 0.2          # times past int64 take the loop
    base = (1 << 63) if far else 0
    samples = [(base + rng.randint(0, 12), rng.randint(0, 3),
                [rng.randint(0, 2) for _ in range(3)]) for _ in range(rng.randint(1, 40))]
    got = counters(samples)
    assert got == one_at_a_time(samples)
    assert all(type(v) is int for _, values in got for v in values)
