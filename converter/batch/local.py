"""The local engine: a pool of worker processes on this machine (``-j N``).

A worker that dies (killed, out of memory, a crash in a native library) breaks a
``ProcessPoolExecutor``; the runs that were in flight are then retried one by one, each in a
fresh single-worker pool, so only the run that kills its worker fails and the others go on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterator

from ..errors import TracecvtError
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
    """Import what every job needs before the workers fork, so none pays for it."""
    _job.targets()
    from ..writers import chrome, perfetto  # noqa: F401
    try:
        from .. import analyses  # noqa: F401
    except ImportError:
        pass


def _on_sigint(signum, frame):
    # Ctrl-C reaches the workers too: a busy one unwinds (its temporary output is removed),
    # an idle one just leaves without a traceback.
    if _busy:
        raise KeyboardInterrupt
    os._exit(130)


def _init_worker(warm: bool = False) -> None:
    signal.signal(signal.SIGINT, _on_sigint)
    if warm:
        _warm()


def _ready() -> None:
    """A first task that only makes the pool start its workers."""


def _pool_job(spec: dict[str, Any]) -> dict[str, Any]:
    global _busy
    _busy = True
    try:
        return _job.run_job(spec)
    finally:
        _busy = False


def _pool(workers: int, warm: bool = False) -> ProcessPoolExecutor:
    # fork is cheapest (workers inherit the imported modules); elsewhere the default.
    ctx = (multiprocessing.get_context("fork")
           if "fork" in multiprocessing.get_all_start_methods() else None)
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                               initargs=(warm,))


def start_workers(jobs: int) -> ProcessPoolExecutor | None:
    """Start ``jobs`` worker processes now, before the archive is scanned: each imports what
    the jobs need (``_warm``) while this process scans, on a CPU that would otherwise wait
    (measured on 8 copies of ffn_medium: ``-j 2`` 288 -> 257 ms).  None for ``-j 1``
    converting in this process, or when workers cannot start; ``run_local`` then makes its
    own pool."""
    if jobs <= 1 and IN_PROCESS_SERIAL:
        return None
    pool = _pool(jobs, warm=True)
    try:
        pool.submit(_ready)         # (a fork pool starts all its workers on the first task)
    except (BrokenProcessPool, OSError):
        pool.shutdown(wait=False, cancel_futures=True)
        return None
    return pool


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


def run_local(specs: list[dict[str, Any]], jobs: int,
              started: ProcessPoolExecutor | None = None) -> Iterator[dict[str, Any]]:
    """Yield one row per spec, in completion order.

    ``jobs == 1`` runs in this process (no pool: the fair serial baseline); otherwise
    ``min(jobs, len(specs))`` worker processes (or the pool ``started`` by
    ``start_workers``), fed at most two runs ahead of them.  ``started`` is shut down here.
    """
    if not specs or (jobs <= 1 and IN_PROCESS_SERIAL):
        if started is not None:
            started.shutdown(wait=False, cancel_futures=True)
        for spec in specs:
            yield _job.run_job(spec)
        return
    workers = min(jobs, len(specs))
    queue = deque(specs)
    while queue:
        if started is not None:
            pool, started = started, None
        else:
            _warm()
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
                        row["error"] = _job.internal_error(str(spec["rel"]), e)
                    yield row
                if suspects:
                    suspects.extend(inflight.values())
                    inflight.clear()
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        for spec in suspects:
            yield _solo(spec)
