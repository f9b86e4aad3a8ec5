"""The Perfetto writer's times: the trace's time 0 (``time_origin``), and its last step,
every packet with its time (a stamp: ns from time 0, -1 for the packets without one) written
in time order.

Trace Processor sorts every packet by time (stably) before it parses them; a file already in
that order leaves it nothing to sort (about 5 % of its load time on the largest PyPTO run).
The sort here is stable too, so Trace Processor sees the packets in the order it would have
put them in.  Within a sequence, times go back only where no interned entry is defined (an
END closing an overlapping slice, a counter sample), so every entry is still defined before
its first use.  A forked process sends its packets (``part``) for this process to merge.
"""

from __future__ import annotations

import io
import os
import stat
from array import array
from itertools import accumulate
from typing import IO, Any, Callable

import numpy as np

from ...forkpass import fork_pass
from ...model import Trace
from ...slice_columns import SliceColumns
from .columns import gather


def time_origin(trace: Trace, cols: SliceColumns | None = None) -> int:
    """The trace's time 0: its first timestamp (``Trace.time_start``, the Chrome JSON
    writer's ``base_time_ns``), so that one event has the same time in both outputs.
    ``cols``: the columns of every slice of ``trace``, where known (``slice_columns``)."""
    known = cols is not None and len(cols.ts) == len(trace.slices) and len(cols.ts)
    start = trace.time_start(int(cols.ts.min()) if known else None)
    return 0 if start is None else start


def write_sorted(write: Callable[[bytes], Any], packets: list[bytes], stamps: array,
                 part: tuple[Any, Any, Any] | None, step: int,
                 spilled: tuple[IO[bytes], array] | None = None,
                 into: IO[bytes] | None = None) -> None:
    """Write ``packets`` (their times in ``stamps``) and those of a forked ``part`` (its
    packets' bytes, or the file that holds them, their stamps and lengths, from
    ``send_part``) in time order, ``step`` packets a write; packets of one time keep their
    order, this process's first.  ``spilled``: this process's first packets, laid end to
    end in a file, and their lengths (``stamps`` starts with theirs).  Empties ``packets``
    and ``stamps``.

    Where the part holds a third of the packets or more, every packet is laid end to end
    in one buffer and cut out of it in order by numpy (``_cut_in_order``); otherwise the
    part's packets become ``bytes`` of their own and are joined with these (measured on
    the large runs: the first costs per byte, the second per packet of the part).
    ``into``: the file ``write`` writes to, where a large buffer's second half may be cut
    out and written by a forked process (``_write_halves``)."""
    if spilled is not None:
        _cut_in_order(write, packets, stamps, part, step, spilled, into)
        return
    if part is not None and 2 * len(part[2]) >= len(packets):
        _cut_in_order(write, packets, stamps, part, step, into=into)
        return
    if part is not None:
        data, part_stamps, lengths = part
        if not isinstance(data, bytes):
            data = data.read()
        ends = list(accumulate(lengths))
        packets.extend(data[a:b] for a, b in zip([0, *ends], ends))
        stamps.extend(part_stamps)
    # numpy's stable sort: the same order as sorted(range(n), key=stamps.__getitem__)
    # (a copy, not a view: ``stamps`` is emptied below, which a live view would forbid)
    order = np.argsort(np.array(stamps, dtype=np.int64), kind="stable").tolist()
    get = packets.__getitem__
    for k in range(0, len(order), step):
        write(b"".join(map(get, order[k:k + step])))
    packets.clear()
    del stamps[:]


