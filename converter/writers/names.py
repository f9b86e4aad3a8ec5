"""Display names both writers give the lanes they show as threads of a process."""

from __future__ import annotations

from typing import Any

from ..model import SEP, Trace


def thread_names(trace: Trace, process_of: dict[int, Any]) -> dict[int, str]:
    """Names for the lanes shown as threads (``process_of``: lane -> its process) that
    tell apart the threads of one process, which the UI lists side by side whatever groups
    the model has between them: where lanes of several groups share a name, every lane of
    those groups gets its group's name in front ("Python · Thread 7", "CANN · Thread 7",
    "CANN · Thread 8"); lanes still sharing a name (the overlap lanes of one lane) get "#2",
    "#3", ... after the first, in display order."""
    tracks = trace.tracks
    names: dict[int, str] = {}
    by_process: dict[Any, list[int]] = {}
    for lane, process in process_of.items():
        by_process.setdefault(process, []).append(lane)
    for lanes in by_process.values():
        parents: dict[str, set] = {}
        for lane in lanes:
            parents.setdefault(tracks[lane].name, set()).add(tracks[lane].parent)
        qualified = set().union(*(p for p in parents.values() if len(p) > 1))
        seen: dict[str, int] = {}
        for lane in lanes:                              # display order
            t = tracks[lane]
            name = t.name
            if t.parent in qualified and t.parent is not None:
                name = f"{tracks[t.parent].name}{SEP}{name}"
            n = seen[name] = seen.get(name, 0) + 1
            if n > 1:
                name = f"{name} #{n}"
            if name != t.name:
                names[lane] = name
    return names
