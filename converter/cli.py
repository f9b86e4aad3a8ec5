"""Command line: tracecvt to-perfetto | to-chrome | to-model | info | summary | compare |
batch | open | validate (batch, open and validate in their own modules)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__, archive, entry
from .convert import convert_source, default_output, default_workers, output_path, runs_under
from .cliopts import (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_REGRESSION, clock_mhz as clock_mhz_,
                      fail as _fail, one_output_for_many, size, warn, warn_run)
from .errors import TracecvtError, error_message
from .progress import Reporter
from .readers import READERS, ReadOptions, format_names
from .summary.gate import COMMON


def _formats_help() -> str:
    lines = [f"  {', '.join(r.formats)}: {r.title}" for r in READERS]
    return "\b\n" + "\n".join(lines)


def _human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


_common = [
    click.argument("path", type=click.Path(path_type=Path)),
    click.option("-o", "--output", type=click.Path(),    # a str: keeps a trailing "/"
                 help="Output file, or a directory for several runs "
                      "(default: next to each run, named after it)."),
    click.option("--force", is_flag=True, help="Overwrite existing output files."),
    click.option("--from", "fmt", metavar="FORMAT",
                 help="Input format instead of detecting it: " + ", ".join(format_names())
                      + ". 'pypto-raw' rebuilds from _simulate.swim.json + task graph."),
    click.option("--clock-mhz", metavar="MHZ",
                 help="Clock of raw cycle/tick counts (PyPTO SIM 1800, NPU A2/A3 50, "
                      "Ascend 950 1000)."),
    click.option("--all-metrics", is_flag=True,
                 help="Keep every metric of the source as slice args (Nsight Compute)."),
    click.option("--no-derived", is_flag=True,
                 help="Leave out the derived tracks (bubble lanes under each lane, busy and "
                      "ready counters, critical path)."),
    click.option("-j", "--jobs", type=click.IntRange(1, 2), default=None,
                 help="Processes one conversion may use, 1 or 2 (default: 2 where 2 CPUs or "
                      "more may be used): on a large run a second one reads and writes part "
                      "of it meanwhile. -j 1: everything in this process. The output is the "
                      "same either way."),
    click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary lines."),
]


def _set_max_entry(ctx, param, value):
    archive.set_max_entry(archive.DEFAULT_MAX_ENTRY)
    if value is not None:
        archive.set_max_entry(size(value, "--max-entry-size", "4GiB, 512M or 1000000"))
    return value


def _max_entry_option() -> click.Option:
    return click.Option(["--max-entry-size"], metavar="SIZE", expose_value=False,
                        callback=_set_max_entry,
                        help="Largest size one .zip/.tar entry may expand to (default 4GiB; "
                             "K, M, G suffixes).")


def _with_common(f):
    for decorator in reversed(_common):
        f = decorator(f)
    return f


class _Commands(click.Group):
    """The command group; ``batch``, ``open`` and ``validate``, defined in their own modules, are
    imported when they are used (or listed by --help), so the other commands' start-up does
    not pay for their imports (``validate`` alone brings in protobuf: about 30 ms)."""

    ELSEWHERE = {"batch": ("tracecvt.batch", "batch"),
                 "open": ("tracecvt.open_ui", "open_command"),
                 "validate": ("tracecvt.validate", "validate")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.ELSEWHERE})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in self.ELSEWHERE:
            import importlib
            module, attr = self.ELSEWHERE[name]
            command = getattr(importlib.import_module(module), attr)
            self.add_command(command)
        return command

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(_max_entry_option())     # every command that reads PATH reads
        super().add_command(cmd, name)             # archives


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Formats read:\n\n" + _formats_help())
@click.version_option(__version__, prog_name="tracecvt")
def main() -> None:
    """Turn accelerator profiling output into Perfetto traces and Chrome JSON.

    PATH may be one file, one run directory (e.g. PyPTO's output/output_*/) or a folder
    holding several runs; each run gets its own output, named after the run.
    """


def _find(path: Path, fmt: str | None) -> list:
    """The runs under ``path``, or a one-line error and exit code 2."""
    try:
        return runs_under(path, fmt)
    except TracecvtError as e:
        _fail(str(e))
        sys.exit(EXIT_ERROR)


def _convert(writer: str, path: Path, output: str | None, force: bool, fmt: str | None,
             clock_mhz: str | None, quiet: bool, all_metrics: bool = False,
             derived: bool = True, jobs: int | None = None) -> None:
    reporter = Reporter(enabled=not quiet)
    options = ReadOptions(clock_mhz=clock_mhz_(clock_mhz), progress=reporter,
                          all_metrics=all_metrics)
    runs = _find(path, fmt)
    one_output_for_many(path, runs, output)
    failed = 0
    many = len(runs) > 1
    for src in runs:
        target = default_output(src, writer, output, many)
        reporter.restart()
        try:
            result = convert_source(src, writer, target, force, options, derived=derived,
                                    workers=jobs, keep=entry.keep)
        except Exception as e:  # TracecvtError, or a bug or an unforeseen input
            reporter.close()
            _fail(error_message(src.root, e))
            failed += 1
            continue
        except KeyboardInterrupt:
            reporter.close()
            _fail("interrupted; no partial output was left behind")
            sys.exit(EXIT_INTERRUPTED)
        reporter.close()
        warn_run(result.warnings, result.causes, src.name, src.root)
        if not quiet:
            c = result.counts
            click.echo(f"wrote {result.output} ({_human_size(result.size)}: "
                       f"{c.get('slices', 0)} slices, {c.get('flows', 0)} flows, "
                       f"{c.get('counter_samples', 0)} counter samples)")
    if not quiet and failed < len(runs):
        if writer == "perfetto":
            click.echo("open it at https://ui.perfetto.dev (Open trace file, or drag the file "
                       "onto the page)")
        elif writer == "model":
            click.echo("every tracecvt command reads it, e.g. tracecvt to-perfetto FILE.tcmodel")
        else:
            click.echo("open it at https://ui.perfetto.dev or chrome://tracing")
    if failed:
        if many:
            _fail(f"{failed} of {len(runs)} runs failed")
        sys.exit(EXIT_ERROR)


@main.command("to-perfetto")
@_with_common
def to_perfetto(path, output, force, fmt, clock_mhz, all_metrics, no_derived, jobs,
                quiet):
    """Convert PATH to a Perfetto protobuf trace (.pftrace)."""
    _convert("perfetto", path, output, force, fmt, clock_mhz, quiet, all_metrics,
             not no_derived, jobs)


@main.command("to-chrome")
@_with_common
def to_chrome(path, output, force, fmt, clock_mhz, all_metrics, no_derived, jobs,
              quiet):
    """Convert PATH to Chrome trace JSON (.json; gzip when the name ends in .gz)."""
    _convert("chrome", path, output, force, fmt, clock_mhz, quiet, all_metrics,
             not no_derived, jobs)


@main.command("to-model")
@_with_common
def to_model(path, output, force, fmt, clock_mhz, all_metrics, no_derived, jobs,
             quiet):
    """Save PATH as a compact, lossless model file (.tcmodel) that every command reads.

    Parse an archive of runs once; re-export, summarize or compare later without the
    source files (derived tracks are recomputed when a model file is converted).
    """
    _convert("model", path, output, force, fmt, clock_mhz, quiet, all_metrics, False, jobs)


@main.command("info")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--from", "fmt", metavar="FORMAT", help="Input format instead of detecting it.")
@click.option("--clock-mhz", metavar="MHZ", help="Clock of raw cycle/tick counts.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def info(path, fmt, clock_mhz, as_json, quiet):
    """Show the runs found under PATH: formats, files, tasks, time span, tracks."""
    from .summary_info import describe, render_text
    reporter = Reporter(enabled=not quiet and not as_json)
    options = ReadOptions(clock_mhz=clock_mhz_(clock_mhz), progress=reporter,
                          workers=default_workers())
    runs = _find(path, fmt)
    reports = []
    failed = 0
    for src in runs:
        reporter.restart()
        try:
            trace = src.read(options)
        except Exception as e:
            reporter.close()
            reports.append({"run": src.name, "format": src.format, "root": str(src.root),
                            "error": error_message(src.root, e)})
            failed += 1
            continue
        reporter.close()
        reports.append(describe(src, trace))
    if as_json:
        import orjson
        click.echo(orjson.dumps(reports, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_text(reports))
    if failed:
        sys.exit(EXIT_ERROR)


# -- summaries -------------------------------------------------------------------------------

_FORMAT_OPTION = click.option("--format", "out_format", type=click.Choice(["md", "json", "html"]),
                              default="md", show_default=True,
                              help="Markdown report, JSON for scripts, or one self-contained "
                                   "HTML page with pictures.")


def _analysed(src, options, baseline: dict | None = None):
    """(trace, analysis, summary data, compared with ``baseline`` if given) of one run;
    errors propagate."""
    from .analyses import analyze
    from .convert import gc_paused
    from .summary import summary_data
    with gc_paused():
        trace = src.read(options)
        analysis = analyze(trace)
    return trace, analysis, summary_data(trace, analysis, baseline)


def _one_run_data(path: Path, fmt: str | None, options, what: str) -> dict:
    """Summary data of the single run at ``path``, or of a JSON summary written before."""
    if path.is_file() and path.name.endswith(".json"):
        from .fileio import read_head
        if b"tracecvt-summary/" in read_head(path, 256):
            from .fileio import load_json
            from .summary.baseline import read_summary
            try:
                data = load_json(path)
                if isinstance(data, dict) and str(data.get("schema")).startswith(
                        "tracecvt-summary/"):
                    return read_summary(data, path)
            except TracecvtError as e:
                _fail(str(e))
                sys.exit(EXIT_ERROR)
    runs = _find(path, fmt)
    if len(runs) != 1:
        _fail(f"{path}: {len(runs)} runs found for {what}; name one run directory or file")
        sys.exit(EXIT_ERROR)
    return _guard(runs[0], lambda: _analysed(runs[0], options)[2])


def _guard(src, fn):
    """Run ``fn`` for ``src``; any failure is one error line and exit code 2."""
    try:
        return fn()
    except Exception as e:
        _fail(error_message(src.root, e))
    sys.exit(EXIT_ERROR)


def _emit(data: bytes, target: Path | None, force: bool, inputs: list, quiet: bool) -> None:
    """Write to ``target`` atomically (never over an input, never over a file without
    --force), or to stdout when ``target`` is None."""
    if target is None:
        click.echo(data.decode("utf-8"), nl=False)
        return
    from .fileio import atomic_output, check_output
    check_output(target, force, inputs)
    with atomic_output(target) as f:
        f.write(data)
    if not quiet:
        click.echo(f"wrote {target}")


def _summary_target(src, out_format: str, output: str | None, many: bool) -> Path | None:
    from .summary import SUFFIXES
    if output == "-":
        return None
    return output_path(src, SUFFIXES[out_format], output, many)


@main.command("summary")
@click.argument("path", type=click.Path(path_type=Path))
@_FORMAT_OPTION
@click.option("-o", "--output", type=click.Path(),    # a str: keeps a trailing "/"
              help="Output file ('-' for stdout), or a directory for several runs "
                   "(default: next to each run, <run>.summary.<format>).")
@click.option("--baseline", type=click.Path(path_type=Path),
              help="Another run (or its JSON summary) to compare with: adds a "
                   "'vs baseline' table.")
@click.option("--force", is_flag=True, help="Overwrite existing output files.")
@click.option("--from", "fmt", metavar="FORMAT", help="Input format instead of detecting it.")
@click.option("--clock-mhz", metavar="MHZ", help="Clock of raw cycle/tick counts.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary lines.")
def summary(path, out_format, output, baseline, force, fmt, clock_mhz, quiet):
    """Write a profile report of each run under PATH: bottleneck, top opportunities,
    ratings, lanes and bubbles, critical path, time by label."""
    from .fileio import check_output
    from .summary import render
    reporter = Reporter(enabled=not quiet and output is not None and str(output) != "-")
    options = ReadOptions(clock_mhz=clock_mhz_(clock_mhz), progress=reporter,
                          workers=default_workers())
    runs = _find(path, fmt)
    one_output_for_many(path, runs, output, out_format)
    base = _one_run_data(baseline, None, options, "--baseline") if baseline else None
    many = len(runs) > 1
    failed = 0
    for src in runs:
        target = _summary_target(src, out_format, output, many)
        inputs = src.paths()
        reporter.restart()
        try:
            if target is not None:          # before the analysis: fail fast
                check_output(target, force, inputs)
            trace, analysis, data = _analysed(src, options, base)
            data = render(out_format, data, trace, analysis)
            reporter.close()
            _emit(data, target, force, inputs, quiet)
        except Exception as e:
            reporter.close()
            _fail(error_message(src.root, e))
            failed += 1
    if failed:
        sys.exit(EXIT_ERROR)


@main.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@_FORMAT_OPTION
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Output file (default: print to stdout).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--from", "fmt", metavar="FORMAT", help="Input format instead of detecting it.")
@click.option("--clock-mhz", metavar="MHZ", help="Clock of raw cycle/tick counts.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="FIGURE:THRESHOLD",
              help="Gate (repeatable): exit 1 when FIGURE got worse by more than THRESHOLD "
                   "([+|-]N[%]: N in the figure's unit or % of the baseline; + an increase "
                   "fails, - a decrease, no sign: the figure's worse direction), e.g. "
                   "makespan:+5% critical_path_wait:+10%. FIGURE: a key figure's name as an "
                   "identifier: " + ", ".join(COMMON) + "; per lane kind <kind>_utilization, "
                   "<kind>_bubble_rate (aiv_utilization). Prints a one-line verdict (pass, "
                   "regression, improvement) on stderr; the JSON carries it as 'verdict'.")
def compare(baseline, current, out_format, output, force, fmt, clock_mhz, fail_on):
    """Compare two runs: BASELINE (previous) and CURRENT, each a run directory, a file or a
    JSON summary written by 'tracecvt summary --format json'."""
    from .summary.compare import comparison_data
    from .summary.gate import parse_gate, verdict
    try:
        gates = [parse_gate(g) for g in fail_on]
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--fail-on") from None
    options = ReadOptions(clock_mhz=clock_mhz_(clock_mhz), workers=default_workers())
    a = _one_run_data(baseline, fmt, options, "BASELINE")
    b = _one_run_data(current, fmt, options, "CURRENT")
    c = comparison_data(a, b)
    if gates:
        try:
            c["verdict"] = verdict(gates, a, b)
        except ValueError as e:
            _fail(str(e))
            sys.exit(EXIT_ERROR)
    if out_format == "json":
        from .summary.json_out import render_json
        data = render_json(c)
    elif out_format == "html":
        from .summary.html import render_compare_html
        data = render_compare_html(c).encode("utf-8")
    else:
        from .summary.markdown import render_compare_markdown
        data = render_compare_markdown(c).encode("utf-8")
    target = None if output is None or str(output) == "-" else output
    try:
        _emit(data, target, force, [baseline, current], quiet=False)
    except TracecvtError as e:
        _fail(str(e))
        sys.exit(EXIT_ERROR)
    if gates:
        click.echo(f"tracecvt: verdict: {c['verdict']['line']}", err=True)
        if c["verdict"]["verdict"] == "regression":
            sys.exit(EXIT_REGRESSION)


if __name__ == "__main__":  # pragma: no cover
    entry.run()
