"""Ascend database exports: msprof's ``msprof_*.db`` and torch_npu's
``ascend_pytorch_profiler*.db`` (+ ``analysis.db``), read with sqlite3, read-only.

A file is one when its content says so (SQLite, with META_DATA, STRING_IDS and a timeline
table), whatever its name.  It gives the model the text readers (readers.msprof) give for the
same run; where a run folder holds both exports, the one holding more is read (see
``_text_timeline``) and ``--from msprof-db`` picks the database.
Format reference and mapping: docs/formats/ascend_db.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import is_dir, kept, listdir, logical_name
from ...model import RESOURCES, SAME_WORK, RunMeta, Trace
from ..base import ReadOptions, Source
from ..msprof import DEVICE_RESOURCES, RESOURCE_TOOLS, SAME_WORK_FLOWS
from ..msprof import discover as d
from .database import (DB_ERRORS, Database, is_export_tables, looks_like_sqlite,
                       sql_error)

FORMAT = "msprof-db"
# Lookup and description tables: read (strings, enums, run facts), never drawn.
LOOKUPS = {"STRING_IDS", "META_DATA", "NPU_INFO", "HOST_INFO", "RANK_DEVICE_MAP",
           "SESSION_TIME_INFO", "ENUM_API_TYPE", "ENUM_MODULE", "ENUM_HCCL_DATA_TYPE",
           "ENUM_HCCL_LINK_TYPE", "ENUM_HCCL_RDMA_TYPE", "ENUM_HCCL_TRANSPORT_TYPE",
           "ENUM_MSTX_EVENT_TYPE", "ENUM_MEMCPY_OPERATION", "COMPUTE_TASK_INFO",
           "COMMUNICATION_TASK_INFO", "TASK_PMU_INFO", "PYTORCH_CALLCHAINS", "CONNECTION_IDS",
           "ENUM_OVERLAP_ANALYSIS_TYPE"}
_SKIP_EXT = (".json", ".csv", ".txt", ".md", ".py", ".log", ".html", ".pftrace", ".png")


def is_export(path: Path) -> bool | None:
    """True: an msprof/torch_npu database; None: SQLite that cannot be read; False: not."""
    if not looks_like_sqlite(path):
        return False
    tables = _tables(path)
    return None if tables is None else is_export_tables(tables)


def _is_analysis(path: Path) -> bool:
    if not looks_like_sqlite(path):
        return False
    tables = _tables(path)
    return tables is not None and "StepTraceTime" in tables and "TASK" not in tables


def _tables(path: Path) -> frozenset[str] | None:
    """The tables of a SQLite file (None: it cannot be read); while runs are being found
    (``fileio.heads_kept``) the file is opened once, whichever detector asks first."""
    return kept("sqlite tables", path, _read_tables)


def _read_tables(path: Path) -> frozenset[str] | None:
    try:
        with Database(path) as db:
            return frozenset(db.tables)
    except (InputError, *DB_ERRORS):
        return None


def _rank_database(rank: Path) -> Path | None:
    """The one database export of a torch_npu rank folder, if it has exactly one."""
    out = rank / d.PT_OUT
    if not is_dir(out):
        return None
    found = [out / n for n in sorted(listdir(out))
             if not n.lower().endswith(_SKIP_EXT) and is_export(out / n)]
    return found[0] if len(found) == 1 else None


def _text_timeline(folder: Path) -> list[Path]:
    """The text export's Chrome timeline files in ``folder`` (msprof_*.json, trace_view.json)."""
    if not is_dir(folder):
        return []
    return [folder / n for n in sorted(listdir(folder))
            if d.classify(folder / n) in ("msprof_json", "trace_view")]


