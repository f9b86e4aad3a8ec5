"""The file split into packets, and the incremental state of a packet sequence."""

from __future__ import annotations

from typing import Any

from .report import Report


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]       # IndexError at the end of data
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _split(data: bytes, report: Report) -> list[tuple[int, int, int]]:
    """(header start, payload start, end) of every packet; other top-level fields are
    skipped with a note."""
    spans: list[tuple[int, int, int]] = []
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        try:
            key, pos = _varint(data, pos)
            fnum, wt = key >> 3, key & 7
            if fnum == 0 or wt in (3, 4, 6, 7):
                raise ValueError(f"invalid field key 0x{key:x}")
            if wt == 2:
                length, pos = _varint(data, pos)
                if pos + length > n:
                    report.add("truncated", len(spans),
                               f"byte {start}: a {length}-byte "
                               f"{'packet' if fnum == 1 else 'field'} but only {n - pos} bytes "
                               "remain")
                    break
                if fnum == 1:
                    spans.append((start, pos, pos + length))
                pos += length
            elif wt == 0:
                _, pos = _varint(data, pos)
            else:
                pos += 8 if wt == 1 else 4
                if pos > n:
                    raise IndexError
            if fnum != 1 or wt != 2:
                report.add("non-packet-field", len(spans),
                           f"byte {start}: field {fnum} (wire type {wt})")
        except IndexError:
            report.add("truncated", len(spans),
                       f"byte {start}: the file ends inside a field header")
            break
        except ValueError as e:
            if not spans:
                head = data[:40]
                text = head.isascii() and all(32 <= c < 127 or c in (9, 10, 13) for c in head)
                hint = f" (the file starts with text: {head.decode()[:24]!r})" if text else ""
                report.add("not-a-trace", -1, f"byte {start}: {e}{hint}")
            else:
                report.add("truncated", len(spans),
                           f"byte {start}: garbage after the last packet ({e})")
            break
    return spans


class _Sequence:
    """Incremental state of one packet sequence, as Trace Processor keeps it."""

    _generations = 0

    __slots__ = ("valid", "cleared", "generation", "tables", "default_uuid", "default_counters",
                 "default_double_counters", "default_clock", "thread", "clocks", "clock_last",
                 "legacy_ref_us")

    def __init__(self) -> None:
        self.valid = False                  # usable: cleared, and no packet lost since
        self.cleared = False
        _Sequence._generations += 1
        self.generation = _Sequence._generations    # unique id of the current state
        self.tables: dict[int, set] = {}    # InternedData field number -> iids
        self.default_uuid = 0
        self.default_counters: tuple = ()
        self.default_double_counters: tuple = ()
        self.default_clock = 0
        self.thread: Any = None             # legacy ThreadDescriptor (pid, tid)
        # clock id -> (incremental, ns/unit, ns to add to map it to BOOTTIME, the trace clock)
        self.clocks: dict[int, tuple[bool, int, int]] = {}
        self.clock_last: dict[int, int] = {}
        self.legacy_ref_us = 0

    def clear(self) -> None:
        self.valid = self.cleared = True
        _Sequence._generations += 1
        self.generation = _Sequence._generations
        self.tables = {}
        self.default_uuid = 0
        self.default_counters = self.default_double_counters = ()
        self.default_clock = 0
        # Not clock_last: Trace Processor keeps clocks outside the incremental state, so an
        # incremental clock goes on from its last value after a clear.


