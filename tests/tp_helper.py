"""Perfetto's own trace_processor (../shared/tools/trace_processor, v58.2) from tests."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from conftest import SHARED

TP_BIN = SHARED / "tools" / "trace_processor" / "trace_processor_shell"


@contextmanager
def trace_processor(path: Path) -> Iterator[object]:
    """A TraceProcessor on ``path`` (closed on exit); a minute to load it, as several may be
    starting at once."""
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    tp = TraceProcessor(trace=str(path),
                        config=TraceProcessorConfig(bin_path=str(TP_BIN), load_timeout=60))
    try:
        yield tp
    finally:
        tp.close()


def rows(tp, sql: str) -> list[dict]:
    return [dict(r.__dict__) for r in tp.query(sql)]


def problems(tp) -> list[dict]:
    """Import stats of severity error or data_loss with a non-zero value."""
    return rows(tp, "select name, idx, severity, value from stats "
                    "where severity in ('error', 'data_loss') and value > 0")
