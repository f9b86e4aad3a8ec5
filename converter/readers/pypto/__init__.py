"""PyPTO swimlane output: merged_swimlane.json, or the raw swim + topo files it is made from.

Format reference: ../shared/docs/formats/pypto.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import (find_variant, glob, is_dir, is_file, logical_name, read_bytes,
                       read_head)
from ...model import UNTRUSTED_FLOW, UNTRUSTED_PREDECESSORS, RunMeta, Trace, split_overlaps
from ..base import ReadOptions, Source
from ..simpler import sniff_converter_output
from .common import GRAPH_ROLES, HUB_QUIRK, MERGED_US, MachineView, declarations

MERGED = "merged_swimlane.json"
RAW_SIM = "_simulate.swim.json"
RAW_NPU = "tilefwk_L1_prof_data.json"
BUBBLE_LOG = "bubble_analysis.log"
SIM_DIR = "CostModelSimulationOutput"


def sniff_merged(head: bytes) -> bool:
    if sniff_converter_output(head):
        return False        # the simpler runtime's converter output (readers/simpler)
    return b"traceEvents" in head and (b"Machine View" in head or b"machine-view" in head
                                       or b"event-hint" in head)


def sniff_aicpu(head: bytes) -> bool:
    if sniff_converter_output(head):
        return False        # simpler's converter had an "AICPU View" too before 2026-06-22
    return b"traceEvents" in head and b"AICPU View" in head


def holds_machine_view(path: Path) -> bool:
    """Whether a trace whose head is the AICPU view holds PyPTO's Machine View further in:
    a merged_swimlane.json with the AICPU view prepended (5.7), whatever its name."""
    return b"Machine View" in read_bytes(path)


def sniff_raw_swim(head: bytes) -> bool:
    """Per-core task times (3.1): ``_simulate.swim.json`` (SIM) or the on-board
    ``tilefwk_L1_prof_data.json`` layout under any name (``tilefwk_prof_data.json`` of
    PyPTO's profiling tools); not the per-core phase marks of ``machine_trace_perf_data_*``
    (blocks with ``freq``) nor the pipe swimlane (``pipeLogs``, no ``tasks``)."""
    h = head.lstrip()
    return h[:1] == b"[" and b'"blockIdx"' in head and b'"coreType"' in head \
        and b'"tasks"' in head and b'"freq"' not in head and b'"pipeLogs"' not in head


def sniff_task_list(head: bytes) -> bool:
    """A task graph as a JSON list of tasks without seqNo: ``[{taskId, successors, …}]``
    (the old-style ``topo.json``, or the static ``<N>_simulate.topo.json``, 3.4)."""
    h = head.lstrip()
    return h[:1] == b"[" and b'"taskId"' in head and b'"successors"' in head \
        and b'"seqNo"' not in head and b'"blockIdx"' not in head


class PyptoReader:
    formats = ("pypto", "pypto-merged", "pypto-raw")
    title = "PyPTO swimlanes (merged_swimlane.json, or _simulate.swim.json + task graph)"

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        return declarations()

    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        names = set(filenames)
        files: dict[str, Path] = {}

        def pick(role: str, name: str, sniff=None) -> None:
            p = find_variant(directory, name) if (name in names or name + ".gz" in names) \
                else None
            if p is not None and (sniff is None or sniff(read_head(p)) or force):
                files[role] = p

        # An NPU merged file starts with the AICPU view (5.7): "Machine View" may be far in.
        pick("merged", MERGED, lambda h: sniff_merged(h) or sniff_aicpu(h))
        pick("swim", RAW_SIM, sniff_raw_swim)
        if "swim" not in files:
            pick("swim", RAW_NPU, sniff_raw_swim)
        # Every JSON file is taken for what its content is, as find_file takes it; the
        # names above only break ties.  AICPU traces (any name) join the directory's run; a
        # file that starts with the AICPU view but holds the Machine View is a merged file.
        merged_elsewhere = []
        aicpu = 0
        for n in filenames:
            p = directory / n
            if not logical_name(Path(n)).endswith(".json") or p in files.values():
                continue
            head = read_head(p)
            if sniff_aicpu(head) and not sniff_merged(head):
                if holds_machine_view(p):
                    merged_elsewhere.append(p)
                else:
                    files[f"aicpu{aicpu}"] = p
                    aicpu += 1
        if "merged" not in files and "swim" not in files:
            # Runs under other names: a merged swimlane, or per-core task times, each with
            # the AICPU traces beside it.
            runs = []
            for n in filenames:
                if logical_name(Path(n)).endswith(".json") and not n.startswith("_simulate"):
                    p = directory / n
                    head = read_head(p)
                    if sniff_merged(head) or p in merged_elsewhere:
                        runs.append(self._source(p, {"merged": p, **files}))
                    elif sniff_raw_swim(head):
                        runs.append(self._source(p, {"swim": p, **files}))
            if not runs and aicpu:
                runs.append(self._source(directory, files))
            return runs
        pick("bubble_log", BUBBLE_LOG)
        return [self._source(directory, files)]

    def find_file(self, path: Path, force: bool) -> Source | None:
        head = read_head(path)
        if sniff_merged(head) or (sniff_aicpu(head) and (logical_name(path) == MERGED
                                                         or holds_machine_view(path))):
            return self._source(path, {"merged": path})
        if sniff_aicpu(head):
            return self._source(path, {"aicpu0": path})
        if sniff_raw_swim(head):
            return self._source(path, {"swim": path})
        if force:
            return self._source(path, {"merged": path})
        return None

    def _source(self, where: Path, files: dict[str, Path]) -> Source:
        if is_file(where):
            run_dir = where.parent
            root = where
        else:
            run_dir = where
            root = where
        if run_dir.name == SIM_DIR:
            run_dir = run_dir.parent
            if not is_file(where):
                root = run_dir
        if is_file(where) and logical_name(where) not in (MERGED, RAW_SIM, RAW_NPU):
            name = logical_name(where).rsplit(".", 1)[0]
        else:
            name = run_dir.name
        # The task graph lives in the run directory (or next to the swim file).
        sim_dir = run_dir / SIM_DIR
        for role, name_, dirs in (("dyn_topo", "dyn_topo.txt", (run_dir,)),
                                  ("tmp_topo", "tmp_topo_json.json", (run_dir,)),
                                  ("program", "program.json", (run_dir,))):
            for d in dirs:
                p = find_variant(d, name_)
                if p is not None:
                    files.setdefault(role, p)
        topo_dir = sim_dir if is_dir(sim_dir) else run_dir
        static = glob(topo_dir, "*_simulate.topo.json*") if is_dir(topo_dir) \
            else []
        if static:
            files.setdefault("static_topo", static[0])
        if "swim" in files and not any(r in files for r in GRAPH_ROLES):
            graph = _task_list_beside(run_dir, files)
            if graph is not None:
                files["task_graph"] = graph
        if "bubble_log" not in files:
            for d in (sim_dir, run_dir):
                p = find_variant(d, BUBBLE_LOG) if is_dir(d) else None
                if p is not None:
                    files["bubble_log"] = p
                    break
        variant = "merged" if "merged" in files else ("raw" if "swim" in files else "aicpu")
        return Source("pypto", name, root, files, self, variant)

    def read(self, source: Source, options: ReadOptions) -> Trace:
        variant = source.variant
        merged = False
        if variant in ("pypto-raw", "raw"):
            if "swim" not in source.files:
                raise InputError(source.root, "no _simulate.swim.json or "
                                 "tilefwk_L1_prof_data.json to read the raw path from")
            from .raw import read_raw
            trace = read_raw(source, options)
        elif "merged" in source.files:
            trace = self._read_merged(source, options)
            merged = True
        elif "swim" in source.files:
            from .raw import read_raw
            trace = read_raw(source, options)
        else:
            trace = Trace(RunMeta(source.name, "pypto", tool="PyPTO"))
        self._attach_side_files(trace, source, options)
        split_overlaps(trace)
        _bind_flows(trace, merged)
        return trace

    def _read_merged(self, source: Source, options: ReadOptions) -> Trace:
        from .merged import (PARALLEL_MIN_BYTES, ChromeEventLoader, decode_events,
                             fork_series_pass)
        path = source.files["merged"]
        meta = RunMeta(source.name, "pypto", tool="PyPTO", clock=MERGED_US,
                       source_files=[str(path)])
        trace = Trace(meta)
        options.report(f"reading {path.name}", 0, 1)
        data = read_bytes(path)
        # A large file: a second process reads its counters and flows meanwhile.
        helper = fork_series_pass(data) if options.workers > 1 and \
            len(data) >= PARALLEL_MIN_BYTES else None
        try:
            events = decode_events(path, data, trace.warn, skim=helper is not None)
            del data
            view = MachineView(trace, "PyPTO Machine View",
                               f"tasks per core from {path.name}; times in ns "
                               "(PyPTO's microseconds x 1000)")
            loader = ChromeEventLoader(trace, path, view)
            loader.load(events, helper)
        finally:
            if helper is not None:
                helper.abandon()            # nothing left to do if load collected it
        view.finish()
        if options.clock_mhz is not None:
            trace.warn(f"{path}: --clock-mhz ignored: merged_swimlane.json is already in "
                       "microseconds")
        _describe_device(trace)
        meta.extra["tasks"] = loader.tasks
        options.report(f"reading {path.name}", 1, 1)
        return trace

    def _attach_side_files(self, trace: Trace, source: Source, options: ReadOptions) -> None:
        log = source.files.get("bubble_log")
        if log is not None:
            from .bubble_log import parse_bubble_log
            figures = trace.meta.extra["pypto_bubble_log"] = parse_bubble_log(log)
            trace.meta.source_files.append(str(log))
            negative = sorted(name for name, core in figures["cores"].items()
                              if min(core["total_wait_us"], core["wait_schedule_us"],
                                     core["wait_predecessor_us"]) < 0)
            if negative:
                trace.warn(f"{log}: PyPTO reports negative wait times on {len(negative)} "
                           f"cores ({', '.join(negative[:4])}{', …' if len(negative) > 4 else ''}"
                           "): its HUB seqNo quirk, not real waiting; kept as run metadata only",
                           HUB_QUIRK)
        for role in sorted(r for r in source.files if r.startswith("aicpu")):
            from .aicpu import add_aicpu_trace
            add_aicpu_trace(trace, source.files[role], options)
            trace.meta.source_files.append(str(source.files[role]))


# The cause (Trace.warn) of the warnings about dependencies the times show as not causal.
LATE = "dependencies that end after their successor starts (not causal as recorded)"


def _task_list_beside(run_dir: Path, files: dict[str, Path]) -> Path | None:
    """A task graph of another shape than PyPTO's pipeline inputs, found by content next to
    the task times: a JSON list of tasks without seqNo (hicann/pypto's old-style
    ``topo.json``: taskId, funcName, semanticLabel, successors).  Names break ties only:
    ``topo.json`` first, then by name."""
    taken = set(files.values())
    found = [p for p in glob(run_dir, "*.json*") if logical_name(p).endswith(".json")
             and p not in taken and sniff_task_list(read_head(p))]
    found.sort(key=lambda p: (logical_name(p) != "topo.json", p.name))
    return found[0] if found else None


def _bind_flows(trace: Trace, merged: bool) -> None:
    """Re-bind the dependencies of HUB executions to the device tasks they belong to, and
    mark the ones that stay untrusted (hub_binding: PyPTO's HUB seqNo quirk); ``merged``:
    the run was read from merged_swimlane.json."""
    from .hub_binding import DEVICE_TASK, WHY_LATE, bind_hub_executions
    where = "merged_swimlane.json (PyPTO keeps one execution per key; read the raw files " \
        "with --from pypto-raw to get them all)" if merged else "the raw files"
    counts = bind_hub_executions(trace, where)
    trace.meta.extra.update(counts)
    name = trace.meta.name
    if counts["hub_flows_rebound"]:
        trace.warn(f"{name}: {counts['hub_flows_rebound']} of {len(trace.flows)} dependencies "
                   "re-bound to the HUB executions they belong to "
                   f"({counts['hub_executions_bound']} executions bound to their device task, "
                   f"args.{DEVICE_TASK}): PyPTO's HUB seqNo "
                   "quirk records every device task's HUB tasks with seqNo 0 and binds their "
                   "dependencies to the wrong execution", HUB_QUIRK)
    late = sum(1 for f in trace.flows if f.name == UNTRUSTED_FLOW
               and (f.args or {}).get("why") == WHY_LATE)
    hub = counts["flows_untrusted"] - late
    kept = (f"marked {UNTRUSTED_FLOW!r} (named in "
            f"args.{UNTRUSTED_PREDECESSORS} of each successor; Chrome JSON draws those it "
            "can as flows of that name, with args saying why) and not followed by the "
            "analyses")
    if hub:
        trace.warn(f"{name}: {hub} of {len(trace.flows)} dependencies "
                   "cannot be bound to the execution they belong to (PyPTO's HUB seqNo quirk): "
                   "kept as PyPTO bound them, " + kept, HUB_QUIRK)
    if late:
        trace.warn(f"{name}: {late} of {len(trace.flows)} dependencies end after their "
                   "successor starts (the recorded times do not show them as causal): kept, "
                   + kept, LATE)
    if bool(hub) != bool(late):         # one cause for every untrusted flow: a writer's
        trace.meta.causes[UNTRUSTED_FLOW] = HUB_QUIRK if hub else LATE      # warning shares it


def _describe_device(trace: Trace) -> None:
    span = trace.time_span()
    if span and span[0] > 10**15:          # absolute NPU counter time (ns)
        trace.meta.device = "Ascend NPU"
    else:
        trace.meta.device = "Ascend A2/A3 cost model (PyPTO simulation)"


READER = PyptoReader()
