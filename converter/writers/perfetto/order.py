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
from .columns import gather_rows


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

    Where the part holds a third of the packets or more, or this process spilled, the
    packets are cut out in order by numpy from where they lie, a block at a time
    (``_cut_in_order``); otherwise the part's packets become ``bytes`` of their own and
    are joined with these (measured on the large runs: the first costs per byte, the
    second per packet of the part).
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
        ends = list(accumulate(lengths))
        if not isinstance(data, bytes):
            data = data.read(ends[-1] if ends else 0)       # (their stamps and lengths
                                                            # follow in the file)
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
    """``write_sorted`` with the packets cut out in order by numpy from where they lie: this
    process's spilled ones in their file, its others joined into one ``bytes``, the part's
    in its file (or ``bytes``), a block of them at a time (``_Blocks``), so that no more
    than a block's packets are held twice."""
    empty = array("q")
    spill_lengths = np.frombuffer(spilled[1], dtype=spilled[1].typecode) if spilled else \
        np.frombuffer(empty, dtype=np.int64)
    own = np.fromiter(map(len, packets), dtype=np.int64, count=len(packets))
    part_lengths = np.frombuffer(part[2] if part else empty, dtype=np.int64)
    first, own_end = len(spill_lengths), len(spill_lengths) + len(own)
    n = own_end + len(part_lengths)
    # (a packet's length is below 2 GiB, a protobuf message's bound: 4 bytes each)
    lengths = np.empty(n, dtype=np.int32 if n and max(
        int(c.max()) for c in (spill_lengths, own, part_lengths) if len(c)) < 1 << 31
        else np.int64)
    lengths[:first], lengths[first:own_end], lengths[own_end:] = \
        spill_lengths, own, part_lengths
    times = np.concatenate((np.array(stamps, dtype=np.int64),
                            np.frombuffer(part[1] if part else empty, dtype=np.int64)))
    del stamps[:]
    # the order first, and the times let go, before anything is read (the sort's arrays
    # and the packets are not held at once: DB 1 M's peak)
    order = np.argsort(times, kind="stable")           # this process's first at one time
    # the runs: stretches of packets of one source whose times never go back (a block's
    # packets of one run lie end to end in it)
    run = np.zeros(n, dtype=np.int32 if n < 1 << 31 else np.int64)
    run[np.flatnonzero(times[1:] < times[:-1]) + 1] = 1
    del times
    for cut in (first, own_end):
        if 0 < cut < n:
            run[cut] = 1
    np.cumsum(run, out=run)
    if spilled:
        spilled[0].flush()
    sources = [(0, spilled[0] if spilled else b""), (first, _joined(packets, own, step)),
               (own_end, part[0] if part else b"")]
    pieces = _Blocks(sources, lengths, order, run, step)
    del run, lengths, order
    # (two processes read the files where they lie, never by their shared position)
    if not (into is not None and pieces.size >= SPLIT_FROM_BYTES and _PREAD is not None
            and _write_halves(into, pieces)):
        pieces.write(write, 0, len(pieces.order))


