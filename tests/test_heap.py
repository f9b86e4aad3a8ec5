"""``heap.give_back``: the pages of freed objects go back to the system (glibc), so that the
Perfetto writer's merge buffer does not come on top of them."""

from __future__ import annotations

import os
import sys

import pytest

from tracecvt.heap import give_back


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_freed_heap_pages_are_returned():
    if not give_back():
        pytest.skip("this C library has no malloc_trim")
    # 64 MB of 2 KB objects (beyond Python's small-object allocator: the C heap), every
    # 64th kept, so that the heap's top stays in use and only a trim frees its middle
    held = [bytes(2048) + i.to_bytes(8, "little") for i in range(32768)]
    kept = held[::64]
    before = _rss_bytes()
    del held
    after_free = _rss_bytes()
    assert give_back()
    after_trim = _rss_bytes()
    assert before - after_free < 16 << 20        # (free alone keeps the pages)
    assert after_free - after_trim > 32 << 20    # the trim returns most of the 64 MB
    assert len(kept) == 512
