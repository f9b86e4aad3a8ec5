"""``order.write_sorted``: this process's packets and a forked part's, written in time order
(equal times: this process's first, each in its own order), whichever way it cuts them."""

from __future__ import annotations

import random
from array import array

import pytest

from tracecvt.writers.perfetto.order import send_part, write_sorted


def packets(rng: random.Random, n: int, tag: bytes) -> tuple[list[bytes], array]:
    made = [tag + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
            for _ in range(n)]
    return made, array("q", [rng.choice([-1, rng.randint(0, 50)]) for _ in range(n)])


@pytest.mark.parametrize("own, theirs", [(300, 40), (300, 200), (50, 400), (0, 30),
                                         (30, 0)])
def test_packets_come_out_in_time_order_whichever_way_they_are_cut(own, theirs):
    rng = random.Random(own * 1000 + theirs)
    mine, stamps = packets(rng, own, b"m")
    part, part_stamps = packets(rng, theirs, b"p")
    # what the forked process hands over (``send_part``)
    sent = bytearray()

    class Sink:
        write = sent.extend

        def flush(self):
            pass
    got_stamps, lengths = send_part(Sink(), list(part), array("q", part_stamps), 7)
    want_order = sorted(range(own + theirs),
                        key=lambda k: stamps[k] if k < own else part_stamps[k - own])
    want = b"".join(mine[k] if k < own else part[k - own] for k in want_order)
    out: list[bytes] = []
    pk, st = list(mine), array("q", stamps)
    write_sorted(out.append, pk, st, (bytes(sent), got_stamps, lengths), 16)
    assert b"".join(out) == want
    assert all(len(chunk) > 0 for chunk in out)
    assert pk == [] and len(st) == 0                    # emptied


def _merge_into(tmp_path, monkeypatch, name: str, own: int, theirs: int, seed: int = 3,
                lead: bytes = b"") -> tuple[bytes, bytes]:
    """The merge written into a real file (after ``lead``) with every size split in two
    processes, and the same merge into a list: (file's bytes, the list's)."""
    from tracecvt.writers.perfetto import order
    monkeypatch.setattr(order, "SPLIT_FROM_BYTES", 0)
    rng = random.Random(seed)
    mine, stamps = packets(rng, own, b"m")
    part, part_stamps = packets(rng, theirs, b"p")
    lengths = array("q", map(len, part))
    path = tmp_path / name
    with open(path, "wb") as f:
        f.write(lead)
        write_sorted(f.write, list(mine), array("q", stamps),
                     (b"".join(part), array("q", part_stamps), lengths), 16, into=f)
        assert f.tell() == len(lead) + sum(map(len, mine)) + sum(lengths)
        f.write(b"after")
    out: list[bytes] = []
    write_sorted(out.append, list(mine), array("q", stamps),
                 (b"".join(part), array("q", part_stamps), lengths), 16)
    return path.read_bytes(), lead + b"".join(out) + b"after"


@pytest.mark.parametrize("own, theirs", [(300, 200), (50, 400), (40, 40), (3, 2)])
def test_the_second_half_cut_in_a_forked_process_lands_in_its_place(tmp_path, monkeypatch,
                                                                     own, theirs):
    from tracecvt.writers.perfetto import order
    halves = []
    real = order._write_halves
    monkeypatch.setattr(order, "_write_halves", lambda *a: halves.append(real(*a)) or
                        halves[-1])
    got, want = _merge_into(tmp_path, monkeypatch, "t.bin", own, theirs, lead=b"head")
    assert got == want
    assert halves == [own + theirs > 2 * 16]            # (one piece: nothing to split)


def test_a_forked_half_that_fails_is_written_here(tmp_path, monkeypatch):
    from tracecvt import forkpass
    from tracecvt.writers.perfetto import order

    def failing(fn):
        def broken():
            raise OSError("disk gone")
        return forkpass.fork_pass(broken)
    monkeypatch.setattr(order, "fork_pass", failing)
    got, want = _merge_into(tmp_path, monkeypatch, "t.bin", 300, 200)
    assert got == want


def test_without_a_fork_or_a_plain_file_one_process_writes_it(tmp_path, monkeypatch):
    import gzip
    import io
    import os

    from tracecvt.writers.perfetto import order
    monkeypatch.setattr(order, "fork_pass", lambda fn: None)
    got, want = _merge_into(tmp_path, monkeypatch, "t.bin", 300, 200)
    assert got == want
    assert order._plain_fd(io.BytesIO()) is None
    with gzip.open(tmp_path / "t.gz", "wb") as gz:
        assert order._plain_fd(gz) is None
    with open(tmp_path / "a.bin", "ab") as appending:
        assert order._plain_fd(appending) is None
    with open(tmp_path / "w.bin", "wb") as plain:
        assert order._plain_fd(plain) == plain.fileno()
    r, w = os.pipe()
    with os.fdopen(w, "wb") as pipe:
        assert order._plain_fd(pipe) is None
    os.close(r)


