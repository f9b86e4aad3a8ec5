"""The simpler task runtime's profiling output ("PyPTO 3.0"): chip_swimlane_records.json with
deps.json, name_map*.json and host_phase_records.jsonl beside it.

Format reference: ../shared/docs/formats/simpler.md; how it maps onto the model:
docs/formats/simpler.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import find_variant, is_file, listdir, logical_name, read_head
from ...model import LABEL_ARGS, RESOURCES, SAME_WORK, TASK_GRAPH, RunMeta, Trace
from ..base import ReadOptions, Source
from .files import DEPS, HOST_PHASES, LEGACY_PREFIXES, LEGACY_RECORDS, RECORDS, TOOL_REPORTS



def sniff_records(head: bytes) -> bool:
    h = head.lstrip()
    if h[:1] != b"{":
        return False
    if b'"chip_swimlane_level"' in head or b'"l2_swimlane_level"' in head:
        return True
    # pre-June-2026 layout (section 1.4): tasks[] in microseconds
    return b'"start_time_us"' in head and b'"tasks"' in head and (
        b'"version"' in head or b'"l2_perf_level"' in head)


def sniff_deps(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and b'"tasks"' in head and b'"task_id":"' in \
        head.replace(b" ", b"") and (b'"kernel_ids"' in head or b'"edges"' in head)


def sniff_converter_output(head: bytes) -> bool:
    """simpler's swimlane_converter output (merged_swimlane*.json, CPM_*.json): a drawing of
    the records, not data to read again."""
    return b"traceEvents" in head and b'"Worker View"' in head and b"Machine View" not in head


def _is_records_name(name: str) -> bool:
    n = logical_name(Path(name))
    return n == RECORDS or n in LEGACY_RECORDS or (
        n.endswith(".json") and n.startswith(LEGACY_PREFIXES))


class SimplerReader:
    formats = ("simpler", "simpler-records")
    title = ("simpler runtime (PyPTO 3.0) chip swimlanes: chip_swimlane_records.json + "
             "deps.json + name_map*.json; simpler-records: without deps.json")

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        info = meta.extra.get("simpler")
        graph = bool(info.get("task_graph")) if isinstance(info, dict) else False
        # "task": the task's token on every view of it (its AICore rows, the scheduler's
        # dispatch -> finish, the orchestrator's submit or alloc, the scheduler's markers).
        return {TASK_GRAPH: graph, RESOURCES: ["AIC", "AIV"],
                LABEL_ARGS: {"function": "function"}, SAME_WORK: {"args": ["task"]}}

    # -- detection -----------------------------------------------------------------------
    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        found = []
        for n in filenames:
            if n.endswith((".json", ".json.gz")) and not n.startswith(("deps", "name_map")):
                p = directory / n
                # By name too: a damaged records file is then an error naming it, not
                # a folder without runs.
                if _is_records_name(n) or sniff_records(read_head(p)):
                    found.append(p)
        if not found:
            return []
        if len(found) == 1:
            return [self._source(found[0], directory)]
        return [self._source(p, p) for p in found]

    def find_file(self, path: Path, force: bool) -> Source | None:
        head = read_head(path)
        if sniff_records(head):
            return self._source(path, path)
        drawing = sniff_converter_output(head)
        if drawing or sniff_deps(head):
            records = find_variant(path.parent, RECORDS)
            what = ("the simpler runtime's swimlane_converter output (a drawing of "
                    "chip_swimlane_records.json)" if drawing else
                    "a simpler deps.json (the task graph, without times)")
            if records is None:
                raise InputError(path, f"{what}: convert the run's {RECORDS} (with deps.json "
                                 "and name_map*.json beside it) instead")
            src = self._source(records, records)
            src.files["named"] = path
            return src
        if force:
            return self._source(path, path)
        return None

    def _source(self, records: Path, root: Path) -> Source:
        directory = records.parent
        names = listdir(directory)
        files = {"records": records}
        deps = find_variant(directory, DEPS)
        if deps is not None:
            files["deps"] = deps
        maps = [n for n in names if n.startswith("name_map") and
                logical_name(Path(n)).endswith(".json")]
        if len(maps) > 1:       # SceneTest names it after the case: prefer that one
            case = [n for n in maps if directory.name.startswith(
                logical_name(Path(n))[len("name_map_"):-len(".json")])]
            maps = case if len(case) == 1 else maps
        for i, n in enumerate(sorted(maps)):
            files["name_map" if i == 0 else f"name_map{i}"] = directory / n
        host = find_variant(directory, HOST_PHASES)
        if host is not None:
            files["host_phases"] = host
        for role, name in TOOL_REPORTS.items():   # what the runtime's tools printed, if kept
            report = find_variant(directory, name)
            if report is not None:
                files[role] = report
        return Source("simpler", run_name(records, root), root, files, self, "")

    # -- reading -------------------------------------------------------------------------
    def read(self, source: Source, options: ReadOptions) -> Trace:
        from .build import build
        return build(source, options)


def run_name(records: Path, root: Path) -> str:
    """The case folder's name (``outputs/<Case>_<ts>/``); for PyPTO's ``dfx_outputs/`` the
    work dir's, with ``rank<r>-d<k>`` for L3 per-card folders; a renamed records file alone:
    its own name."""
    if is_file(root) and not _is_records_name(root.name):
        return logical_name(root).rsplit(".", 1)[0]
    d = records.parent
    parts = []
    while d.name == "dfx_outputs" or re.fullmatch(r"(rank\d+|d\d+)", d.name):
        if d.name != "dfx_outputs":
            parts.append(d.name)
        if d.parent == d:
            break
        d = d.parent
    name = d.name or "simpler"
    return "-".join([name, *reversed(parts)]) if parts else name


READER = SimplerReader()
