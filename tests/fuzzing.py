"""Mutation fuzzing of every reader: the shared library behind tests/test_fuzz_readers.py and
benchmarks/fuzz_run.py (docs/trust.md).

A *family* is a set of real sample runs of one format.  Each generated input takes one run,
mutates one of its files (bytes, JSON structure, CSV rows and columns or text lines; see
MUTATORS) and converts it with the CLI.  The contract (``run_cli``): the input either converts
(exit 0, a trace that ``tracecvt validate`` passes, losses reported as warnings) or fails with
exactly one ``tracecvt: error: <file>: ...`` line and exit code 2; never a traceback and never
the "this is a tracecvt bug" line.

Adding a reader family is one line in FAMILIES: a name and the sample paths whose runs
(found by ``find_runs``) are its seeds.

Budget: TRACECVT_FUZZ_EXAMPLES examples per family (default 100, about 10-20 s for all families
on the 2-core CI machine); the dedicated run uses 10,000 (benchmarks/fuzz_run.py).
"""

from __future__ import annotations

import copy
import csv
import functools
import gzip
import io
import json
import math
import os
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson
from click.testing import CliRunner
from hypothesis import strategies as st

from tracecvt.cli import main
from tracecvt.readers import find_runs, format_names

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SAMPLES = REPO.parent / "shared" / "samples"
FIXTURES = TESTS / "fixtures"

BUG_MARK = "this is a tracecvt bug"
DEFAULT_EXAMPLES = 100


