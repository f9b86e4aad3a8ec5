"""tracecvt: accelerator profiling output -> Perfetto traces, Chrome JSON and summaries."""

__version__ = "0.1.0"