@pytest.mark.parametrize("block, reads", [(1 << 25, "preadv"), (64, "preadv"), (64, "pread"),
                                          (1, "seek")])
def test_spilled_packets_and_a_part_in_a_file_are_cut_out_a_block_at_a_time(
        tmp_path, monkeypatch, block, reads):
    """This process's first packets spilled to a file, its others in memory, the part's in
    a file: written in time order (equal times: the spilled first, then the others, then
    the part's), a block of ``block`` bytes at a time (each run of a source whose times
    never go back read at once, so each packet once), by ``os.preadv``, ``os.pread`` or
    seeking, in one process and with the second half cut in a forked one."""
    import tempfile

    from tracecvt.writers.perfetto import order
    monkeypatch.setattr(order, "BLOCK_BYTES", block)
    if reads != "preadv":
        monkeypatch.setattr(order, "_PREADV", None)
    if reads == "seek":
        monkeypatch.setattr(order, "_PREAD", None)
    rng = random.Random(block)
    spilled, spilled_stamps = packets(rng, 500, b"s")
    # runs whose times never go back, as a writer's sequences give them
    for k in range(0, 500, 60):
        spilled_stamps[k:k + 60] = array("q", sorted(spilled_stamps[k:k + 60]))
    mine, stamps = packets(rng, 70, b"m")
    part, part_stamps = packets(rng, 300, b"p")
    all_stamps = list(spilled_stamps) + list(stamps) + list(part_stamps)
    every = spilled + mine + part
    want = b"".join(every[k] for k in sorted(range(len(every)), key=all_stamps.__getitem__))

    def merged(into=None) -> bytes:
        spill = tempfile.TemporaryFile()
        spill.write(b"".join(spilled))          # (flushed by the merge)
        part_file = tempfile.TemporaryFile()
        part_file.write(b"".join(part))
        part_file.flush()
        out: list[bytes] = []
        write_sorted(out.append if into is None else into.write, list(mine),
                     array("q", list(spilled_stamps) + list(stamps)),
                     (part_file, array("q", part_stamps), array("q", map(len, part))), 16,
                     (spill, array("q", map(len, spilled))), into)
        return b"".join(out)
    read = []
    real = order._read_into
    monkeypatch.setattr(order, "_read_into", lambda into, *a: read.append(len(into)) or
                        real(into, *a))
    assert merged() == want
    assert sum(read) == len(want)       # (each packet read once: a block's runs only)
    monkeypatch.setattr(order, "SPLIT_FROM_BYTES", 0)
    with open(tmp_path / "t.bin", "wb") as f:
        f.write(b"head")
        assert merged(f) == b""
        f.write(b"after")
    assert (tmp_path / "t.bin").read_bytes() == b"head" + want + b"after"


@pytest.mark.parametrize("seed", range(6))
def test_a_part_sends_its_lanes_built_a_block_at_a_time_as_built(seed):
    """``send_part`` with packets built a lane at a time (``blocks``: their places in the
    list held by None, some built again there, as ``begin_again`` does) writes the bytes
    and lengths of the same packets given one by one: blocks first, last, side by side,
    empty, with packets built again at a block's first, last and any other place."""
    import numpy as np

    rng = random.Random(seed)
    made, stamps = packets(rng, 400, b"x")
    listed: list = list(made)
    blocks = []
    at = 0
    while at < len(made):
        n = rng.randint(0, 60)
        if rng.random() < 0.5 and n:           # a block of packets n long here
            blocks.append((at, b"".join(made[at:at + n]),
                           np.array([len(p) for p in made[at:at + n]], dtype=np.int64)))
            for k in range(at, min(at + n, len(made))):
                listed[k] = None
            if rng.random() < 0.6:             # some built again, longer or shorter
                for k in sorted({at, min(at + n, len(made)) - 1,
                                 rng.randrange(at, min(at + n, len(made)))}):
                    made[k] = listed[k] = b"again" * rng.randint(0, 3) + bytes([k % 256])
        at += n
    blocks = [(first, data, sizes[:len(made) - first]) for first, data, sizes in blocks]
    sent, plain = bytearray(), bytearray()

    class Sink:
        def __init__(self, into):
            self.write = into.extend

        def flush(self):
            pass
    got_stamps, lengths = send_part(Sink(sent), listed, array("q", stamps), 7, blocks)
    _, want_lengths = send_part(Sink(plain), list(made), array("q", stamps), 7)
    assert bytes(sent) == bytes(plain) == b"".join(made)
    assert lengths == want_lengths == array("q", map(len, made))
    assert got_stamps == array("q", stamps)
    assert listed == [] and blocks == []                # emptied