def budget() -> int:
    """Examples per family: TRACECVT_FUZZ_EXAMPLES (default 100; the dedicated run 10,000)."""
    return int(os.environ.get("TRACECVT_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))


# -- families and seeds -------------------------------------------------------------------

@dataclass(frozen=True)
class Seed:
    """A real run: its root (a directory or a single file), the files it is read from, and
    the --from name that reads it."""

    family: str
    root: Path
    files: tuple[Path, ...]         # every file the run is read from
    targets: tuple[Path, ...]       # the ones to mutate
    fmt: str | None

    @property
    def label(self) -> str:
        try:
            return str(self.root.relative_to(SAMPLES))
        except ValueError:
            return str(self.root.relative_to(REPO))


@dataclass(frozen=True)
class Family:
    name: str
    paths: tuple[str, ...]          # under shared/samples ("pypto/...") or tests/ ("fixtures/...")
    fmt: str | None = None          # always convert with --from FMT (else: detected or forced)
    mutate: tuple[str, ...] = ()    # only mutate files whose name contains one of these
    max_file_bytes: int = 400_000   # files larger than this are not mutated (still read)
    exclude: tuple[str, ...] = ()   # substrings of run roots to leave out

    def seeds(self) -> list[Seed]:
        return _seeds(self)


@functools.lru_cache(maxsize=None)
def _seeds_cached(family: Family) -> tuple[Seed, ...]:
    out = []
    known = set(format_names())
    for rel in family.paths:
        base = (TESTS / rel) if rel.startswith("fixtures/") else SAMPLES / rel
        if not base.exists():
            continue
        for src in find_runs(base, family.fmt):
            if any(x in str(src.root) for x in family.exclude):
                continue
            files = tuple(sorted({Path(p) for p in src.files.values() if Path(p).is_file()}))
            targets = tuple(p for p in files if p.stat().st_size <= family.max_file_bytes
                            and (not family.mutate or any(m in p.name for m in family.mutate)))
            if not targets:
                continue
            fmt = family.fmt or (src.variant if src.variant in known else src.format)
            out.append(Seed(family.name, Path(src.root), files, targets, fmt))
    return tuple(out)


def _seeds(family: Family) -> list[Seed]:
    return list(_seeds_cached(family))


# One line per reader family.  Seeds are small real runs, so that each example is fast.
FAMILIES: list[Family] = [
    Family("pypto-merged", ("pypto/tiny_add/output", "pypto/matmul_add/output",
                            "fixtures/pypto_npu/synthetic_merged_with_aicpu",
                            "fixtures/pypto_npu/synthetic_from_format_doc"),
           mutate=("merged", "bubble", "machine_runtime")),
    Family("pypto-raw", ("pypto/tiny_add/output", "fixtures/pypto_raw/npu_small"),
           fmt="pypto-raw", mutate=("_simulate.swim", "tilefwk", "topo", "program",
                                    "bubble", "perf_data")),
    Family("msprof", ("msprof/bigorange1024-ascendc", "msprof/msopprof",
                      "msprof/msinsight/test/data/pytorch/text/level0",
                      "msprof/msprof-analyze/msprof_analyze/test/resource/advisor",
                      "msprof/tile-ai-tilelang-ascend", "msprof/zouzias-pto-isa-mirror",
                      "msprof/msinsight/server/src/test/test_data/base_info.bin"),
           max_file_bytes=200_000),
    # the database exports (msprof_*.db beside the cannbot text exports, torch_npu's
    # ascend_pytorch_profiler_0.db + analysis.db); only the databases are mutated
    Family("msprof-db", ("msprof/cannbot-ascendc-vs-pypto/operators/matmul/reports/raw/ascendc_b1",
                         "msprof/msinsight/test/data/pytorch/db"),
           fmt="msprof-db", mutate=(".db",), max_file_bytes=700_000),
    Family("ncu-csv", ("ncu/h200-triton-full/triton_full_details.csv",
                       "ncu/h200-triton-full/triton_full_raw.csv")),
    Family("simpler", ("simpler/a2a3sim_tmr_vector_example_L4",
                       "simpler/a2a3sim_tmr_predicated_dispatch_L4",
                       "simpler/a2a3sim_tmr_dummy_task_DenseFanoutFanin_L4",
                       "simpler/a2a3sim_hbg_vector_example_L4",
                       "simpler/a2a3sim_tmr_sync_start_drain_phases_L4",
                       "fixtures/simpler_legacy_l2_name_5_columns",
                       "fixtures/simpler_legacy_us_layout")),
]

# Families too slow for CI's budget; the dedicated run includes them.
SLOW_FAMILIES: list[Family] = [
    Family("ncu-rep", ("ncu/h200-triton-full/triton_full.ncu-rep",), max_file_bytes=3_000_000),
]


def family(name: str) -> Family:
    for f in FAMILIES + SLOW_FAMILIES:
        if f.name == name:
            return f
    raise KeyError(name)


# -- reading seeds ------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def seed_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


@functools.lru_cache(maxsize=None)
def seed_json(path: Path) -> Any:
    try:
        return orjson.loads(seed_bytes(path))
    except orjson.JSONDecodeError:
        return None


@functools.lru_cache(maxsize=None)
def seed_rows(path: Path) -> list[list[str]] | None:
    try:
        text = seed_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    rows = list(csv.reader(io.StringIO(text)))
    return rows if len(rows) >= 2 and len(rows[0]) >= 2 else None


def kind_of(path: Path) -> str:
    data = seed_bytes(path)
    if data[:16] == b"SQLite format 3\x00":
        return "sqlite"
    if seed_json(path) is not None and data.lstrip()[:1] in (b"{", b"["):
        return "json"
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")) and seed_rows(path) is not None:
        return "csv"
    try:
        data.decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "bytes"


# -- mutators -------------------------------------------------------------------------------
# Each takes (data, draw) and returns new bytes; ``draw`` is hypothesis' data.draw.

WEIRD_NUMBERS = [0, -1, -(2**31), 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64,
                 2**70, 1.5, -0.0, 1e-300, 1e308, -1e308, 1.7976931348623157e308]
WEIRD_TEXT = ["", "nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1", "0x10", "１２",
              "\u00e9\u4e2d", "\x00", "a,b", "\"", "9" * 40, "-" * 3, "None", "null", "true"]
WEIRD_VALUES = WEIRD_NUMBERS + WEIRD_TEXT + [None, True, False, [], {}, [1, "a"], {"k": 1}]


def _pos(draw, data: bytes, end_inclusive: bool = True) -> int:
    return draw(st.integers(0, len(data) if end_inclusive else max(0, len(data) - 1)))


def m_truncate(data, draw):
    return data[:_pos(draw, data)]


def m_flip(data, draw):
    if not data:
        return data
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        i = _pos(draw, data, False)
        buf[i] ^= draw(st.integers(1, 255))
    return bytes(buf)


def m_insert(data, draw):
    junk = draw(st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3\x28", b"\xed\xa0\x80", b"\x80",
                                 b",", b"]", b"}", b"{", b"[", b"\"", b"\n", b"\r\n",
                                 b"\xef\xbb\xbf"]) | st.binary(min_size=1, max_size=16))
    i = _pos(draw, data)
    return data[:i] + junk + data[i:]


