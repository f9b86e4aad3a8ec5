"""Option parsing and the error line shared by the commands, kept apart from ``cli`` so that
``batch`` does not import every command (and its progress display) to read one option."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import click

from .errors import one_line

EXIT_ERROR = 2
EXIT_REGRESSION = 1         # compare --fail-on: a figure regressed past its threshold
EXIT_INTERRUPTED = 130      # as a shell reports a process ended by Ctrl-C (128 + SIGINT)


def fail(message: str) -> None:
    """Print ``message`` as the command's one error line (on stderr)."""
    click.echo(f"tracecvt: error: {one_line(message)}", err=True)


def warn(message: str) -> None:
    """Print ``message`` as one warning line (on stderr)."""
    click.echo(f"tracecvt: warning: {one_line(message)}", err=True)


def warning_lines(warnings: list[str], causes: dict[str, str], run: str,
                  where: object) -> list[str]:
    """The terminal's lines for a run's warnings: one per cause.  Warnings that share a
    cause (``RunMeta.causes``) make one line naming it, with where to read them in full
    (``tracecvt info WHERE`` and the run's summary); any other warning is its own line."""
    from .model import warning_groups
    lines = []
    for key, group in warning_groups(warnings, causes):
        if len(group) == 1:
            lines.append(group[0])
        else:
            lines.append(f"{run}: {key}: {len(group)} warnings (in full: "
                         f"tracecvt info {where}, or the run's summary)")
    return lines


def warn_run(warnings: list[str], causes: dict[str, str], run: str, where: object) -> None:
    """Print a run's warnings, one line per cause (``warning_lines``)."""
    for line in warning_lines(warnings, causes, run, where):
        warn(line)


def clock_mhz(value: str | None) -> Fraction | None:
    """``--clock-mhz``: a positive number, exactly (e.g. 1800, 50, 1.5)."""
    if value is None:
        return None
    try:
        mhz = Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise click.BadParameter(f"{value!r} is not a number", param_hint="--clock-mhz")
    if mhz <= 0:
        raise click.BadParameter("must be positive", param_hint="--clock-mhz")
    return mhz


def size(value: str, hint: str, examples: str) -> int:
    """A size option (``--max-entry-size``, ``--max-ui-size``) in bytes: "4GiB", "512M",
    "1000000"; a usage error naming ``hint`` otherwise."""
    from .archive import parse_size
    try:
        return parse_size(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a size like {examples}",
                                 param_hint=hint) from None


def one_output_for_many(path: Path, runs: list, output: str | None,
                        stdout_format: str | None = None) -> None:
    """Several runs under ``path`` cannot share one output: a one-line error and exit code
    2 (before anything is read) where ``-o`` names one file (a name with a suffix, not an
    existing folder nor ending in a separator), or is "-" for a format of which stdout can
    hold one document only (``stdout_format``: "json", "html")."""
    if len(runs) < 2 or output is None:
        return
    names = ", ".join(src.name for src in runs[:3]) + (", ..." if len(runs) > 3 else "")
    if output == "-":
        if stdout_format in ("json", "html"):
            fail(f"{path}: {len(runs)} runs ({names}), and stdout holds one {stdout_format} "
                 "document: give a folder with -o, or one run")
            sys.exit(EXIT_ERROR)
        return
    from .convert import names_folder   # (the rule output_path follows; cli has it loaded)
    if names_folder(output) or not Path(output).suffix:
        return
    fail(f"{path}: {len(runs)} runs ({names}) cannot go into one file {output}: give a "
         f"folder (-o {Path(output).with_suffix('')}/, made if need be), or one run")
    sys.exit(EXIT_ERROR)
