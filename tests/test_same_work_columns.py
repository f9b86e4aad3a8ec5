"""``same_work.own_work`` reads flows and slice tracks a column at a time, and the Perfetto
writer builds the ``correlation_id`` fields of ``own_work``'s ids as one numpy column
(``work_fields.id_fields`` with a count).  Both give what the plain per-slice, per-flow reading
gives: compared here on random traces (declared args, own and shared, lists and dicts that
join nothing; flows of declared and other names, flows from a slice to itself; derived
tracks) against a plain reference, and the column's fields against ``protowire.varint``.
``own_work`` keeps its ids as arrays: ``copies_work`` looks them up one at a time
(``OwnWork.id_of``) as it did in the dict."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracecvt.model import COPIES, SAME_TASK, SAME_WORK, RunMeta, Trace
from tracecvt.same_work import _slice_tracks, copies_work, own_work, work_ids
from tracecvt.writers.perfetto.work_fields import _id_column, id_fields, own_id_fields
from tracecvt.writers.perfetto.wire import _TE_CORRELATION
from tracecvt.writers.protowire import varint


def _reference(trace: Trace) -> tuple[dict[int, int], list]:
    """Work ids and joining flows the plain way: a value or a flow at a time, components by
    union-find, groups numbered by their least slice when they span two tracks."""
    extra = trace.meta.extra
    declared = extra.get(SAME_WORK) or {}
    keys = [(k,) if isinstance(k, str) else tuple(k) for k in declared.get("args", ())]
    task = extra.get(SAME_TASK)
    if task and not any(task in k for k in keys):
        firsts = {}                         # readers set it on every slice of a lane
        for s in trace.slices:
            firsts.setdefault(s.track, s)
        if any(task in (s.args or {}) or task in (s.shared_args or {})
               for t, s in firsts.items() if not trace.tracks[t].derived):
            keys.insert(0, (task,))
    derived = {t.index for t in trace.tracks if t.derived}
    parent: dict[int, int] = {}

    def find(i):
        while parent.setdefault(i, i) != i:
            i = parent[i]
        return i

    def join(a, b):
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)

    for names in keys:
        first: dict = {}
        for i, s in enumerate(trace.slices):
            v = None
            for key in names:
                v = (s.args or {}).get(key)
                if v is None:
                    v = (s.shared_args or {}).get(key)
                if v is not None:
                    break
            if v is None or isinstance(v, (list, dict)) or s.track in derived:
                continue
            join(first.setdefault((type(v), v), i), i)
    flows = [f for f in trace.flows if f.name in declared.get("flows", ()) and f.src != f.dst
             and trace.slices[f.src].track not in derived
             and trace.slices[f.dst].track not in derived]
    for f in flows:
        join(f.src, f.dst)
    groups: dict[int, list[int]] = {}
    for i in sorted(parent):
        groups.setdefault(find(i), []).append(i)
    ids, wid = {}, 0
    for root in sorted(groups):
        if len({trace.slices[i].track for i in groups[root]}) > 1:
            wid += 1
            ids.update(dict.fromkeys(groups[root], wid))
    return ids, flows


def _random_trace(seed: int) -> Trace:
    rng = random.Random(seed)
    trace = Trace(RunMeta("t", "test"))
    declared: dict = {}
    if rng.random() < 0.7:
        declared["args"] = rng.choice([["op"], [["op", "alias"]], ["op", "step"]])
    if rng.random() < 0.7:
        declared["flows"] = rng.choice([["a"], ["a", "b"]])
    trace.meta.extra[SAME_WORK] = declared
    if rng.random() < 0.5:
        trace.meta.extra[SAME_TASK] = "task"
    tracks = [trace.add_track(f"t{k}", derived=rng.random() < 0.2)
              for k in range(rng.randint(1, 6))]
    shared = [{"op": rng.randrange(5)}, {"alias": "x"}, {"task": 3}, {}]
    values = [0, 1, 2, "0", "x", 1.0, True] + ([[1], {"k": 1}] if rng.random() < 0.5 else [])
    for k in range(rng.randint(0, 300)):
        args = {name: rng.choice(values) for name in ("op", "alias", "step", "task")
                if rng.random() < 0.3} or None
        trace.add_slice(rng.choice(tracks), k, 1, "s", args=args,
                        shared_args=rng.choice(shared) if rng.random() < 0.3 else None)
    n = len(trace.slices)
    for _ in range(rng.randint(0, 200) if n else 0):
        a = rng.randrange(n)
        b = a if rng.random() < 0.1 else rng.randrange(n)
        trace.add_flow(a, b, rng.choice("abc"))
    return trace


@pytest.mark.parametrize("seed", range(60))
def test_own_work_is_the_plain_reading(seed):
    trace = _random_trace(seed)
    ids, flows = _reference(trace)
    own = own_work(trace)
    assert list(own.ids.items()) == sorted(ids.items(), key=lambda iw: (iw[1], iw[0]))
    assert own.count == max(ids.values(), default=0)
    assert list(map(id, own.flows)) == list(map(id, flows))
    assert own.flow_names == [f.name for f in flows]
    assert own.flows is not trace.flows
    assert work_ids(trace, own) == ids


@pytest.mark.parametrize("seed", range(20))
def test_id_fields_column_is_the_plain_fields(seed):
    trace = _random_trace(seed)
    own = own_work(trace)
    plain = {i: _TE_CORRELATION + varint(w) for i, w in own.ids.items()}
    assert list(id_fields(own.ids).items()) == list(plain.items())
    by_index = own_id_fields(own, len(trace.slices))
    assert len(by_index) == len(trace.slices)
    assert {i: f for i, f in enumerate(by_index) if f} == plain


def test_id_column_across_varint_lengths():
    for top in (1, 127, 128, 16383, 16384, 2097152):
        column = _id_column(top)
        assert len(column) == top + 1
        for w in {0, 1, 127, 128, 255, 256, 16383, 16384, 2097151, 2097152, top - 1, top}:
            if 0 <= w <= top:
                assert column[w] == _TE_CORRELATION + varint(w), (top, w)
    assert _id_column(20000) == [_TE_CORRELATION + varint(w) for w in range(20001)]


def test_slice_tracks_column_and_lookups_agree():
    trace = _random_trace(3)
    rng = np.random.default_rng(0)
    n = len(trace.slices)
    plain = [s.track for s in trace.slices]
    for size in (1, n // 10, n // 2, n, 3 * n):     # look-ups below a third, a column above
        at = rng.integers(0, n, size)
        assert _slice_tracks(trace.slices, at).tolist() == [plain[i] for i in at.tolist()]


def _plain_copies(trace: Trace, ids: dict[int, int], count: int) -> dict[int, int]:
    """``copies_work`` read off the ids as a dict."""
    added: dict[int, int] = {}
    n = len(trace.slices)
    for c, originals in sorted(trace.meta.extra[COPIES].items()):
        originals = [o for o in originals if 0 <= o < n and o != c]
        if not originals:
            continue
        have = [added.get(o, ids.get(o)) for o in originals]
        have = [w for w in have if w is not None]
        if not have:
            count += 1
        w = min(have) if have else count
        for o in originals:
            if o not in added and o not in ids:
                added[o] = w
        added[c] = w
    return added


@pytest.mark.parametrize("seed", range(30))
def test_copies_look_up_the_ids_as_the_dict_does(seed):
    trace = _random_trace(seed)
    own = own_work(trace)
    rng = random.Random(seed)
    for _ in range(rng.randint(0, 20)):             # the analyses' copies, after own_work
        trace.add_slice(0, 0, 1, "copy")
    m = len(trace.slices)
    trace.meta.extra[COPIES] = {rng.randrange(m): [rng.randrange(-1, m + 2) for _ in range(3)]
                                for _ in range(rng.randint(0, 30))} if m else {}
    assert copies_work(trace, own) == _plain_copies(trace, own.ids, own.count)
    for i in range(-2, m + 3):
        assert own.id_of(i) == (own.ids.get(i) if i >= 0 else None)
