#!/usr/bin/env python3
"""The reference "plain converter" of issue 6: what a straightforward script does.

    python benchmarks/plain_converter.py merged_swimlane.json out.pftrace

It loads the Chrome JSON with the standard ``json`` module and emits one
``perfetto_trace_pb2`` packet per event with the perfetto package's ``TraceProtoBuilder``:
a track per (pid, tid), X events as BEGIN/END pairs with their args as debug annotations,
C events as counter values, flow ends as instants carrying the flow ids.  No interning, no analyses.  It exists only to
be timed against tracecvt in ``bench_pypto.py``; it is not part of tracecvt.
"""

from __future__ import annotations

import gzip
import json
import sys

from perfetto.trace_builder.proto_builder import TraceProtoBuilder

SEQ = 1


def _annotate(event, args: dict) -> None:
    for k, v in args.items():
        a = event.debug_annotations.add()
        a.name = str(k)
        if isinstance(v, bool):
            a.bool_value = v
        elif isinstance(v, int) and -(1 << 63) <= v < (1 << 63):
            a.int_value = v
        elif isinstance(v, float):
            a.double_value = v
        else:
            a.string_value = v if isinstance(v, str) else json.dumps(v)


def convert(src: str, dst: str) -> int:
    with (gzip.open(src, "rb") if src.endswith(".gz") else open(src, "rb")) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    builder = TraceProtoBuilder()
    uuids: dict = {}
    names: dict = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e.get("pid"), e.get("tid"))] = e["args"]["name"]

    def track(pid, tid, counter: str | None = None) -> int:
        key = (pid, tid, counter)
        uuid = uuids.get(key)
        if uuid is None:
            uuid = uuids[key] = len(uuids) + 1
            p = builder.add_packet()
            p.track_descriptor.uuid = uuid
            p.track_descriptor.name = counter or names.get((pid, tid), f"{pid}/{tid}")
            if counter:
                p.track_descriptor.counter.SetInParent()
        return uuid

    n = 0
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            uuid = track(e.get("pid"), e.get("tid"))
            ts = int(round(e["ts"] * 1000))
            p = builder.add_packet()
            p.timestamp = ts
            p.trusted_packet_sequence_id = SEQ
            te = p.track_event
            te.type = te.TYPE_SLICE_BEGIN
            te.track_uuid = uuid
            te.name = e.get("name", "")
            if e.get("cat"):
                te.categories.append(e["cat"])
            _annotate(te, e.get("args") or {})
            p = builder.add_packet()
            p.timestamp = int(round((e["ts"] + e.get("dur", 0)) * 1000))
            p.trusted_packet_sequence_id = SEQ
            p.track_event.type = p.track_event.TYPE_SLICE_END
            p.track_event.track_uuid = uuid
            n += 2
        elif ph == "C":
            for k, v in (e.get("args") or {}).items():
                uuid = track(e.get("pid"), None, f"{e.get('name')} {k}")
                p = builder.add_packet()
                p.timestamp = int(round(e["ts"] * 1000))
                p.trusted_packet_sequence_id = SEQ
                p.track_event.type = p.track_event.TYPE_COUNTER
                p.track_event.track_uuid = uuid
                p.track_event.double_counter_value = float(v)
                n += 1
        elif ph in ("s", "f"):
            p = builder.add_packet()
            p.timestamp = int(round(e["ts"] * 1000))
            p.trusted_packet_sequence_id = SEQ
            p.track_event.type = p.track_event.TYPE_INSTANT
            p.track_event.track_uuid = track(e.get("pid"), e.get("tid"))
            if ph == "s":
                p.track_event.flow_ids.append(int(e["id"]))
            else:
                p.track_event.terminating_flow_ids.append(int(e["id"]))
            n += 1
    with open(dst, "wb") as f:
        f.write(builder.serialize())
    return n


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
