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
packets, its args by kind (fitted to the write time of every sequence of the three large
runs: an msprof database, simpler and PyPTO; a number, a string new or found, a value left
out, a nested value, shared args), a counter sample, the analyses per slice of the run, and
what each process does besides writing: the forked one's flows and riders before it writes,
and the pages it copies (``fork_costs``), this one's riders again once it takes a sequence.
"""

from __future__ import annotations

from typing import Any

SLICE_US = 1.9          # a slice's BEGIN and END, before its args
NESTING_US = 0.75       # more on a lane of calls (nested ENDs, riding samples)
ARG_US = 0.5            # each of its own args: a number
STR_US = 0.2            # a string found in the cache
STR_NEW_US = 1.7        # one of a few uses (the first written inline, the next interned)
NONE_US = 0.05          # one without a value (skipped)
NESTED_US = 3.0         # a list or dict (made one line of text each time)
SHARED_US = 1.4         # shared args (encoded once, then found by identity)
SAMPLE_US = 0.7         # a counter sample
ANALYSIS_US = 1.5       # the analyses, per slice of the run's own
SETUP_US = 0.8          # the forked process's flows, names and riders, per slice of its own
TAKE_US = 0.3           # this process's riders and flows of the run's own, per slice
TAKE_SAMPLE_US = 0.35   # and per counter sample of the run's own
RIDE_US = 0.4           # a sample of a counter the analyses added, found riding or not
# More in the forked process, per slice of its own whose args are a dict: reading a Python
# object writes its reference count, so the forked process copies the pages of the dicts
# and values it reads, where this process reads them in place (measured: about 1 µs a slice
# on simpler and PyPTO runs; rows of a table, ``ArgRow``, as a database's tasks, are read
# from their columns: about 0.1 µs).
FORK_US = 1.0
_ARGS_SEEN = 64         # slices of a sequence whose args are counted (the rest alike)
_NESTED = (list, dict, tuple)


def units_cost(slices: list, tracks: list, units: list[tuple[int, list[int]]]) -> list[float]:
    """The estimated cost of writing each slice sequence of ``units`` (track, ids)."""
    out = []
    for track, ids in units:
        per_slice = SLICE_US + NESTING_US * tracks[track].nesting
        seen = ids[:_ARGS_SEEN]
        cost = 0.0
        strings: dict[tuple[str, str], int] = {}
        for i in seen:
            s = slices[i]
            if s.args:
                for name, v in s.args.items():
                    c = v.__class__
                    if c is str:
                        strings[name, v] = strings.get((name, v), 0) + 1
                    else:
                        cost += (NONE_US if v is None else NESTED_US if c in _NESTED
                                 else ARG_US)
            if s.shared_args:
                cost += SHARED_US
        # a string seen once here is most likely new (built, then interned), the rest found
        cost += sum(STR_NEW_US if k == 1 else STR_US * k for k in strings.values())
        out.append(len(ids) * (per_slice + cost / max(len(seen), 1)))
    return out


def fork_costs(slices: list, units: list[tuple[int, list[int]]]) -> list[float]:
    """What writing each slice sequence of ``units`` (track, ids) costs the forked process
    more than this one (``FORK_US`` a slice whose args are a dict, as the first of the
    sequence tell)."""
    out = []
    for _, ids in units:
        seen = ids[:_ARGS_SEEN]
        dicts = sum(1 for i in seen if slices[i].args.__class__ is dict)
        out.append(FORK_US * len(ids) * dicts / max(len(seen), 1))
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


def taken(contested: list[float], own: float, here: float, start: float = 0.0,
          forked: list[float] | None = None) -> int:
    """How many of the last ``contested`` sequences the writing process takes: the
    forked process's work is ``own`` (every own sequence and counter), this process's
    ``here`` (the analyses and what they added); each sequence taken moves its cost (and
    what it costs the forked process more, ``forked``: ``fork_costs``), and taking any
    costs ``start`` here (``start_cost``)."""
    k = 0
    while k < len(contested):
        c = contested[-1 - k] + (start if k == 0 else 0.0)
        more = forked[-1 - k] if forked else 0.0
        if here + c / 2 > own - (c + more) / 2:     # taking it would not even them out more
            break
        here += c
        own -= contested[-1 - k] + more
        k += 1
    return k


def start_cost(n_own: int, samples: int) -> float:
    """What taking any sequence costs the writing process: the samples riding on the
    run's own slices (``n_own`` of them; the counters' ``samples``) found again, as the
    forked process has them, and the flows of what it takes."""
    return TAKE_US * n_own + TAKE_SAMPLE_US * samples


def own_cost(costs: list[float], n_own: int, samples: int,
             forked: list[float] = ()) -> float:
    """The forked process's estimated work: its set-up over the ``n_own`` slices of the
    run's own, the sequences of estimated ``costs`` (and what they cost it more,
    ``forked``), and the counters' ``samples``."""
    return SETUP_US * n_own + sum(costs) + sum(forked) + SAMPLE_US * samples


def here_cost(n_own: int, slices: list, tracks: list, new_units: list,
              new_counters: list[Any]) -> float:
    """The writing process's estimated work: the analyses over ``n_own`` slices and
    writing what they added."""
    return (ANALYSIS_US * n_own + sum(units_cost(slices, tracks, new_units))
            + (SAMPLE_US + RIDE_US) * sum(len(c.ts) for c in new_counters))
