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
        keys = sniff_header(read_head(path, 8192))
        return classify_csv(name, keys) if keys else None
    if low.endswith(".db"):
        return "db" if read_head(path, 16) == SQLITE_MAGIC else None
    if low == "op_basic_info.txt":
        return "op_basic_info" if is_key_value_text(read_head(path, 4096)) else None
    if low.endswith(".bin"):
        try:
            size = file_size(path)
        except OSError:
            return None
        head = read_head(path, 4200)
        return "visualize_bin" if sniff_visualize_bin(head, size if head[:2] != b"\x1f\x8b"
                                                      else 1 << 62) else None
    if ".json" in low:
        if re.match(r"(info|sample)\.json(\.\d+)?$", low):
            return None
        head = read_head(path, 8192)
        first = json_opening(head)
        if first not in (b"{", b"["):
            return None          # a *.done marker, an empty or a text file: no JSON data
        if re.match(r"profiler_info(_\d+)?\.json$", low):
            return "profiler_info" if first == b"{" else None
        if low == "profiler_metadata.json":
            return "profiler_metadata" if first == b"{" else None
        key = stats_key(name)
        if key:
            return key
        if b'"profilingType"' in head and b'"op"' in head and b'traceEvents' in head:
            return "sim_trace"
        if first == b"{" and b'"traceEvents"' in head and b'"pid": "core' in head.replace(
                b'":"', b'": "'):
            return "sim_trace"
        if (first == b"[" or b'"traceEvents"' in head) and b'"ph"' in head:
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


SQLITE_MAGIC = b"SQLite format 3\x00"


def json_opening(head: bytes) -> bytes:
    """The first byte of a file's JSON data (``{`` or ``[`` where it is JSON), past a UTF-8
    BOM and blanks; b"" for an empty head."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]


# msprof marks each finished write with a small text file beside it (``info.json.0.done``,
# ``sample.json.done``, ``data/*.slice_0.done``: text ``filesize:968``) and a finished folder
# with an empty ``*.complete``: they carry no data and never stand in for the file they mark.
# Markers of raw data slices add ``starttime:N`` and ``endtime  :N`` lines.
_MARKER = re.compile(rb"\s*filesize\s*:\s*\d+\s*(?:\n\s*[a-z_]+\s*:\s*\d+\s*)*")
MARKER_HEAD = 256


def marker_kind(head: bytes) -> str | None:
    """"empty" or "marker" when a file's first ``MARKER_HEAD`` bytes are all there is and hold
    no data."""
    if not head.strip():
        return "empty"
    return "marker" if len(head) < MARKER_HEAD and _MARKER.fullmatch(head) else None


def is_key_value_text(head: bytes) -> bool:
    """``Key=value`` lines (msprof op's ``dump/op_basic_info.txt``)."""
    lines = [ln for ln in head.splitlines()[:-1] or head.splitlines() if ln.strip()]
    return bool(lines) and all(b"=" in ln for ln in lines[:8])


# PROF_*/host and PROF_*/device_N metadata: which role a file can fill is decided by the keys
# of its JSON object (newer CANN writes both begin and end times into start_info and end_info,
# so there the name decides between the two).
_META_KEYS = (
    ("info", (b'"platform_version"', b'"DeviceInfo"')),
    ("collection", (b'"collectionTimeBegin"', b'"collectionTimeEnd"', b'"collectionDateBegin"',
                    b'"collectionDateEnd"')),
    ("sample", (b'"ai_core_profiling"', b'"ai_core_metrics"', b'"dataTypeConfig"')),
)
META_ROLES = ("info", "start_info", "end_info", "sample")


def prof_meta_role(path: Path) -> str | None:
    """Which PROF_* metadata file ``path`` is by content (info, start_info, end_info, sample),
    or None (a marker, a log, raw data…)."""
    head = read_head(path, 1 << 20)        # info.json lists every CPU core before the chip
    if json_opening(head) != b"{":
        return None
    kind = next((k for k, keys in _META_KEYS if any(key in head for key in keys)), None)
    if kind != "collection":
        return kind
    low = logical_name(path).lower()
    for role in ("start_info", "end_info"):
        if low.startswith(role):
            return role
    # renamed: the time it holds decides (newer CANN leaves the other one "")
    begin, end = (re.search(rb'"collectionTime%s"\s*:\s*"?\d' % k, head) is not None
                  for k in (b"Begin", b"End"))
    return "start_info" if begin and not end else "end_info" if end and not begin else None


def prof_metadata(directory: Path) -> tuple[dict[str, Path], list[Path]]:
    """The metadata files of a PROF_* subfolder by role, and the folder's other files.  Where
    two files could fill one role the one named for it wins (``info.json.0`` over a copy)."""
    found: dict[str, list[Path]] = {}
    rest: list[Path] = []
    for p in list_files(directory):
        role = prof_meta_role(p)
        if role is None:
            rest.append(p)
        else:
            found.setdefault(role, []).append(p)
    chosen: dict[str, Path] = {}
    for role, paths in found.items():
        stem = "info.json" if role == "info" else "sample.json" if role == "sample" else role
        paths.sort(key=lambda p: (not logical_name(p).lower().startswith(stem), p.name))
        chosen[role] = paths[0]
        rest.extend(paths[1:])
    rest.sort(key=lambda p: p.name)
    return chosen, rest


def files_below(directory: Path, depth: int = 4) -> list[Path]:
    """Every file in the folders under ``directory`` (not its own files), sorted by folder."""
    out: list[Path] = []
    if depth <= 0:
        return out
    for sub in subdirs(directory):
        out.extend(list_files(sub))
        out.extend(files_below(sub, depth - 1))
    return out


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
            return any(classify(out / n) in ("trace_view", "kernel_details")
                       for n in listdir(out) if is_file(out / n))
    return False


# What torch_npu writes into a rank folder beside ASCEND_PROFILER_OUTPUT: its own raw data
# (FRAMEWORK/), logs and msprof's PROF_* collection of the device side.
_RANK_RAW = re.compile(r"^(FRAMEWORK|logs|PROF_\d+_\d+_\w+)$")


def rank_raw_files(rank: Path) -> list[Path]:
    """The files of a torch_npu rank folder that its ASCEND_PROFILER_OUTPUT export was made
    from (raw data, logs); a PROF_* folder that is a run of its own is left to that run."""
    out: list[Path] = []
    for sub in subdirs(rank):
        if not _RANK_RAW.match(sub.name):
            continue
        if is_dir(sub / PROF_OUT) and not inside_torch_run(sub / PROF_OUT):
            continue
        out.extend(list_files(sub))
        out.extend(files_below(sub))
    return out


def sim_root(d: Path) -> Path:
    if CORE_DIR.match(d.name):
        d = d.parent
    if d.name == "simulator":
        return d.parent if d.parent.name.startswith("OPPROF_") else d
    return d


def list_files(d: Path) -> list[Path]:
    return [d / n for n in listdir(d) if is_file(d / n)]