def _cut_in_order(write: Callable[[bytes], Any], packets: list[bytes], stamps: array,
                  part: tuple[Any, Any, Any] | None, step: int,
                  spilled: tuple[IO[bytes], array] | None = None,
                  into: IO[bytes] | None = None) -> None:
    """``write_sorted`` with the packets laid end to end in one buffer (this process's
    spilled ones, its others, then the part's) and each write's cut out of it by one numpy
    gather.  The packets held here are copied in from the last ``step`` of them back, each
    step let go once copied, and the files read straight into their places, so that no
    packet is held twice."""
    empty = array("q")
    spill_lengths = np.frombuffer(spilled[1] if spilled else empty, dtype=np.int64)
    own = np.fromiter(map(len, packets), dtype=np.int64, count=len(packets))
    part_lengths = np.frombuffer(part[2] if part else empty, dtype=np.int64)
    lengths = np.concatenate((spill_lengths, own, part_lengths))
    times = np.concatenate((np.array(stamps, dtype=np.int64),
                            np.frombuffer(part[1] if part else empty, dtype=np.int64)))
    del stamps[:]
    # the order first, and the times let go, before the buffer is made (the sort's
    # arrays and the buffer are not held at once: DB 1 M's peak)
    order = np.argsort(times, kind="stable")           # this process's first at one time
    del times
    starts = np.cumsum(lengths) - lengths
    first = len(spill_lengths)
    spill_size = int(spill_lengths.sum())
    own_end = spill_size + int(own.sum())
    data = bytearray(int(lengths.sum()))
    view = memoryview(data)
    for k in range((len(packets) - 1) // step * step, -1, -step):
        at = int(starts[first + k])
        piece = b"".join(packets[k:k + step])
        view[at:at + len(piece)] = piece
        del packets[k:]
    if spilled:
        _fill(view[:spill_size], spilled[0])
    if part:
        _fill(view[own_end:], part[0])
    view.release()
    source = np.frombuffer(data, dtype=np.uint8)
    pieces = _Gathered(source, starts, lengths, order, step)
    if not (into is not None and len(data) >= SPLIT_FROM_BYTES and _write_halves(into, pieces)):
        pieces.write(write, 0, len(order))


# From these many bytes a forked process cuts the second half of a merge (``_write_halves``):
# a 1 M-task database's 274 MB took 0.86 s to cut out in one process, 0.60 s in two; at 27
# MB (100,000 tasks) the fork costs what it saves.
SPLIT_FROM_BYTES = 64 << 20


class _Gathered:
    """The packets laid end to end in ``source`` (``starts``, ``lengths``), cut out in
    ``order``, ``step`` packets a piece."""

    def __init__(self, source: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                 order: np.ndarray, step: int):
        self.source, self.starts, self.lengths = source, starts, lengths
        self.order, self.step = order, step

    def piece(self, k: int) -> bytes:
        return gather(self.source, self.starts, self.lengths,
                      self.order[k:k + self.step])

    def write(self, write: Callable[[bytes], Any], first: int, stop: int) -> None:
        """Write pieces from packet ``first`` (a piece's first) to ``stop``."""
        for k in range(first, stop, self.step):
            write(self.piece(k))

    def half(self) -> tuple[int, int]:
        """Where the second half begins: the first packet of the piece the middle byte
        falls in, and how many bytes come before it (0, 0: that is the first piece)."""
        order, lengths, step = self.order, self.lengths, self.step
        sizes = [int(lengths[order[k:k + step]].sum()) for k in range(0, len(order), step)]
        half, before = sum(sizes) // 2, 0
        for n, size in enumerate(sizes):        # (the pieces' sizes: no array per packet)
            if before + size > half:
                return (n * step, before) if n else (0, 0)
            before += size
        return 0, 0


def _write_halves(out: IO[bytes], pieces: _Gathered) -> bool:
    """Write the merge into ``out`` with a forked process cutting out its second half
    and writing it in place (``os.pwrite``) while this one writes the first; False where
    ``out`` is not a plain file of its own position (gzip, a pipe, memory, appending) or
    no process can be forked (nothing written then).  Where the forked process fails,
    this one writes its half after its own."""
    fd = _plain_fd(out)
    if fd is None:
        return False
    cut, before = pieces.half()
    if not cut:
        return False
    out.flush()
    at = out.tell()
    total = at + int(pieces.lengths.sum())

    def second_half() -> int:
        pos = at + before
        for k in range(cut, len(pieces.order), pieces.step):
            piece = memoryview(pieces.piece(k))
            while piece:
                n = os.pwrite(fd, piece, pos)
                piece, pos = piece[n:], pos + n
        return pos

    helper = fork_pass(second_half)
    if helper is None:
        return False
    try:
        pieces.write(out.write, 0, cut)
        done = helper.result()
    finally:
        helper.abandon()
    if done != total:                   # (it failed: its half written here)
        out.seek(at + before)
        pieces.write(out.write, cut, len(pieces.order))
    out.seek(total)                     # (after both halves; the file's own seek: its
    return True                         # position known to it)


def _plain_fd(out: Any) -> int | None:
    """The descriptor of ``out`` where it writes straight into a regular file at its own
    position (an ``open(..., "wb")`` file), else None."""
    if not (isinstance(out, io.BufferedWriter) and isinstance(out.raw, io.FileIO)):
        return None
    try:
        import fcntl                    # (POSIX, as forking is)
        fd = out.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or \
                fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            return None
    except (ImportError, OSError, ValueError):
        return None
    return fd


def _fill(into: memoryview, data: Any) -> None:
    """``into`` filled with ``data``: bytes, or a file read from its start."""
    if isinstance(data, (bytes, bytearray)):
        into[:] = data
        return
    data.seek(0)
    done = 0
    while done < len(into):
        n = data.readinto(into[done:])
        if not n:
            raise OSError("the second process's part of the trace is shorter than it said")
        done += n


def send_part(out: IO[bytes], packets: list[bytes], stamps: array,
              step: int) -> tuple[array, array]:
    """In a forked process: its ``packets`` into ``out`` in the order built (the parent
    sorts), ``step`` a write; returns their stamps and lengths for ``write_sorted``.
    Empties ``packets``."""
    for k in range(0, len(packets), step):
        out.write(b"".join(packets[k:k + step]))
    out.flush()
    lengths = array("q", map(len, packets))
    packets.clear()
    return stamps, lengths
