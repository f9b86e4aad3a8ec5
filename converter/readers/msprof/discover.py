"""Which msprof-family files a directory holds, and which runs they make.

Files are recognised by content (CSV header, JSON head, binary block header); names are only
hints, so renamed files (``PipeUtilization_roofline.csv``, ``test.csv``,
``cubecore0_instr_exe.csv``, ``*.HEAD_EXCERPT.*``) are found too.  A run is rooted where the
tool put it: ``PROF_*`` above ``mindstudio_profiler_output/``, ``*_ascend_pt`` above
``ASCEND_PROFILER_OUTPUT/`` (or the folder holding several ranks), ``OPPROF_*`` above
``simulator/`` and ``dump/``; loose files make a run of their folder.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ...fileio import file_size, is_dir, is_file, listdir, logical_name, read_head
from .csvtable import sniff_header
from .stats import stats_key

PROF_OUT = "mindstudio_profiler_output"
PT_OUT = "ASCEND_PROFILER_OUTPUT"
CLUSTER_OUT = "cluster_analysis_output"
CORE_DIR = re.compile(r"^core\d+\.(cube|vec)core\d+$")

APP_KINDS = {"msprof_json", "op_summary", "task_time", "step_trace"}
TORCH_KINDS = {"trace_view", "kernel_details", "memory_record", "npu_module_mem",
               "operator_memory"}
OP_KINDS = {"op_basic", "op_metric", "op_basic_info", "visualize_bin"}
SIM_KINDS = {"sim_trace", "instr_exe", "code_exe"}
_SKIP_EXT = (".py", ".md", ".png", ".jpg", ".svg", ".html", ".so", ".o", ".log", ".cpp", ".h",
             ".gz.part", ".pftrace")


def _has(keys: list[str], *need: str) -> bool:
    return all(n in keys for n in need)


def classify_csv(name: str, keys: list[str]) -> str | None:
    low = name.lower()
    if _has(keys, "kernel_name", "kernel_type", "task_start"):
        return "task_time"
    if _has(keys, "instr", "addr", "pipe", "call_count", "cycles"):
        return "instr_exe"
    if _has(keys, "code", "call_count", "cycles"):
        return "code_exe"
    task_table = any(k in keys for k in ("stream_id", "task_id", "op_name", "name", "model_id",
                                         "task_start_time", "start_time", "task_duration"))
    if not task_table and (_has(keys, "block_id", "sub_block_id") or (
            any(k in keys for k in ("aic_time", "aiv_time")) and
            any(k in keys for k in ("aic_total_cycles", "aiv_total_cycles")))):
        return "op_metric"
    if _has(keys, "op_name", "op_type", "task_duration") and "task_start_time" not in keys \
            and any(k in keys for k in ("block_dim", "block_num")):
        return "op_basic"
    if _has(keys, "task_start_time") and any(k in keys for k in ("op_name", "name")):
        return "op_summary"
    if _has(keys, "start_time", "duration") and "name" in keys and \
            any(k in keys for k in ("accelerator_core", "type", "task_type")):
        return "kernel_details"
    if _has(keys, "iteration_id", "fp_start"):
        return "step_trace"
    if _has(keys, "name", "size", "allocation_time"):
        return "operator_memory"
    if _has(keys, "component", "timestamp", "total_reserved"):
        return "memory_record" if "total_allocated" in keys else "npu_module_mem"
    if _has(keys, "step", "computing", "free"):
        return "cluster_step_trace_time" if _has(keys, "type", "index") else "step_trace_time"
    if _has(keys, "op_type", "core_type", "count", "total_time"):
        return "op_statistic"
    if _has(keys, "api_name", "count") and any(k in keys for k in ("time", "level")):
        return "api_statistic"
    if _has(keys, "name", "call_stack") or _has(keys, "name", "host_self_duration"):
        return "operator_details"
    if _has(keys, "stream_id", "task_id", "hit_rate"):
        return "l2_cache"
    if _has(keys, "graph_id", "node_index_start"):
        return "static_op_mem"
    return stats_key(low)


def sniff_visualize_bin(head: bytes, size: int) -> bool:
    """A msopprof block stream: 12-byte header {u64 size; u8 type, pad, version, 0x5A}."""
    if len(head) < 13:
        return False
    content, typ, pad, _version, reserved = struct.unpack_from("<QBBBB", head, 0)
    if reserved != 0x5A or not 1 <= typ <= 0x20 or content > size - 12 or pad > 8:
        return False
    body = head[12 + (4096 if typ == 1 else 0):][:64].lstrip()
    return typ == 1 or body[:1] in (b"{", b"[")


def classify(path: Path) -> str | None:
    """The kind of an msprof-family file, from its content (name as a hint), or None."""
    name = logical_name(path)
    low = name.lower()
    if low.endswith(_SKIP_EXT):
        return None
    if low.endswith(".csv"):
        return classify_csv(name, sniff_header(read_head(path, 8192)))
    if low.endswith(".db"):
        return "db"
    if low == "op_basic_info.txt":
        return "op_basic_info"
    if low.endswith(".bin"):
        try:
            size = file_size(path)
        except OSError:
            return None
        head = read_head(path, 4200)
        return "visualize_bin" if sniff_visualize_bin(head, size if head[:2] != b"\x1f\x8b"
                                                      else 1 << 62) else None
    if ".json" in low:
        if re.match(r"profiler_info(_\d+)?\.json$", low):
            return "profiler_info"
        if low == "profiler_metadata.json":
            return "profiler_metadata"
        if re.match(r"(info|sample)\.json(\.\d+)?$", low):
            return None
        key = stats_key(name)
        if key:
            return key
        head = read_head(path, 8192)
        h = head.lstrip()
        if b'"profilingType"' in head and b'"op"' in head and b'traceEvents' in head:
            return "sim_trace"
        if h[:1] == b"{" and b'"traceEvents"' in head and b'"pid": "core' in head.replace(
                b'":"', b'": "'):
            return "sim_trace"
        if (h[:1] == b"[" or b'"traceEvents"' in head) and b'"ph"' in head:
            if "trace_view" in low or any(m in head for m in _TORCH_MARKS):
                return "trace_view"
            if low.startswith("msprof") or any(m in head for m in _MSPROF_MARKS):
                return "msprof_json"
    return None


# Content that only msprof / torch_npu Chrome traces carry (so other tools' traces, e.g.
# PyPTO's merged_swimlane.json, are left to their readers).
_MSPROF_MARKS = (b"Physic Stream Id", b'"Stream Id"', b"Ascend Hardware", b"AscendCL@",
                 b"HostToDevice", b'"Task Type"', b"Overlap Analysis", b"AI Core Freq")
_TORCH_MARKS = (b'"cpu_op"', b'"python_function"', b"torch_to_npu", b'"async_npu"')


def run_kind(kind: str) -> str | None:
    if kind in APP_KINDS:
        return "app"
    if kind in TORCH_KINDS:
        return "torch"
    if kind in OP_KINDS:
        return "op"
    if kind in SIM_KINDS:
        return "sim"
    if kind in ("profiler_info", "profiler_metadata", "db"):
        return None
    return "stats"


def is_rank_dir(d: Path) -> bool:
    return is_dir(d / PT_OUT)


def subdirs(parent: Path) -> list[Path]:
    return [parent / n for n in listdir(parent) if is_dir(parent / n)]


def rank_dirs(parent: Path) -> list[Path]:
    return [p for p in subdirs(parent) if is_rank_dir(p)]


def inside_torch_run(d: Path) -> bool:
    """A PROF_* tree that torch_npu wrote next to an ASCEND_PROFILER_OUTPUT holding the text
    timeline (which shows the same data); beside a SQLite-only export it is kept."""
    for up in list(d.parents)[:4]:
        out = up / PT_OUT
        if is_dir(out):
            names = {logical_name(Path(n)) for n in listdir(out)}
            return bool(names & {"trace_view.json", "kernel_details.csv"})
    return False


def sim_root(d: Path) -> Path:
    if CORE_DIR.match(d.name):
        d = d.parent
    if d.name == "simulator":
        return d.parent if d.parent.name.startswith("OPPROF_") else d
    return d


def list_files(d: Path) -> list[Path]:
    return [d / n for n in listdir(d) if is_file(d / n)]
