"""Archives (.zip, .tar, .tar.gz/.tgz, .tar.bz2, .tar.xz) read in place, never unpacked to disk.

An archive is *mounted*: its path then acts as a directory, and ``archive.tar.gz/run1/x.json``
names a member.  ``tracecvt.fileio`` routes every read, listing and test of such a path here,
so readers work on archives without knowing it.

Safety: members with absolute paths, ``..`` components, links or device nodes are refused
(listed in ``Archive.refused``, never readable); a member whose size exceeds ``max_entry``
(default 4 GiB) is refused when read, and reading stops at the limit even if the archive's
declared size lies.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from .errors import InputError

DEFAULT_MAX_ENTRY = 4 << 30          # 4 GiB
_CHUNK = 1 << 20


@dataclass
class Member:
    name: str            # normalised relative POSIX path
    size: int            # declared uncompressed size
    ref: object          # ZipInfo or TarInfo


def sniff(path: Path) -> str | None:
    """'zip' or 'tar' when the file is an archive we can read, else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00":
        # A compressed stream: a tar inside it, or just one compressed file (not an archive).
        try:
            with tarfile.open(path, "r:*") as t:
                return "tar" if t.next() is not None else None
        except (tarfile.TarError, OSError, EOFError):
            return None
    return None


def _safe_name(name: str) -> str | None:
    """The normalised member name, or None when it is absolute or climbs out with '..'."""
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return None
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if any(p == ".." for p in parts):
        return None
    clean = posixpath.normpath("/".join(p for p in parts if p not in ("", ".")))
    return None if clean in ("", ".") else clean


class Archive:
    def __init__(self, path: Path, max_entry: int = DEFAULT_MAX_ENTRY):
        self.path = Path(path)
        self.max_entry = max_entry
        self.kind = sniff(self.path)
        if self.kind is None:
            raise InputError(self.path, "not a zip or tar archive")
        self.members: dict[str, Member] = {}
        self.dirs: dict[str, set[str]] = {"": set()}      # dir -> child names (files and dirs)
        self.refused: list[str] = []
        self._lock = threading.Lock()
        try:
            if self.kind == "zip":
                self._handle = zipfile.ZipFile(self.path)
                self._index_zip()
            else:
                self._handle = tarfile.open(self.path, "r:*")
                self._index_tar()
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as e:
            raise InputError(self.path, f"corrupt {self.kind} archive ({e})") from None

    # -- indexing -----------------------------------------------------------------------
    def _add(self, raw_name: str, size: int, ref: object, is_dir: bool = False) -> None:
        name = _safe_name(raw_name)
        if name is None:
            self.refused.append(f"{raw_name}: path outside the archive (absolute or '..')")
            return
        parts = name.split("/")
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            self.dirs.setdefault(parent, set()).add(parts[i])
        if is_dir:
            self.dirs.setdefault(name, set())
        else:
            self.members[name] = Member(name, size, ref)

    def _index_zip(self) -> None:
        for info in self._handle.infolist():
            self._add(info.filename, info.file_size, info, info.is_dir())

    def _index_tar(self) -> None:
        for info in self._handle:
            if info.isdir():
                self._add(info.name, 0, info, True)
            elif info.isfile():
                self._add(info.name, info.size, info)
            else:
                self.refused.append(f"{info.name}: link or special file, not read")

    # -- queries (rel is a normalised relative path, '' for the root) ---------------------
    def is_file(self, rel: str) -> bool:
        return rel in self.members

    def is_dir(self, rel: str) -> bool:
        return rel in self.dirs and rel not in self.members

    def listdir(self, rel: str) -> list[str]:
        return sorted(self.dirs.get(rel, ()))

    def walk(self, rel: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """Like os.walk over relative paths; dirnames may be pruned in place."""
        stack = [rel]
        while stack:
            d = stack.pop()
            names = self.listdir(d)
            sub = [n for n in names if self.is_dir(_join(d, n))]
            files = [n for n in names if self.is_file(_join(d, n))]
            yield d, sub, files
            stack.extend(_join(d, n) for n in reversed(sub))

    def size(self, rel: str) -> int:
        return self.members[rel].size

    def read(self, rel: str, limit: int | None = None) -> bytes:
        """The member's bytes (at most ``limit`` when given, for sniffing)."""
        m = self.members.get(rel)
        where = f"{self.path}/{rel}"
        if m is None:
            raise InputError(where, "no such member in the archive")
        if limit is None and m.size > self.max_entry:
            raise InputError(where, f"member is {m.size} bytes, over the {_human(self.max_entry)}"
                             " limit for one archive entry (raise it with --max-entry-size)")
        cap = self.max_entry if limit is None else limit
        with self._lock:
            try:
                f = (self._handle.open(m.ref) if self.kind == "zip"
                     else self._handle.extractfile(m.ref))
                chunks, total = [], 0
                with f:
                    while total <= cap:
                        chunk = f.read(min(_CHUNK, cap + 1 - total))
                        if not chunk:
                            break
                        chunks.append(chunk)
                        total += len(chunk)
            except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as e:
                raise InputError(where, f"cannot read from the archive ({e})") from None
        data = b"".join(chunks)
        if limit is not None:
            return data[:limit]
        if len(data) > cap:
            raise InputError(where, f"member expands beyond the {_human(cap)} limit for one "
                             "archive entry (raise it with --max-entry-size)")
        return data

    def close(self) -> None:
        self._handle.close()


def _join(d: str, n: str) -> str:
    return f"{d}/{n}" if d else n


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.4g} {unit}"
        n /= 1024
    return str(n)


# -- the per-entry limit (set by --max-entry-size) and the mount table --------------------
_max_entry = DEFAULT_MAX_ENTRY


def set_max_entry(n: int) -> None:
    global _max_entry
    _max_entry = n


def max_entry() -> int:
    return _max_entry


def parse_size(text: str) -> int:
    """'4GiB', '4G', '512M', '1000' (bytes) -> bytes; binary multiples."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    if mult != 1:
        t = t[:-1]
    value = float(t)
    if not value > 0:
        raise ValueError(text)
    return int(value * mult)


_MOUNTS: dict[str, Archive] = {}


def mount(path: Path, max_entry: int = DEFAULT_MAX_ENTRY) -> Archive:
    """Mount the archive at ``path`` (again if its limit changed); its path becomes a directory."""
    key = os.path.abspath(path)
    a = _MOUNTS.get(key)
    if a is None:
        a = _MOUNTS[key] = Archive(Path(path), max_entry)
    a.max_entry = max_entry
    return a


def unmount_all() -> None:
    for a in _MOUNTS.values():
        a.close()
    _MOUNTS.clear()


def locate(path: Path) -> tuple[Archive, str] | None:
    """(archive, member path) when ``path`` is a mounted archive or lies inside one."""
    if not _MOUNTS:
        return None
    s = os.path.abspath(path)
    for key, a in _MOUNTS.items():
        if s == key:
            return a, ""
        if s.startswith(key) and s[len(key)] == os.sep:
            return a, s[len(key) + 1:].replace(os.sep, "/")
    return None


def archive_of(path: Path) -> Path | None:
    """The archive file holding ``path`` (or being it), if any."""
    hit = locate(path)
    return hit[0].path if hit else None
