"""Reading inputs (transparently gzipped, on disk or inside a mounted archive) and writing
outputs atomically.

Readers go through the functions here for every read, listing and test of an input path
(never ``open()``, ``Path.is_file()`` or ``Path.glob()`` directly), so that a run inside a
.zip or .tar archive reads exactly like one on disk (see ``tracecvt.archive``).
"""

from __future__ import annotations

import fnmatch
import gzip
import os
import re
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, TypeVar

import orjson

from . import archive
from .errors import InputError, OutputError

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"

# tracecvt's own Chrome JSON carries this in its first metadata event, so a folder that holds
# both runs and their converted outputs is never read twice (writers/chrome.py).
PRODUCER = "tracecvt"
_OWN_MARK = b'"producer":"' + PRODUCER.encode()


def is_own_output(path: Path) -> bool:
    """A JSON file written by tracecvt itself (not an input of any reader)."""
    name = path.name.lower()
    return name.endswith((".json", ".json.gz")) and _OWN_MARK in read_head(path, 1024)


# -- the input tree (disk or mounted archive) ------------------------------------------
def is_file(path: Path) -> bool:
    hit = archive.locate(path)
    return hit[0].is_file(hit[1]) if hit else Path(path).is_file()


def is_dir(path: Path) -> bool:
    hit = archive.locate(path)
    return hit[0].is_dir(hit[1]) if hit else Path(path).is_dir()


def exists(path: Path) -> bool:
    return is_file(path) or is_dir(path) or (archive.locate(path) is None and Path(path).exists())


def listdir(path: Path) -> list[str]:
    """Names in a directory, sorted; empty when it cannot be listed."""
    hit = archive.locate(path)
    if hit:
        return hit[0].listdir(hit[1])
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def glob(directory: Path, pattern: str) -> list[Path]:
    """Files directly in ``directory`` whose name matches ``pattern`` (fnmatch), sorted."""
    return [Path(directory) / n for n in listdir(directory)
            if fnmatch.fnmatchcase(n, pattern) and is_file(Path(directory) / n)]


