"""Give the memory a process has freed back to the system, where its C library can.

CPython frees the objects a conversion lets go of (the Perfetto writer's caches, flow and
rider fields: hundreds of MB on a 1 M-task database) into the C library's heap, which keeps
the pages for later allocations of the same kind.  The one large allocation that comes
next (the merge's buffer of the whole trace) is a mapping of its own and cannot use them,
so the process's peak was the heap kept plus the buffer.  glibc's ``malloc_trim`` returns
the heap's free pages (those in its middle too) to the system; elsewhere (musl, macOS,
Windows: no such call) nothing is done.
"""

from __future__ import annotations

from typing import Any, Callable

_trim: Callable[[int], Any] | None = None
_looked = False


def _find() -> Callable[[int], Any] | None:
    import ctypes           # (here: most commands never merge a trace)
    try:
        # the symbols the process has loaded: the C library's among them (not
        # ``ctypes.util.find_library``, which runs ``ldconfig`` in a child process: a fork
        # of this one, counted in its children's peak memory)
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the free pages of the C library's heap to the system (glibc's
    ``malloc_trim(0)``; a few ms per GB of heap).  True where this C library can."""
    global _trim, _looked
    if not _looked:
        _trim, _looked = _find(), True
    if _trim is None:
        return False
    _trim(0)
    return True
