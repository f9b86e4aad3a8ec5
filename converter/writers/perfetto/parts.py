"""The second part of a split write (``write_perfetto``), seen from the first: its packets
read back for the merge, and the progress told around it."""

from __future__ import annotations

from array import array
from typing import IO, Any, Callable

from ...errors import OutputError, one_line
from .events import _PART_COUNTS, SequenceWriter


def rising(progress: Callable[[int], None]) -> Callable[[int], None]:
    """``progress``, told only counts above the last told: where a part written here is
    dropped after all (``_write_enriched``) and everything is written again, the bar waits
    rather than going back."""
    high = [-1]

    def tell(done: int) -> None:
        if done > high[0]:
            high[0] = done
            progress(done)
    return tell


def after_part(w: SequenceWriter, progress: Callable[[int], None] | None,
               result: dict) -> None:
    """The second part written here first: ``w`` tells its slices done after the part's
    (``progress`` told those as the part wrote them)."""
    if progress is not None:
        w.sink[1] = lambda done, before=result["slices"]: progress(before + done)


def read_part(w: SequenceWriter, helper, result: dict | None, part_out: IO[bytes],
              progress: Callable[[int], None] | None) -> tuple[IO[bytes], Any, Any]:
    """What the second part wrote (``SequenceWriter.write_sorted``'s ``part``: the file
    it wrote into, read there, and its packets' stamps and lengths, read from after them):
    its ``result``, or the forked ``helper``'s; its counts are added to ``w``'s, and
    ``progress`` is told every slice is done."""
    if helper is not None:
        result = helper.result()
        if result is None:
            raise OutputError("writing part of the trace in a second process failed: "
                              f"{one_line(helper.error)}")
    for key in _PART_COUNTS:
        w.counts[key] += result[key]
    if progress is not None:        # (the part's slices are done too: all of them now)
        progress(w.counts["slices"])
    n = result["part_packets"]
    stamps, lengths = array("q", [0]) * n, array("q", [0]) * n     # (as ``send_part``'s)
    part_out.seek(result["packet_bytes"])       # (after the packets: ``part_counts``)
    for column in (stamps, lengths):
        view = memoryview(column).cast("B")
        done = 0
        while done < len(view):
            got = part_out.readinto(view[done:])
            if not got:
                raise OutputError("writing part of the trace in a second process failed: "
                                  "its packets' times and lengths are not all there")
            done += got
    part_out.seek(0)
    return part_out, stamps, lengths