def m_delete(data, draw):
    i = _pos(draw, data)
    j = draw(st.integers(i, min(len(data), i + 4096)))
    return data[:i] + data[j:]


def m_duplicate(data, draw):
    i = _pos(draw, data)
    j = draw(st.integers(i, min(len(data), i + 4096)))
    k = _pos(draw, data)
    return data[:k] + data[i:j] + data[k:]


def m_bom(data, draw):
    return draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])) + data


def m_empty(data, draw):
    return draw(st.sampled_from([b"", b" ", b"\n", b"\x00" * 8]))


def m_non_utf8(data, draw):
    """Latin-1 / UTF-16 re-encodings of text, or a lone invalid byte in a string."""
    choice = draw(st.sampled_from(["latin1", "utf16", "byte"]))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        choice = "byte"
    if choice == "latin1":
        return (text + "\u00e9").encode("latin-1", "replace")
    if choice == "utf16":
        return text.encode("utf-16")
    i = data.find(b'"', _pos(draw, data))
    i = i + 1 if i >= 0 else _pos(draw, data)
    return data[:i] + b"\xff\xfe\xc0" + data[i:]


def m_gzip(data, draw):
    packed = gzip.compress(data, mtime=0)
    if draw(st.booleans()):
        return packed
    return packed[:draw(st.integers(0, len(packed)))]        # corrupt / cut gzip


def m_other_format(data, draw):
    """Wrong but plausible: another seed file's content, or another JSON shape."""
    pool = _all_seed_files()
    other = draw(st.sampled_from(pool)) if pool else None
    shapes = [b"{}", b"[]", b"null", b"42", b'"text"', b'{"traceEvents": {}}',
              b'{"traceEvents": [42, null, "x", []]}', b"[[[]]]", b"a,b,c\n1,2,3\n",
              b'{"traceEvents": [{"ph": "X"}]}', b"[{}]"]
    if other is not None and draw(st.booleans()):
        return seed_bytes(other)
    return draw(st.sampled_from(shapes))


@functools.lru_cache(maxsize=1)
def _all_seed_files_cached() -> tuple[Path, ...]:
    files = set()
    for fam in FAMILIES:
        for s in fam.seeds():
            files.update(f for f in s.targets if f.stat().st_size <= 200_000)
    return tuple(sorted(files))


def _all_seed_files() -> list[Path]:
    return list(_all_seed_files_cached())


BYTE_MUTATORS: dict[str, Callable] = {
    "truncate": m_truncate, "flip": m_flip, "insert": m_insert, "delete": m_delete,
    "duplicate": m_duplicate, "bom": m_bom, "empty": m_empty, "non_utf8": m_non_utf8,
    "gzip": m_gzip, "other_format": m_other_format,
}


# JSON: mutate the parsed document, then serialize it again.

