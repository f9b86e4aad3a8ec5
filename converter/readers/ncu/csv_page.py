"""Nsight Compute CSV exports: loading, telling the pages apart, the kernel identity columns."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ...fileio import read_text
from .kernels import Kernel
from .metrics import int64, printable, short_name

RAW = "raw"
DETAILS = "details"
OTHER = "other"

# Columns every per-kernel page starts with (NVTX columns may follow "Host Name").
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC")
# The details page's metric columns; the rule columns follow them in an export of a report
# with sections (--page details) and are absent from 'ncu --csv --metrics …' (Nsight Compute
# 2023.1: the rows end after "Metric Value").
DETAILS_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
                "Estimated Speedup")


# ncu's own log lines (``==PROF== Connected to process …``, ``==WARNING== …``,
# ``==ERROR== …``) come first on the standard output that ``ncu --csv … > file.csv``
# captures (also with --log-file; seen with Nsight Compute 2025.3.1): the CSV follows them.
_LOG_LINE = re.compile(r"==[A-Z]+==")


def sniff(head: bytes) -> bool:
    """Does this look like a Nsight Compute CSV export (any page)?"""
    lines = head.split(b"\n")
    line = next((x for x in lines if not _LOG_LINE.match(x.decode("latin-1"))), b"")
    return line.startswith(b'"ID","Process ID"') or (
        b'"Kernel Name"' in line and b'"ID"' in line)


@dataclass
class Loaded:
    rows: list[list[str]]           # the CSV, header first
    log: list[str]          # ncu's log lines before it (line numbers count them)


def load(path: Path) -> Loaded:
    text = read_text(path)
    if not text.strip():
        raise InputError(path, "empty file")
    log: list[str] = []
    start = 0
    while _LOG_LINE.match(text, start):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        log.append(text[start:end].rstrip("\r\n"))
        start = end
    try:
        rows = list(csv.reader(io.StringIO(text[start:], newline="")))
    except csv.Error as e:
        raise InputError(path, f"malformed CSV ({e})") from None
    if not rows:
        raise InputError(path, "Nsight Compute's log lines and no CSV after them")
    return Loaded(rows, log)


def page_of(header: list[str]) -> str:
    names = set(header)
    if "ID" not in names or "Kernel Name" not in names:
        return OTHER
    if set(DETAILS_COLUMNS) <= names:
        return DETAILS
    # the raw page: identity columns then metric columns named like unit__counter.rollup
    if sum(1 for h in header if "__" in h) >= 1 and not names & {"Section Name", "Metric Name"}:
        return RAW
    return OTHER


def wrong_page(path: Path, header: list[str]) -> InputError:
    extra = [h for h in header if h not in IDENTITY and not h.startswith(("thread Domain:",
                                                                          "Id:Domain:"))]
    shown = ", ".join(printable(h[:80]) for h in extra[:6]) + (", …" if len(extra) > 6 else "")
    return InputError(path, "a Nsight Compute CSV export of a page tracecvt does not read "
                      f"(columns after the kernel identity: {shown or 'none'}); export "
                      "'ncu -i REPORT --csv --page raw' (or --page details)")


class Identity:
    """Column positions of the kernel identity, found by name (NVTX columns shift them)."""

    def __init__(self, header: list[str]):
        pos = {h: i for i, h in enumerate(header)}
        self.id = pos.get("ID")
        self.name = pos.get("Kernel Name")
        self.context = pos.get("Context")
        self.stream = pos.get("Stream")
        self.block = pos.get("Block Size")
        self.grid = pos.get("Grid Size")
        self.device = pos.get("Device")
        self.cc = pos.get("CC")
        self.pid = pos.get("Process ID")
        self.push_pop = next((i for i, h in enumerate(header)
                              if h.startswith("thread Domain:Push/Pop_Range")), None)
        self.start_end = next((i for i, h in enumerate(header)
                               if h.startswith("Id:Domain:Start/Stop_Range")), None)
        self.last = max(i for i in (self.id, self.name, self.context, self.stream, self.block,
                                    self.grid, self.device, self.cc, self.push_pop,
                                    self.start_end) if i is not None)

    def kernel(self, row: list[str], path: Path, line: int) -> Kernel:
        index = int_cell(cell(row, self.id))
        if index is None:
            raise InputError(path, f"line {line}: ID {cell(row, self.id)!r} is not a "
                             "kernel number")
        name = cell(row, self.name)
        k = Kernel(index, name, short_name(name))
        k.context = int_cell(cell(row, self.context))
        k.stream = int_cell(cell(row, self.stream))
        k.device_id = int_cell(cell(row, self.device))
        k.compute_capability = cell(row, self.cc)
        grid = _dims(cell(row, self.grid))
        if grid:
            k.args["grid"] = grid
        block = _dims(cell(row, self.block))
        if block:
            k.args["block"] = block
        return k


class ShortRows:
    """Rows with fewer fields than the columns they are read from (a ragged or cut-short
    export): the missing cells are read as empty (no value), and a row without its kernel ID
    is skipped.  Counted for one warning, as the report path counts incomplete results."""

    def __init__(self, width: int, id_col: int):
        self.width = width
        self.id_col = id_col
        self.short: list[tuple[int, int]] = []      # (line, fields) of each short row
        self.skipped = 0

    def note(self, line: int, fields: int) -> None:
        self.short.append((line, fields))

    def fit(self, row: list[str], need: int, line: int) -> list[str] | None:
        """``row`` with at least ``need + 1`` cells (padded if short), or None to skip it."""
        if len(row) > need:
            return row
        self.note(line, len(row))
        if len(row) <= self.id_col:
            self.skipped += 1
            return None
        return row + [""] * (max(self.width, need + 1) - len(row))

    def warning(self, path: Path) -> str | None:
        n = len(self.short)
        if not n:
            return None
        where = ", ".join(f"line {line}: {k}" for line, k in self.short[:5])
        more = ", …" if n > 5 else ""
        text = (f"{path}: {n} {'row has' if n == 1 else 'rows have'} fewer fields than the "
                f"header's {self.width} ({where}{more}; the file is ragged or cut short): "
                "missing cells are read as no value")
        if self.skipped:
            one = self.skipped == 1
            text += (f"; {self.skipped} of them {'ends' if one else 'end'} before the kernel "
                     f"ID and {'is' if one else 'are'} skipped")
        return text


def cell(row: list[str], i: int | None) -> str:
    if i is None or i >= len(row):
        return ""
    return row[i]


def int_cell(text: str) -> int | None:
    """A cell as an int within int64 (thousands separators allowed), or None: the kernel ID,
    context, stream, device.  Text longer than any padded int64 is not parsed."""
    t = text.replace(",", "").strip()
    if not t or len(t) > 40:
        return None
    try:
        return int64(int(t))
    except ValueError:
        return None


_DIMS = re.compile(r"\d+")


def _dims(text: str) -> str:
    """``(2048, 1, 1)`` normalised to the report path's spelling."""
    nums = _DIMS.findall(text)
    return "({})".format(", ".join(nums)) if len(nums) == 3 else text.strip()
