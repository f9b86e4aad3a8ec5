"""Ascend msprof family: app-level msprof, torch_npu, msprof op and the msprof op simulator.

Format reference: ../shared/docs/formats/msprof.md; how each file maps onto the model:
docs/formats/msprof.md.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ...fileio import is_dir, is_file, logical_name
from ...model import NO_BUBBLES, RESOURCES, SAME_WORK, RunMeta
from ..base import ReadOptions, Source
from . import discover as d

VARIANTS = {"app": "msprof-app", "torch": "torch-npu", "op": "msprof-op", "sim": "msprof-sim",
            "stats": "msprof-stats"}
KIND_OF_VARIANT = {v: k for k, v in VARIANTS.items()}
# Runs with host and device lanes (application msprof, torch_npu): the lane kinds that are
# execution resources (model.RESOURCES): the device's task streams and HCCL's communication
# planes.  Host threads (Python, CANN API), step and iteration markers, msprof's own overlap
# analysis and memory lanes get no bubbles.
RESOURCE_TOOLS = ("msprof", "torch_npu")
DEVICE_RESOURCES = ("Stream", "Plane")
# Flows whose two ends are one piece of work (model.SAME_WORK): a host API call and the
# device task it launched (CANN's HostToDevice), a framework op and its device task
# (torch_npu's async_npu), an op put on the task queue and taken off it (async_task_queue).
SAME_WORK_FLOWS = ("HostToDevice", "async_npu", "async_task_queue")
TITLES = {"app": "application msprof (PROF_*/mindstudio_profiler_output)",
          "torch": "torch_npu (*_ascend_pt/ASCEND_PROFILER_OUTPUT)",
          "op": "msprof op (OPPROF_* aggregates, visualize_data.bin)",
          "sim": "msprof op simulator (per-core instruction pipelines)",
          "stats": "msprof aggregate files only (statistics, communication)"}


def _roles(files: dict[str, Path], prefix: str, items: list[tuple[str, Path]]) -> None:
    seen: dict[str, int] = defaultdict(int)
    for kind, p in items:
        role = f"{prefix}{kind}"
        seen[role] += 1
        if seen[role] > 1:
            role = f"{role}#{seen[role]}"
        files[role] = p


def _classified(directory: Path, keep) -> tuple[list[tuple[str, Path]], list[Path]]:
    found, other = [], []
    for p in d.list_files(directory):
        k = d.classify(p)
        if k is not None and keep(k):
            found.append((k, p))
        else:
            other.append(p)
    return found, other


class MsprofReader:
    formats = ("msprof", "msprof-app", "torch-npu", "msprof-op", "msprof-sim", "msprof-stats")
    title = ("Ascend msprof family: PROF_* (msprof), *_ascend_pt (torch_npu), OPPROF_* "
             "(msprof op, simulator), visualize_data.bin")

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        # A per-block view (msprof op): older versions said so with extra["timeline"] = False.
        if meta.extra.get("timeline") is False:
            from .opprof import NOT_A_TIMELINE
            return {NO_BUBBLES: NOT_A_TIMELINE}
        if meta.tool in RESOURCE_TOOLS:
            return {RESOURCES: list(DEVICE_RESOURCES),
                    SAME_WORK: {"flows": list(SAME_WORK_FLOWS)}}
        return {}

    # -- finding runs ---------------------------------------------------------------------
    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        kinds: dict[Path, str] = {}
        for n in filenames:
            p = directory / n
            k = d.classify(p)
            if k is None and force and logical_name(p).lower().endswith(".json") \
                    and directory.name in (d.PROF_OUT, d.PT_OUT):
                k = "msprof_json" if directory.name == d.PROF_OUT else "trace_view"
            if k is not None:
                kinds[p] = k
        if not kinds:
            return []
        runs: dict[str, list[Path]] = defaultdict(list)
        for p, k in kinds.items():
            rk = d.run_kind(k)
            if rk:
                runs[rk].append(p)
        if directory.name == d.PT_OUT and "db" in kinds.values():
            runs.setdefault("torch", [])      # a rank with only the SQLite export
        name = directory.name
        out: list[Source] = []
        in_sim = name == "simulator" or d.CORE_DIR.match(name) is not None
        if in_sim and "op" in runs:
            runs["sim"].extend(runs.pop("op"))   # the simulator's visualize_data.bin
        if "sim" in runs:
            out.append(self._sim_source(d.sim_root(directory)))
        op_root = directory.parent if name == "dump" else directory
        if "op" in runs and not is_dir(op_root / "simulator"):
            out.extend(self._op_sources(directory, runs))
        stats_here = "stats" in runs
        if "app" in runs or (stats_here and name == d.PROF_OUT):
            if not d.inside_torch_run(directory):
                out.append(self._app_source(directory))
            stats_here = False
        if "torch" in runs or (stats_here and name == d.PT_OUT):
            out.append(self._torch_source(directory))
            stats_here = False
        if stats_here:
            if name == d.CLUSTER_OUT and len(d.rank_dirs(directory.parent)) >= 2:
                pass       # part of the multi-rank torch_npu run of the parent folder
            elif not any(s.root == directory for s in out):
                out.append(self._stats_source(directory))
        return out

    def find_file(self, path: Path, force: bool) -> Source | None:
        k = d.classify(path)
        if k is None:
            if not force:
                return None
            low = logical_name(path).lower()
            k = "msprof_json" if low.endswith(".json") else \
                "op_summary" if low.endswith(".csv") else None
            if k is None:
                return None
        rk = d.run_kind(k)
        if rk is None:
            return None
        stem = logical_name(path).rsplit(".", 1)[0]
        return self._source(rk, stem, path, {k: path})

    def _source(self, kind: str, name: str, root: Path, files: dict[str, Path]) -> Source:
        src = Source("msprof", name, root, files, self, VARIANTS[kind])
        src.kind = kind               # survives --from overriding ``variant``
        return src

    def _sim_source(self, root: Path) -> Source:
        files: dict[str, Path] = {}
        items = []
        for sub in _walk(root, depth=3, skip={"dump"}):
            for p in d.list_files(sub):
                k = d.classify(p)
                if k in d.SIM_KINDS or k == "visualize_bin":
                    rel = p.parent.relative_to(root).as_posix()
                    items.append((f"{'' if rel == '.' else rel + '/'}{k}", p))
        _roles(files, "", items)
        return self._source("sim", root.name, root, files)

    def _op_sources(self, directory: Path, runs: dict[str, list[Path]]) -> list[Source]:
        root = directory.parent if directory.name == "dump" else directory
        items, _ = _classified(root, lambda k: k in d.OP_KINDS)
        dump = root / "dump" / "op_basic_info.txt"
        if is_file(dump) and d.classify(dump) == "op_basic_info":
            items.append(("op_basic_info", dump))
        core = [x for x in items if x[0] in ("op_basic", "op_metric", "op_basic_info")]
        bins = [x for x in items if x[0] == "visualize_bin"]
        if not core and not (len(bins) == 1 and logical_name(bins[0][1]) == "visualize_data.bin"):
            # stand-alone block streams (renamed visualize_data.bin files): one run each
            return [self._source("op", logical_name(p).rsplit(".", 1)[0], p,
                                 {"visualize_bin": p}) for _, p in bins]
        files: dict[str, Path] = {}
        _roles(files, "", [(_op_role(k, p), p) for k, p in items])
        others = [k for k in runs if k != "op"]
        if others and root == directory:
            first = next(p for k, p in items if k != "op_basic_info")
            return [self._source("op", f"{root.name}-msprof-op", first, files)]
        return [self._source("op", root.name, root, files)]

    def _app_source(self, directory: Path) -> Source:
        prof = directory.parent if directory.name == d.PROF_OUT else None
        root = prof if prof is not None else directory
        files: dict[str, Path] = {}
        items, other = _classified(directory, lambda k: d.run_kind(k) in ("app", "stats"))
        _roles(files, "", items)
        ignored = [p for p in other if directory.name == d.PROF_OUT]
        if prof is not None:
            # host/ and device_N/ metadata by content (a *.done marker never stands in for
            # the file it marks); everything else of the folder, sqlite/*.db and data/*.slice_N
            # included, is listed as not used
            for sub in d.subdirs(prof):
                if sub.name == d.PROF_OUT:
                    continue
                meta, rest = d.prof_metadata(sub)
                for role, p in meta.items():
                    files[f"{sub.name}/{role}"] = p
                ignored.extend(rest)
                ignored.extend(d.files_below(sub))
            ignored.extend(d.list_files(prof))
        _roles(files, "", [("ignored", p) for p in ignored])
        return self._source("app", root.name, root, files)

    def _torch_source(self, directory: Path) -> Source:
        if directory.name == d.PT_OUT:
            rank = directory.parent
            siblings = d.rank_dirs(rank.parent)
            if len(siblings) >= 2:
                root, ranks = rank.parent, siblings
            else:
                root, ranks = rank, [rank]
        else:
            root, ranks = directory, [directory]
        files: dict[str, Path] = {}
        multi = len(ranks) > 1
        for i, rank in enumerate(ranks):
            prefix = f"rank{i}/" if multi else ""
            out = rank / d.PT_OUT if d.is_rank_dir(rank) else rank
            items, other = _classified(out, lambda k: d.run_kind(k) in ("torch", "stats")
                                       or k == "db")
            if out != rank:
                more, extra = _classified(rank, lambda k: k in ("profiler_info",
                                                                "profiler_metadata"))
                items.extend(more)
                extra.extend(d.rank_raw_files(rank))
            else:
                extra, rest = [], []
                for p in other:
                    k = d.classify(p)
                    if k in ("profiler_info", "profiler_metadata"):
                        items.append((k, p))
                    elif d.run_kind(k or "") not in ("op", "sim", "app"):
                        rest.append(p)
                other = rest
            _roles(files, prefix, items)
            _roles(files, prefix, [("ignored", p) for p in other + extra])
        cluster = root / d.CLUSTER_OUT
        if multi and is_dir(cluster):
            items, other = _classified(cluster, lambda k: d.run_kind(k) == "stats")
            _roles(files, "cluster/", items)
            _roles(files, "cluster/", [("ignored", p) for p in other])
        src = self._source("torch", root.name, root, files)
        src.ranks = ranks
        return src

    def _stats_source(self, directory: Path) -> Source:
        items, other = _classified(directory, lambda k: d.run_kind(k) == "stats")
        files: dict[str, Path] = {}
        _roles(files, "", items)
        return self._source("stats", directory.name, directory, files)

    # -- reading --------------------------------------------------------------------------
    def read(self, source: Source, options: ReadOptions):
        kind = getattr(source, "kind", None) or KIND_OF_VARIANT.get(source.variant) or "stats"
        forced = KIND_OF_VARIANT.get(source.variant)
        mismatch = forced is not None and forced != kind
        asked = source.variant
        source.variant = VARIANTS[kind]
        if kind == "app":
            from .app import read_app as read
        elif kind == "torch":
            from .torch_npu import read_torch as read
        elif kind == "op":
            from .opprof import read_opprof as read
        elif kind == "sim":
            from .simulator import read_sim as read
        else:
            from .torch_npu import read_stats_only as read
        trace = read(source, options)
        if mismatch:
            trace.warn(f"{source.root}: --from {asked} given, but these files are "
                       f"{VARIANTS[kind]} ({TITLES[kind]}); read as that")
        return trace


def _op_role(kind: str, path: Path) -> str:
    if kind != "op_metric":
        return kind
    from .opprof import metric_label
    return f"metric:{metric_label(path)}"


def _walk(root: Path, depth: int, skip: set[str]):
    yield root
    if depth <= 0:
        return
    for s in d.subdirs(root):
        if s.name in skip:
            continue
        yield from _walk(s, depth - 1, skip)


READER = MsprofReader()