def _sites(doc: Any, limit: int = 20000) -> list[tuple[Any, Any]]:
    """(container, key) of every value in the document (breadth-first, capped)."""
    out = []
    todo = [doc]
    while todo and len(out) < limit:
        c = todo.pop()
        if isinstance(c, dict):
            items = list(c.items())
        elif isinstance(c, list):
            items = list(enumerate(c))
        else:
            continue
        for k, v in items:
            out.append((c, k))
            if isinstance(v, (dict, list)):
                todo.append(v)
    return out


def _json_dump(doc: Any, draw) -> bytes:
    indent = draw(st.sampled_from([None, 1, 4]))
    return json.dumps(doc, indent=indent, allow_nan=True, ensure_ascii=False).encode(
        "utf-8", "surrogatepass")


def mutate_json(path: Path, draw) -> bytes:
    doc = copy.deepcopy(seed_json(path))
    for _ in range(draw(st.integers(1, 4))):
        sites = _sites(doc)
        if not sites:
            break
        container, key = draw(st.sampled_from(sites))
        op = draw(st.sampled_from(["value", "number", "delete", "dup", "drop_rows", "dup_rows",
                                   "shuffle", "rename", "nan", "type"]))
        value = container[key]
        if op == "value":                     # a copy: the list's own [] and {} stay empty
            container[key] = copy.deepcopy(draw(st.sampled_from(WEIRD_VALUES)))
        elif op == "number":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                container[key] = draw(st.sampled_from(
                    [-value, value * 1000, value + 2**40, value / 3, value * 1e300]
                    if math.isfinite(value) else [0]))
            else:
                container[key] = draw(st.sampled_from(WEIRD_NUMBERS))
        elif op == "nan":
            container[key] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        elif op == "type":
            container[key] = copy.deepcopy(draw(st.sampled_from(
                [str(value), [value], {"v": value}, None])))
        elif op == "delete":
            del container[key]
        elif op == "dup" and isinstance(container, list):
            container.insert(key, copy.deepcopy(value))
        elif op == "rename" and isinstance(container, dict):
            container[str(key) + draw(st.sampled_from(["_", "X", " "]))] = container.pop(key)
        elif isinstance(value, list) and value:
            n = len(value)
            if op == "drop_rows":
                i = draw(st.integers(0, n - 1))
                del value[i:draw(st.integers(i, n))]
            elif op == "dup_rows":
                i = draw(st.integers(0, n - 1))
                value[i:i] = copy.deepcopy(value[i:draw(st.integers(i, min(n, i + 50)))])
            elif op == "shuffle":
                order = draw(st.permutations(range(min(n, 30))))
                value[:len(order)] = [value[i] for i in order]
    return _json_dump(doc, draw)


