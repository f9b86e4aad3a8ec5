"""Nsight Compute: ``.ncu-rep`` reports (also ``.xz``/``.gz``) and their CSV exports.

Format reference: ../shared/docs/formats/ncu.md; mapping: docs/formats/ncu.md.  Reports are
read through NVIDIA's optional ``ncu_report`` module (``tracecvt[ncu]``), imported only when a
report is read; CSV exports (``--page raw``, with or without ``--print-units base``, and
``--page details``) need nothing extra.  Nsight Compute records no launch times, so every path
ends in ``layout.build``, which lays the kernels end to end and says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import read_head as read_head_gz
from ...model import NO_BUBBLES, RunMeta, Trace
from ..base import ReadOptions, Source
from . import container, csv_page
from .layout import NO_IDLE_REASON, RunInfo, build

REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")
COMPRESSED = (".xz", ".gz")


def _logical(name: str) -> str:
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def _is_report_name(name: str) -> bool:
    return _logical(name).endswith(REPORT_SUFFIXES)


def _is_csv_name(name: str) -> bool:
    return name.endswith(".csv") or name.endswith(".csv.gz")


# Files whose name says they are something else (another family's data, code, documents,
# tracecvt's outputs): their content is never sniffed for a report or a CSV export.
_NOT_NCU = (".json", ".db", ".sqlite", ".py", ".md", ".html", ".htm", ".js", ".css", ".pftrace",
            ".perfetto-trace", ".tcmodel", ".png", ".jpg", ".jpeg", ".svg", ".gif", ".so",
            ".o", ".a", ".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".sh", ".yaml", ".yml",
            ".toml", ".done", ".bin", ".pb", ".proto", ".zip", ".tar", ".tgz")
_SLICE = re.compile(r"\.slice_\d+$")


def _may_hold(name: str) -> bool:
    """Can a file of this name hold a report or a CSV export (whatever its name)?  Names
    only rule out what is plainly something else; content decides the rest."""
    logical = _logical(name).lower()
    if _is_report_name(logical) or _is_csv_name(logical):
        return True
    return not (logical.endswith(_NOT_NCU) or _SLICE.search(logical))


def _run_name(path: Path) -> str:
    name = _logical(path.name)
    for suffix in (*REPORT_SUFFIXES, ".csv"):
        if name.endswith(suffix):
            return name[:-len(suffix)] or name
    return name.rsplit(".", 1)[0] if "." in name else name


class NcuReader:
    formats = ("ncu", "ncu-rep", "ncu-csv")
    title = ("Nsight Compute: .ncu-rep (also .xz/.gz; needs tracecvt[ncu]) or its CSV export "
             "(--page raw, --page details, --metrics)")

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        # Every run is a serialized timeline (layout.build).
        return {NO_BUBBLES: NO_IDLE_REASON} if meta.extra.get("ncu_serialized") else {}

    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        # A folder is searched the way a single file is taken (find_file): by content.  Names
        # only break ties: a file named like a report whose content is no report is still a
        # run, so that reading it says what it is (container.not_a_report), never skipped.
        runs = []
        for name in filenames:
            path = directory / name
            if not _may_hold(name):
                continue
            head = container.read_head(path)
            if head.startswith(container.NVR_MAGIC):
                runs.append(self._source(path, "report"))
            elif csv_page.sniff(head):
                runs.append(self._source(path, "csv"))
            elif _is_report_name(name):
                runs.append(self._source(path, "report"))
        return runs

    def find_file(self, path: Path, force: bool) -> Source | None:
        head = container.read_head(path)
        if head.startswith(container.NVR_MAGIC) or _is_report_name(path.name):
            return self._source(path, "report")
        if csv_page.sniff(head):
            return self._source(path, "csv")
        if force:
            return self._source(path, "csv" if _is_csv_name(path.name) else "report")
        return None

    def _source(self, path: Path, role: str) -> Source:
        return Source("ncu", _run_name(path), path, {role: path}, self,
                      "ncu-rep" if role == "report" else "csv")

    def read(self, source: Source, options: ReadOptions) -> Trace:
        if "report" in source.files:
            if source.variant == "ncu-csv":
                raise InputError(source.root, "--from ncu-csv, but this is a .ncu-rep report")
            return self._read_report(source, source.files["report"], options)
        path = source.files["csv"]
        if source.variant == "ncu-rep":
            raise InputError(path, "--from ncu-rep, but this is a CSV file")
        return self._read_csv(source, path, options)

    def _read_report(self, source: Source, path: Path, options: ReadOptions) -> Trace:
        from .report import read_report
        head = container.read_head(path, 1024)
        if not head.startswith(container.NVR_MAGIC):
            raise InputError(path, container.not_a_report(path, head))
        kernels, info = read_report(path, options)
        run = RunInfo(source.name, "ncu-rep", str(path), tool_version=info.producer_version,
                      library_version=info.library_version, metric_units=info.metric_units)
        if info.truncated_bytes:
            run.warnings.append(
                f"{path}: the file ends inside a record ({info.truncated_bytes} bytes "
                "missing): the report was cut short; the complete results it holds are shown")
        if info.incomplete:
            run.warnings.append(
                f"{path}: {len(info.incomplete)} results have neither a kernel name nor "
                f"metrics (result {', '.join(map(str, info.incomplete[:5]))}"
                f"{', …' if len(info.incomplete) > 5 else ''}): skipped")
        if info.bad_metric_names:
            bad = info.bad_metric_results
            run.warnings.append(
                f"{path}: {info.bad_metric_names} metric names are not valid UTF-8 text (the "
                f"report is corrupt; result {', '.join(map(str, bad[:5]))}"
                f"{', …' if len(bad) > 5 else ''}): those metrics are skipped")
        if info.ranges > 1:
            run.notes.append(f"The report holds {info.ranges} result ranges, laid out one "
                             "after the other.")
        return build(kernels, run)

    def _read_csv(self, source: Source, path: Path, options: ReadOptions) -> Trace:
        loaded = csv_page.load(path)
        rows, skipped = loaded.rows, len(loaded.log)
        header = rows[0]
        page = csv_page.page_of(header)
        units: dict[str, str] = {}
        warnings: list[str] = [f"{path}: Nsight Compute's log before the CSV says: {line}"
                               for line in loaded.log if not line.startswith("==PROF==")]
        if page == csv_page.RAW:
            from .csv_raw import read_raw
            kernels = read_raw(path, rows, options, units, warnings, skipped)
            note = ("Values come from a raw-page CSV export and keep only its printed "
                    "precision (6 decimals of an auto-scaled unit, or 2 decimals with "
                    "--print-units base); PM-sampling timelines and rule results are not in "
                    "this export.")
        elif page == csv_page.DETAILS:
            from .csv_details import read_details
            kernels, details = read_details(path, rows, options, units, warnings,
                                             skipped)
            note = details.note()
        else:
            raise csv_page.wrong_page(path, header)
        if not kernels:
            why = f" ({warnings[-1].removeprefix(f'{path}: ')})" if warnings else ""
            raise InputError(path, f"Nsight Compute CSV export without kernel rows{why}")
        run = RunInfo(source.name, f"csv-{page}", str(path), metric_units=units,
                      warnings=warnings)
        run.notes.append(note)
        return build(kernels, run)


READER = NcuReader()
