"""The ``.ncu-rep`` file itself: compression, header check, truncation and producer version.

``ncu_report`` needs a plain file path, so ``.xz``/``.gz`` reports are decompressed to a
temporary file (with a size cap) that is removed when reading is done.

Observed on the reports Nsight Compute 2025.3 writes (not a published specification): the file
starts with the 4 bytes ``NVR\\0`` and is then a sequence of records, each a little-endian
uint32 length followed by that many bytes; the last record ends exactly at the end of the file.
A file that ends inside a record was cut short.  One small record holds the producer's
version as the text ``Nsight Compute Target`` followed by e.g. ``2025.3.1.0 (build
36398880)``.  Both are only used for a warning and for ``tool_version``; ``ncu_report``
reads the content.
"""

from __future__ import annotations

import gzip
import lzma
import os
import re
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ... import archive, fileio
from ...errors import InputError

NVR_MAGIC = b"NVR\x00"
XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
# A decompressed report larger than this is refused (the 1,867-kernel sample is 69 MB).
MAX_DECOMPRESSED = 8 << 30
_CHUNK = 1 << 20
_VERSION_KEY = b"Nsight Compute Target"
_VERSION_RE = re.compile(rb"\d{4}\.\d+\.\d+(?:\.\d+)*(?: \(build \d+\))?")


def compression(head: bytes) -> str | None:
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    return None


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the content, through gzip (fileio) or xz; b"" if unreadable."""
    head = fileio.read_head(path, size)
    if not head.startswith(XZ_MAGIC):
        return head
    try:
        return lzma.LZMADecompressor().decompress(head, size)
    except lzma.LZMAError:
        return b""


@contextmanager
def plain_report(path: Path, cap: int = MAX_DECOMPRESSED) -> Iterator[Path]:
    """A plain report file on disk for ``ncu_report``: ``path`` itself, or a decompressed (or
    extracted from an archive) temporary copy that is removed on exit."""
    in_archive = archive.locate(path) is not None
    kind = None
    if not in_archive:
        try:
            with open(path, "rb") as f:
                kind = compression(f.read(6))
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
        if kind is None:
            yield path
            return
    fd, tmp = tempfile.mkstemp(prefix="tracecvt-ncu-", suffix=".ncu-rep")
    try:
        with os.fdopen(fd, "wb") as out:
            if in_archive:
                _extract(path, out, cap)
            else:
                _decompress(path, kind, out, cap)
        yield Path(tmp)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _extract(path: Path, out, cap: int) -> None:
    """A report inside a mounted archive: its bytes (gunzipped by fileio), unxz'd if needed."""
    data = fileio.read_bytes(path)
    if data.startswith(XZ_MAGIC):
        d = lzma.LZMADecompressor()
        try:
            data = d.decompress(data, cap + 1)
        except lzma.LZMAError as e:
            raise InputError(path, f"corrupt xz data ({e})") from None
        if len(data) > cap:
            raise InputError(path, f"decompresses to more than {cap / 2**30:.1f} GiB; "
                             "decompress it yourself and convert the .ncu-rep")
        if not d.eof:
            raise InputError(path, "truncated xz data (the compressed file is incomplete)")
    try:
        out.write(data)
    except OSError as e:
        raise InputError(path, f"cannot extract to a temporary file: {e.strerror or e}") \
            from None


def _decompress(path: Path, kind: str, out, cap: int) -> None:
    opener = lzma.open if kind == "xz" else gzip.open
    total = 0
    try:
        with opener(path, "rb") as src:
            while True:
                chunk = src.read(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    raise InputError(path, f"decompresses to more than {cap / 2**30:.1f} GiB; "
                                     "decompress it yourself and convert the .ncu-rep")
                try:
                    out.write(chunk)
                except OSError as e:
                    raise InputError(path, "cannot decompress to a temporary file: "
                                     f"{e.strerror or e}") from None
    except (lzma.LZMAError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(path, f"corrupt {kind} data ({e})") from None
    except EOFError:
        raise InputError(path, f"truncated {kind} data (the compressed file is incomplete)") \
            from None
    except OSError as e:
        raise InputError(path, f"cannot read {kind} data: {e.strerror or e}") from None


_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_LFS_SIZE = re.compile(rb"^size (\d+)$", re.M)


def not_a_report(path: Path, head: bytes) -> str:
    """What a file that should be a report (by its name) holds instead, in words, from the
    first bytes of its (decompressed) content."""
    if not head:
        return "empty file, not a Nsight Compute report"
    if head.startswith(_LFS_POINTER):
        m = _LFS_SIZE.search(head)
        size = f" to a {int(m.group(1)):,}-byte file" if m else ""
        return (f"a Git LFS pointer{size}, not a Nsight Compute report (the report itself "
                "was never fetched: run 'git lfs pull' where it was cloned)")
    if b"/annex/objects/" in head[:512] or b".git/annex/" in head[:512]:
        return ("a git-annex pointer, not a Nsight Compute report (run 'git annex get' "
                "where it was cloned)")
    text = head.lstrip()[:64].lower()
    if text.startswith((b"<!doctype html", b"<html")):
        return "an HTML page (a download that failed?), not a Nsight Compute report"
    if b"\0" not in head:
        return "text, not a Nsight Compute report (no 'NVR' file header)"
    return ("not a Nsight Compute report (no 'NVR' file header): the file is corrupt or in "
            "another format")


def check_header(path: Path, shown: Path) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InputError(shown, f"cannot read: {e.strerror or e}") from None
    if head != NVR_MAGIC:
        with open(path, "rb") as f:
            raise InputError(shown, not_a_report(path, f.read(1024)))


def scan_records(path: Path) -> tuple[int | None, str]:
    """(bytes missing from a cut-short last record or None, producer version or "")."""
    version = ""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            pos = 4
            f.seek(pos)
            records = 0
            while pos + 4 <= size:
                n = int.from_bytes(f.read(4), "little")
                end = pos + 4 + n
                if end > size:
                    return (end - size if records >= 2 else None), version
                if not version and n < 4096:
                    data = f.read(n)
                    at = data.find(_VERSION_KEY)
                    if at >= 0:
                        m = _VERSION_RE.search(data, at + len(_VERSION_KEY))
                        if m:
                            version = m.group(0).decode("ascii", "replace")
                else:
                    f.seek(end)
                pos = end
                records += 1
            if pos != size and records >= 2:
                return 4 - (size - pos), version
    except OSError:
        return None, version
    return None, version