def mutate_csv(path: Path, draw) -> bytes:
    rows = [list(r) for r in seed_rows(path)]
    for _ in range(draw(st.integers(1, 4))):
        if not rows:
            break
        width = max(len(r) for r in rows) or 1
        op = draw(st.sampled_from(["cell", "drop_row", "dup_row", "drop_col", "dup_col",
                                   "swap_cols", "header", "short_row"]))
        r = draw(st.integers(0, len(rows) - 1))
        c = draw(st.integers(0, width - 1))
        if op == "cell" and c < len(rows[r]):
            rows[r][c] = draw(st.sampled_from(WEIRD_TEXT + [str(x) for x in WEIRD_NUMBERS]))
        elif op == "drop_row":
            del rows[r]
        elif op == "dup_row":
            rows.insert(r, list(rows[r]))
        elif op == "drop_col":
            for row in rows:
                if c < len(row):
                    del row[c]
        elif op == "dup_col":
            for row in rows:
                if c < len(row):
                    row.insert(c, row[c])
        elif op == "swap_cols":
            d = draw(st.integers(0, width - 1))
            for row in rows:
                if c < len(row) and d < len(row):
                    row[c], row[d] = row[d], row[c]
        elif op == "header" and rows[0]:
            rows[0][c % len(rows[0])] = draw(st.sampled_from(["", "Name", "ID", "x"]))
        elif op == "short_row":
            rows[r] = rows[r][:c]
    out = io.StringIO()
    csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def mutate_text(path: Path, draw) -> bytes:
    lines = seed_bytes(path).decode("utf-8").split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "token", "split"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "token":
            parts = lines[i].split(",")
            k = draw(st.integers(0, len(parts) - 1))
            parts[k] = draw(st.sampled_from(WEIRD_TEXT + [str(x) for x in WEIRD_NUMBERS]))
            lines[i] = ",".join(parts)
        else:
            cut = draw(st.integers(0, len(lines[i])))
            lines[i:i + 1] = [lines[i][:cut], lines[i][cut:]]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def mutate_sqlite(path: Path, draw) -> bytes:
    """SQL-level edits of a database export: tables dropped or emptied, rows deleted or
    doubled, cells set to NULL, weird numbers, text or BLOBs, columns renamed, string ids
    and enum rows removed (the bad input the database readers must survive)."""
    import sqlite3
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x.db"
        db.write_bytes(seed_bytes(path))
        c = sqlite3.connect(db)
        tables = sorted(r[0] for r in c.execute(
            "SELECT name FROM sqlite_master WHERE type='table'"))
        for _ in range(draw(st.integers(1, 4))):
            if not tables:
                break
            t = draw(st.sampled_from(tables))
            cols = [r[1] for r in c.execute(f'PRAGMA table_info("{t}")')]
            col = draw(st.sampled_from(cols)) if cols else None
            k = draw(st.integers(1, 7))
            r = draw(st.integers(0, k - 1))
            where = f"WHERE rowid % {k} = {r}"
            op = draw(st.sampled_from(["drop", "empty", "delete", "dup", "null", "value",
                                       "rename", "text"]))
            try:
                if op == "drop":
                    c.execute(f'DROP TABLE "{t}"')
                    tables.remove(t)
                elif op == "empty":
                    c.execute(f'DELETE FROM "{t}"')
                elif op == "delete":
                    c.execute(f'DELETE FROM "{t}" {where}')
                elif op == "dup":
                    c.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}" {where}')
                elif op == "null" and col:
                    c.execute(f'UPDATE "{t}" SET "{col}" = NULL {where}')
                elif op == "value" and col:
                    v = draw(st.sampled_from([x for x in WEIRD_NUMBERS if abs(x) < 2**63]
                                             + ["", "N/A", "abc", b"\x00\xff", 4294967295,
                                                65534, 777]))
                    c.execute(f'UPDATE "{t}" SET "{col}" = ? {where}', (v,))
                elif op == "rename" and col:
                    c.execute(f'ALTER TABLE "{t}" RENAME COLUMN "{col}" TO "{col}_x"')
                elif op == "text" and col:
                    c.execute(f'UPDATE "{t}" SET "{col}" = CAST("{col}" AS TEXT) || "x" '
                              f'{where}')
            except (sqlite3.Error, OverflowError):
                pass
        c.commit()
        c.close()
        return db.read_bytes()


STRUCTURED = {"json": mutate_json, "csv": mutate_csv, "text": mutate_text,
              "sqlite": mutate_sqlite}


def mutate(path: Path, draw) -> tuple[bytes, list[str]]:
    """A mutated copy of the seed file ``path`` and the names of the mutations applied."""
    kind = kind_of(path)
    applied = []
    if kind in STRUCTURED and draw(st.booleans()):
        data = STRUCTURED[kind](path, draw)
        applied.append(kind)
    else:
        data = seed_bytes(path)
    for _ in range(draw(st.integers(0 if applied else 1, 2))):
        name = draw(st.sampled_from(sorted(BYTE_MUTATORS)))
        data = BYTE_MUTATORS[name](data, draw)
        applied.append(name)
    return data, applied


