"""The records file's record types, and its fast decoding.

Phase records (scheduler, orchestrators, uploads) are held as ``msgspec.Struct`` objects of
the fields the builders use (absent: None), whichever way the file was decoded:

- ``decode`` reads a well-formed file in one typed pass, its row and time types checked by
  msgspec (about 2x faster than a plain parse followed by our checks in Python);
- a file that does not decode this way (a row or a time of another type, a number past 64
  bits, a cut or malformed file, bytes that are not UTF-8 anywhere in it, an older layout)
  is read the plain way in ``records``, where
  each malformed record is dropped and counted; its kept records become the same Structs
  (``from_dict``).

A file that ``decode`` accepts yields exactly what the plain way yields from it: the typed
fields admit only what the plain checks admit (unsigned integers below 2**63, not bools), the
others are kept as decoded, and ``metadata`` is parsed by the same parser as the plain way.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import orjson

from ...fileio import is_utf8

# msgspec bounds fit int64: a value from 2**63 (none seen) sends the file the plain way.
_MAX = (1 << 63) - 1
_U64 = Annotated[int, msgspec.Meta(ge=0, le=_MAX)]


class PhaseRecord(msgspec.Struct, gc=False):
    """A scheduler or device orchestrator record (device cycles)."""

    start_cycles: _U64
    end_cycles: _U64
    kind: Any = None
    loop_iter: Any = None
    tasks_processed: Any = None
    pop_hit: Any = None
    pop_miss: Any = None
    task_id: Any = None
    shared_at_end: Any = None
    submit_idx: Any = None
    phase: Any = None               # pre-June-2026 orchestrator steps


class HostRecord(msgspec.Struct, gc=False):
    """A host orchestrator record or a host -> device upload (host ns)."""

    start_host_ns: _U64
    end_host_ns: _U64
    task_id: Any = None
    submit_idx: Any = None
    phase: Any = None
    detail: Any = None


def from_dict(cls: type, record: dict[str, Any]) -> Any:
    """``record`` (a checked dict of a plain parse) as ``cls``: its known fields, no others."""
    get = record.get
    return cls(*[get(k) for k in cls.__struct_fields__])


class _Doc(msgspec.Struct, gc=False):
    chip_swimlane_level: Annotated[int, msgspec.Meta(ge=1, le=_MAX)] | None = None
    metadata: msgspec.Raw = msgspec.Raw(b"")
    aicore_tasks: list[list[_U64]] | None = None
    aicpu_tasks: list[list[_U64]] | None = None
    aicpu_scheduler_phases: list[list[PhaseRecord]] | None = None
    aicpu_orchestrator_phases: list[list[PhaseRecord]] | None = None
    host_orchestrator_phases: list[list[HostRecord]] | None = None
    host_device_uploads: list[HostRecord] | None = None


_DECODER = msgspec.json.Decoder(_Doc)


def decode(data: bytes) -> dict[str, Any] | None:
    """The file as the plain way's document, with typed rows and records; None where the
    plain way must read it (see the module's text).  Only the current layout is taken: a
    ``chip_swimlane_level`` number, ``metadata`` and ``aicore_tasks``."""
    if not is_utf8(data):
        return None
    try:
        doc = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if doc.chip_swimlane_level is None or doc.aicore_tasks is None or not doc.metadata:
        return None
    try:
        meta = orjson.loads(bytes(doc.metadata))
    except orjson.JSONDecodeError:
        return None
    return {"chip_swimlane_level": doc.chip_swimlane_level, "metadata": meta,
            "aicore_tasks": doc.aicore_tasks, "aicpu_tasks": doc.aicpu_tasks,
            "aicpu_scheduler_phases": doc.aicpu_scheduler_phases,
            "aicpu_orchestrator_phases": doc.aicpu_orchestrator_phases,
            "host_orchestrator_phases": doc.host_orchestrator_phases,
            "host_device_uploads": doc.host_device_uploads}
