"""A lane's slices written a column at a time (issue 26): a stream of device tasks, a
thread of CANN calls, the bubbles the analyses add, the cores of simpler and PyPTO, and
lanes of nested slices (call stacks, simpler's dispatches with their pickup and
completion).

A lane is plain where no flow ends on one of its slices' END.  Its packets are those
``SequenceWriter.write_slices``' loop builds, byte for byte, in the same order: where
each slice ends before the next begins, each BEGIN, then its END; elsewhere the order the
loop's stack of open slices gives (``_emission``).  The loop's work that depends on what
came before (interned entries defined at their first use on the sequence, strings written
inline first and interned from their next use, the interner's iids) is done in the
loop's order, but once per distinct name and per distinct category and shared args, and
for own args only where they may define something (``row_args.RowPlans.later``: the rest
are encoded together); the rest per slice (times, lengths, what rides on a slice, its
flows and correlation id) a column at a time with numpy, every packet cut out of one pool
of its pieces by one gather.
"""

from __future__ import annotations

from array import array
from itertools import compress, repeat
from operator import attrgetter
from typing import Any, Iterator

import numpy as np

from ...arg_rows import ArgRow
from ...heap import give_back
from ..protowire import varint
from .columns import factor, flat_rows, gather_rows, varint_matrix
from .keyed import joined_columns, split
from .interning import _Sequence
from .wire import _BEGIN, _END, _FLAGS_NEEDS, _INTERNED, _PACKET, _TRACK_EVENT, _TS

PLAIN_FROM = 256            # slices of a lane from which this pays (numpy's cost per call)
_PART = 1 << 16             # slices built at a time at most,
_OPEN_MAX = 1 << 18         # (or, in a nested lane, up to where no slice is open: beyond
                            # this many slices, the loop writes the lane)
_STEP_BYTES = 1 << 20       # their packets cut out about this many bytes at a time
_SLICE_BYTES = 40           # a slice's two packets but its args and extras, about
_BLOCK = 4096               # slices whose own args are looked at together (``_events``)
_FIRST_BLOCK = 64
_ROWS = frozenset({ArgRow})
_TABLE, _ROW = attrgetter("table"), attrgetter("row")
_ARGS, _NAME, _CAT, _SHARED = (attrgetter("args"), attrgetter("name"), attrgetter("cat"),
                               attrgetter("shared_args"))


def plain_lane(w: Any, track: int, ids: list[int], ts: np.ndarray, end: np.ndarray,
               seq: _Sequence, record: dict | None = None, place: int = 0
               ) -> Iterator | None:
    """The packets of the lane of slices ``ids`` (in order of start; ``ts``, ``end``: their
    times, ``times._lane_times``) of ``track`` on its sequence ``seq`` of
    ``SequenceWriter`` ``w``, in pieces of about ``_STEP_BYTES``: each
    (their bytes end to end, each one's length, each one's stamp: int64 arrays), made as
    they are asked for (``_lane_pieces``: the caller takes them all before anything else
    is encoded); or None where the lane is not plain (``write_slices``' loop then).
    ``record``: each BEGIN's place, as ``write_slices`` records it (the packets to be added
    one by one to ``chunk`` from its place ``place``; the timestamp field left to
    ``begin_again``)."""
    if int(ts[0]) < w.base or int(end.min()) < w.base or int(end.max()) - w.base >= 1 << 63:
        return None                 # (times before the time 0 or past 2^63 ns: the loop)
    if w.end_flow_bytes and w.end_flow_bytes.pieces(ids) is not None:
        return None
    order = cuts = None
    if not (end[:-1] <= ts[1:]).all():
        order, cuts = _emission(ts.tolist(), end.tolist())
        if int(np.diff(cuts, append=len(ids)).max()) > _OPEN_MAX:
            return None             # (a slice open over most of a long lane)
    return _lane_pieces(w, track, ids, seq, record, place, ts, end, order, cuts)


