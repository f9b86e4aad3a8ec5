"""``tracecvt batch ARCHIVE_DIR -o OUT_DIR``: every run below a folder, in parallel, resumable,
with an index."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..cliopts import EXIT_ERROR, EXIT_INTERRUPTED, clock_mhz as _clock, fail as _fail
from ..errors import TracecvtError, one_line
from . import index as idx
from .job import FIGURE_KEYS, make_spec, targets as available_targets
from .plan import plan

SKIPPED = "up to date; --force to redo"


def _parse_targets(value: str, table: dict) -> list[str]:
    wanted: list[str] = []
    for part in value.split(","):
        name = part.strip().lower()
        if not name or name in wanted:
            continue
        if name not in table:
            extra = ""
            if name == "summary":
                extra = " (this installation has no tracecvt.summary renderer yet)"
            raise click.BadParameter(f"unknown output kind {name!r}{extra}; available: "
                                     + ", ".join(table), param_hint="--to")
        wanted.append(name)
    if not wanted:
        raise click.BadParameter("name at least one output kind", param_hint="--to")
    return wanted


class _Display:
    """Per-run lines, and a progress bar (runs done, failures, runs/s) on a terminal."""

    def __init__(self, total: int, quiet: bool, console=None):
        self.quiet = quiet
        self.total = total
        self.done = self.failed = 0
        self.started = time.monotonic()
        self.progress = None
        if quiet or total == 0:
            return
        if console is None:
            from rich.console import Console
            console = Console(stderr=True)
        if not console.is_terminal:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)
        self.progress = Progress(TextColumn("converting"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[failed]} failed"),
                                 TextColumn("{task.fields[rate]} runs/s"),
                                 TimeElapsedColumn(), console=console, transient=True)
        self.task = self.progress.add_task("batch", total=total, failed=0, rate="-")
        self.progress.start()

    def line(self, text: str, err: bool = False) -> None:
        # While the bar is shown, rich redirects stdout and stderr to print above it.  One line
        # per run, whatever its path or error quotes (as ``fail`` prints).
        click.echo(one_line(text), err=err)

    def advance(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if self.progress is not None:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            self.progress.update(self.task, completed=self.done, failed=self.failed,
                                 rate=f"{self.done / elapsed:.2f}")

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _skipped_row(run, prev: dict[str, Any] | None, out_dir: Path) -> dict[str, Any]:
    src = run.source
    row = {"run": src.name, "source": run.rel, "format": src.format, "variant": src.variant,
           "status": "skipped",
           "outputs": idx.relative_outputs({t: str(p) for t, p in run.outputs.items()},
                                           out_dir),
           "warnings": [], "error": None, "seconds": 0.0}
    row.update({k: None for k in FIGURE_KEYS})
    if prev and prev.get("status") in ("converted", "skipped"):
        for k in idx.FIGURES:
            row[k] = prev.get(k, row.get(k))
    else:
        row["figures_note"] = ("up to date, but its figures are not in the previous "
                               "index.json (--force to recompute)")
    return row


def _done_line(row: dict[str, Any]) -> str:
    bits = []
    if row.get("tasks") is not None:
        bits.append(f"{row['tasks']} tasks")
    if row.get("warnings"):
        bits.append(f"{len(row['warnings'])} warning(s), see index.json")
    bits.append(f"{row['seconds']:.2f} s")
    return f"converted {row['source']} ({', '.join(bits)})"


@click.command("batch")
@click.argument("archive_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out_dir", required=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the outputs (mirroring ARCHIVE_DIR's layout) and the index.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (local engine; default: the number of CPUs). "
                   "-j 1 converts in this process.")
@click.option("--to", "to", default="perfetto", show_default=True, metavar="KINDS",
              help="Comma-separated outputs per run: perfetto, chrome, and any other "
                   "kind this installation offers (e.g. summary, model).")
@click.option("--force", is_flag=True, help="Redo runs whose outputs are up to date.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              show_default=True, help="Local worker processes, or an existing Dask cluster.")
@click.option("--scheduler", metavar="ADDRESS",
              help="Dask scheduler address for --engine dask, e.g. tcp://host:8786.")
@click.option("--from", "fmt", metavar="FORMAT", help="Input format instead of detecting it.")
@click.option("--clock-mhz", metavar="MHZ", help="Clock of raw cycle/tick counts.")
@click.option("--all-metrics", is_flag=True,
              help="Keep every metric of the source as slice args (Nsight Compute).")
@click.option("--no-derived", is_flag=True,
              help="Leave out the derived tracks (bubble lanes, counters, critical path) "
                   "of the trace outputs, as to-perfetto --no-derived does.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bar and no per-run lines (errors still print).")
def batch(archive_dir, out_dir, jobs, to, force, engine, scheduler, fmt, clock_mhz,
          all_metrics, no_derived, quiet):
    """Convert every run below ARCHIVE_DIR into OUT_DIR, in parallel, and write an index.

    Outputs mirror ARCHIVE_DIR's layout (OUT_DIR/<folder>/<run>.pftrace ...).  Resumable: a
    run whose outputs all exist and are newer than all its input files is skipped (--force
    redoes it).  One bad run never stops the others: it is listed with its error in
    OUT_DIR/index.json and index.html, and the exit code is 2.
    """
    from .. import __version__
    table = available_targets()
    targets = _parse_targets(to, table)
    clock = _clock(clock_mhz)
    if engine == "dask" and not scheduler:
        raise click.UsageError("--engine dask needs --scheduler ADDRESS (e.g. tcp://host:8786)")
    if scheduler and engine != "dask":
        raise click.UsageError("--scheduler goes with --engine dask")
    if engine == "dask":
        from .dask_engine import _distributed
        try:
            _distributed()
        except TracecvtError as e:
            _fail(str(e))
            sys.exit(EXIT_ERROR)
    archive_dir = Path(os.path.abspath(archive_dir))
    out_dir = Path(os.path.abspath(out_dir))
    if out_dir == archive_dir:
        _fail(f"{out_dir}: the output folder must not be ARCHIVE_DIR itself (outputs would "
              "mix with the runs); use a subfolder, e.g. -o "
              f"{out_dir / 'converted'}")
        sys.exit(EXIT_ERROR)
    if out_dir.exists() and not out_dir.is_dir():
        _fail(f"{out_dir}: not a directory")
        sys.exit(EXIT_ERROR)

    def make_plan():
        return plan(archive_dir, out_dir, {t: table[t] for t in targets}, fmt, force)

    try:
        if engine == "dask":
            runs = make_plan()
        else:
            from .local import default_jobs, in_workers, plan_while_importing
            jobs = jobs or default_jobs()
            runs = plan_while_importing(make_plan) if in_workers(jobs) else make_plan()
        if not runs:
            from ..readers import format_names
            raise TracecvtError(f"{archive_dir}: no supported run found (formats: "
                                f"{', '.join(format_names())})")
    except TracecvtError as e:
        _fail(str(e))
        sys.exit(EXIT_ERROR)

    previous = idx.load_previous(out_dir)
    rows: list[dict[str, Any]] = []
    todo = []
    for run in runs:
        if run.up_to_date:
            rows.append(_skipped_row(run, previous.get(run.rel), out_dir))
        else:
            todo.append(run)
    if not quiet:
        for row in rows:
            click.echo(one_line(f"skipped {row['source']} ({SKIPPED})"))

    options = {"clock_mhz": str(clock) if clock is not None else None,
               "all_metrics": bool(all_metrics), "derived": not no_derived}
    todo.sort(key=lambda r: -r.size)               # biggest first: the pool ends together
    specs = [make_spec(r, options) for r in todo]
    display = _Display(len(specs), quiet)
    finished: set[str] = set()
    interrupted = False
    stream = None
    try:
        if engine == "dask":
            from .dask_engine import run_dask
            stream = run_dask(specs, scheduler)
        else:
            from .local import run_local
            stream = run_local(specs, jobs)
        for row in stream:
            row["outputs"] = idx.relative_outputs(row["outputs"], out_dir)
            rows.append(row)
            finished.add(row["source"])
            failed = row["status"] == "failed"
            display.advance(failed)
            if failed:
                display.line(f"tracecvt: error: {row['error']}", err=True)
            elif not quiet:
                display.line(_done_line(row))
    except TracecvtError as e:
        display.close()
        _fail(str(e))
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if stream is not None:      # now, not when it is collected: the runs still converting
            stream.close()          # are interrupted (their outputs removed) before the index
        display.close()
    if interrupted:
        from .job import empty_row
        for spec in specs:
            if spec["rel"] not in finished:
                row = empty_row(spec, "not run")
                row["error"] = "interrupted"
                rows.append(row)

    doc = idx.document(rows, archive=archive_dir, out_dir=out_dir, engine=engine,
                       targets=targets, version=__version__)
    try:
        _json, html = idx.write_index(doc, out_dir)
    except TracecvtError as e:
        _fail(str(e))
        sys.exit(EXIT_ERROR)
    if interrupted:
        _fail("interrupted; finished outputs are kept and listed in the index: run the same "
              "command again to resume")
        sys.exit(EXIT_INTERRUPTED)
    total, nfailed = doc["runs_total"], doc["runs_failed"]
    if not quiet:
        click.echo(f"{total} runs: {doc['runs_converted']} converted, {doc['runs_skipped']} "
                   f"skipped (up to date), {nfailed} failed; index: {html}")
    if nfailed:
        _fail(f"{nfailed} of {total} runs failed")
        sys.exit(EXIT_ERROR)
