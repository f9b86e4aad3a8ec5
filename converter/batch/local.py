"""The local engine: a pool of worker processes on this machine (``-j N``).

Each worker gets one run at a time through a pipe of its own, so a worker that dies (killed,
out of memory, a crash in a native library) fails exactly the run it was converting; a new
worker takes its place and the others go on.  (A ``ProcessPoolExecutor`` did this before:
its start-up, threads and queues cost 7 ms of a 220 ms batch, see docs/performance.md, and
a broken pool left the runs in flight to be retried one by one to find the culprit.)
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pkgutil
import signal
import sys
import time
from collections import deque
from typing import Any, Callable, Iterator

from ..cliopts import EXIT_INTERRUPTED
from ..errors import TracecvtError
from ..forkpass import fork_pass, signal_name
from . import job as _job

_busy = False
# -j 1 converts in this process: no fork, no pickling, the honest serial baseline (measured:
# one worker process instead measured 5-12 % slower on medium runs, see docs/batch.md).
IN_PROCESS_SERIAL = True


def default_jobs() -> int:
    from ..convert import usable_cpus
    return usable_cpus()


def in_workers(jobs: int) -> bool:
    """Whether ``jobs`` runs go to worker processes (else: this process converts them)."""
    return jobs > 1 or not IN_PROCESS_SERIAL


def _warm() -> None:
    """Import what every job needs (every reader module, the analyses, the writers), so that
    worker processes forked afterwards inherit it instead of each importing it again."""
    _job.targets()
    from ..analyses import derived  # noqa: F401
    from ..writers import chrome, perfetto  # noqa: F401
    from .. import readers              # a reader imports its parsers when it first reads
    for m in pkgutil.walk_packages(readers.__path__, readers.__name__ + "."):
        try:
            importlib.import_module(m.name)
        except ImportError:             # an optional extra that is not installed
            pass


def _on_sigint(signum, frame):
    # Ctrl-C reaches the workers too: a busy one unwinds (its temporary output is removed),
    # an idle one just leaves without a traceback.  Once: after Ctrl-C the batch stopping
    # (``_Worker.stop``) interrupts the busy ones again, which must not cut their clean-up short.
    if _busy:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt
    os._exit(EXIT_INTERRUPTED)


def _serve(conn) -> None:
    """A worker process: run each spec it is sent and send back its row, until it is sent
    None or its pipe closes (or it is interrupted: a busy worker's outputs are removed as
    the conversion unwinds)."""
    global _busy
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__   # not the parent's live display
    signal.signal(signal.SIGINT, _on_sigint)
    # A process a conversion forks here (a second reader or writer) must not hold this
    # worker's pipe: should the worker die, the batch sees it at once, not when that ends.
    os.register_at_fork(after_in_child=conn.close)
    try:
        while True:
            try:
                spec = conn.recv()
            except (EOFError, OSError):         # the batch has gone
                return
            if spec is None:
                return
            _busy = True
            try:
                # (an error here is the run's own: with TRACECVT_DEBUG it ends the worker
                # with its traceback)
                row = _job.run_job(spec)
            finally:
                _busy = False
            try:
                conn.send(row)
            except OSError:
                return
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


def _context():
    # fork is cheapest (workers inherit the imported modules); elsewhere the default.
    return (multiprocessing.get_context("fork")
            if "fork" in multiprocessing.get_all_start_methods()
            else multiprocessing.get_context())


def run_processes(jobs: int, runs: int) -> int:
    """Processes each run may use (a large run is read and written by two, as
    ``to-perfetto`` does): with fewer runs than ``jobs``, the CPUs no run would use."""
    return max(1, min(2, jobs // max(runs, 1)))


def plan_while_importing(make_plan: Callable[[], list]) -> list:
    """``make_plan()`` (the archive scan), run in a forked process while this one imports
    what the jobs need (``_warm``): the workers ``run_local`` forks afterwards inherit those
    modules, so they are imported once, not once per worker, and on the CPU the scan leaves
    free (measured on 8 copies of ffn_medium, ``-j 2``: see docs/performance.md).  Where
    processes cannot be forked, or the scan failed there, it runs here (and raises its
    error here, as it would have)."""
    helper = fork_pass(make_plan)
    try:
        _warm()
        planned = helper.result() if helper is not None else None
    finally:
        if helper is not None:
            helper.abandon()
    return planned if planned is not None else make_plan()


def _died(spec: dict[str, Any], code: int | None) -> dict[str, Any]:
    """The row of the run a worker process was converting when it ended (exit ``code``)."""
    if code in (EXIT_INTERRUPTED, -signal.SIGINT):
        how = "was interrupted (SIGINT)"
    elif code is not None and code < 0:
        how = f"was killed by {signal_name(-code)} (out of memory?)"
    else:
        how = f"ended (exit code {code})"
    row = _job.empty_row(spec, "failed")
    row["error"] = f"{spec['source_fields']['root']}: the worker process converting it {how}"
    return row


AHEAD = 2       # runs a worker holds: when it finishes one, the next is already there
STOP_WAIT = 10  # seconds a stopping worker has to clean up before it is killed


class _Worker:
    """One worker process and our end of its pipe; ``runs``: those sent to it and not yet
    finished, in order (it is converting the first)."""

    def __init__(self, ctx):
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(theirs,))
        try:
            self.proc.start()
        except BaseException:
            self.conn.close()
            raise
        finally:
            theirs.close()
        self.runs: deque[dict[str, Any]] = deque()
        self.finished = 0

    def give(self, spec: dict[str, Any]) -> None:
        self.conn.send(spec)
        self.runs.append(spec)

    def stop(self) -> None:
        """Make it leave, and wait for it.  An idle worker is told to (workers forked later
        hold copies of our end of the pipe, so closing it is not enough); a busy one (the
        batch stopped early) is interrupted as Ctrl-C would, so its output is removed."""
        try:
            if self.proc.exitcode is None:  # (not reaped: its pid is still its own)
                if self.runs:
                    os.kill(self.proc.pid, signal.SIGINT)
                else:
                    self.conn.send(None)
        except OSError:
            pass                        # it has gone already
        self.conn.close()
        # Wait by its pid, not by Process.join(timeout), which waits on the process's
        # sentinel pipe: a process the worker forked (a second reader or writer) holds that
        # pipe open until it ends, so a worker just killed (its pipe at EOF before it can be
        # reaped) would seem to live on as long as its helper.
        deadline = time.monotonic() + STOP_WAIT
        while self.proc.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if self.proc.exitcode is None:  # stuck where signals wait (a long native call)
            self.proc.kill()
            self.proc.join()


def run_local(specs: list[dict[str, Any]], jobs: int) -> Iterator[dict[str, Any]]:
    """Yield one row per spec, in completion order.

    ``jobs == 1`` runs in this process (the fair serial baseline); otherwise up to ``jobs``
    worker processes, forked once this process has imported what the jobs need, each sent
    its runs through a pipe of its own (``AHEAD`` at a time).  A worker that dies (killed,
    out of memory, a crash in a native library) fails the one run it was converting; the
    runs it held are given to the others, and a new worker takes its place.  With fewer
    runs than ``jobs``, each run may use two processes (``run_processes``).
    """
    if not specs or not in_workers(jobs):
        for spec in specs:
            yield _job.run_job(spec)
        return
    from multiprocessing.connection import wait as wait_any
    share = run_processes(jobs, len(specs))
    if share > 1:
        specs = [{**spec, "workers": share} for spec in specs]
    queue = deque(specs)
    _warm()
    ctx = _context()
    workers: dict[Any, _Worker] = {}        # by our end of its pipe
    finished = [0]                          # runs the workers lost so far had finished

    def any_finished() -> bool:
        return bool(finished[0] or any(w.finished for w in workers.values()))

    def lost(w: _Worker) -> Iterator[dict[str, Any]]:
        while w.runs and w.conn.poll():     # rows it sent before it died
            try:
                row = w.conn.recv()
            except (EOFError, OSError):
                break
            w.runs.popleft()
            w.finished += 1
            yield row
        del workers[w.conn]
        finished[0] += w.finished
        w.stop()
        if w.runs:
            yield _died(w.runs.popleft(), w.proc.exitcode)
            queue.extendleft(reversed(w.runs))      # not started: the others take them

    try:
        while queue or any(w.runs for w in workers.values()):
            while len(workers) < jobs and len(queue) > sum(not w.runs for w in
                                                            workers.values()):
                try:
                    w = _Worker(ctx)
                except OSError as e:
                    if workers:
                        break           # carry on with the workers there are
                    raise TracecvtError(f"cannot start worker processes ({e}; try -j 1)"
                                        ) from None
                workers[w.conn] = w
            for depth in range(1, AHEAD + 1):   # one run each first, then the next ones
                for w in list(workers.values()):
                    # A run sent ahead waits for its worker: only while there are runs enough
                    # for every worker, or near the end one may wait behind a long run while
                    # another worker idles.
                    if not queue or len(w.runs) >= depth or (depth > 1
                                                             and len(queue) <= len(workers)):
                        continue
                    try:
                        w.give(queue[0])
                    except OSError:      # it has died
                        if not w.runs and not any_finished():
                            raise TracecvtError("worker processes die as they start (try "
                                                "-j 1)") from None
                        yield from lost(w)
                        continue
                    queue.popleft()
            busy = [conn for conn, w in workers.items() if w.runs]
            if not busy:
                continue                # (a new worker takes the place of one lost)
            for conn in wait_any(busy):
                w = workers[conn]
                try:
                    row = conn.recv()
                except (EOFError, OSError):
                    yield from lost(w)
                    continue
                w.runs.popleft()
                w.finished += 1
                yield row
    finally:
        for w in workers.values():
            w.stop()
