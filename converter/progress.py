"""A progress bar that only appears for work longer than about a second, on a terminal."""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from typing import Any

DELAY_S = 1.0


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):        # replaced by an object without one, or closed
        return False


class Reporter:
    """Receives (stage, done, total) callbacks from readers and writers.

    The bar appears once the work has run DELAY_S, with the latest stage told: at its next
    callback, or by a timer where a stage tells nothing more for a while (a reader that
    reports its file at the start and at the end only: a 10-second read of a large database
    shows its stage, a spinner and the time)."""

    def __init__(self, enabled: bool, console: Any = None):
        self.enabled = enabled
        self.console = console          # a rich Console; stderr's when the bar first shows
        self.started = time.monotonic()
        self.progress: Any = None
        self.tasks: dict[str, int] = {}
        self.latest: tuple[str, int, int] | None = None     # told before the bar shows
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()    # the timer's thread and the caller's
        _REPORTERS.add(self)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        with self.lock:
            if self.progress is None:
                wait = DELAY_S - (time.monotonic() - self.started)
                if wait > 0:
                    self.latest = (stage, done, total)
                    if self.timer is None:
                        self.timer = threading.Timer(wait, self._late)
                        self.timer.daemon = True
                        self.timer.start()
                    return
                if not self._show():
                    return
            self._update(stage, done, total)

    def _late(self) -> None:
        """The delay is up and the bar not shown: show the latest stage told."""
        with self.lock:
            self.timer = None
            if self.enabled and self.progress is None and self.latest is not None \
                    and self._show():
                self._update(*self.latest)

    def _show(self) -> bool:
        """Start the bar (True), or find that there is none to show here (False)."""
        if self.console is None and not _is_terminal(sys.stderr):
            # A bar is for eyes: piped to a file or a program, stderr gets none (rich
            # would leave a blank line there, and cost its import and refresh thread).
            self.enabled = False
            return False
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
        return True

    def _update(self, stage: str, done: int, total: int) -> None:
        task = self.tasks.get(stage)
        if task is None:
            task = self.tasks[stage] = self.progress.add_task(stage, total=total or None)
        self.progress.update(task, completed=done, total=total or None)

    def close(self) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            self.latest = None
            if self.progress is not None:
                self.progress.stop()
                self.progress = None
            self.tasks.clear()

    def restart(self) -> None:
        self.close()
        self.started = time.monotonic()


def _after_fork_in_child() -> None:
    """A forked process draws no bar (its parent does) and must not wait on a lock that a
    thread of its parent held at the fork."""
    for r in list(_REPORTERS):
        r.lock = threading.Lock()
        r.timer = None
        r.enabled = False


_REPORTERS: "weakref.WeakSet[Reporter]" = weakref.WeakSet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
