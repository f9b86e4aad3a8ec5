"""A progress bar that only appears for work longer than about a second, on a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

DELAY_S = 1.0


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):        # replaced by an object without one, or closed
        return False


class Reporter:
    """Receives (stage, done, total) callbacks from readers and writers."""

    def __init__(self, enabled: bool, console: Any = None):
        self.enabled = enabled
        self.console = console          # a rich Console; stderr's when the bar first shows
        self.started = time.monotonic()
        self.progress: Any = None
        self.tasks: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.started < DELAY_S:
                return
            if self.console is None and not _is_terminal(sys.stderr):
                # A bar is for eyes: piped to a file or a program, stderr gets none (rich
                # would leave a blank line there, and cost its import and refresh thread).
                self.enabled = False
                return
            # rich is imported only now: most conversions end before a bar is worth showing
            # (its import is about 20 ms of every command's start-up otherwise)
            from rich.console import Console
            from rich.progress import (BarColumn, Progress, SpinnerColumn, TextColumn,
                                       TimeElapsedColumn)
            if self.console is None:
                self.console = Console(stderr=True)
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                     BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                     TimeElapsedColumn(), console=self.console,
                                     transient=True)
            self.progress.start()
        task = self.tasks.get(stage)
        if task is None:
            task = self.tasks[stage] = self.progress.add_task(stage, total=total or None)
        self.progress.update(task, completed=done, total=total or None)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        self.tasks.clear()

    def restart(self) -> None:
        self.close()
        self.started = time.monotonic()
