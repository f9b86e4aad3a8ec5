"""TASK rows into device-task slices (``tasks.add_tasks``), a batch of rows at a time.

Where a batch's columns are plain ints with usable times (as in every real export), the
work per row is only what differs from row to row: the values of its args' row, its PMU
figures; what a row's task info and task type give (its name, category, the args that
follow from them and their table) is worked out once per distinct pair, and the slices,
args rows and lanes are made a batch at a time (``TaskRows.batch``).  Any other batch (a
time that is not one, a BLOB, a float where an id belongs) is taken row by row with every
check written out (``TaskRows.rows``).  Both give the same slices, lanes, args and counts in
the same order: tests/test_ascend_db_batches.py compares them.
"""

from __future__ import annotations

from array import array
from itertools import compress, count, repeat
from operator import itemgetter, not_
from typing import Any

import numpy as np

from ...arg_rows import ArgRow, ArgTable, Coded, Derived, coded, taker
from ...model import KERNEL, MAX_NS, Slice, Trace
from ..msprof.csvtable import cell_value, normalize_task_type
from ..msprof.layout import Layout
from ..msprof.timefmt import UINT32_MAX
from .database import Database, add_end, plain, span, text
from .task_args import (HARDWARE, PipeRatios, args_table, ids_of, pipe_column, pipe_plan,
                        task_lane, wider_table)

# the fields of a ``TaskRows._kind``
_NAME, _CAT, _MIDDLE, _TABLE, _KERNEL, _SERIAL = map(itemgetter, range(6))