# Whether the mutation tests draw new inputs each run (TRACECVT_FUZZ_RANDOM=1) or the same
# ones (the default: a failure comes back on the next run).
RANDOM = os.environ.get("TRACECVT_FUZZ_RANDOM", "").lower() in ("1", "true", "yes")


def on_mutated(seeds: list, where: Path, check: Callable[[Path, bytes], None],
               targets: Callable[[Any], list] | None = None, share: int = 1) -> None:
    """``check(root, data)`` on mutated copies of ``seeds`` (a family's): each a seed run
    whose file of ``targets(seed)`` (default: its targets) is replaced by ``data``, a
    mutation of it, at ``root`` under ``where``; ``budget() // share`` of them."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=max(1, budget() // share), deadline=None, derandomize=not RANDOM,
              database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        seed = data.draw(st.sampled_from(seeds))
        target = data.draw(st.sampled_from(targets(seed) if targets else seed.targets))
        raw, _ = mutate(target, data.draw)
        check(materialize(seed, target, raw, where / "in"), raw)

    run()


# -- building an input and running the CLI --------------------------------------------------

def read_model(root: Path, fmt: str, workers: int = 1) -> tuple[Any, str | None]:
    """(the model of the one run of ``fmt`` under ``root``, None), or (None, the error's
    text): what a reader gives for a mutated input, to compare two ways of reading it."""
    from tracecvt.errors import TracecvtError
    from tracecvt.readers import ReadOptions
    try:
        (src,) = find_runs(root, fmt)
        return src.read(ReadOptions(workers=workers)), None
    except TracecvtError as e:
        return None, str(e)
    except ValueError as e:                 # find_runs: no run / several runs
        return None, f"{type(e).__name__}: {e}"


def same_reading(a: tuple[Any, str | None], b: tuple[Any, str | None]) -> Any:
    """Two readings of one input (``read_model``'s (model, error) each) are the same: the
    same error, or models alike in every field, warnings included.  Returns the first
    model (None for an error)."""
    from tracecvt.modelfile.compare import model_differences
    (one, error_one), (two, error_two) = a, b
    assert error_one == error_two
    if one is not None:
        assert two.meta.warnings == one.meta.warnings
        assert model_differences(one, two) == []
    return one


def materialize(seed: Seed, target: Path, data: bytes, where: Path) -> Path:
    """A copy of the seed run under ``where``: its files linked (relative to their common
    directory), ``target`` replaced by ``data``.  Returns the path to convert."""
    if where.exists():
        shutil.rmtree(where)
    files = set(seed.files) | {target}
    if seed.root.is_file():
        files.add(seed.root)
    # the root keeps its name (detection may rely on it: PROF_*, *_ascend_pt, ...)
    base = Path(os.path.commonpath([str(f.parent) for f in files] + [str(seed.root.parent)]))
    for f in files:
        dst = where / f.relative_to(base)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if f == target:
            dst.write_bytes(data)
        else:
            dst.symlink_to(f)
    root = where / seed.root.relative_to(base)
    if not seed.root.is_file():
        root.mkdir(parents=True, exist_ok=True)
    return root


@dataclass
class Outcome:
    exit_code: int
    stderr: str
    output: Path
    converted: bool
    warnings: list[str] = field(default_factory=list)


class ContractViolation(AssertionError):
    pass


def run_cli(path: Path, fmt: str | None = None, writer: str = "to-perfetto",
            output: Path | None = None) -> Outcome:
    """Convert ``path`` in-process and check the contract (module docstring)."""
    from tracecvt.validate import validate_path
    suffix = ".pftrace" if writer == "to-perfetto" else ".json"
    output = output or path.parent / ("fuzz-out" + suffix)
    if output.is_dir():
        shutil.rmtree(output)
    elif output.exists():
        output.unlink()
    args = [writer, str(path), "-o", str(output), "--force", "-q"]
    if fmt:
        args += ["--from", fmt]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        raise ContractViolation(f"uncaught {type(exc).__name__}: {exc}\n{tb}")
    stderr = result.stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    if BUG_MARK in stderr:
        raise ContractViolation(f"internal error reported: {stderr.strip()}")
    other = [x for x in lines if not x.startswith(("tracecvt: warning: ", "tracecvt: error: "))]
    if other:
        raise ContractViolation(f"stderr lines that are neither a one-line warning nor a "
                                f"one-line error: {other[:3]}")
    errors = [x for x in lines if x.startswith("tracecvt: error: ")]
    # One input can hold several runs (a mutated file can look like another run): then
    # -o is a folder with one output per run, and each failed run has its own error line,
    # followed by "N of M runs failed".
    outputs = ([output] if output.is_file() else
               sorted(p for p in output.iterdir() if p.is_file()) if output.is_dir() else [])
    if result.exit_code == 0:
        if errors or not outputs:
            raise ContractViolation(f"exit 0 with errors {errors[:2]} or no output")
    elif result.exit_code == 2:
        several = len(errors) > 1 and errors[-1].endswith("runs failed")
        if not errors or (len(errors) > 1 and not several):
            raise ContractViolation(f"exit 2 without exactly one error line per failed run: "
                                    f"{lines[:5]}")
        if not several and (outputs or len(lines) != 1):
            raise ContractViolation(f"a failed conversion left output or said more than one "
                                    f"line: {lines[:5]}")
    else:
        raise ContractViolation(f"exit code {result.exit_code}: {stderr.strip()[:500]}")
    for out in outputs:
        if writer == "to-perfetto":
            report = validate_path(out)
            if not report.ok:
                raise ContractViolation(f"the written trace is invalid:\n{report.text()}")
        else:
            try:
                data = out.read_bytes()
                orjson.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
            except (orjson.JSONDecodeError, OSError, EOFError) as e:
                raise ContractViolation(f"the written JSON does not parse: {e}") from None
    converted = result.exit_code == 0 or bool(outputs)
    return Outcome(result.exit_code, stderr, output, converted,
                   [x for x in lines if x.startswith("tracecvt: warning: ")])


def fuzz_one(fam: Family, draw, where: Path) -> tuple[Outcome, dict]:
    """One generated input of ``fam`` converted under ``where``; returns the outcome and a
    description of the input (for the report)."""
    seeds = fam.seeds()
    seed = draw(st.sampled_from(seeds))
    target = draw(st.sampled_from(seed.targets))
    data, applied = mutate(target, draw)
    path = materialize(seed, target, data, where / "in")
    fmt = seed.fmt if fam.fmt else draw(st.sampled_from([None, seed.fmt]))
    writer = draw(st.sampled_from(["to-perfetto", "to-perfetto", "to-chrome"]))
    info = {"seed": seed.label, "file": target.name, "mutations": applied, "fmt": fmt,
            "writer": writer, "size": len(data)}
    out = where / ("out.pftrace" if writer == "to-perfetto" else "out.json")
    # what is being converted, for a crash no Python code survives (benchmarks/fuzz_run.py)
    (where / "current.json").write_text(json.dumps(info, default=str))
    try:
        return run_cli(path, fmt, writer, out), info
    except ContractViolation as e:
        e.info = info
        keep = os.environ.get("TRACECVT_FUZZ_KEEP")      # a folder to keep failing inputs in
        if keep:
            try:
                Path(keep).mkdir(parents=True, exist_ok=True)
                dst = Path(tempfile.mkdtemp(prefix=f"{fam.name}-", dir=keep))
                shutil.copytree(where / "in", dst, symlinks=True, dirs_exist_ok=True)
                (dst / "FAILURE.txt").write_text(f"{info}\n\n{e}\n")
            except OSError:
                pass
        raise