class AscendDbReader:
    formats = (FORMAT,)
    title = ("Ascend database exports: msprof_*.db (msprof), ascend_pytorch_profiler*.db "
             "+ analysis.db (torch_npu), read-only with sqlite3")

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        # As the text export's (msprof.MsprofReader.declarations): its flows have those names.
        if meta.tool not in RESOURCE_TOOLS:
            return {}
        return {RESOURCES: list(DEVICE_RESOURCES), SAME_WORK: {"flows": list(SAME_WORK_FLOWS)}}

    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        found = []
        for n in filenames:
            if n.lower().endswith(_SKIP_EXT):
                continue
            p = directory / n
            ok = is_export(p)
            if ok or (ok is None and (force or n.lower().endswith(".db"))):
                found.append(p)
        if not found:
            return []
        out = []
        for p in found:
            src = self._source(directory, p, len(found), force)
            if src is not None:
                out.append(src)
        return out

    def find_file(self, path: Path, force: bool) -> Source | None:
        ok = is_export(path)
        if not ok and not (force or (ok is None and logical_name(path).lower().endswith(".db"))):
            return None
        src = Source(FORMAT, logical_name(path).rsplit(".", 1)[0], path, {"database": path}, self,
                     FORMAT)
        return src

    def _source(self, directory: Path, db: Path, several: int, force: bool) -> Source | None:
        files: dict[str, Path] = {"database": db}
        ignored: list[Path] = []
        if directory.name == d.PT_OUT:          # torch_npu rank: rank_ascend_pt/ASCEND_…/
            root = directory.parent
            text = _text_timeline(directory)
            for n in sorted(listdir(directory)):
                p = directory / n
                if p == db:
                    continue
                if _is_analysis(p):
                    files["analysis"] = p
                elif d.classify(p) in ("profiler_info", "profiler_metadata"):
                    files[d.classify(p)] = p
                elif not is_dir(p):
                    ignored.append(p)
            for n in sorted(listdir(root)):
                k = d.classify(root / n)
                if k in ("profiler_info", "profiler_metadata"):
                    files[k] = root / n
            ranks = [r for r in sorted(d.rank_dirs(root.parent), key=lambda r: r.name)
                     if _rank_database(r) is not None]
            if several == 1 and len(ranks) >= 2 and root in ranks and (force or not any(
                    _text_timeline(r / d.PT_OUT) for r in ranks)):
                return self._ranks(root.parent, ranks)
        elif is_dir(directory / d.PROF_OUT) or directory.name.startswith("PROF_"):
            root = directory                      # msprof: PROF_*/msprof_*.db
            text = _text_timeline(directory / d.PROF_OUT)
            for sub in d.subdirs(directory):
                for p in d.list_files(sub):
                    low = p.name.lower()
                    if sub.name == d.PROF_OUT:
                        ignored.append(p)
                    elif low.startswith("info.json"):
                        files[f"{sub.name}/info"] = p
                    elif low.startswith(("start_info", "end_info", "sample.json")):
                        files[f"{sub.name}/{low.split('.')[0]}"] = p
        else:
            root, text = db, []
        if several > 1:
            root = db
        if text and not force:
            return None       # the text export's timeline holds these tasks and more
        name = logical_name(db).rsplit(".", 1)[0] if root == db else root.name
        src = Source(FORMAT, name, root, files, self, FORMAT)
        src.forced = bool(text)          # the text timeline is there: read because asked
        for i, p in enumerate(ignored):
            src.files[f"ignored#{i + 1}" if i else "ignored"] = p
        return src

    def _ranks(self, parent: Path, ranks: list[Path]) -> Source:
        """Several torch_npu ranks side by side, each with only its database: one run with a
        ``Rank n`` group per rank, as the text reader makes of their text exports."""
        files: dict[str, Path] = {}
        for i, rank in enumerate(ranks):
            prefix = f"rank{i}/"
            out = rank / d.PT_OUT
            db = _rank_database(rank)
            files[prefix + "database"] = db
            for n in sorted(listdir(out)):
                if out / n != db and _is_analysis(out / n):
                    files[prefix + "analysis"] = out / n
            for n in sorted(listdir(rank)):
                k = d.classify(rank / n)
                if k in ("profiler_info", "profiler_metadata"):
                    files[prefix + k] = rank / n
        return Source(FORMAT, parent.name, parent, files, self, FORMAT)

    # -- reading --------------------------------------------------------------------------
    def read(self, source: Source, options: ReadOptions) -> Trace:
        from .read import read_db
        return read_db(source, options)


READER = AscendDbReader()
__all__ = ["READER", "AscendDbReader", "is_export", "sql_error"]
