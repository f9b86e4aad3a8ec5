"""A progress bar that only appears for work longer than about a second."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (BarColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)

DELAY_S = 1.0


class Reporter:
    """Receives (stage, done, total) callbacks from readers and writers."""

    def __init__(self, enabled: bool, console: Console | None = None):
        self.enabled = enabled
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self.progress: Progress | None = None
        self.tasks: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.started < DELAY_S:
                return
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
