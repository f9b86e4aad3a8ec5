"""A larger PyPTO 0.2 run made from a real one: K copies of its ``merged_swimlane.json`` laid
end to end along the time axis (**made by repeating a real run, not collected**), for the
scaling benchmark (``bench_scaling.py --pypto-scales``) on a machine without PyPTO.

    python benchmarks/pypto_scaled.py RUN K OUT_DIR

Each copy after the first is shifted by the run's span plus 1 us, and gets new identities:
its device tasks' ``seqNo`` numbers follow the previous copy's (``taskId``, the event's name
and its ``event-hint`` follow, as PyPTO writes them: taskId = seqNo << 20 | leaf), its event
ids and flow ids follow the previous copy's.  Counters and metadata are kept as they are
(metadata once).  So K copies hold K times the run's tasks, flows and counter samples.

One thing differs from a real run K times as long: PyPTO records the HUB tasks of every
device task with seqNo 0 (its "HUB seqNo quirk", which tracecvt's reader undoes where it
can), and the copies' HUB tasks get the shifted seqNo like the rest, so the reader binds
the first copy's HUB dependencies and marks the other copies' as out of order (the same
work per dependency, other warnings).  Only ``merged_swimlane.json`` is written: the run's
other files (bubble_analysis.log, program.json, ...) describe the original.
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

import orjson

_NAME = re.compile(r"^(\d+)-")
_HINT = re.compile(r"Task:\[(\d+)-")
_TASK_ID = re.compile(r"TaskId:(\d+)")


def merged_file(run: Path) -> Path | None:
    """The run's ``merged_swimlane.json`` or ``.json.gz``: ``run`` itself where it is a
    file, else the first one below it (the benchmarks' one way of finding it); None where
    there is none."""
    return run if run.is_file() else min(run.rglob("merged_swimlane.json*"), default=None)


def merged_events(run: Path) -> list:
    """The events of the run's ``merged_swimlane.json`` (``merged_file``)."""
    path = merged_file(run)
    if path is None:
        raise SystemExit(f"{run}: no merged_swimlane.json(.gz) below it")
    data = path.read_bytes()
    doc = orjson.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def scaled_merged(run: Path, k: int, out: Path) -> Path:
    """``out``/merged_swimlane.json: K copies of ``run``'s (see the module docstring);
    returns ``out``."""
    events = merged_events(run)
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("ph") != "M"]
    lo = min(e["ts"] for e in rest)
    hi = max(e["ts"] + e.get("dur", 0) for e in rest)
    shift = hi - lo + 1.0
    seqs = max((e["args"]["seqNo"] for e in rest
                if e.get("ph") == "X" and "seqNo" in (e.get("args") or {})), default=0) + 1
    ids = max((e.get("id", 0) for e in rest if e.get("ph") == "X"), default=0) + 1
    flow_ids = max((e["id"] for e in rest if e.get("ph") in ("s", "f")), default=0) + 1
    out.mkdir(parents=True, exist_ok=True)
    path = out / "merged_swimlane.json"
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":')
        f.write(orjson.dumps(meta)[:-1])
        for c in range(k):
            copy = [_copy(e, c, shift, seqs, ids, flow_ids) for e in rest] if c else rest
            f.write(b"," if meta or c else b"")
            f.write(orjson.dumps(copy)[1:-1])
        f.write(b"]}")
    return out


def _copy(e: dict, c: int, shift: float, seqs: int, ids: int, flow_ids: int) -> dict:
    e = dict(e)
    e["ts"] = e["ts"] + c * shift
    ph = e.get("ph")
    if ph == "X":
        e["id"] = e.get("id", 0) + c * ids
        a = e.get("args")
        if isinstance(a, dict) and isinstance(a.get("seqNo"), int):
            add = c * seqs
            a = dict(a)
            a["seqNo"] += add
            if isinstance(a.get("taskId"), int):
                a["taskId"] += add << 20
            hint = a.get("event-hint")
            if isinstance(hint, str):
                hint = _HINT.sub(lambda m: f"Task:[{int(m.group(1)) + add}-", hint)
                a["event-hint"] = _TASK_ID.sub(
                    lambda m: f"TaskId:{int(m.group(1)) + (add << 20)}", hint)
            e["args"] = a
            e["name"] = _NAME.sub(lambda m: f"{int(m.group(1)) + add}-", e.get("name", ""))
    elif ph in ("s", "f"):
        e["id"] = e["id"] + c * flow_ids
    return e


if __name__ == "__main__":
    print(scaled_merged(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