def _emission(ts: list[int], end: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The order of a lane's packets (slice k's BEGIN is 2k, its END 2k + 1) as the loop's
    stack gives it: before each BEGIN, the ENDs of the open slices, innermost first, while
    the innermost ends at or before it starts (a slice that overlaps another without
    holding it waits for the one it holds); the rest after the last.  And the slices
    before whose BEGIN no slice is open (0 is one), where a lane can be cut in parts."""
    order = array("q")
    cuts = array("q")
    ends: list[int] = []            # the open slices' ends, innermost last
    closes: list[int] = []          # their ENDs
    put, cut, push, push_end = order.append, cuts.append, ends.append, closes.append
    for k, start in enumerate(ts):
        while ends and ends[-1] <= start:
            ends.pop()
            put(closes.pop())
        if not ends:
            cut(k)
        put(2 * k)
        push(end[k])
        push_end(2 * k + 1)
    order.extend(reversed(closes))
    return np.frombuffer(order, dtype=np.int64), np.frombuffer(cuts, dtype=np.int64)


def _snap(at: np.ndarray, cuts: np.ndarray | None, n: int) -> list[int]:
    """Each place of ``at`` moved to the first of ``cuts`` at or after it (``n`` past the
    last); all of them where ``cuts`` is None."""
    if cuts is None:
        return np.minimum(at, n).tolist()
    if not len(cuts):
        return [n] * len(at)
    k = np.searchsorted(cuts, at)
    return np.where(k < len(cuts), cuts[np.minimum(k, len(cuts) - 1)], n).tolist()


def _lane_pieces(w: Any, track: int, ids: list[int], seq: _Sequence, record: dict | None,
                 place: int, ts: np.ndarray, end: np.ndarray, order: np.ndarray | None,
                 cuts: np.ndarray | None) -> Iterator:
    """``plain_lane``'s pieces (``ts``, ``end``: the slices' times; ``order``, ``cuts``:
    ``_emission``'s, None where each slice ends before the next begins), made ``_PART``
    slices at a time: what a part holds per slice (its objects, encodings and extras) is
    let go before the next (a database's CANN thread has 1.3 M slices).  Parts and pieces
    are cut where no slice is open."""
    fixed = (_PACKET, seq.field + _FLAGS_NEEDS, seq.field, _TRACK_EVENT, _END, _BEGIN)
    parts = sorted({0, *_snap(np.arange(_PART, len(ids), _PART), cuts, len(ids)), len(ids)})
    for p0, p1 in zip(parts, parts[1:]):
        part = ids[p0:p1]
        # the part's packets in the order they are written (theirs: 2 * p0 to 2 * p1)
        mine = order[2 * p0:2 * p1] - 2 * p0 if order is not None else None
        lane = list(map(w.slices.__getitem__, part))
        args = list(map(_ARGS, lane))
        fields, name_ids, labels, kinds, own, interned = _events(
            w, lane, seq, args if any(args) else None)
        del lane, args
        n = p1 - p0
        bx, bx_len, bx_at = _extra_rows(
            begin_extra_column(w, part, np.array(part, dtype=np.int64)), n)
        ex, ex_len, ex_at = _extra_rows(
            _end_extras(w.riders, track, end[p0:p1],
                        None if mine is None else mine[mine & 1 == 1] >> 1), n)
        own_data, own_len = _own(own, n)
        own_at = np.concatenate(([0], np.cumsum(own_len))).tolist()
        fields_in: list[bytes] = [b""] * n          # each slice's InternedData field
        for k, (field, _) in interned.items():
            fields_in[k] = field
        if record is not None:
            flushed: list[tuple] = [()] * n
            for k, (_, entries) in interned.items():
                flushed[k] = entries
            first = place + 2 * p0
            if mine is None:
                begins: Any = range(first, first + 2 * n, 2)
            else:
                written = np.empty(2 * n, dtype=np.int64)
                written[mine] = np.arange(first, first + 2 * n)
                begins = written[0::2].tolist()
            record.update(zip(part, zip(begins, repeat(None), repeat(fixed[1]), flushed)))
        # pieces of about _STEP_BYTES of packets (the gather's index: 4 bytes a byte)
        size = own_len + _SLICE_BYTES + bx_len + ex_len
        steps = np.searchsorted(np.cumsum(size),
                                np.arange(1, int(size.sum()) // _STEP_BYTES + 1) * _STEP_BYTES)
        bounds = sorted({0, *_snap(steps, None if cuts is None else cuts[
            (cuts > p0) & (cuts < p1)] - p0, n), n})
        part_ts, part_end = ts[p0:p1] - w.base, end[p0:p1] - w.base
        for a, b in zip(bounds, bounds[1:]):
            step = None if mine is None else mine[2 * a:2 * b] - 2 * a
            data, lengths = _pieces(fixed, (fields, name_ids[a:b]), (labels, kinds[a:b]),
                                    fields_in[a:b], (own_data[own_at[a]:own_at[b]],
                                                     own_len[a:b]),
                                    (bx[bx_at[a]:bx_at[b]], bx_len[a:b]),
                                    (ex[ex_at[a]:ex_at[b]], ex_len[a:b]),
                                    part_ts[a:b], part_end[a:b], step)
            stamps = np.empty(2 * (b - a), dtype=np.int64)
            stamps[0::2], stamps[1::2] = part_ts[a:b], part_end[a:b]
            yield data, lengths, stamps if step is None else stamps[step]
        if len(parts) > 2:
            give_back()             # (the part's arrays, let go: heap.py)


def _events(w: Any, lane: list, seq: _Sequence, args: list | None) -> tuple:
    """What each slice's BEGIN event holds before its extras, as pieces: its name field
    (the distinct ones, in order of first use, and each slice's number among them), its
    "label" (category and shared args: the distinct ones likewise), its own args encoded
    (None where no slice has any: ``args``); and the InternedData field (with its entries)
    of each slice that defines some (by place).  The loop's rule: an entry at its first
    use on the sequence, in the order name, category, shared args, own args; and each
    string met first in the order the loop meets it (the interner's iids)."""
    names, cats, name_field, cat_field = w.names, w.cats, w.name_field, w.cat_field
    shared_cache, encode_all = w.shared_cache, w.args_enc.encode_all
    defined, pending, seen = seq.defined, seq.pending, seq.seen
    name_firsts, name_ids = factor(map(_NAME, lane))
    fields = []
    name_entry: dict[int, bytes] = {}           # place -> a name's entry, first used there
    for k in name_firsts:
        n = lane[k].name
        hit = names.get(n) or name_field(n)
        fields.append(hit[0])
        if hit[1] is not None:
            name_entry[k] = hit[1]
    shared = list(map(_SHARED, lane))
    # (most lanes have no shared args: their categories alone tell their labels apart)
    label_firsts, kinds = factor(map(_CAT, lane) if shared.count(None) == len(shared)
                                 else zip(map(_CAT, lane), map(id, shared)))
    del shared
    is_first = dict.fromkeys(label_firsts)

    def label(s) -> bytes:
        # (``write_slices``' loop does the same inline, per slice: a call there would cost
        # every slice of the lanes it writes; tests/test_plain_lanes.py holds the two alike)
        event = b""
        if s.cat:
            hit = cats.get(s.cat) or cat_field(s.cat)
            event += hit[0]
            if hit[1] not in defined:
                defined.add(hit[1])
                pending.append(hit[1])
        sh = s.shared_args
        if sh is not None:
            hit = shared_cache.get(id(sh))
            if hit is None:
                hit = shared_cache[id(sh)] = encode_all(sh, True)
            if hit[0] not in seen:
                seen.add(hit[0])
                seq.use(hit[1])
            event += hit[0]
        return event

    labels = []
    interned: dict[int, tuple[bytes, tuple[bytes, ...]]] = {}

    def at(places, into: list | None = None, waits: set | frozenset = frozenset()) -> None:
        """The loop's defines at ``places`` (in order): a name's entry, a label's, own
        args encoded (into ``into``, but those that ``waits``), the pending entries."""
        for k in places:
            entry = name_entry.get(k)
            if entry is not None and entry not in defined:
                defined.add(entry)
                pending.append(entry)
            if k in is_first:
                labels.append(label(lane[k]))
            if into is not None and k not in waits:
                a = args[k]
                into[k] = encode(a, seq) if a else b""
            if pending:
                entries = tuple(pending)
                pending.clear()
                data = b"".join(entries)
                interned[k] = (_INTERNED + varint(len(data)) + data, entries)

    if args is None:
        at(sorted({*name_entry, *label_firsts}))
        return fields, name_ids, labels, kinds, None, interned
    own: list[bytes] = [b""] * len(lane)
    waited: list[tuple[list[int], bytes, np.ndarray]] = []
    encode, rows = w.args_enc.encode, w.args_enc.rows
    # (the first block short: a table's plan is made at its first row, and its rows wait
    # from the next block on)
    bounds = [0, *range(_FIRST_BLOCK, len(lane), _BLOCK), len(lane)]
    for a0, b0 in zip(bounds, bounds[1:]):
        # The rows of tables of args that may be encoded after the others (``later``):
        # their encoding defines nothing, so the loop need not stop at them.
        tables: dict[Any, tuple[list[int], list[int]]] = {}
        block = args[a0:b0]
        if _ROWS.issuperset(map(type, block)) and len(set(map(_TABLE, block))) == 1:
            tables[block[0].table] = (list(range(a0, b0)), list(map(_ROW, block)))
        else:
            for k in range(a0, b0):
                a = args[k]
                if a.__class__ is ArgRow:
                    got = tables.get(a.table)
                    if got is None:
                        got = tables[a.table] = ([], [])
                    got[0].append(k)
                    got[1].append(a.row)
        waiting = []
        for table, (places, numbers) in tables.items():
            mask = rows.later(table, numbers, seq)
            if mask is not None and any(mask):
                waiting.append((table, list(compress(places, mask)),
                                list(compress(numbers, mask))))
        waits = {k for _, places, _ in waiting for k in places}
        at([k for k in range(a0, b0) if k not in waits or k in name_entry or k in is_first]
           if waits else range(a0, b0), own, waits)
        for table, places, numbers in waiting:
            waited.append((places, *rows.encode_later(table, numbers)))
    return fields, name_ids, labels, kinds, (own, waited), interned


def _own(own: tuple | None, n: int) -> tuple[bytes, np.ndarray]:
    """The own args of a part's ``n`` slices end to end, and each one's length, from
    ``_events``' (those encoded in order, one ``bytes`` each; those that waited, rows of
    one block and table at a time: their places, their bytes end to end, their lengths)."""
    if own is None:
        return b"", np.zeros(n, dtype=np.int64)
    one, waited = own
    lengths = np.fromiter(map(len, one), np.int64, n)
    data = b"".join(one)
    if not waited:
        return data, lengths
    starts = np.cumsum(lengths) - lengths
    pools = [data]
    base = len(data)
    for places, made, size in waited:
        at = np.array(places, dtype=np.int64)
        lengths[at] = size
        starts[at] = base + np.cumsum(size) - size
        pools.append(made)
        base += len(made)
    return gather_rows(np.frombuffer(b"".join(pools), dtype=np.uint8), starts[:, None],
                       lengths[:, None])[0], lengths


def begin_extras(w: Any, ids: list[int], at: np.ndarray) -> list[bytes]:
    """What each slice of ``ids`` (``at``: them as int64) carries on its BEGIN after its
    args (b"": nothing): ``begin_extra_column``'s, one ``bytes`` per slice."""
    got = begin_extra_column(w, ids, at)
    return [b""] * len(ids) if got is None else split(got)


def begin_extra_column(w: Any, ids: list[int], at: np.ndarray
                       ) -> tuple[bytes, np.ndarray] | None:
    """What each slice of ``ids`` (``at``: them as int64) carries on its BEGIN after its
    args, in this order: the flows that start there, those that end there, the samples
    riding on it, its correlation id; the slices' end to end, and each one's length (None:
    no slice carries any).  ``w``: the ``SequenceWriter``."""
    got = [c for c in (w.flow_bytes.column(at), w.flow_bytes.column(~at),
                       w.riders.begins.column(at)) if c is not None]
    work = list(map(w.work.__getitem__, ids))
    if any(work):
        got.append((b"".join(work), np.fromiter(map(len, work), np.int64, len(work))))
    return joined_columns(got)


def _end_extras(riders: Any, track: int, end: np.ndarray, order: np.ndarray | None = None
                ) -> tuple[bytes, np.ndarray] | None:
    """What each slice's END carries: the samples riding at its end time on ``track``, on
    the first END written there (``riders.Riders.end_column``: taken there); the slices'
    end to end, and each one's length (None: none carries any).  ``order``: the slices in
    the order their ENDs are written, where it is not theirs."""
    if order is None:
        return riders.end_column(track, end)
    got = riders.end_column(track, end[order])
    if got is None:
        return None
    data, written = got
    lengths = np.empty(len(end), dtype=np.int64)
    lengths[order] = written
    starts = np.empty(len(end), dtype=np.int64)
    starts[order] = np.cumsum(written) - written
    return gather_rows(np.frombuffer(data, dtype=np.uint8), starts[:, None],
                       lengths[:, None])[0], lengths


def _extra_rows(extra: tuple[bytes, np.ndarray] | None, n: int
                ) -> tuple[bytes, np.ndarray, list[int]]:
    """A column of extras (``begin_extra_column``'s, ``_end_extras``') of ``n`` slices:
    its bytes, each slice's length, and where each slice's begin in the bytes (with the
    end last), so that a run of them is one slice of the bytes."""
    if extra is None:
        return b"", np.zeros(n, dtype=np.int64), [0] * (n + 1)
    data, lengths = extra
    return data, lengths, np.concatenate(([0], np.cumsum(lengths))).tolist()


def _pieces(fixed: tuple[bytes, ...], names: tuple[list[bytes], np.ndarray],
            labels: tuple[list[bytes], np.ndarray], interned: list[bytes],
            own: tuple[bytes, np.ndarray], begin_extra: tuple[bytes, np.ndarray],
            end_extra: tuple[bytes, np.ndarray], begin_d: np.ndarray, end_d: np.ndarray,
            order: np.ndarray | None = None) -> tuple[bytes, np.ndarray]:
    """The BEGIN and END packets of a run of slices (their name fields and labels: the
    distinct ones and each slice's number; per slice its InternedData field, own args,
    extras, times after the time 0), laid end to end (each BEGIN, then its END; or in
    ``order``: ``_emission``'s), and each packet's length: every packet the pieces of its
    fields, cut out of one pool of bytes by one gather."""
    (fields, name_ids), (labels, kinds) = names, labels
    n = len(kinds)
    i_len = np.fromiter(map(len, interned), np.int64, n)
    label_len = np.fromiter(map(len, labels), np.int64, len(labels))
    field_len = np.fromiter(map(len, fields), np.int64, len(fields))
    own, own_len = own
    (bx, bx_len), (ex, ex_len) = begin_extra, end_extra
    # the pool: the fixed fields, the labels, then per slice (end to end) its interned
    # data, own args, BEGIN extras, END extras; then the varints made here
    texts = (b"".join(fixed), b"".join(labels), b"".join(interned), own, bx, ex,
             b"".join(fields))
    text_at = np.cumsum([0, *map(len, texts)])
    ts_b, tsb_len = flat_rows(varint_matrix(begin_d.astype(np.uint64)), _TS)
    ts_e, tse_len = flat_rows(varint_matrix(end_d.astype(np.uint64)), _TS)
    ev_b = len(fixed[5]) + field_len[name_ids] + label_len[kinds] + own_len + bx_len
    evb, evb_len = _varints(ev_b)
    body_b = tsb_len + len(fixed[1]) + i_len + 1 + evb_len + ev_b
    lb, lb_len = _varints(body_b)
    ev_e = len(fixed[4]) + ex_len
    eve, eve_len = _varints(ev_e)
    body_e = tse_len + len(fixed[2]) + 1 + eve_len + ev_e
    le, le_len = _varints(body_e)
    regions = [np.frombuffer(b"".join(texts), dtype=np.uint8), ts_b, ts_e, evb, lb, eve, le]
    region_at = np.cumsum([0, *map(len, regions)])
    pool = np.concatenate(regions)

    def rows(lengths: np.ndarray, at: int) -> tuple[np.ndarray, np.ndarray]:
        """Where each slice's row of a region starting at ``at`` is, and its length."""
        return at + np.cumsum(lengths) - lengths, lengths

    fixed_at = np.cumsum([0, *map(len, fixed)]).tolist()

    def fixed_field(k: int) -> tuple[int, int]:
        return fixed_at[k], len(fixed[k])       # (the pool starts with them)
    label_at = text_at[1] + np.cumsum(label_len) - label_len
    field_at = text_at[6] + np.cumsum(field_len) - field_len
    # BEGIN: packet tag, body length, timestamp, sequence + flags, interned data,
    # TrackEvent tag, its length, type, name, label, own args, extras
    begin = (fixed_field(0), rows(lb_len, region_at[4]), rows(tsb_len, region_at[1]),
             fixed_field(1), rows(i_len, text_at[2]), fixed_field(3),
             rows(evb_len, region_at[3]), fixed_field(5),
             (field_at[name_ids], field_len[name_ids]), (label_at[kinds], label_len[kinds]),
             rows(own_len, text_at[3]), rows(bx_len, text_at[4]))
    # END: packet tag, body length, timestamp, sequence, TrackEvent tag, its length, END,
    # extras
    end = (fixed_field(0), rows(le_len, region_at[6]), rows(tse_len, region_at[2]),
           fixed_field(2), fixed_field(3), rows(eve_len, region_at[5]), fixed_field(4),
           rows(ex_len, text_at[5]))
    width = len(begin)
    seg_at = np.zeros((n, 2, width), dtype=np.int64)
    seg_len = np.zeros((n, 2, width), dtype=np.int64)
    for side, fields in enumerate((begin, end)):
        for j, (where, size) in enumerate(fields):
            seg_at[:, side, j], seg_len[:, side, j] = where, size
    seg_at, seg_len = seg_at.reshape(2 * n, width), seg_len.reshape(2 * n, width)
    if order is not None:
        seg_at, seg_len = seg_at[order], seg_len[order]
    return gather_rows(pool, seg_at, seg_len)


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints of ``values`` (non-negative int64) end to end, and each one's length."""
    return flat_rows(varint_matrix(values.astype(np.uint64)), b"")
