"""``tracecvt open --at N | START:END``: which place of the trace to open (the deep-link
arguments of the N-th finding of the run's summary, or of an interval of trace time)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import click

from .errors import InputError

_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "ms": 10 ** 6, "s": 10 ** 9}


def _time(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ns|us|µs|ms|s)?\s*", text)
    if m is None:
        raise click.BadParameter(f"{text!r} is not a time (ns, or a number with ns, us, ms "
                                 "or s)", param_hint="--at")
    return int(round(Decimal(m.group(1)) * _UNITS[m.group(2) or "ns"]))


def parse_at(text: str) -> int | tuple[int, int]:
    """``--at``: N (the number of a finding of the run's summary, ``#N`` there) or
    START:END (trace time: ns from the trace's time 0, or with a unit, ``2.5us:40us``)."""
    if ":" not in text:
        if not text.strip().isdigit() or int(text) < 1:
            raise click.BadParameter(f"{text!r}: give N (a finding's number, 1 or more) or "
                                     "START:END", param_hint="--at")
        return int(text)
    a, b = text.split(":", 1)
    start, end = _time(a), _time(b)
    if end <= start:
        raise click.BadParameter(f"{text!r}: END must be after START", param_hint="--at")
    return start, end


def one_run(path: Path, runs: list):
    """The one run of ``runs`` (those under ``path``); more than one is an error."""
    if len(runs) > 1:
        raise InputError(path, f"{len(runs)} runs found; name one run directory or file "
                               "(tracecvt info lists them)")
    return runs[0]


def summary_for(src, options):
    """(the model, its analysis, its summary data) of the run ``src``, read once: the same
    model is then written as the trace to open (``open_ui.trace_for``; its derived tracks
    are made from this analysis), so the findings' places are those of the trace."""
    from .analyses import analyze
    from .convert import default_workers, gc_paused, reading_options
    from .summary import summary_data
    with gc_paused():                       # as convert_source reads
        trace = src.read(reading_options(options, default_workers()))
        analysis = analyze(trace)
    return trace, analysis, summary_data(trace, analysis)


def at_args(at: int | tuple[int, int] | None, data: dict | None) -> tuple[str, str]:
    """(the deep-link arguments for ``--at``, what they show) (``data``: the run's
    summary, for N)."""
    from .analyses.places import encode_params, findings, view_span
    if at is None:
        return "", ""
    if isinstance(at, tuple):
        vs, ve = view_span(*at)
        return encode_params({"vis_start_ns": vs, "vis_end_ns": ve}), ""
    found = findings(data or {})
    if at > len(found):
        raise InputError(Path(str((data or {}).get("run"))),
                         f"--at {at}: the summary has {len(found)} findings (#1 to "
                         f"#{len(found)})")
    what, where = found[at - 1]
    return encode_params(where["perfetto"]), f"finding #{at}: {what}"
