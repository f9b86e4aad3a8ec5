"""The run's facts as the trace's ``TraceAttributes`` (Perfetto writer).

``TracePacket.trace_attributes`` (field 126; ``protos/perfetto/common/trace_attributes.proto``)
holds key/value pairs about the whole trace.  Trace Processor (v58) keeps each as a row of
its ``metadata`` table named ``trace_attribute.<key>``, and the Perfetto UI lists them on its
Overview page under "Trace Attributes", so that what the run is (the tool and its version,
the device, the source's clock, the files read, the converter) is one click from the
timeline, as the Chrome JSON's ``metadata`` has it.
"""

from __future__ import annotations

from ... import __version__
from ...fileio import PRODUCER
from ...model import Trace
from ..protowire import key_bytes, key_str, key_varint
from .wire import _SEQ, _packet

_ATTRIBUTES = 126                 # TracePacket.trace_attributes
_ATTRIBUTE = 1                    # TraceAttributes.attribute
_KEY, _LONG, _STRING = 1, 2, 3    # TraceAttributes.Attribute key, long_value, string_value


def run_facts(trace: Trace, origin: int) -> list[tuple[str, str | int]]:
    """(key, value) of the run's facts, empty ones left out: its name and format, the tool
    and version that made it, the device, the clock of its times, the trace's time 0 on
    that clock (``origin``, ns), the source files and the converter."""
    m = trace.meta
    clock = m.clock
    per_unit = str(clock.ns_per_unit)
    clock_text = f"{clock.name}: {clock.unit}" + ("" if clock.unit == "ns" else
                                                  f", {per_unit} ns per {clock.unit}")
    if clock.description:
        clock_text += f"; {clock.description}"
    facts: list[tuple[str, str | int]] = [
        ("run", m.name), ("format", m.format), ("tool", m.tool),
        ("tool_version", m.tool_version), ("device", m.device), ("clock", clock_text),
        ("time_origin_ns", origin),
        ("source_files", "; ".join(m.source_files)),
        ("source_file_count", len(m.source_files)),
        ("converter", f"{PRODUCER} {__version__}"),
    ]
    return [(k, v) for k, v in facts if v != ""]


def attributes_packet(trace: Trace, origin: int) -> bytes:
    """The packet of the run's facts (``run_facts``), on the descriptor sequence."""
    body = b"".join(
        key_bytes(_ATTRIBUTE, key_str(_KEY, k) + (key_varint(_LONG, v) if type(v) is int
                                                  else key_str(_STRING, v)))
        for k, v in run_facts(trace, origin))
    return _packet(_SEQ + key_bytes(_ATTRIBUTES, body))
