"""The tolerant CSV reader every msprof/torch_npu/msprof-op table goes through.

Handles what the real files do: a trailing comma on every line (msprof op), CRLF or LF,
an optional UTF-8 BOM, multi-line quoted cells (call stacks), quoted shape lists with
embedded quotes and ``;`` between tensors, a TAB after absolute timestamps, and missing
values (``N/A``, ``NA``, empty, ``4294967295``).  Columns are found by a normalised name plus
an alias table, because header spellings drift across CANN / torch_npu versions.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import UTF8_BOM, logical_name, read_bytes
from ...model import INT64_END, INT64_MIN
from .causes import CUT_SHORT, RAGGED_ROWS
from .timefmt import is_missing

csv.field_size_limit(1 << 30)

# canonical field -> normalised header spellings seen across versions (docs §8)
ALIASES: dict[str, tuple[str, ...]] = {
    "start_time_us": ("task_start_time", "start_time", "task_start", "start_timestamp"),
    "stop_time_us": ("task_stop", "task_end_time", "end_time"),
    "duration_us": ("task_duration", "duration", "task_time"),
    "wait_time_us": ("task_wait_time", "wait_time"),
    "op_name": ("op_name", "name", "kernel_name"),
    "op_type": ("op_type", "type"),
    "task_type": ("task_type", "accelerator_core", "kernel_type", "core_type"),
    "block_dim": ("block_dim", "block_num", "blockdim", "blocknum"),
    "mix_block_dim": ("mix_block_dim", "mix_block_num", "mixblockdim", "mixblocknum"),
    "stream_id": ("stream_id", "physic_stream_id"),
    "task_id": ("task_id",),
    "device_id": ("device_id", "device"),
    "model_id": ("model_id",),
    "context_id": ("context_id",),
    "step_id": ("step_id",),
    "batch_id": ("batch_id",),
    "subtask_id": ("subtask_id",),
    "op_state": ("op_state",),
    "hf32_eligible": ("hf32_eligible",),
}
_KEY_TO_CANON = {k: canon for canon, keys in ALIASES.items() for k in keys}

# Task types: the newer KERNEL_* spelling (task_time, JSON) and the older one (op_summary).
TASK_TYPES = {
    "KERNEL_AICORE": "AI_CORE",
    "KERNEL_AIVEC": "AI_VECTOR_CORE",
    "KERNEL_MIX_AIC": "MIX_AIC",
    "KERNEL_MIX_AIV": "MIX_AIV",
    "KERNEL_AICPU": "AI_CPU",
    "COMMUNICATION": "HCCL",
}

# One pipe vocabulary for msprof (mac/vec), msprof op (cube/vec) and the simulator (CUBE/FIXP).
PIPES = ("cube", "vector", "scalar", "mte1", "mte2", "mte3", "fixpipe")
_PIPE_NAMES = {"mac": "cube", "cube": "cube", "vec": "vector", "vector": "vector",
               "scalar": "scalar", "mte1": "mte1", "mte2": "mte2", "mte3": "mte3",
               "fixp": "fixpipe", "fixpipe": "fixpipe", "fix": "fixpipe"}


def normalize_task_type(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if is_missing(text):
        return None
    return TASK_TYPES.get(text.upper(), text)


def normalize_pipe(name: str) -> str:
    """``MAC``/``aic_mac``/``CUBE`` -> ``cube``; ``VEC``/``VECTOR`` -> ``vector``; ``FIXP`` ->
    ``fixpipe``; other pipe names (FLOWCTRL, SCALARLDST, RVECLD …) lower-cased."""
    n = name.strip().lower()
    for prefix in ("aic_", "aiv_"):
        if n.startswith(prefix):
            n = n[len(prefix):]
    return _PIPE_NAMES.get(n, n)


_UNIT = re.compile(r"\(([^)]*)\)")
_UNIT_NAMES = {"us": "us", "ms": "ms", "ns": "ns", "%": "pct", "gb/s": "gb_s", "mb/s": "mb_s",
               "kb": "kb", "mb": "mb", "byte": "bytes", "bytes": "bytes", "estimate": "estimate"}


def match_key(header: str) -> str:
    """Normalised name for matching: lower case, units dropped, separators -> ``_``."""
    h = _UNIT.sub("", header.strip().lstrip("\ufeff").lower())
    return re.sub(r"[^0-9a-z]+", "_", h).strip("_")


def arg_name(header: str) -> str:
    """Plain argument name that keeps the unit: ``Task Start Time(us)`` -> ``task_start_time_us``,
    ``aic_mte3_active_bw(GB/s)`` -> ``aic_mte3_active_bw_gb_s``."""
    h = header.strip().lstrip("\ufeff").lower()
    h = _UNIT.sub(lambda m: "_" + _UNIT_NAMES.get(m.group(1).strip(), m.group(1)) + "_", h)
    return re.sub(r"[^0-9a-z]+", "_", h).strip("_") or "column"


def canonical(header: str) -> str | None:
    return _KEY_TO_CANON.get(match_key(header))


_INT = re.compile(r"[+-]?\d+\Z")
_NUM = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def cell_value(text: str) -> Any:
    """A cell as int / float / str, or None for the missing-value spellings."""
    t = text.strip()
    if is_missing(t):
        return None
    if _INT.match(t):
        v = int(t)
        return v if INT64_MIN <= v < INT64_END else t     # beyond int64: keep the text
    if _NUM.match(t):
        f = float(t)
        return f if math.isfinite(f) else t
    return t


def unquote(text: str) -> str:
    """``"32,3,224,224"`` (quotes that survived RFC-4180 decoding) -> ``32,3,224,224``."""
    t = text.strip()
    while len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        t = t[1:-1].strip()
    return t


def tensor_list(text: str, shapes: bool) -> list | None:
    """``"81920,4096;8192,512"`` -> ``[[81920, 4096], [8192, 512]]`` (shapes) or
    ``DT_BF16;DT_BF16`` -> ``["DT_BF16", "DT_BF16"]``."""
    t = unquote(text)
    if is_missing(t):
        return None
    parts = t.split(";")
    if not shapes:
        return [p.strip() for p in parts]
    out = []
    for p in parts:
        dims = [d.strip() for d in unquote(p).split(",") if d.strip()]
        out.append([cell_value(d) if _INT.match(d) else d for d in dims])
    return out


class Table:
    """A parsed CSV file: header, rows of strings, and what the reader noticed."""

    def __init__(self, path: Path, header: list[str], rows: list[list[str]],
                 line_numbers: list[int]):
        self.path = path
        self.name = logical_name(path)
        self.header = header
        self.keys = [match_key(h) for h in header]
        self.rows = rows
        self.line_numbers = line_numbers      # first line of each row (1-based)
        self.bom = False
        self.crlf = False
        self.trailing_comma = False
        self.partial_last_row = False         # dropped: the file ends mid-row
        self.no_final_newline = False
        self.multiline_rows = 0
        self.ragged_rows = 0                  # rows padded or cut to the header's width

    def __len__(self) -> int:
        return len(self.rows)

    def col(self, canon: str) -> int | None:
        """Index of the column for a canonical field (or a plain normalised name)."""
        for i, k in enumerate(self.keys):
            if _KEY_TO_CANON.get(k) == canon or k == canon:
                return i
        return None

    def col_any(self, *names: str) -> int | None:
        for n in names:
            i = self.col(n)
            if i is not None:
                return i
        return None

    def has(self, *keys: str) -> bool:
        return all(self.col(k) is not None for k in keys)

    def dicts(self, rank: int | None = None) -> list[dict[str, Any]]:
        """Rows as dicts with plain normalised names and typed values."""
        names = [arg_name(h) for h in self.header]
        out = []
        for row in self.rows:
            d: dict[str, Any] = {} if rank is None else {"rank": rank}
            for n, v in zip(names, row):
                d[n] = cell_value(v)
            out.append(d)
        return out

    def notes(self) -> list[str]:
        """One-line warnings about the file's shape (truncation, ragged rows)."""
        return [note for note, _ in self.noted()]

    def noted(self) -> list[tuple[str, str]]:
        """``notes`` with each one's cause (causes.py), for ``Trace.warn``."""
        out = []
        if self.partial_last_row:
            out.append((f"{self.path}: file ends mid-row; {len(self.rows)} rows converted, "
                        "the partial last row dropped", CUT_SHORT))
        if self.ragged_rows:
            out.append((f"{self.path}: {self.ragged_rows} rows have a different number of "
                        f"cells than the header ({len(self.header)}); missing cells read as "
                        "no value", RAGGED_ROWS))
        return out

    def warn_into(self, trace: Any) -> None:
        """Each of ``noted`` as a warning of ``trace``, with its cause."""
        for note, cause in self.noted():
            trace.warn(note, cause)


