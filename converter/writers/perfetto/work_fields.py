"""The ``TrackEvent.correlation_id`` field of each slice that is one piece of work with slices
on other tracks (``same_work``: the run's own, ``own_work``, and the analyses' copies of
them, ``copies_work``); the Perfetto UI colours the slices of one id alike."""

from __future__ import annotations

import numpy as np

from ...model import Trace
from ...same_work import OwnWork, copies_work, own_work
from ..protowire import varint
from . import columns
from .wire import _TE_CORRELATION


def correlation_fields(trace: Trace) -> list[bytes]:
    """Each slice's ``TrackEvent.correlation_id`` field, by index (b"" where it has none:
    ``same_work.work_ids``)."""
    own = own_work(trace)
    n = len(trace.slices)
    return with_copies(own_id_fields(own, n), copies_work(trace, own), n)


def with_copies(own_fields: list[bytes], added: dict[int, int], n: int) -> list[bytes]:
    """The fields of the run's own work ids (``own_id_fields``), with those of the ids the
    analyses' copies add (``same_work.copies_work``), for ``n`` slices (those after the
    run's own have none but a copy's): ``own_fields`` itself where nothing changes."""
    if not added and len(own_fields) == n:
        return own_fields
    out = own_fields + [b""] * (n - len(own_fields))
    for i, f in id_fields(added).items():
        out[i] = f
    return out


def id_fields(ids: dict[int, int]) -> dict[int, bytes]:
    """Slice index -> the ``correlation_id`` field of its work id in ``ids``."""
    # one field per id (ids are small, most shared by two or more slices)
    fields = {w: _TE_CORRELATION + varint(w) for w in set(ids.values())}
    return dict(zip(ids, map(fields.__getitem__, ids.values())))


def own_id_fields(own: OwnWork, n: int) -> list[bytes]:
    """The ``correlation_id`` field of each of the ``n`` slices of the run's own by index
    (b"" where it has no id: ``id_fields`` of ``own.ids``), made from its arrays
    (``same_work.OwnWork``) with one field per id, all built at once (``_id_column``) and
    placed by numpy: a large run has millions of slices with an id, and a list by index
    spares the dict of them (on a 1 M-task database, 0.7 s and about 150 MB)."""
    out = np.full(n, b"", dtype=object)
    if own.count:
        fields = np.empty(own.count + 1, dtype=object)
        fields[:] = _id_column(own.count)
        out[own.members] = fields[own.numbers]
    return out.tolist()


def _id_column(top: int) -> list[bytes]:
    """The ``correlation_id`` fields of ids 0 to ``top``, by index: built as numpy rows
    (``columns.varint_matrix``) read back as one ``bytes`` each (numpy's fixed-width
    bytes drop the trailing zeros a row is padded with; a varint but 0's ends in a
    non-zero byte)."""
    groups, lengths = columns.varint_matrix(np.arange(top + 1, dtype=np.uint64))
    head = len(_TE_CORRELATION)
    width = head + groups.shape[1]
    rows = np.zeros((top + 1, width), dtype=np.uint8)
    rows[:, :head] = np.frombuffer(_TE_CORRELATION, dtype=np.uint8)
    rows[:, head:] = np.where(np.arange(groups.shape[1]) < lengths[:, None], groups, 0)
    fields = rows.view(f"S{width}").ravel().tolist()
    fields[0] = _TE_CORRELATION + varint(0)
    return fields
