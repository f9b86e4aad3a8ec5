"""How the two processes of an enriched write share the trace's own slice sequences.

While the analyses run in the writing process, a forked process writes the trace's own
sequences.  Where the run's own sequences cost more than the analyses and what they add
(an msprof database: many args per task, few derived slices), the forked process alone
would still be writing them long after the analyses are done.  So it writes the first of
them (``sure``) at once and waits, before the rest (``contested``), for the news from the
writing process, which by then knows what the analyses added: the news say how many of
the last contested sequences it takes itself (``taken``), enough to even out the two
processes' estimated work.  Estimates, not clocks, decide: the same run always gives the
same file.

The estimates are in µs on the machines measured (docs/performance.md): a slice's two
packets, each of its args, a counter sample, and the analyses per slice of the run.
"""

from __future__ import annotations

from typing import Any

SLICE_US = 6.5          # a slice's BEGIN and END
DERIVED_SLICE_US = 4.0  # a derived slice's (a bubble: few args, its END often plain)
ARG_US = 0.17           # each of its args (own and shared)
SAMPLE_US = 0.7         # a counter sample
ANALYSIS_US = 2.0       # the analyses, per slice of the run's own
_ARGS_SEEN = 64         # slices of a sequence whose args are counted (the rest alike)


def units_cost(slices: list, units: list[tuple[int, list[int]]],
               per_slice: float = SLICE_US) -> list[float]:
    """The estimated cost of writing each slice sequence of ``units`` (track, ids)."""
    out = []
    for _, ids in units:
        seen = ids[:_ARGS_SEEN]
        args = sum(len(slices[i].args or ()) + len(slices[i].shared_args or ())
                   for i in seen) / max(len(seen), 1)
        out.append(len(ids) * (per_slice + ARG_US * args))
    return out


def contest(costs: list[float]) -> list[int]:
    """Which sequences (of estimated ``costs``) are contested, in order: from the last
    one back, those that fit in half of the cost; the rest the forked process writes at
    once."""
    half = sum(costs) / 2
    acc = 0.0
    out = []
    for k in range(len(costs) - 1, -1, -1):
        if acc + costs[k] <= half:
            acc += costs[k]
            out.append(k)
    return out[::-1]


def taken(contested: list[float], own: float, here: float) -> int:
    """How many of the last ``contested`` sequences the writing process takes: the
    forked process's work is ``own`` (every own sequence and counter), this process's
    ``here`` (the analyses and what they added); each sequence taken moves its cost."""
    k = 0
    while k < len(contested):
        c = contested[-1 - k]
        if here + c / 2 > own - c / 2:          # taking it would not even them out more
            break
        here += c
        own -= c
        k += 1
    return k


def here_cost(n_own: int, slices: list, new_units: list, new_counters: list[Any]) -> float:
    """The writing process's estimated work: the analyses over ``n_own`` slices and
    writing what they added."""
    return (ANALYSIS_US * n_own + sum(units_cost(slices, new_units, DERIVED_SLICE_US))
            + SAMPLE_US * sum(len(c.ts) for c in new_counters))