def walk(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """Like os.walk (top-down, ``dirnames`` may be pruned in place) on disk or in an archive."""
    hit = archive.locate(root)
    if hit is None:
        for dirpath, dirnames, filenames in os.walk(root):
            yield Path(dirpath), dirnames, filenames
        return
    a, rel = hit
    base = a.path
    for d, dirnames, filenames in a.walk(rel):
        yield (base / d if d else base), dirnames, filenames


def file_size(path: Path) -> int:
    hit = archive.locate(path)
    if hit:
        return hit[0].size(hit[1])
    return Path(path).stat().st_size


def _raw_bytes(path: Path, limit: int | None = None) -> bytes:
    hit = archive.locate(path)
    if hit:
        return hit[0].read(hit[1], limit)
    with open(path, "rb") as f:
        return f.read() if limit is None else f.read(limit)


def _gunzip(path: Path, data: bytes, limit: int | None = None) -> bytes:
    """Decompress, refusing to expand beyond the one-entry cap (a gzip bomb)."""
    cap = archive.max_entry() if limit is None else limit
    hit = archive.locate(path)
    if hit and limit is None:
        cap = hit[0].max_entry
    d = zlib.decompressobj(wbits=31)
    out = []
    total = 0
    buf = data
    while buf:
        chunk = d.decompress(buf, max(1, cap + 1 - total))
        out.append(chunk)
        total += len(chunk)
        if total > cap:
            if limit is not None:
                return b"".join(out)[:limit]
            raise InputError(path, f"gzip data expands beyond {cap} bytes; refused")
        buf = d.unconsumed_tail
        if d.eof:
            rest = d.unused_data
            if rest.startswith(GZIP_MAGIC):        # a multi-member gzip file
                d = zlib.decompressobj(wbits=31)
                buf = rest
            elif rest.strip(b"\0"):
                raise zlib.error("trailing garbage after gzip data")
            else:
                break
    if not d.eof and limit is None:
        raise EOFError("compressed file ended before the end-of-stream marker was reached")
    return b"".join(out)


def find_variant(directory: Path, name: str) -> Path | None:
    """``directory/name`` or its gzipped copy ``name.gz``, whichever exists."""
    for candidate in (directory / name, directory / (name + ".gz")):
        if is_file(candidate):
            return candidate
    return None


def logical_name(path: Path) -> str:
    """The file name without a trailing ``.gz``."""
    return path.name[:-3] if path.name.endswith(".gz") else path.name


def read_bytes(path: Path) -> bytes:
    try:
        data = _raw_bytes(path)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = _gunzip(path, data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(path, f"corrupt gzip data ({e})") from None
    return data


# While runs are being found (``heads_kept``): path -> (the whole content?, head), so the
# detectors of several readers sniffing one file read (and gunzip) it once.
_heads: dict[Path, tuple[bool, bytes]] | None = None
_HEAD_KEPT = 8192       # the most any detector asks for: one read serves them all
_HEADS_MAX = 4096       # files kept at once (32 MiB at most; the oldest go first): the
                        # detectors of one folder sniff its files one after the other


# And what ``kept`` was asked for: (what, file, its size and mtime) -> the answer, so a fact
# several detectors need of one file (a database's tables) costs one opening per scan.
_facts: dict[tuple[str, str, int, int], Any] | None = None
_FACTS_MAX = 4096       # answers kept at once (the oldest go first)
T = TypeVar("T")


@contextmanager
def heads_kept() -> Iterator[None]:
    """Within: ``read_head`` and ``kept`` keep what they read, for files that do not change
    meanwhile."""
    global _heads, _facts
    outer = _heads
    if outer is None:
        _heads, _facts = {}, {}
    try:
        yield
    finally:
        if outer is None:
            _heads = _facts = None


def kept(what: str, path: Path, compute: Callable[[Path], T]) -> T:
    """``compute(path)``; within ``heads_kept``, computed once per file (by its resolved path,
    size and mtime: a file changed meanwhile is computed again) and kept for the scan."""
    facts = _facts                      # once: another thread may end its scan meanwhile
    key = None if facts is None else _stamp(path)
    if key is None:
        return compute(path)
    key = (what, *key)
    if key in facts:
        return facts[key]
    value = compute(path)
    if len(facts) >= _FACTS_MAX:
        del facts[next(iter(facts))]
    facts[key] = value
    return value


def _stamp(path: Path) -> tuple[str, int, int] | None:
    """(resolved path, size, mtime in ns) of a file on disk or in a mounted archive (the
    archive's mtime), None where it cannot be stat'ed."""
    try:
        hit = archive.locate(path)
        if hit:
            return (os.path.abspath(path), hit[0].size(hit[1]),
                    os.stat(hit[0].path).st_mtime_ns)
        st = os.stat(path)
        return os.path.realpath(path), st.st_size, st.st_mtime_ns
    except (OSError, KeyError):
        return None


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    kept = _heads                       # once: another thread may end its scan meanwhile
    if kept is None:
        return _read_head(path, size)
    whole, head = kept.get(path, (False, b""))
    if len(head) < size and not whole:
        want = max(size, _HEAD_KEPT)
        head = _read_head(path, want)
        if len(kept) >= _HEADS_MAX and path not in kept:
            del kept[next(iter(kept))]
        kept[path] = (len(head) < want, head)
    return head[:size]


def _read_head(path: Path, size: int) -> bytes:
    try:
        head = _raw_bytes(path, size)
        if head[:2] == GZIP_MAGIC:
            if archive.locate(path) is None:
                with open(path, "rb") as f, gzip.GzipFile(fileobj=f) as g:
                    return g.read(size)
            return _gunzip(path, _raw_bytes(path, 1 << 20), size)
        return head
    except (OSError, EOFError, zlib.error, InputError):
        return b""


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start})") from None


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 throughout (ASCII, the usual profile, is told at once:
    23 ms for 213 MB).  A typed msgspec decoding skips the values of the fields it does not
    keep without checking them, where orjson refuses the whole file: the typed readers ask
    this first, so that a file reads the same whichever parser reads it."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def json_bytes(path: Path, data: bytes | None = None) -> bytes:
    """A JSON file's bytes (``data``, or read from ``path``) without a UTF-8 BOM; an empty
    file is an InputError."""
    if data is None:
        data = read_bytes(path)
    if data[:3] == UTF8_BOM:
        data = data[3:]
    if not data.strip():
        raise InputError(path, "empty file")
    return data


