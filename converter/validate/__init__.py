"""``tracecvt validate TRACE``: structural checks of any Perfetto protobuf trace.

The checks follow what Trace Processor does when it imports the file, so that a trace that
passes shows every event it holds, drawn as written:

* every packet decodes completely;
* every ``track_uuid`` an event uses has a ``TrackDescriptor``, every ``parent_uuid`` exists,
  parent chains have no cycles and a re-emitted descriptor keeps its parent and kind;
* per track, BEGIN/END are balanced and properly nested and no slice ends before it begins
  (Trace Processor sorts events by time and an END closes the most recent open slice);
* interned ids (event names, categories, debug-annotation names and string values, source
  locations, log messages, ...) resolve within their sequence's current incremental state;
  packets that define or use them carry ``SEQ_NEEDS_INCREMENTAL_STATE`` (or clear the
  state), and no such packet comes before its sequence was cleared (Trace Processor drops it);
* every flow id has both ends, and no flow terminates before it starts;
* counter values are only on counter tracks, slices never are, counter values are finite.

Lenient where Trace Processor is lenient: several sequences, each with its own interned state,
``SEQ_INCREMENTAL_STATE_CLEARED`` restarting it, ``TrackEventDefaults`` supplying a
``track_uuid`` or extra counter tracks, events without a track (the sequence's legacy thread
track or the default track), descriptors re-emitted or written after their first use, events
out of timestamp order, flow ids carried on two events (an arrow without an explicit end),
legacy microsecond timestamps and sequence-scoped incremental clocks.

How it is fast: packets are parsed with a private copy of the perfetto package's schema in
which debug annotations are bytes (decoded once per distinct byte string) and the fields only
rare packets use are left out.  upb still parses every nested message with its real type (that
is the "decodes" check, in C); a packet or event holding one of the left-out fields shows it as
an unknown field and is re-read with the real schema.

Modules: ``schema`` (wire constants, the fast schema), ``packets`` (the file split into packets,
a sequence's incremental state), ``validator`` (the packet loop), ``checks`` (what is checked once
every packet was read), ``report`` (problem kinds and the report).
"""
from __future__ import annotations

import gzip
import sys
import zlib
from pathlib import Path

import click

from ..cliopts import EXIT_ERROR, fail
from .report import NOTES, PROBLEMS, Problem, Report
from .validator import _Validator

__all__ = ["NOTES", "PROBLEMS", "Problem", "Report", "check_trace", "validate", "validate_bytes",
           "validate_path", "EXIT_PROBLEMS"]

EXIT_PROBLEMS = 1


# -- entry points ---------------------------------------------------------------------------

def validate_bytes(data: bytes, path: str | None = None) -> Report:
    """Validate a Perfetto protobuf trace held in memory (gzipped or not)."""
    report = Report(path=path, size=len(data))
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            report.add("truncated", -1, f"corrupt gzip data ({e})")
            # Validate what decompresses.
            data = _gunzip_prefix(data)
    v = _Validator(report)
    v.feed(data)
    return v.finish()


def _gunzip_prefix(data: bytes) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def validate_path(path: str | Path) -> Report:
    """Validate the trace file at ``path``; OSError when it cannot be read."""
    data = Path(path).read_bytes()
    return validate_bytes(data, str(path))


def check_trace(trace: bytes | str | Path) -> Report:
    """Validate a trace given as bytes or as a path (the library entry point)."""
    if isinstance(trace, (bytes, bytearray, memoryview)):
        return validate_bytes(bytes(trace))
    return validate_path(trace)


@click.command("validate")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(trace: Path, as_json: bool) -> None:
    """Check a Perfetto protobuf trace (ours or another tool's).

    Decodes every packet and checks tracks, slice nesting, interned ids and sequence flags,
    flows and counters.  Prints the counts and each problem with its first offending packet;
    exit code 0 when none was found, 1 when problems were found, 2 when TRACE cannot be read.
    """
    try:
        if trace.is_dir():
            raise IsADirectoryError(21, "is a directory")
        report = validate_path(trace)
    except OSError as e:
        fail(f"{trace}: cannot read: {e.strerror or e}")
        sys.exit(EXIT_ERROR)
    if as_json:
        import orjson
        click.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(report.text())
    if not report.ok:
        sys.exit(EXIT_PROBLEMS)

