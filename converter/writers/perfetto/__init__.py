"""Perfetto protobuf writer (TrackEvent).

Layout of the written trace:

* sequence 1 clears incremental state, gives the run's facts as TraceAttributes
  (``attributes``: the UI's Overview page), and holds the root TrackDescriptor (uuid 0:
  explicit process and thread ordering) and one TrackDescriptor per model track
  (uuid = index + 1) under its parent, with explicit child ordering and no merging of
  same-name siblings (overlap lanes share their core's name), then the instants.  Top-level
  groups are processes and the lanes of the run's own work threads (``tracks.Layout`` says
  why: it is what the Perfetto UI draws a first view from);
* every track with slices or counter samples has a packet sequence of its own (ids from 2,
  the busiest tracks first so that most ids are one-byte varints).  Its first packet clears
  the sequence's incremental state and sets ``TracePacketDefaults.track_event_defaults.
  track_uuid`` to the track (events omit ``track_uuid``);
* timestamps are ns on the default clock (BOOTTIME) counted from the trace's first
  timestamp (``time_origin``: the smallest over slices, instants and counter samples, the
  Chrome JSON writer's ``base_time_ns``), so that an event has the same time in both outputs
  and epoch-based runs start at 0 on the UI's time axis.  No ClockSnapshot is written: the
  Perfetto UI lists every snapshot as a row of a "System / Clock Snapshots" group, and
  absolute times from the run's start take about as many bytes as deltas on an incremental
  clock would (1.4 % more on ffn_medium);
* a slice is a BEGIN/END pair on its lane, emitted per lane in nesting order; flows ride on
  the BEGIN events (``flow_ids`` on the source, ``terminating_flow_ids`` on the destination;
  flow ids are global, not sequence-scoped); so does ``correlation_id`` where the slice is
  one piece of work with slices on other tracks (``same_work.work_ids``: a critical-path
  task copy and its task, too);
* event names, categories, argument names and repeated string values are interned.  Each
  sequence defines, before its first use there, the entries it uses, and only those: what an
  iid means is the sequence's own business (within one process an iid means the same string
  everywhere; a second process numbers its strings its own way).  Packets that define or use
  them carry SEQ_NEEDS_INCREMENTAL_STATE;
* args are debug annotations, one per model arg (Trace Processor stores each as an args row
  and pays for it at every open): a nested value is one line of text (``compact_text``), and
  the args a run declares as a line (``model.ARG_LINES``, e.g. a PyPTO call's label and
  hashes) are one ``name=value ...`` string where a slice's shared args hold them;
* counters are TYPE_COUNTER events on counter tracks (negative ints as doubles: shorter, and
  the same value in Trace Processor, which keeps counter values as doubles); an int no 64-bit
  field holds is an arg's digits, or a counter's double.  A sample at the time a slice
  written by the same process begins or ends rides on that BEGIN or END as an extra counter
  value (``SequenceWriter.ride``: the same counter row in Trace Processor, without a packet
  of its own to parse); derived counters change exactly there;
* packets are written in time order, whatever their sequence (``SequenceWriter.
  write_sorted``): Trace Processor sorts every packet by time before parsing, and a file
  already in order loads about 5 % faster on the largest PyPTO run.  The packets are held
  until then (about twice the trace's size in memory) and written in chunks; each sequence
  keeps its own order, so its interned entries are defined before they are used;
* a large trace's sequences are written in two parts (``write_perfetto``), the second by a
  forked process where the write may use two, else by a writer of its own in this process,
  first; its packets are merged with the first part's by time.  Which part holds which
  sequences is decided from the trace alone, by estimates of their cost, never from clocks
  or the number of processes (``share``): a run always gives the same file.

Modules: this one decides which process writes which sequences (``share`` the estimates
behind it); ``events`` builds the packets
(``SequenceWriter``), ``riders`` the counter samples riding on slice events, ``tracks`` the
track descriptors and sequence starts, ``interning`` the interned strings and args,
``order`` the time origin and the packets' order, ``parts`` the second part read back,
``attributes`` the run's facts, ``wire`` the field keys and packet framing.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from itertools import compress, count
from operator import attrgetter, is_not
from typing import IO, Any, Callable

import numpy as np

from ...forkpass import fork_pass
from ...heap import give_back
from ...model import Trace
from ...same_work import copies_work, still
from ...slice_columns import by_track, kept_columns
from .events import SequenceWriter, _sequence_ids
from .work_fields import correlation_fields, with_copies
from . import share
from .order import time_origin
from .parts import after_part, read_part, rising
from .wire import SEQ_ID

_ARGS, _SHARED, _TRACK = attrgetter("args"), attrgetter("shared_args"), attrgetter("track")

__all__ = ["time_origin", "write_perfetto"]

CHUNK_PACKETS = 20000


def write_perfetto(trace: Trace, out: IO[bytes],
                   progress: Callable[[int], None] | None = None,
                   workers: int = 1,
                   enrich: Callable[[Trace], Any] | None = None) -> dict[str, int]:
    """Write ``trace`` as a Perfetto protobuf trace to the binary stream ``out``.

    ``enrich(trace)``, if given, is called before anything is written: it may add tracks,
    slices on its new tracks, counters and instants, and give existing slices new args
    (replacing their ``args`` / ``shared_args`` dicts, never changing them in place); the
    derived tracks are added this way.

    On a large trace a second part of the track sequences is written into an unnamed
    temporary file and merged at the end: with ``enrich``, the trace's own sequences (its
    counters at once, its slices once ``enrich`` has run, with the args it gave them) while
    this process runs ``enrich`` and writes the rest; without, about half of the sequences
    by cost.  With ``workers`` > 1 (and where processes can be forked) a forked process
    writes it meanwhile; otherwise a writer of its own does here, in turn, what the forked
    process would, from the same state: the file is the same, byte for byte.

    The counts' ``flows`` are the flows written; ``flows_not_drawn`` those left out
    (``writers.flows``: a destination starting before its source).
    """
    counts = _write(trace, out, rising(progress) if progress is not None else None,
                    workers, enrich)
    counts["flows"] = len(trace.flows) - counts["flows_not_drawn"]
    return counts


def _write(trace: Trace, out: IO[bytes], progress: Callable[[int], None] | None,
           workers: int, enrich: Callable[[Trace], Any] | None) -> dict[str, int]:
    # What is written where is decided from the trace alone; ``workers`` only decides
    # whether the second part is written by a forked process or here, first, by a writer
    # of its own (as the forked process's copy would): the same bytes either way.
    forks = workers > 1 and hasattr(os, "fork")
    if enrich is not None and _cost(trace) < min(OVERLAP_MIN_COST, PARALLEL_MIN_COST):
        enrich(trace)
        enrich = None
    w = SequenceWriter(trace, out, progress, CHUNK_PACKETS)
    slice_units = list(w.by_track.items())
    counter_units = [c for c in trace.counters if c.ts]
    if enrich is not None:
        return _write_enriched(w, trace, out, progress, workers, forks, enrich, slice_units,
                               counter_units)
    # What each process writes: the slice sequences (BEGIN + END per slice, the heavier
    # packets) and the counter sequences, balanced by an estimate of their cost.
    mine: tuple[list, list] = (slice_units, counter_units)
    theirs: tuple[list, list] = ([], [])
    if _cost(trace) >= PARALLEL_MIN_COST:
        mine, theirs = _halves(slice_units, counter_units)
    w.ride(slice_units, counter_units)      # before the fork: both processes know them
    part_out = helper = result = pw = None
    if theirs[0] or theirs[1]:
        def second_part(pw: SequenceWriter, tell=None) -> dict[str, int]:
            pw.to_part(part_out, tell)
            pw.flows_of({t for t, _ in theirs[0]})
            pw.count_names(theirs[0], False)
            pw.write_slices(theirs[0])
            pw.write_counters(theirs[1])
            return pw.part_counts()

        part_out = tempfile.TemporaryFile()
        helper = fork_pass(lambda: second_part(w)) if forks else None
        if helper is None:                  # one process: the part first, here
            pw = _part_writer(trace, w)
    try:
        if pw is not None:      # (the samples ride as they do for ``w``: its riders, each
            pw.riders, pw.rides = w.riders, w.rides     # lane's taken by its one writer)
            result = second_part(pw, progress)
            pw = None
            after_part(w, progress, result)
        w.flows_of({t for t, _ in mine[0]} if part_out is not None else None)
        w.count_names(mine[0], True)
        w.write_header()
        w.write_slices(mine[0])
        w.write_instants()
        w.write_counters(mine[1])
        w.counts["slices"] = w.done
        w.write_sorted(read_part(w, helper, result, part_out, progress) if part_out is not None
                       else None, forks)
    finally:
        if helper is not None:
            helper.abandon()
        if part_out is not None:
            part_out.close()
    return w.counts


def _part_writer(trace: Trace, w: SequenceWriter) -> SequenceWriter:
    """A writer of the part a forked process would write, in this process, as the forked
    process's copy of ``w`` would be: ``w``'s columns, work ids and lanes (it may order a
    lane's ids in place, as ``w`` would: it is done with them before ``w`` writes anything,
    and neither writes a lane the other does), nothing written yet."""
    return SequenceWriter(trace, None, None, CHUNK_PACKETS, like=w)


def _write_enriched(w: SequenceWriter, trace: Trace, out: IO[bytes],
                    progress: Callable[[int], None] | None, workers: int, forks: bool,
                    enrich: Callable[[Trace], Any], slice_units: list,
                    counter_units: list) -> dict[str, int]:
    """While ``enrich`` runs here, a forked process writes the trace's own sequences:
    its counters, then its slices, held until the news from here arrive (the slices
    whose args ``enrich`` replaced, built again); this process writes the header and the
    slices and counters ``enrich`` added (the counters' samples riding on those slices'
    events), and the last of the trace's own slice sequences where the forked process
    has more to write (``share``: it waits for the news before those).  Should
    ``enrich`` change what the forked process writes otherwise, that part is dropped and
    this process writes everything.  Without ``forks`` (or where a fork fails), a writer
    of its own does here in turn what the forked process would: its first sequences
    before ``enrich``, the rest after, with the args they had before it."""
    slices = trace.slices
    n_slices, n_flows, n_tracks = len(slices), len(trace.flows), len(trace.tracks)
    samples = [len(c.ts) for c in counter_units]
    costs = share.units_cost(slices, trace.tracks, slice_units)
    forked = share.fork_costs(slices, slice_units)
    at = share.contest(costs)
    contested = [slice_units[k] for k in at]
    out_of_sure = set(at)
    sure = [u for k, u in enumerate(slice_units) if k not in out_of_sure]

    def own_first(pw: SequenceWriter, tell=None) -> dict[int, tuple]:
        pw.to_part(part_out, tell)
        pw.flows_of({t for t, _ in sure})
        pw.count_names(slice_units, False)
        pw.ride(slice_units, counter_units)
        pw.write_counters(counter_units)
        places: dict[int, tuple] = {}
        pw.write_slices(sure, places)
        return places

    def own_rest(pw: SequenceWriter, places: dict[int, tuple], told: tuple,
                 then: list[int] = ()) -> dict[str, int]:
        # ``then``: slices whose args are put back as they were before enrich while the
        # rest is written (as the forked process, which never saw enrich, has them)
        n_taken, news = told
        rest = contested[:len(contested) - n_taken]
        pw.flows_of({t for t, _ in rest})
        now = [(slices[i].args, slices[i].shared_args) for i in then]
        for i in then:
            slices[i].args, slices[i].shared_args = args_before[i], shared_before[i]
        try:
            pw.write_slices(rest, places)
        finally:
            for i, (a, sh) in zip(then, now):
                slices[i].args, slices[i].shared_args = a, sh
        for i, (a, sh, work) in news.items():
            slices[i].args = a
            slices[i].shared_args = sh
            if work is not None:            # a task the analyses drew a copy of
                pw.work[i] = work
        pw.begin_again(list(news), places)
        return pw.part_counts()

    def own_part() -> dict[str, int] | None:
        os.close(news_w)
        places = own_first(w)
        with os.fdopen(news_r, "rb") as r:
            told = r.read(8)
        if len(told) < 8:
            return None                     # the parent failed before telling
        size = int.from_bytes(told, "little")
        news = pickle.loads(os.pread(news_file.fileno(), size, 0))  # ours, not the input's
        if news is None:
            return None                     # the parent writes everything itself
        return own_rest(w, places, news)

    part_out = tempfile.TemporaryFile()
    helper = pw = places = news = result = None
    if forks:
        # The news go through a file (a pipe holds 64 KiB: larger news would block this
        # process until the forked one has written all its slices and reads them); the
        # pipe carries their length once they are there.
        news_file = tempfile.TemporaryFile()
        news_r, news_w = os.pipe()
        helper = fork_pass(own_part)
        os.close(news_r)
        if helper is None:                  # (no fork after all)
            os.close(news_w)
            news_file.close()
    if helper is None:                      # one process: the forked one's first part here
        pw = _part_writer(trace, w)
    mine: list = []                 # the contested sequences this process takes
    try:
        if pw is not None:
            places = own_first(pw, progress)
        # each slice's args before enrich (references: none is freed, so none is mistaken
        # for the new args of the same slice), this process's alone: made here, not before
        # the fork, they do not hold the forked process back (2.2 M slices: 0.2 s)
        args_before = list(map(_ARGS, slices))
        shared_before = list(map(_SHARED, slices))
        try:
            enrich(trace)
            added = slices[n_slices:]
            cols = kept_columns(slices, first=w.cols) if w.cols is not None \
                and len(slices) >= n_slices else None
            added_tracks = cols.track[n_slices:] if cols is not None else \
                np.fromiter(map(_TRACK, added), dtype=np.int64, count=len(added))
            if (len(trace.flows) == n_flows and len(slices) >= n_slices
                    and not (len(added) and int(added_tracks.min()) < n_tracks)
                    and [len(c.ts) for c in counter_units] == samples
                    and time_origin(trace, cols) == w.base):
                w.cols = cols           # (the forked process keeps those of its slices)
                own = {id(c) for c in counter_units}
                new_counters = [c for c in trace.counters if c.ts and id(c) not in own]
                new_units = by_track(added_tracks, n_slices, packed=True)
                # The last contested sequences this process takes, to even out the work
                n_taken = share.taken(
                    [costs[k] for k in at],
                    share.own_cost(costs, n_slices, sum(samples), forked),
                    share.here_cost(n_slices, slices, trace.tracks, list(new_units.items()),
                                    new_counters),
                    share.start_cost(n_slices, sum(samples)), [forked[k] for k in at])
                mine = contested[len(contested) - n_taken:] if n_taken else []
                taken = {t for t, _ in mine}    # (a unit is every slice of its track)
                replaced = sorted({*compress(count(), map(is_not, map(_ARGS, slices),
                                                           args_before)),
                                   *compress(count(), map(is_not, map(_SHARED, slices),
                                                           shared_before))})
                changed = {i: (slices[i].args, slices[i].shared_args, None)
                           for i in replaced if slices[i].track not in taken}
                # correlation ids with the copies enrich drew (same_work: the run's own
                # keep theirs, unless enrich changed what joins them; a task copied gets
                # one, and its args were replaced)
                before = {i: (args_before[i], shared_before[i]) for i in replaced}
                if still(trace, w.own_work, before):
                    added = copies_work(trace, w.own_work)
                    work = with_copies(w.own_fields, added, len(slices))
                    maybe = [i for i in {**w.copied, **added} if i < n_slices]
                else:
                    work = correlation_fields(trace)
                    maybe = range(n_slices)
                moved = [i for i in maybe
                         if work[i] != w.work[i] and slices[i].track not in taken]
                if all(i in changed and not w.work[i] for i in moved):
                    for i in moved:
                        changed[i] = (*changed[i][:2], work[i])
                    w.work = work
                    news = (n_taken, changed)
                w.seq_ids.update(_sequence_ids(new_units, new_counters,
                                               max(w.seq_ids.values(), default=SEQ_ID) + 1))
        finally:
            if helper is not None:
                data = pickle.dumps(news, protocol=pickle.HIGHEST_PROTOCOL)
                news_file.write(data)
                news_file.flush()
                with os.fdopen(news_w, "wb") as f:
                    f.write(len(data).to_bytes(8, "little"))
        if news is not None and pw is not None:     # the rest of the part, here
            result = own_rest(pw, places, news, replaced)
            after_part(w, progress, result)
        pw = places = None
        # (the args before enrich, a list of every slice's twice: needed no more)
        args_before = shared_before = None
        if news is None:                    # enrich changed what the part writes
            if helper is not None:
                helper.abandon()
            # (everything written here, as one part or halves; ``progress`` is already
            # the caller's, told only counts above the last: ``rising``)
            return _write(trace, out, progress, workers, None)
        give_back()                     # (what the analyses let go: heap.py)
        units = list(new_units.items())
        w.count_names(units + mine, True)
        w.ride(units, new_counters)     # derived counters change where the derived slices
        if mine:                        # begin or end; the samples riding on the sequences
            w.ride(slice_units, counter_units)      # taken: as the forked process has them
            w.flows_of({t for t, _ in mine})
        give_back()                     # (and the riders' arrays)
        w.write_header()
        w.write_instants()
        w.write_slices(units)
        w.write_slices(mine)
        w.write_counters(new_counters)
        w.counts["slices"] = w.done
        # Let go of what only the share needed before the merge (the derived slices' ids,
        # as ``release`` does the writer's own)
        for _, ids in units:
            del ids[:]
        w.write_sorted(read_part(w, helper, result, part_out, progress), forks)
    finally:
        if helper is not None:
            helper.abandon()
            news_file.close()
        part_out.close()
    return w.counts


_SLICE_COST = 4                  # a slice's two packets cost about four counter samples


def _cost(trace: Trace) -> int:
    """Writing cost estimate, in counter samples."""
    return _SLICE_COST * len(trace.slices) + sum(len(c.ts) for c in trace.counters)


# Below these estimated costs a fork does not pay (measured: docs/performance.md, ninth
# session): writing the run's own sequences in a forked process while the analyses run here
# pays from about 20 ms of writing (``_write_enriched``); splitting the writing alone in two
# halves, from about 0.1 s.  (The first is never above the second.)
OVERLAP_MIN_COST = 32_000
PARALLEL_MIN_COST = 200_000


def _halves(slice_units: list, counter_units: list) -> tuple[tuple[list, list],
                                                              tuple[list, list]]:
    """Split the sequences between two processes by estimated cost (as ``_cost``), heaviest
    first onto the lighter side; each side keeps the sequences in their original order."""
    items = [(_SLICE_COST * len(ids), 0, k) for k, (_, ids) in enumerate(slice_units)]
    items += [(len(c.ts), 1, k) for k, c in enumerate(counter_units)]
    items.sort(key=lambda x: (-x[0], x[1], x[2]))
    load = [0, 0]
    side: dict[tuple[int, int], int] = {}
    for cost, kind, k in items:
        p = 0 if load[0] <= load[1] else 1
        load[p] += cost
        side[(kind, k)] = p
    halves = tuple(([u for k, u in enumerate(slice_units) if side[(0, k)] == p],
                    [u for k, u in enumerate(counter_units) if side[(1, k)] == p])
                   for p in (0, 1))
    return halves[0], halves[1]

