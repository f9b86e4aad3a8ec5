"""The local engine: a pool of worker processes on this machine (``-j N``).

A worker that dies (killed, out of memory, a crash in a native library) breaks a
``ProcessPoolExecutor``; the runs that were in flight are then retried one by one, each in a
fresh single-worker pool, so only the run that kills its worker fails and the others go on.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pkgutil
import signal
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from ..errors import TracecvtError, internal_error
from ..forkpass import fork_pass
from . import job as _job

_busy = False
# -j 1 converts in this process: no fork, no pickling, the honest serial baseline (measured:
# one worker process instead measured 5-12 % slower on medium runs, see docs/batch.md).
IN_PROCESS_SERIAL = True


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
    # an idle one just leaves without a traceback.
    if _busy:
        raise KeyboardInterrupt
    os._exit(130)


def _init_worker() -> None:
    signal.signal(signal.SIGINT, _on_sigint)


def _pool_job(spec: dict[str, Any]) -> dict[str, Any]:
    global _busy
    _busy = True
    try:
        return _job.run_job(spec)
    finally:
        _busy = False


def _pool(workers: int) -> ProcessPoolExecutor:
    # fork is cheapest (workers inherit the imported modules); elsewhere the default.
    ctx = (multiprocessing.get_context("fork")
           if "fork" in multiprocessing.get_all_start_methods() else None)
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker)


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


def _died(spec: dict[str, Any], e: BaseException) -> dict[str, Any]:
    row = _job.empty_row(spec, "failed")
    row["error"] = (f"{spec['source_fields']['root']}: the worker process died while "
                    f"converting it (out of memory or killed?): {type(e).__name__}")
    return row


def _solo(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one spec in a pool of its own: a worker death is then surely this run's."""
    pool = _pool(1)
    try:
        return pool.submit(_pool_job, spec).result()
    except BrokenProcessPool as e:
        return _died(spec, e)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_local(specs: list[dict[str, Any]], jobs: int) -> Iterator[dict[str, Any]]:
    """Yield one row per spec, in completion order.

    ``jobs == 1`` runs in this process (no pool: the fair serial baseline); otherwise
    ``min(jobs, len(specs))`` worker processes, forked once this process has imported what
    the jobs need, fed at most two runs ahead of them.  With fewer runs than ``jobs``, each
    run may use two processes (``run_processes``).
    """
    if not specs or (jobs <= 1 and IN_PROCESS_SERIAL):
        for spec in specs:
            yield _job.run_job(spec)
        return
    workers = min(jobs, len(specs))
    share = run_processes(jobs, len(specs))
    if share > 1:
        specs = [{**spec, "workers": share} for spec in specs]
    queue = deque(specs)
    _warm()
    while queue:
        pool = _pool(workers)
        submitted = 0
        inflight: dict = {}
        suspects: list[dict[str, Any]] = []
        try:
            while queue or inflight:
                while queue and len(inflight) < 2 * workers:
                    try:
                        fut = pool.submit(_pool_job, queue[0])
                    except BrokenProcessPool:
                        if not submitted:
                            raise TracecvtError("cannot start worker processes (try -j 1)")
                        break
                    inflight[fut] = queue.popleft()
                    submitted += 1
                if not inflight:      # a worker died while idle: carry on in a new pool
                    break
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    spec = inflight.pop(fut)
                    try:
                        row = fut.result()
                    except BrokenProcessPool:
                        suspects.append(spec)
                        continue
                    except Exception as e:  # pragma: no cover - run_job returns rows
                        row = _job.empty_row(spec, "failed")
                        row["error"] = internal_error(spec["rel"], e)
                    yield row
                if suspects:
                    suspects.extend(inflight.values())
                    inflight.clear()
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        for spec in suspects:
            yield _solo(spec)
