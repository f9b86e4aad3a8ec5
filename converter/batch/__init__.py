"""``tracecvt batch``: convert every run below a folder in parallel (local processes or a Dask
cluster), resumably, with an index (index.json + index.html).

Modules: ``plan`` (runs, outputs, up-to-dateness), ``job`` (the picklable per-run job),
``local`` and ``dask_engine`` (where jobs run), ``index`` (the index files), ``command`` (the
click command, registered in ``tracecvt.cli``).
"""

from .command import batch

__all__ = ["batch"]
