"""Wire constants and the fast protobuf schema of the validator (see the package docstring:
debug annotations as bytes, the fields only rare packets use left out)."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SEQ_CLEARED = 1
SEQ_NEEDS = 2
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
BOOTTIME = 6                  # BuiltinClock BOOTTIME: the trace clock of proto traces

# InternedData field numbers of the tables that TrackEvent fields refer to.
I_CATEGORIES, I_NAMES, I_ARG_NAMES, I_SOURCE_LOCATIONS, I_CALLSTACKS = 1, 2, 3, 4, 7
I_LOG_BODIES, I_ARG_TYPE_NAMES, I_ARG_STRINGS, I_CORRELATION = 20, 27, 29, 43
TABLE_NAMES = {I_CATEGORIES: "category", I_NAMES: "event name", I_ARG_NAMES: "argument name",
               I_SOURCE_LOCATIONS: "source location", I_CALLSTACKS: "callstack",
               I_LOG_BODIES: "log message body", I_ARG_TYPE_NAMES: "argument type name",
               I_ARG_STRINGS: "argument string value", I_CORRELATION: "correlation id"}

CHUNK_BYTES = 64 << 20        # parse in pieces of about this size (bounded memory)
# Fields read only by the slow path: left out of the fast schema, so that their presence
# shows as an unknown field.
_RARE_PACKET_FIELDS = ("timestamp_clock_id", "incremental_state_cleared",
                       "previous_packet_dropped", "trace_packet_defaults", "clock_snapshot",
                       "thread_descriptor")
_RARE_EVENT_FIELDS = ("source_location_iid", "correlation_id_str_iid", "callstack_iid",
                      "extra_counter_track_uuids", "extra_counter_values",
                      "extra_double_counter_track_uuids", "extra_double_counter_values",
                      "flow_ids_old", "terminating_flow_ids_old", "timestamp_delta_us",
                      "timestamp_absolute_us", "log_message", "task_execution", "legacy_event")


def _build_fast_schema():
    """(Trace, TracePacket) classes of the fast schema (see the module docstring)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    fdp.name = "tracecvt_validate_fast.proto"
    messages = {m.name: m for m in fdp.message_type}
    real = {"TracePacket": pb.TracePacket, "TrackEvent": pb.TrackEvent}

    def drop(msg, names) -> None:
        numbers = {real[msg.name].DESCRIPTOR.fields_by_name[n].number for n in names}
        kept = [f for f in msg.field if f.number not in numbers]
        used = sorted({f.oneof_index for f in kept if f.HasField("oneof_index")})
        decls = [msg.oneof_decl[i] for i in used]
        remap = {old: new for new, old in enumerate(used)}
        fields = []
        for f in kept:
            f = F.FromString(f.SerializeToString())
            if f.HasField("oneof_index"):
                f.oneof_index = remap[f.oneof_index]
            fields.append(f)
        decls = [type(d).FromString(d.SerializeToString()) for d in decls]
        del msg.field[:]
        msg.field.extend(fields)
        del msg.oneof_decl[:]
        msg.oneof_decl.extend(decls)

    event = messages["TrackEvent"]
    drop(event, _RARE_EVENT_FIELDS)
    for f in event.field:
        if f.name == "debug_annotations":
            f.type = F.TYPE_BYTES
            f.ClearField("type_name")
    drop(messages["TracePacket"], _RARE_PACKET_FIELDS)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("perfetto.protos.Trace")),
            get(pool.FindMessageTypeByName("perfetto.protos.TracePacket")))


_SCHEMA: dict[str, Any] = {}


def _schema() -> dict[str, Any]:
    if not _SCHEMA:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
        _SCHEMA["pb"] = pb
        _SCHEMA["trace"], _SCHEMA["packet"] = _build_fast_schema()
    return _SCHEMA

