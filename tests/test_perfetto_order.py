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
