"""The simpler task runtime's profiling output ("PyPTO 3.0"): chip_swimlane_records.json with
deps.json, name_map*.json and host_phase_records.jsonl beside it.

Format reference: ../shared/docs/formats/simpler.md; how it maps onto the model:
docs/formats/simpler.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import find_variant, is_file, listdir, logical_name, read_head
from ...model import (LABEL_ARGS, NO_BUBBLES, RESOURCES, SAME_TASK, SAME_WORK, TASK_GRAPH,
                      TASK_ID, RunMeta, Trace)
from ..base import ReadOptions, Source
from .files import (CONVERTER_EXTRA, DEPS, FULL_ANALYSIS, HOST_PHASES, LEGACY_PREFIXES,
                    LEGACY_RECORDS, RECORDS, TOOL_REPORTS)


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
    """simpler's swimlane_converter output (merged_swimlane*.json, CPM_*.json), a drawing of
    the records: a Chrome trace whose first processes (the converter names them first) are
    its worker view, "Worker View" since 2026-06-22, "AICore View" before; never PyPTO's
    "Machine View"."""
    return b"traceEvents" in head and (b'"Worker View"' in head or b'"AICore View"' in head) \
        and b"Machine View" not in head


def _records_in(directory: Path, filenames: list[str]) -> list[Path]:
    """The records files among ``filenames``: by content, or by name (a damaged records file
    is then an error naming it, not a folder without runs)."""
    found = []
    for n in filenames:
        if n.endswith((".json", ".json.gz")) and not n.startswith(("deps", "name_map")):
            p = directory / n
            if _is_records_name(n) or sniff_records(read_head(p)):
                found.append(p)
    return found


def _is_records_name(name: str) -> bool:
    n = logical_name(Path(name))
    return n == RECORDS or n in LEGACY_RECORDS or (
        n.endswith(".json") and n.startswith(LEGACY_PREFIXES))


class SimplerReader:
    formats = ("simpler", "simpler-records")
    title = ("simpler runtime (PyPTO 3.0) chip swimlanes: chip_swimlane_records.json + "
             "deps.json + name_map*.json; simpler-records: without deps.json")

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        if type(meta.extra) is dict and CONVERTER_EXTRA in meta.extra:
            # A drawing: its lanes repeat each row in several views (AIC_3 is a worker lane
            # and a scheduler lane), and it has no task graph: the records give the analysis.
            return {TASK_GRAPH: False, NO_BUBBLES: FULL_ANALYSIS}
        info = meta.extra.get("simpler")
        graph = bool(info.get("task_graph")) if isinstance(info, dict) else False
        # "task": the task's token on every view of it (its AICore rows, the scheduler's
        # dispatch -> finish, the orchestrator's submit or alloc, the scheduler's markers).
        return {TASK_GRAPH: graph, RESOURCES: ["AIC", "AIV"], SAME_TASK: TASK_ID,
                LABEL_ARGS: {"function": "function"}, SAME_WORK: {"args": ["task"]}}

    # -- detection -----------------------------------------------------------------------
    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        found = _records_in(directory, filenames)
        runs = [self._source(found[0], directory)] if len(found) == 1 else \
            [self._source(p, p) for p in found]
        # The runtime's converter output: a companion of the records run it draws where the
        # walk finds that one (companion_of), else a run of its own, read as drawn.
        return runs + [self._drawing(directory / n) for n in filenames
                       if n.endswith((".json", ".json.gz"))
                       and directory / n not in found
                       and sniff_converter_output(read_head(directory / n))]

    def companion_of(self, source: Source, runs: list[Source]) -> tuple[Source, str] | None:
        """The records run a drawing was made from, among ``runs``: the one whose records
        sit in the drawing's folder, else the one whose case folder (the records' folder,
        ``<Case>_<timestamp>``) names a folder the drawing lies in below the folder both
        share: where simpler's tools put what they make of a run (swimlane_converter -o
        <run>/reference/<case>/merged_swimlane_reference.json; critical_path's CPM_*.json
        in reference/<case>/critical_path/; ../shared/samples/simpler/*/reference/
        commands.txt).  None where no run, or more than one, fits: a run of its own."""
        drawing = source.files.get("converter_output")
        if drawing is None:
            return None
        records = [r for r in runs if r.reader is self and "records" in r.files]
        same = [r for r in records if r.files["records"].parent == drawing.parent]
        if len(same) == 1:
            return same[0], ("a drawing of this run's records by simpler's swimlane_converter "
                             "(in their folder): the records give the full analysis")
        if same:
            return None

        def in_case_folder(r: Source) -> bool:
            case = r.files["records"].parent
            below = drawing.parent.relative_to(os.path.commonpath((case, drawing.parent))).parts
            return case.name in below
        cases = [r for r in records if in_case_folder(r)]
        if len(cases) == 1:
            case = cases[0].files["records"].parent.name
            return cases[0], (f"a drawing of this run's records by simpler's tools (under a "
                              f"folder named for its case, {case}): the records give the full "
                              "analysis")
        return None

    def find_file(self, path: Path, force: bool) -> Source | None:
        head = read_head(path)
        if sniff_records(head):
            return self._source(path, path)
        drawing = sniff_converter_output(head)
        if drawing or sniff_deps(head):
            found = _records_in(path.parent, listdir(path.parent))
            named = [p for p in found if logical_name(p) == RECORDS]
            records = named[0] if len(named) == 1 else (found[0] if len(found) == 1 else None)
            if records is not None:             # the records it draws: the better source
                src = self._source(records, records)
                src.files["named"] = path
                return src
            if drawing:
                src = self._drawing(path)
                src.companion = False
                return src
            raise InputError(path, "a simpler deps.json (the task graph, without times): "
                             f"convert the run's {RECORDS} (with deps.json and name_map*.json "
                             "beside it) instead")
        if force:
            return self._source(path, path)
        return None

    def _drawing(self, path: Path) -> Source:
        """The runtime's converter output as a run of its own (no records beside it)."""
        name = logical_name(path)
        name = run_name(path, path.parent) if name.startswith("merged_swimlane") else \
            name.rsplit(".", 1)[0]
        src = Source("simpler", name, path, {"converter_output": path}, self,
                     "converter-output")
        src.companion = True
        return src

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
        if "records" not in source.files and "converter_output" in source.files:
            from .converter_output import read_converter_output
            return read_converter_output(source, options)
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