def read_table(path: Path, data: bytes | None = None) -> Table:
    """Parse ``path`` (gz-transparent) into a :class:`Table`; an empty file is an InputError."""
    if data is None:
        data = read_bytes(path)
    bom = data.startswith(UTF8_BOM)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        raise InputError(path, "empty file")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        header = next(reader)
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as e:
        raise InputError(path, f"malformed CSV at line {reader.line_num}: {e}") from None
    header = [h.strip() for h in header]
    trailing = len(header) > 1 and header[-1] == ""
    if trailing:
        header = header[:-1]
    table = Table(path, header, rows, lines)
    table.bom = bom
    table.crlf = "\r\n" in text[:65536]
    table.trailing_comma = trailing
    ended = text.endswith(("\n", "\r"))
    table.no_final_newline = not ended
    width = len(header)
    multiline = 0
    ragged = 0
    for i, row in enumerate(rows):
        if trailing and len(row) == width + 1 and row[-1].strip() == "":
            row.pop()
        if any("\n" in c or "\r" in c for c in row):
            multiline += 1
        if len(row) != width:
            last = i == len(rows) - 1
            if last and not ended and len(row) < width:
                continue            # handled below as a partial row
            ragged += 1
            if len(row) < width:
                row.extend([""] * (width - len(row)))
            elif all(c.strip() == "" for c in row[width:]):
                del row[width:]
    if rows and not ended:
        last = rows[-1]
        short = len(last) < width
        # msprof op lines all end with ",": a last line without it was cut.
        no_comma = trailing and not text.rstrip("\r\n").endswith(",")
        if short or no_comma:
            rows.pop()
            lines.pop()
            table.partial_last_row = True
            if any("\n" in c for c in last):
                multiline -= 1
    table.multiline_rows = multiline
    table.ragged_rows = ragged
    return table


def sniff_header(head: bytes) -> list[str]:
    """Match keys of the first CSV line of ``head`` (for content sniffing)."""
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:         # not text (a cut multi-byte char at the end is)
            return []
        text = head[:e.start].decode("utf-8-sig")
    first = text.splitlines()[0] if text else ""
    try:
        cells = next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []
    return [match_key(c) for c in cells if c.strip()]
