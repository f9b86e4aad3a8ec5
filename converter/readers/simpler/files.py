"""The files of a simpler run, by name (format reference ../shared/docs/formats/simpler.md):
what detection looks for and the build reads, in one place both import."""

RECORDS = "chip_swimlane_records.json"
LEGACY_RECORDS = ("l2_swimlane_records.json",)
LEGACY_PREFIXES = ("l2_perf_records", "perf_swimlane_")
DEPS = "deps.json"
HOST_PHASES = "host_phase_records.jsonl"
# The runtime's own analyses of a run, where they sit beside its records (critical_path writes
# its report there; sched_overhead_analysis prints to the console, saved under this name):
# the summary compares every figure with them.
TOOL_REPORTS = {"critical_path_report": "critical_path_report.md",
                "sched_overhead_analysis": "sched_overhead_analysis.txt"}
# A run read from the runtime's swimlane_converter output alone (readers/simpler/
# converter_output.py): meta.extra key of what the drawing says about itself, and why the
# analyses of the records are not made from it (the summary says so).
CONVERTER_EXTRA = "simpler_converter"
FULL_ANALYSIS = ("a drawing by simpler's swimlane_converter, not its records: "
                 "chip_swimlane_records.json (with deps.json and name_map*.json beside it) "
                 "gives the full analysis")
