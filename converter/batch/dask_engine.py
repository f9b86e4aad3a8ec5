"""The Dask engine: the same jobs on an existing Dask cluster (``--engine dask --scheduler
ADDRESS``).  Needs the optional ``distributed`` package (``pip install 'tracecvt[dask]'``) here
and on every worker, which must also see ARCHIVE_DIR and OUT_DIR at the same paths (a shared
filesystem).  See docs/batch.md.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterator

from ..errors import TracecvtError
from .job import empty_row, run_job

INSTALL_HINT = "pip install 'tracecvt[dask]'"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise TracecvtError("--engine dask needs the 'distributed' package, which is not "
                            f"installed: {INSTALL_HINT}") from None
    return distributed


def run_dask(specs: list[dict[str, Any]], scheduler: str,
             timeout_s: float = 20) -> Iterator[dict[str, Any]]:
    """Yield one row per spec, in completion order, computed on the cluster at ``scheduler``."""
    distributed = _distributed()
    try:
        client = distributed.Client(scheduler, timeout=f"{timeout_s}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise TracecvtError(f"cannot reach the Dask scheduler at {scheduler}: "
                            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") \
            from None
    batch_id = uuid.uuid4().hex[:12]
    futures: dict = {}
    try:
        for i, spec in enumerate(specs):
            # Unique keys (pure=False) so a re-run is never served a stale cached result;
            # earlier (bigger) runs get a higher priority.
            fut = client.submit(run_job, spec, key=f"tracecvt-batch-{batch_id}-{i}",
                                pure=False, priority=len(specs) - i, retries=0)
            futures[fut] = spec
        for fut in distributed.as_completed(list(futures), loop=client.loop):
            spec = futures.pop(fut)
            try:
                row = fut.result()
            except Exception as e:  # the task failed outside run_job: worker lost, ...
                row = empty_row(spec, "failed")
                msg = str(e).splitlines()[0] if str(e) else ""
                hint = ("; is tracecvt installed on every worker?"
                        if isinstance(e, ImportError) else "")
                row["error"] = (f"{spec['source_fields']['root']}: failed on the Dask cluster "
                                f"({type(e).__name__}{': ' + msg if msg else ''}){hint}")
            finally:
                fut.release()
            yield row
    finally:
        if futures:
            client.cancel(list(futures))
        client.close()