def load_json(path: Path, data: bytes | None = None):
    """Parse a JSON file; malformed or truncated content is a one-line InputError."""
    data = json_bytes(path, data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        what = "truncated JSON" if e.pos >= len(data.rstrip()) - 1 else "malformed JSON"
        raise InputError(path, f"{what} at line {e.lineno} column {e.colno}: {e.msg}") from None


# Structural tokens of JSON: each match is the run of non-bracket text (strings skipped whole,
# possessively) before one bracket.  Matches follow each other without a gap until an
# unterminated string (the cut), so the scan stops there.
_JSON_BRACKET = re.compile(rb'[^][{}"]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^][{}"]*+)*+([][{}])')


@dataclass(frozen=True)
class Truncation:
    """Where a JSON file cut short was read up to."""

    size: int        # bytes in the (decompressed) file
    kept: int        # bytes up to the end of the last complete record
    depth: int       # nesting depth of that record (1: an element of the top-level array)
    complete: bool   # nothing but closing brackets was missing (no record lost)

    def describe(self, records: str = "records") -> str:
        """How the cut was handled, for a warning."""
        if self.complete:
            return (f"the file ends at byte {self.size:,} without its closing brackets (cut "
                    f"short after a complete record); all {records} in it were read")
        return (f"the file ends mid-record at byte {self.size:,} (cut short); the {records} "
                f"complete before byte {self.kept:,} were read, anything after them is lost")


def load_json_records(path: Path, data: bytes | None = None,
                      depths: tuple[int, ...] = (1, 2),
                      rows: bool = False) -> tuple[Any, Truncation | None]:
    """Parse a JSON file whose records (events, tasks) are objects in arrays.

    A file cut short (a writer killed mid-file, a partial copy, a missing closing bracket) is
    read up to its last complete record: an object that is an element of an array nested
    ``d`` deep, ``d`` in ``depths`` (a Chrome trace's events: 1 for a bare array, 2 for
    ``{"traceEvents": [...]}``); with ``rows``, an array there is a record too (a row of a
    table of tuples).  The containers still open there are closed, so whatever
    the file held before the cut is kept.  Returns (document, Truncation or None); content
    that is malformed before the end, or cut before its first record, is an InputError.
    """
    data = json_bytes(path, data)
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as e:
        error = e
    end = len(data.rstrip())
    if error.pos < end - 1:
        raise InputError(path, f"malformed JSON at line {error.lineno} column {error.colno}: "
                         f"{error.msg}") from None
    stack: list[int] = []
    best: tuple[int, tuple[int, ...]] | None = None
    pos = 0
    for m in _JSON_BRACKET.finditer(data):
        if m.start() != pos:
            break                               # inside the string the file was cut in
        pos = m.end()
        c = data[pos - 1]
        if c == 0x7B or c == 0x5B:              # { [
            stack.append(c)
            continue
        if not stack or stack.pop() != (0x7B if c == 0x7D else 0x5B):
            break                               # mismatched: not JSON we can mend
        if (c == 0x7D or rows) and stack and stack[-1] == 0x5B and len(stack) in depths:
            best = (pos, tuple(stack))
    if best is not None:
        kept, open_ = best
        closing = bytes(0x5D if c == 0x5B else 0x7D for c in reversed(open_))
        try:
            doc = orjson.loads(data[:kept] + closing)
        except orjson.JSONDecodeError:
            doc = None
        if doc is not None:
            complete = not data[kept:].strip(b" \t\r\n]}")
            return doc, Truncation(len(data), kept, len(open_), complete)
    raise InputError(path, f"truncated JSON at line {error.lineno} column {error.colno}: "
                     f"{error.msg} (no complete record before the cut)") from None


def check_output(path: Path, force: bool, inputs: list[Path] = ()) -> None:
    """Refuse to overwrite without ``force`` and never write over an input."""
    resolved = path.resolve()
    if any(resolved == Path(src).resolve() or _same_file(path, Path(src)) for src in inputs):
        raise OutputError(f"{path}: output would overwrite an input file")
    if path.exists() and not force:
        raise OutputError(f"{path}: already exists (use --force to overwrite)")
    if path.is_dir():
        raise OutputError(f"{path}: is a directory")


def _same_file(a: Path, b: Path) -> bool:
    """Both name one file on disk (a hard link or symlink to an input too)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _umask() -> int:
    """The process umask, read without changing it where the system allows (threads)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_output(path: Path, gzip_level: int | None = None) -> Iterator[IO[bytes]]:
    """Write to a temporary file next to ``path`` and rename it into place on success.

    The temporary file is ``.<name>.<random>.part`` in the output's directory (hidden, never
    the output's name).  If the writer raises or the process is interrupted, it is removed;
    if the process is killed outright (SIGKILL, power loss) it stays behind, but no partial
    file ever appears under ``path``: the data is fsynced before the rename.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())      # mkstemp makes it 0600; outputs are ordinary
    except OSError:
        pass
    try:
        with os.fdopen(fd, "wb") as raw:
            if gzip_level is not None:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                   compresslevel=gzip_level, mtime=0) as gz:
                    yield gz
            else:
                yield raw
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
