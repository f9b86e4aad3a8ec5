"""Reading inputs (transparently gzipped) and writing outputs atomically."""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import orjson

from .errors import InputError, OutputError

GZIP_MAGIC = b"\x1f\x8b"


def find_variant(directory: Path, name: str) -> Path | None:
    """``directory/name`` or its gzipped copy ``name.gz``, whichever exists."""
    for candidate in (directory / name, directory / (name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def logical_name(path: Path) -> str:
    """The file name without a trailing ``.gz``."""
    return path.name[:-3] if path.name.endswith(".gz") else path.name


def read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(path, f"corrupt gzip data ({e})") from None
    return data


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    try:
        with open(path, "rb") as f:
            head = f.read(size)
            if head[:2] == GZIP_MAGIC:
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as g:
                    return g.read(size)
            return head
    except (OSError, EOFError, zlib.error):
        return b""


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start})") from None


def load_json(path: Path, data: bytes | None = None):
    """Parse a JSON file; malformed or truncated content is a one-line InputError."""
    if data is None:
        data = read_bytes(path)
    if not data.strip():
        raise InputError(path, "empty file")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        what = "truncated JSON" if e.pos >= len(data.rstrip()) - 1 else "malformed JSON"
        raise InputError(path, f"{what} at line {e.lineno} column {e.colno}: {e.msg}") from None


def check_output(path: Path, force: bool, inputs: list[Path] = ()) -> None:
    """Refuse to overwrite without ``force`` and never write over an input."""
    resolved = path.resolve()
    if any(resolved == Path(src).resolve() for src in inputs):
        raise OutputError(f"{path}: output would overwrite an input file")
    if path.exists() and not force:
        raise OutputError(f"{path}: already exists (use --force to overwrite)")
    if path.is_dir():
        raise OutputError(f"{path}: is a directory")


@contextmanager
def atomic_output(path: Path, gzip_level: int | None = None) -> Iterator[IO[bytes]]:
    """Write to a temporary file next to ``path`` and rename it into place on success.

    If the writer raises or the process dies, no partial file appears under ``path``.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
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
