"""Make ``import tracecvt`` load this checkout's ``converter/`` package (the name pip maps it to),
whatever is installed: the benchmarks measure the code next to them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def use(repo: str | Path) -> None:
    """Import ``repo/converter`` as ``tracecvt`` (once per process)."""
    if "tracecvt" in sys.modules:
        return
    pkg = Path(repo) / "converter"
    spec = importlib.util.spec_from_file_location(
        "tracecvt", pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tracecvt"] = module
    spec.loader.exec_module(module)
