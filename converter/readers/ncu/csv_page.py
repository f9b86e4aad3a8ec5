"""Nsight Compute CSV exports: loading, telling the pages apart, the kernel identity columns."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from ...errors import InputError
from ...fileio import read_text
from .kernels import Kernel
from .metrics import short_name

RAW = "raw"
DETAILS = "details"
OTHER = "other"

# Columns every per-kernel page starts with (NVTX columns may follow "Host Name").
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC")
DETAILS_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
                   "Rule Type", "Rule Description", "Estimated Speedup Type",
                   "Estimated Speedup")


def sniff(head: bytes) -> bool:
    """Does this look like a Nsight Compute CSV export (any page)?"""
    line = head.split(b"\n", 1)[0]
    return line.startswith(b'"ID","Process ID"') or (
        b'"Kernel Name"' in line and b'"ID"' in line)


def load(path: Path) -> list[list[str]]:
    text = read_text(path)
    if not text.strip():
        raise InputError(path, "empty file")
    try:
        return list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise InputError(path, f"malformed CSV ({e})") from None


def page_of(header: list[str]) -> str:
    names = set(header)
    if "ID" not in names or "Kernel Name" not in names:
        return OTHER
    if {"Section Name", "Metric Name", "Metric Value", "Rule Name"} <= names:
        return DETAILS
    # the raw page: identity columns then metric columns named like unit__counter.rollup
    if sum(1 for h in header if "__" in h) >= 1 and not names & {"Section Name", "Metric Name"}:
        return RAW
    return OTHER


def wrong_page(path: Path, header: list[str]) -> InputError:
    extra = [h for h in header if h not in IDENTITY and not h.startswith(("thread Domain:",
                                                                          "Id:Domain:"))]
    shown = ", ".join(extra[:6]) + (", …" if len(extra) > 6 else "")
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
        try:
            index = int(row[self.id].replace(",", ""))
        except (ValueError, IndexError, TypeError):
            raise InputError(path, f"line {line}: ID {_cell(row, self.id)!r} is not a "
                             "kernel number") from None
        name = _cell(row, self.name)
        k = Kernel(index, name, short_name(name))
        k.context = _int(_cell(row, self.context))
        k.stream = _int(_cell(row, self.stream))
        k.device_id = _int(_cell(row, self.device))
        k.compute_capability = _cell(row, self.cc)
        grid = _dims(_cell(row, self.grid))
        if grid:
            k.args["grid"] = grid
        block = _dims(_cell(row, self.block))
        if block:
            k.args["block"] = block
        return k


def _cell(row: list[str], i: int | None) -> str:
    if i is None or i >= len(row):
        return ""
    return row[i]


def _int(text: str) -> int | None:
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


_DIMS = re.compile(r"\d+")


def _dims(text: str) -> str:
    """``(2048, 1, 1)`` normalised to the report path's spelling."""
    nums = _DIMS.findall(text)
    return "({})".format(", ".join(nums)) if len(nums) == 3 else text.strip()
