"""tracecvt: accelerator profiling output -> Perfetto traces, Chrome JSON and summaries.

``tracecvt.read(path)`` returns one ``Run`` per run found (docs/api.md); the API and the
error classes are imported when first used, so ``import tracecvt`` stays cheap.
"""

__version__ = "0.1.0"

__all__ = ["InputError", "MissingDependency", "OutputError", "Run", "TracecvtError", "read"]

_LAZY = {"read": "api", "Run": "api", "TracecvtError": "errors", "InputError": "errors",
         "OutputError": "errors", "MissingDependency": "errors"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__():
    return sorted([*globals(), *__all__])