def _joined(packets: list[bytes], lengths: np.ndarray, step: int) -> bytearray:
    """``packets`` (of ``lengths``) end to end, copied in from the last ``step`` of them
    back, each step let go once copied (no packet held twice); empties ``packets``."""
    data = bytearray(int(lengths.sum()))
    view = memoryview(data)
    starts = np.cumsum(lengths) - lengths
    for k in range((len(packets) - 1) // step * step, -1, -step):
        at = int(starts[k])
        piece = b"".join(packets[k:k + step])
        view[at:at + len(piece)] = piece
        del packets[k:]
    view.release()
    return data


# From these many bytes a forked process cuts the second half of a merge (``_write_halves``):
# a 1 M-task database's 274 MB took 0.86 s to cut out in one process, 0.60 s in two; at 27
# MB (100,000 tasks) the fork costs what it saves.
SPLIT_FROM_BYTES = 64 << 20
# A merge reads about these many bytes of packets at a time (``_Blocks``).
BLOCK_BYTES = 32 << 20


class _Blocks:
    """Packets (by number: ``lengths``; numbered across ``sources``, (first packet, its
    bytes or the file that holds them) each, laid end to end from the file's start) cut
    out in ``order``, ``step`` packets a piece, read a block of pieces at a time: each
    run's (``run``: a number per packet, from 0 up, its packets' times never going back)
    packets of a block lie end to end in its source, one read each."""

    def __init__(self, sources: list[tuple[int, Any]], lengths: np.ndarray,
                 order: np.ndarray, run: np.ndarray, step: int):
        n = len(order)
        self.starts = np.cumsum(lengths, dtype=np.int64)
        self.starts -= lengths
        self.size = int(self.starts[-1]) + int(lengths[-1]) if n else 0
        # each source's bytes and the place of its first byte among all
        self.sources = [(int(self.starts[f]) if f < n else self.size, data)
                        for f, data in sources]
        self.lengths, self.order, self.run, self.step = lengths, order, run, step
        self.run_first = np.flatnonzero(np.diff(run, prepend=-1))   # each run's first packet
        self.run_source = np.searchsorted(np.array([f for f, _ in sources], dtype=np.int64),
                                          self.run_first, "right") - 1
        mean = self.size / max(1, n)
        self.block = max(1, int(BLOCK_BYTES / max(mean, 1.0)) // step) * step

    def write(self, write: Callable[[bytes], Any], first: int, stop: int) -> None:
        """Write the pieces from packet ``first`` (a piece's first) to ``stop``."""
        runs = len(self.run_first)
        # how many packets of each run come before: a run's packets come in its order, so
        # a block's of a run are the next ones of that run
        done = np.bincount(self.run[self.order[:first]], minlength=runs) if first else \
            np.zeros(runs, dtype=np.int64)
        for a in range(first, stop, self.block):
            b = min(stop, a + self.block)
            packets = self.order[a:b]
            data, at = self._read(packets, done)
            sizes = self.lengths[packets]
            for k in range(0, b - a, self.step):
                write(gather_rows(data, at[k:k + self.step, None],
                                  sizes[k:k + self.step, None])[0])

    def _read(self, packets: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bytes of ``packets`` (each run's of them read at once; ``done``: how many
        of each run came before them, counted on), and where each one begins in them."""
        run = self.run[packets]
        got = np.bincount(run, minlength=len(done))
        used = np.flatnonzero(got)
        lo = self.run_first[used] + done[used]
        last = lo + got[used] - 1
        done += got
        begin = self.starts[lo]
        size = self.starts[last] + self.lengths[last] - begin
        placed = np.cumsum(size) - size
        data = bytearray(int(size.sum()))
        view = memoryview(data)
        for r, at, b_, m in zip(used.tolist(), placed.tolist(), begin.tolist(),
                                size.tolist()):
            origin, source = self.sources[int(self.run_source[r])]
            _read_into(view[at:at + m], source, b_ - origin)
        view.release()
        shift = np.zeros(len(done), dtype=np.int64)
        shift[used] = placed - begin
        return np.frombuffer(data, dtype=np.uint8), self.starts[packets] + shift[run]

    def half(self) -> tuple[int, int]:
        """Where the second half begins: the first packet of the piece the middle byte
        falls in, and how many bytes come before it (0, 0: that is the first piece)."""
        step = self.step
        sizes = np.add.reduceat(self.lengths[self.order], np.arange(0, len(self.order), step),
                                dtype=np.int64).tolist() if len(self.order) else []
        half, before = sum(sizes) // 2, 0
        for n, size in enumerate(sizes):        # (the pieces' sizes: no array per packet)
            if before + size > half:
                return (n * step, before) if n else (0, 0)
            before += size
        return 0, 0


def _read_into(into: memoryview, source: Any, at: int) -> None:
    """``into`` filled with ``source``'s bytes from ``at`` on: of ``bytes``, or of a file
    read where it lies (``os.preadv``: the file's position, shared with a forked process,
    is left alone)."""
    if isinstance(source, (bytes, bytearray)):
        with memoryview(source) as view:    # (no copy of the range on the way)
            into[:] = view[at:at + len(into)]
        return
    fd = source.fileno() if _PREAD is not None else None
    done = 0
    while done < len(into):
        if _PREADV is not None:
            n = _PREADV(fd, [into[done:]], at + done)
        elif _PREAD is not None:            # (no ``preadv``: copied from what is read)
            got = _PREAD(fd, len(into) - done, at + done)
            n = len(got)
            into[done:done + n] = got
        else:                               # (one process: ``_cut_in_order``)
            source.seek(at + done)
            n = source.readinto(into[done:])
        if not n:
            raise OSError("a part of the trace is shorter than it said")
        done += n


_PREADV, _PREAD = getattr(os, "preadv", None), getattr(os, "pread", None)


def _write_halves(out: IO[bytes], pieces: _Blocks) -> bool:
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
    total = at + pieces.size

    def second_half() -> int:
        pos = [at + before]

        def put(data: bytes) -> None:
            piece = memoryview(data)
            while piece:
                n = os.pwrite(fd, piece, pos[0])
                piece, pos[0] = piece[n:], pos[0] + n
        pieces.write(put, cut, len(pieces.order))
        return pos[0]

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


def send_part(out: IO[bytes], packets: list[bytes | None], stamps: array, step: int,
              blocks: list[tuple[int, bytes, np.ndarray]] = ()) -> tuple[array, array]:
    """In a forked process: its ``packets`` into ``out`` in the order built (the parent
    sorts), ``step`` a write; returns their stamps and lengths for ``write_sorted``.
    ``blocks``: packets built a lane at a time (``SequenceWriter._add``), each (the place of
    its first in ``packets``, their bytes end to end, each one's length), written as they
    lie: their places in ``packets`` hold None, but where a packet was built again there
    (``begin_again``).  Empties ``packets`` and ``blocks``."""
    lengths = array("q")
    done = 0
    for first, data, sizes in blocks:
        _send_each(out, packets, done, first, step, lengths)
        done = first + len(sizes)
        again = packets[first:done]
        if again.count(None) == len(again):         # (mostly: none built again)
            out.write(data)
            lengths.frombytes(sizes.astype(np.int64).tobytes())
            continue
        ends = np.cumsum(sizes).tolist()
        at = 0
        with memoryview(data) as view:
            for k, (packet, end) in enumerate(zip(again, ends)):
                if packet is None:
                    continue
                out.write(view[at:end - int(sizes[k])])
                out.write(packet)
                at = end
            out.write(view[at:])
        sizes = sizes.astype(np.int64)
        for k, packet in enumerate(again):
            if packet is not None:
                sizes[k] = len(packet)
        lengths.frombytes(sizes.tobytes())
    _send_each(out, packets, done, len(packets), step, lengths)
    out.flush()
    packets.clear()
    if blocks:
        del blocks[:]
    return stamps, lengths


def _send_each(out: IO[bytes], packets: list[bytes], first: int, stop: int, step: int,
               lengths: array) -> None:
    """``packets[first:stop]`` (each a ``bytes``) into ``out``, ``step`` a write; their
    lengths onto ``lengths``."""
    for k in range(first, stop, step):
        run = packets[k:min(k + step, stop)]
        out.write(b"".join(run))
        lengths.extend(map(len, run))
