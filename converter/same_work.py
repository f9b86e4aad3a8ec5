"""One piece of work shown in several places (``model.SAME_WORK``, ``model.SAME_TASK``,
``model.COPIES``): which slices of a trace are one, for the writers that can say so (the
Perfetto writer's ``correlation_id``, which the Perfetto UI colours alike)."""

from __future__ import annotations

from typing import Any

from .model import COPIES, SAME_WORK, Trace, task_arg


def work_ids(trace: Trace) -> dict[int, int]:
    """Slice index -> work id (1, 2, ... by first slice) of the slices that are one piece of
    work on two or more tracks: equal values of the task arg (``model.task_arg``) or of an
    arg the reader declares
    (``model.SAME_WORK``; own args first, then shared; a list of names is one id under
    several names), or joined by a flow of a declared
    name, taken together (one launch and its device task, one task's rows and its dispatch).
    Slices on derived tracks are left out of those: they are the analyses', not the run's;
    a slice an analysis drew as a copy of the run's own (``model.COPIES``: a critical-path
    task) joins the slices it copies."""
    extra = trace.meta.extra if isinstance(trace.meta.extra, dict) else {}
    declared = extra.get(SAME_WORK)
    declared = declared if isinstance(declared, dict) else {}
    slices, tracks = trace.slices, trace.tracks
    # Each entry: an arg name, or a list of names of one id (the first a slice has counts).
    keys = [(k,) if isinstance(k, str) else tuple(k) for k in declared.get("args", ())
            if isinstance(k, str) or isinstance(k, (list, tuple)) and k
            and all(isinstance(n, str) for n in k)]
    task = task_arg(trace)
    if task is not None and not any(task in k for k in keys) and _has_task_ids(trace, task):
        keys.insert(0, (task,))
    flow_names = {n for n in declared.get("flows", ()) if isinstance(n, str)}
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        root = i
        while parent.get(root, root) != root:
            root = parent[root]
        while i != root:                    # path compression
            parent[i], i = root, parent[i]
        return root

    def join(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    derived = {t.index for t in tracks if t.derived}
    for names in keys:
        first: dict[Any, int] = {}
        for i, s in enumerate(slices):
            a = s.args
            for key in names:
                v = a.get(key) if a else None
                if v is None and s.shared_args:
                    v = s.shared_args.get(key)
                if v is not None:
                    break
            if v is None or v.__class__ in (list, dict) or s.track in derived:
                continue
            k = first.setdefault((v.__class__, v), i)
            if k != i:
                join(k, i)
    if flow_names:
        for f in trace.flows:
            if f.name in flow_names and slices[f.src].track not in derived \
                    and slices[f.dst].track not in derived:
                join(f.src, f.dst)
    groups: dict[int, list[int]] = {}
    for i in {*parent, *parent.values()}:     # the roots are no keys of ``parent``
        groups.setdefault(find(i), []).append(i)
    out: dict[int, int] = {}
    wid = 0
    for root in sorted(groups):
        members = groups[root]
        if len({slices[i].track for i in members}) < 2:
            continue                        # all on one track: nothing to link
        wid += 1
        for i in members:
            out[i] = wid
    # Copies last, numbered after the run's own work: a copy takes its task's id, or a task
    # that had none gets the next one with its copy.  So the ids of the run's own slices
    # are the same before an analysis adds its copies as after (a trace written while the
    # analyses run: writers.perfetto).
    copies = extra.get(COPIES)
    if isinstance(copies, dict):
        n = len(slices)
        for c in sorted(k for k in copies if k.__class__ is int and 0 <= k < n):
            originals = copies[c]
            if not isinstance(originals, list):
                continue
            originals = [o for o in originals if o.__class__ is int and 0 <= o < n and o != c]
            if not originals:
                continue
            have = [out[o] for o in originals if o in out]
            if have:
                w = min(have)
            else:
                wid += 1
                w = wid
            for o in originals:
                out.setdefault(o, w)
            out[c] = w
    return out


def _has_task_ids(trace: Trace, task: str) -> bool:
    """Whether the first slice of some track of the run's own has the arg ``task`` (readers
    that set it set it on every slice of a lane; a full scan only then)."""
    seen = {t.index for t in trace.tracks if t.derived}
    for s in trace.slices:
        if s.track in seen:
            continue
        seen.add(s.track)
        if task in (s.args or ()) or task in (s.shared_args or ()):
            return True
    return False
