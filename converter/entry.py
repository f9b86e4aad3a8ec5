"""The ``tracecvt`` command's entry point: ``cli.main``, then out of the process without
tearing it down.

A conversion's model is millions of Python objects; freeing them one by one when the process
ends anyway costs about 5 % of a large conversion (0.2 s of the 90,112-task PyPTO run, 3 s
of a 1 M-task msprof database).  So the conversion commands keep their last model
(``keep``) and ``run`` ends the process with ``os._exit`` once ``main`` is done: every output
was closed and renamed into place by then, the exit handlers (``atexit``: temporary
folders, logging) still run, and stdout and stderr are flushed first.  ``main`` called
from Python (tests, the API, ``python -m``-style wrappers) keeps the ordinary exit.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, NoReturn

# The last model a conversion command read (one at a time: a folder of runs frees each
# when the next is read); None where ``run`` is not the entry point (nothing kept).
keep: list[Any] | None = None


def run() -> NoReturn:
    """``tracecvt``: ``cli.main`` with a fast exit."""
    global keep
    from .cli import main
    keep = []
    try:
        main()
        code: Any = 0
    except SystemExit as e:         # click's standalone mode always ends with one
        code = e.code
    fast_exit(code)


def fast_exit(code: Any) -> NoReturn:
    """End the process as ``sys.exit(code)`` would, without freeing its objects."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):       # closed, or a broken pipe: nothing to save
            pass
    os._exit(code)