class TaskRows:
    """The device tasks of one TASK table as they are read: ``batch`` or ``rows`` for each
    part of its rows in order, then ``finish``.  ``index`` gets connectionId -> slices
    (flow ends: ``database.add_end``); ``compute`` / ``comm``: the task info by
    globalTaskId (``tasks._side``), ``pmu``: the PMU figures by globalTaskId
    (``tasks._pmu``)."""

    def __init__(self, trace: Trace, layout: Layout, db: Database,
                 index: dict[int, Any], compute: dict, comm: dict, pmu: dict):
        self.trace, self.layout, self.db, self.index = trace, layout, db, index
        self.compute, self.comm, self.pmu = compute, comm, pmu
        self.source = db.path.name
        self.slices = trace.slices
        self.lanes: dict[tuple, int] = {}
        self.types: dict[Any, str | None] = {}
        self.made = self.bad = 0
        # (dev, stream, task, connection) -> the hardware tasks around a context subtask
        self.containers: dict[tuple, list] = {}
        self.subtasks: dict[tuple, int] = {}
        self.plans: dict[tuple, tuple] = {}     # PMU names -> their pipe ratios, a number
        self.derived: dict[ArgTable, Derived] = {}  # a table -> its pipe ratios' column
        self.norms: dict[Any, str | None] = {}
        self.tables: dict[tuple, Any] = {}      # the shape of a task's args -> their table
        # id of a task info's args (held by ``compute`` / ``comm``) -> a number for their names
        self.more_keys: dict[int, int] = {}
        self.key_sets: dict[tuple, int] = {}
        # (id of the task info, id of the communication info, task type) -> what they give
        # (``kind``)
        self.kinds: dict[tuple, tuple] = {}

    def norm(self, v):
        try:
            return self.norms[v]
        except KeyError:
            out = self.norms[v] = normalize_task_type(v)
            return out

    def keys_of(self, more: dict) -> int:
        hit = self.more_keys.get(id(more))
        if hit is None:
            hit = self.more_keys[id(more)] = self.key_sets.setdefault(tuple(more),
                                                                      len(self.key_sets))
        return hit

    def table(self, shape: tuple, more: dict | None, extra: dict | None):
        table = self.tables.get(shape)
        if table is None:
            table = self.tables[shape] = args_table(shape, more, extra)
        return table

    def lane(self, dev, stream) -> int:
        key = (dev, stream)
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = task_lane(self.layout, dev, stream)
        return lane

    def draw(self, dev, stream, start, end, name, cat, args, conn) -> int:
        i = len(self.slices)
        self.slices.append(Slice(self.lane(dev, stream), start, end - start, name, cat, args))
        if conn is not None:
            add_end(self.index, conn, i)
        self.made += 1
        return i

    # -- row by row ----------------------------------------------------------------------
    def rows(self, rows) -> None:
        """Rows (start, end, dev, conn, gid, task type, context, stream, task, model), each
        checked on its own."""
        db, compute, comm, pmu, source = self.db, self.compute, self.comm, self.pmu, \
            self.source
        types, kind_of = self.types, self.kind
        # (The checks of every row are written out; ``span`` and ``plain`` say what they
        # check.)
        for start, end, dev, conn, gid, ttype, ctx, stream, task, model in rows:
            if start.__class__ is not int or end.__class__ is not int or start < 0 \
                    or end < start or end > MAX_NS:
                self.bad += 1
                if span(start, start) is None:  # a usable start: drawn zero-length
                    continue
                end = start
            if dev.__class__ is bytes or conn.__class__ is bytes or gid.__class__ is bytes \
                    or ctx.__class__ is bytes or stream.__class__ is bytes or \
                    task.__class__ is bytes or model.__class__ is bytes:
                dev, conn, gid, ctx, stream, task, model = map(
                    plain, (dev, conn, gid, ctx, stream, task, model))
            tname = types.get(ttype, "")
            if tname == "":
                tname = types[ttype] = db.string(ttype) if isinstance(ttype, int) else \
                    (text(ttype) if ttype is not None else None)
            c = compute.get(gid)
            h = comm.get(gid) if c is None else None
            if model is not None and (model == UINT32_MAX or model == -1):      # (``_id``)
                model = None
            if ctx is not None and (ctx == UINT32_MAX or ctx == -1):
                ctx = None
            # The args: names and values in the order a dict of them had (``TASK_ARGS``,
            # then the task info's, the PMU figures...), a row of the table of those names
            # (``arg_rows``).
            name, cat, middle, table, kernel, _ = kind_of(c, h, ttype)
            extra = pmu.get(gid) if c is not None else None
            if extra:
                ratios, piped, table = self.pmu_shape(c, extra)
                values = (model, tname, stream, task, ctx, conn, dev, *middle,
                          *extra.values(), *((ratios.of(extra),) if piped else ()),
                          gid, source)
            else:
                values = (model, tname, stream, task, ctx, conn, dev, *middle, gid, source)
            args = table.add(values) if table.__class__ is ArgTable else \
                dict(zip(table, values))
            if kernel and ctx is None:
                # maybe the hardware task around a context subtask (MIX kernels): drawn
                # once (``ctx`` is its context_id arg: nothing was added to its args)
                self.containers.setdefault((dev, stream, task, conn), []).append(
                    (start, end, name, cat, args, gid))
                continue
            i = self.draw(dev, stream, start, end, name, cat, args, conn)
            if c is not None and args["context_id"] is not None:  # (its figures may name it)
                self.subtasks.setdefault((dev, stream, task, conn), i)

    def kind(self, c: tuple | None, h: tuple | None, ttype) -> tuple:
        """``_kind``, worked out once per distinct (task info, communication info, task
        type)."""
        key = (id(c), id(h), ttype)
        got = self.kinds.get(key)
        if got is None:
            got = self.kinds[key] = self._kind(c, h, ttype)
        return got

    def pmu_shape(self, c: tuple, extra: dict) -> tuple[PipeRatios, bool, Any]:
        """Of a task with task info ``c`` and PMU figures ``extra``: the pipe ratios of
        figures of these names (``task_args.PipeRatios``), whether it has any, and the
        table of its args."""
        ek = tuple(extra)
        plan = self.plans.get(ek)
        if plan is None:
            plan = self.plans[ek] = (PipeRatios(pipe_plan(extra)), len(self.plans))
        piped = plan[0].any_of(extra)
        return plan[0], piped, self.table((self.keys_of(c[2]), plan[1], not piped), c[2],
                                          extra)

    def pipes(self, table: ArgTable, extra: dict) -> Derived:
        """The pipe ratios' column of ``table`` (of tasks of PMU figures named as
        ``extra``'s), made from their figures (``task_args.pipe_column``)."""
        got = self.derived.get(table)
        if got is None:
            got = self.derived[table] = pipe_column(table, self.plans[tuple(extra)][0])
        return got

    # -- a batch at a time ---------------------------------------------------------------
    def batch(self, cols: list) -> None:
        """Rows given as their columns (``database.as_columns``: a column of 64-bit ints as
        an ``array('q')``, of floats as an ``array('d')``); taken row by row where they are
        not plain ints with usable times."""
        if len(cols) != 10:
            self.rows(zip(*cols))
            return
        start, end, dev, conn, gid, ttype, ctx, stream, task, model = cols
        if not all(c.__class__ is array and c.typecode == "q"     # (floats: 'd')
                   for c in (start, end, dev, gid, ttype, stream, task)):
            self.rows(zip(*cols))
            return
        s, e = np.frombuffer(start, np.int64), np.frombuffer(end, np.int64)
        if not len(s):
            return
        conn_l, ctx_l, model_l = ids_of(conn, False), ids_of(ctx, True), ids_of(model, True)
        if int(s.min()) < 0 or bool((e < s).any()) or int(e.max()) > MAX_NS or \
                conn_l is None or ctx_l is None or model_l is None:
            self.rows(zip(*cols))
            return
        n = len(s)
        devs, gids, ttypes, streams, tasks = (dev.tolist(), gid.tolist(), ttype.tolist(),
                                              stream.tolist(), task.tolist())
        types = self.types
        for t in dict.fromkeys(ttypes):
            if types.get(t, "") == "":
                types[t] = self.db.string(t)
        # What each row's task info (else communication info) and task type give
        # (``kind``)
        infos = list(map(self.compute.get, gids))
        comms = list(map(self.comm.get, gids)) if self.comm else [None] * n
        keys = list(zip(map(id, infos), map(id, comms), ttypes))
        got = list(map(self.kinds.get, keys))
        if None in got:                         # (kinds not met before: each once)
            for k in {keys[k]: k for k, v in enumerate(got) if v is None}.values():
                self.kind(infos[k], comms[k], ttypes[k])
            got = list(map(self.kinds.__getitem__, keys))
        tabs = list(map(_TABLE, got))
        # a task's PMU figures (and whether it has pipe ratios) row by row; its table by
        # them
        figures: dict[int, tuple[dict, PipeRatios, bool]] = {}
        if self.pmu:
            pmu, shape = self.pmu, self.pmu_shape
            for k in [k for k, c, g in zip(range(n), infos, gids) if c is not None and
                      pmu.get(g)]:
                extra = pmu[gids[k]]
                ratios, piped, tabs[k] = shape(infos[k], extra)
                figures[k] = (extra, ratios, piped)
        # the TASK row's args (the task type's names a number per row, the ints as they
        # came)
        type_at = {t: j for j, t in enumerate(dict.fromkeys(ttypes))}
        task_cols = (model_l, coded([types[t] for t in type_at],
                                    array("H" if len(type_at) <= 1 << 16 else "I",
                                          map(type_at.__getitem__, ttypes))),
                     stream, task, ctx_l, conn_l, dev)
        args = self._args(tabs, got, figures, task_cols, gid)
        # tasks with task info and a context id (its figures may name one: in a dict, the
        # value of the last of that name)
        subs = [k for k, c, a, cx in zip(range(n), infos, args, ctx_l) if c is not None and
                (cx if a.__class__ is ArgRow else a["context_id"]) is not None]
        self._draw(s, e, got, args, (devs, streams, tasks, conn_l, ctx_l, gids), subs)

    def _draw(self, s: np.ndarray, e: np.ndarray, got: list, args: list, ids: tuple,
              subs: list[int]) -> None:
        """A batch's slices (starts ``s``, ends ``e``; kinds ``got``, ``args``; ``ids``:
        (devs, streams, tasks, connections, contexts, gids)), but for the hardware tasks
        that may be around a context subtask (``finish``); their connection ids into
        ``index``; the subtasks among them (``subs``: with task info and a context id)."""
        devs, streams, tasks, conn_l, ctx_l, gids = ids
        n = len(s)
        names, cats = list(map(_NAME, got)), list(map(_CAT, got))
        starts = s.tolist()
        drawn = None
        if any(map(_KERNEL, got)):
            # maybe the hardware task around a context subtask (MIX kernels): drawn once
            # ``finish``ed (its context is its context_id arg: nothing was added to its args)
            drawn = [not (_KERNEL(v) and cx is None) for v, cx in zip(got, ctx_l)]
            ends = e.tolist()
            for k in compress(range(n), map(not_, drawn)):
                self.containers.setdefault((devs[k], streams[k], tasks[k], conn_l[k]),
                                           []).append((starts[k], ends[k], names[k], cats[k],
                                                       args[k], gids[k]))

            def keep(column):
                return list(compress(column, drawn))
        else:
            def keep(column):
                return column
        lanes = keep(list(zip(devs, streams)))
        for key in dict.fromkeys(lanes):
            self.lane(*key)
        first = len(self.slices)
        self.slices.extend(map(Slice, map(self.lanes.__getitem__, lanes), keep(starts),
                               keep((e - s).tolist()), keep(names), keep(cats), keep(args)))
        self.made += len(self.slices) - first
        index, conns = self.index, keep(conn_l)
        if None not in conns:           # (each new one in order; those met before after)
            places = range(first, first + len(conns))
            for k in [k for k, at, i in zip(count(), map(index.setdefault, conns, places),
                                            places) if at != i]:
                add_end(index, conns[k], places[k])
        else:
            for i, conn_ in enumerate(conns, first):
                if conn_ is not None:
                    add_end(index, conn_, i)
        if subs:
            place = np.cumsum(np.array(drawn, dtype=np.int64)) if drawn is not None else \
                np.arange(1, n + 1)
            for k in subs:
                self.subtasks.setdefault((devs[k], streams[k], tasks[k], conn_l[k]),
                                         first + int(place[k]) - 1)

    def _args(self, tabs: list, got: list, figures: dict, task_cols: tuple,
              gids: Any) -> list:
        """Each row's args: rows of its table (``tabs``), added a table at a time as its
        columns, in the rows' order (the TASK row's values ``task_cols``, the kind's
        ``got``, the PMU figures and pipe ratios ``figures``, (gid, source)); a dict where
        the table is a tuple of names (one repeats)."""
        n = len(tabs)
        where: dict[int, list[int]] = {}         # a table -> its rows, in order
        for k, t in enumerate(map(id, tabs)):
            ks = where.get(t)
            if ks is None:
                where[t] = [k]
            else:
                ks.append(k)
        groups = list(where.values())
        out: list = [None] * n
        for ks in groups:
            table, m = tabs[ks[0]], len(ks)
            take = taker(ks)
            columns = [take(c) for c in task_cols]
            # the kind's values, the same for every row of a kind: a number per row for
            # each distinct one (``arg_rows.Coded``)
            serials = list(map(_SERIAL, map(got.__getitem__, ks)))
            mids = {number: j for j, number in enumerate(dict.fromkeys(serials))}
            kind_at = array("H" if len(mids) <= 1 << 16 else "I",
                            map(mids.__getitem__, serials))
            made = [_MIDDLE(got[k]) for k in dict(zip(kind_at, ks)).values()]
            for j in range(len(made[0])):
                columns.append(coded([mid[j] for mid in made], kind_at))
            if ks[0] in figures:                # (every row of the table has them)
                held = [figures[k] for k in ks]
                extras = [x for x, _, _ in held]
                columns.extend(list(map(itemgetter(name), extras)) for name in extras[0])
                if held[0][2]:                  # (made from the figures when read)
                    columns.append(self.pipes(table, extras[0]) if table.__class__ is
                                   ArgTable else [p.of(x) for x, p, _ in held])
            columns.append(take(gids))
            columns.append(Coded([self.source], array("H", bytes(2 * m))))
            if table.__class__ is ArgTable:
                first = table.extend(columns, m)
                made_rows = map(ArgRow, repeat(table), range(first, first + m))
            else:
                made_rows = (dict(zip(table, values)) for values in zip(*columns))
            if len(groups) == 1:
                return list(made_rows)
            for k, row in zip(ks, made_rows):
                out[k] = row
        return out

    def _kind(self, c: tuple | None, h: tuple | None, ttype: int) -> tuple:
        """What a task with task info ``c`` or communication info ``h`` (or neither) and
        task type ``ttype`` gets: (name, category, its args' values
        between the TASK row's and (gid, source), their table where it has no PMU figures,
        whether it may be the hardware task around a context subtask (drawn once
        ``finish``ed, where its context is None), a number of its own)."""
        tname = self.types[ttype]
        if c is not None:
            op_name, op_type, more = c
            shape = (self.keys_of(more), None, None)
            return (op_name or tname or "task",
                    self.norm(op_type) or self.norm(tname) or KERNEL,
                    (*more.values(), op_name), self.table(shape, more, None), False,
                    len(self.kinds))
        if h is not None:
            op_name, op_type, more = h
            htype = cell_value(op_type or "")
            shape = (self.keys_of(more), htype is None)
            return (tname or op_name or "task", normalize_task_type(htype) or "hccl",
                    (op_name, *more.values(), *(() if htype is None else (htype,))),
                    self.table(shape, more, None), False, len(self.kinds))
        return (tname or "task", self.norm(tname) or KERNEL, (), self.table((), None, None),
                str(tname).startswith("KERNEL"), len(self.kinds))

    # -- the end -------------------------------------------------------------------------
    def finish(self, stats: dict[str, Any]) -> None:
        """The hardware tasks around a context subtask: its args get their times, else
        they are drawn; the table's counts into ``stats``, and a warning for rows not
        usable."""
        trace, tables = self.trace, self.tables
        merged = 0
        # the subtasks whose args are rows: their rows of the wider tables, made a table at
        # a time (id of the table -> (subtask, its hardware task's start, duration, id))
        wider_rows: dict[int, list[tuple[int, tuple]]] = {}
        done: set[int] = set()
        for whole, rows in self.containers.items():
            sub = self.subtasks.get(whole)
            for start, end, name, cat, args, gid in rows:
                if sub is not None and sub not in done:
                    a = trace.slices[sub].args
                    if "hardware_task_start_ns" not in a:
                        more = (start, end - start, gid)     # (its global_task_id)
                        if a.__class__ is ArgRow:       # a row of the table with these too
                            wider_rows.setdefault(id(a.table), []).append((sub, more))
                            done.add(sub)
                        else:
                            a.update(zip(HARDWARE, more))
                        merged += 1
                        continue
                self.draw(whole[0], whole[1], start, end, name, cat, args, whole[3])
        for pairs in wider_rows.values():
            self._widen(pairs)
        for table in tables.values():       # the rows as columns now (``arg_rows``)
            if table.__class__ is ArgTable:
                table.settle()
        made, bad = self.made, self.bad
        stats["TASK"] = {"rows": made + merged + bad, "slices": made,
                         "merged_into_subtask": merged}
        if merged:
            info = trace.meta.extra.setdefault("ascend_db", {})
            info["tasks_merged_into_subtask"] = info.get("tasks_merged_into_subtask", 0) + \
                merged
        if bad:
            trace.warn(f"{self.db.path}: {bad} TASK rows without a usable start/end time "
                       "(drawn as zero-length where the start is known, else not converted)")


    def _widen(self, pairs: list[tuple[int, tuple]]) -> None:
        """The args of each subtask of ``pairs`` (rows of one table), with its hardware
        task's (start, duration, id) after them: rows of the table of those names, made as
        its columns (a dict each where a name repeats)."""
        slices = self.slices
        table = slices[pairs[0][0]].args.table
        wider = self.tables.get(table)
        if wider is None:
            wider = self.tables[table] = wider_table(table, HARDWARE)
        if wider.__class__ is not ArgTable:
            for sub, more in pairs:
                slices[sub].args = dict(zip(wider, (*slices[sub].args.values(), *more)))
            return
        columns = table.take_columns([slices[sub].args.row for sub, _ in pairs])
        columns.extend(map(list, zip(*(more for _, more in pairs))))
        first = wider.extend(columns, len(pairs))
        for r, (sub, _) in enumerate(pairs, first):
            slices[sub].args = ArgRow(wider, r)
