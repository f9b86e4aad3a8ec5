"""msopprof ``visualize_data.bin``: a stream of blocks, each a 12-byte little-endian header
``{u64 content size; u8 type; u8 padding; u8 version; u8 0x5A}`` followed by the content
(JSON text for every type seen; type 1 "Code" puts a 4096-byte source path first)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ...errors import InputError
from ...fileio import read_bytes

TYPES = {1: "Code", 2: "Trace", 3: "FileApi", 4: "InstrApi", 5: "OpBasicInfo",
         6: "ComputeLoadFigure", 7: "ComputeLoadTable", 8: "StorageAccessHeatMap",
         9: "StorageAccessTable", 0xA: "Type10", 0xB: "Type11", 0xC: "OccupancyMap",
         0xD: "RoofLine", 0xE: "CacheLineHeatMap", 0xF: "TopStallReason"}
_HEADER = struct.Struct("<QBBBB")


@dataclass
class Block:
    type: int
    name: str
    version: int
    size: int
    payload: Any              # parsed JSON, or None
    source_path: str = ""     # type 1 (Code) only
    error: str = ""


def read_blocks(path: Path) -> tuple[list[Block], str | None]:
    """All blocks of the file, and a note if it ends inside a block."""
    data = read_bytes(path)
    if len(data) < _HEADER.size:
        raise InputError(path, "too short for a visualize_data.bin block header")
    blocks: list[Block] = []
    pos = 0
    note = None
    while pos < len(data):
        if pos + _HEADER.size > len(data):
            note = f"{path}: {len(data) - pos} trailing bytes after the last block ignored"
            break
        size, typ, pad, version, reserved = _HEADER.unpack_from(data, pos)
        if reserved != 0x5A and not blocks:
            raise InputError(path, "not a visualize_data.bin block stream (bad block header)")
        pos += _HEADER.size
        src = ""
        if typ == 1:
            src = data[pos:pos + 4096].rstrip(b"\0").decode("utf-8", errors="replace")
            pos += 4096
        cut = pos + size > len(data)
        content = data[pos:pos + size]
        pos += size
        body = content[:len(content) - pad] if pad and not cut else content
        payload, err = None, ""
        text = body.rstrip(b"\0").strip()
        if text[:1] in (b"{", b"["):
            try:
                payload = orjson.loads(text)
            except orjson.JSONDecodeError as e:
                err = f"content is not valid JSON ({e.msg})"
        blocks.append(Block(typ, TYPES.get(typ, f"Type{typ}"), version, size, payload, src, err))
        if cut:
            note = (f"{path}: file ends inside a {TYPES.get(typ, typ)} block (cut short); "
                    f"{len(blocks) - 1} complete blocks converted")
            blocks[-1].error = blocks[-1].error or "block cut short"
            break
    return blocks, note
