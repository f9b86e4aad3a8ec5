"""Archives as input: runs inside .zip / .tar / .tar.gz read in place, unsafe entries refused."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracecvt import archive, fileio
from tracecvt.cli import main
from tracecvt.convert import add_derived_tracks
from tracecvt.errors import InputError
from tracecvt.readers import find_runs

from conftest import check_pftrace, decode_pftrace, pftrace_counts, pypto_run_dir

RUNS = ("tiny_add", "matmul_add")


def _members() -> dict[str, bytes]:
    """Archive member name -> bytes: two PyPTO runs under runs/<sample>/output_*/."""
    out = {}
    for sample in RUNS:
        run = pypto_run_dir(sample)
        for p in sorted(run.rglob("*")):
            if p.is_file():
                out[f"runs/{sample}/{run.name}/{p.relative_to(run).as_posix()}"] = p.read_bytes()
    return out


def _make(kind: str, path: Path, members: dict[str, bytes], extra=()) -> Path:
    if kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members.items():
                z.writestr(name, data)
            for name, data in extra:
                z.writestr(name, data)
        return path
    mode = {"tar": "w", "tar.gz": "w:gz", "tar.xz": "w:xz"}[kind]
    with tarfile.open(path, mode) as t:
        for name, data in list(members.items()) + list(extra):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(autouse=True)
def _clean_mounts():
    yield
    archive.unmount_all()


@pytest.fixture(scope="module")
def members():
    return _members()


@pytest.mark.parametrize("kind", ["zip", "tar", "tar.gz", "tar.xz"])
def test_runs_in_archive_convert_like_on_disk(tmp_path, members, kind):
    arc = _make(kind, tmp_path / f"runs.{kind}", members)
    before = sorted(os.listdir(tmp_path))
    runs = find_runs(arc)
    assert sorted(r.name for r in runs) == sorted(pypto_run_dir(s).name for s in RUNS)
    for src in runs:
        assert src.archive == arc
        on_disk = next(r for r in find_runs(pypto_run_dir(src.root.parent.name)))
        a, b = src.read(), on_disk.read()
        assert len(a.slices) == len(b.slices) > 0
        assert [(s.ts, s.dur, s.name) for s in a.slices] == \
               [(s.ts, s.dur, s.name) for s in b.slices]
        assert len(a.flows) == len(b.flows)
        assert a.meta.extra.get("pypto_bubble_log") == b.meta.extra.get("pypto_bubble_log")
    # Nothing was unpacked next to the archive.
    assert sorted(os.listdir(tmp_path)) == before


def test_cli_converts_an_archive_next_to_it(tmp_path, members):
    arc = _make("tar.gz", tmp_path / "old_runs.tar.gz", members)
    r = CliRunner().invoke(main, ["to-perfetto", str(arc), "-q"])
    assert r.exit_code == 0, r.output
    outs = sorted(tmp_path.glob("*.pftrace"))
    assert len(outs) == 2
    for out in outs:
        trace = decode_pftrace(out)
        check_pftrace(trace)
        direct = find_runs(pypto_run_dir(next(s for s in RUNS if
                                              pypto_run_dir(s).name == out.stem)))[0].read()
        add_derived_tracks(direct)          # on by default in to-perfetto
        assert pftrace_counts(trace)["begin"] == len(direct.slices)


def test_unsafe_entries_are_refused_and_reported(tmp_path, members):
    evil = b'{"traceEvents": []}'
    arc = _make("tar", tmp_path / "evil.tar", members,
                extra=[("../escape/merged_swimlane.json", evil),
                       ("/abs/merged_swimlane.json", evil)])
    with tarfile.open(arc, "a") as t:
        link = tarfile.TarInfo("runs/link.json")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        t.addfile(link)
    runs = find_runs(arc)
    assert len(runs) == 2
    mounted = archive.mount(arc)
    assert len(mounted.refused) == 3
    assert all(".." not in m.split("/") and not m.startswith("/") for m in mounted.members)
    assert not fileio.is_file(arc / "runs" / "link.json")
    warnings = runs[0].read().meta.warnings
    refused = [w for w in warnings if "refused archive entry" in w]
    assert len(refused) == 3 and any("../escape" in w for w in refused)
    assert not (tmp_path.parent / "escape").exists()


def test_zip_entries_climbing_out_are_refused(tmp_path, members):
    arc = _make("zip", tmp_path / "evil.zip", members, extra=[("a/../../x.json", b"{}")])
    find_runs(arc)
    assert any("a/../../x.json" in line for line in archive.mount(arc).refused)


def test_entry_over_the_size_limit_is_refused(tmp_path, members):
    arc = _make("zip", tmp_path / "runs.zip", members)
    runs = find_runs(arc, max_entry=10_000)
    with pytest.raises(InputError) as e:
        for src in runs:
            src.read()
    assert "limit for one archive entry" in str(e.value)
    assert "--max-entry-size" in str(e.value)


def test_member_lying_about_its_size_stops_at_the_limit(tmp_path):
    # A gzip member that expands far beyond the cap (a small "bomb").
    bomb = gzip.compress(b"\0" * 5_000_000)
    arc = _make("zip", tmp_path / "bomb.zip", {"d/merged_swimlane.json.gz": bomb})
    archive.mount(arc, max_entry=1_000_000)
    with pytest.raises(InputError) as e:
        fileio.read_bytes(arc / "d" / "merged_swimlane.json.gz")
    assert "expands beyond" in str(e.value)


def test_corrupt_archive_is_one_line_error(tmp_path, members):
    arc = _make("zip", tmp_path / "runs.zip", members)
    data = bytearray(arc.read_bytes())
    arc.write_bytes(bytes(data[: len(data) // 2]))      # central directory lost
    r = CliRunner().invoke(main, ["info", str(arc)])
    assert r.exit_code == 2
    lines = [l for l in r.output.splitlines() if l.strip()]
    assert len(lines) == 1 and str(arc) in lines[0]


def test_safe_name_rules():
    assert archive._safe_name("a/b/../c") is None
    assert archive._safe_name("/etc/passwd") is None
    assert archive._safe_name("C:\\x") is None
    assert archive._safe_name("./a//b/") == "a/b"


def test_archives_inside_a_folder_of_runs_are_found(tmp_path, members):
    _make("zip", tmp_path / "a.zip", members)
    sub = tmp_path / "older"
    sub.mkdir()
    _make("tar.gz", sub / "b.tar.gz", {k: v for k, v in members.items() if "tiny_add" in k})
    runs = find_runs(tmp_path)
    assert len(runs) == 3
    assert len({r.name for r in runs}) == 3           # names made unique
    assert sorted(r.archive.name for r in runs) == ["a.zip", "a.zip", "b.tar.gz"]


def test_cli_max_entry_size_option(tmp_path, members):
    arc = _make("zip", tmp_path / "runs.zip", members)
    r = CliRunner().invoke(main, ["info", str(arc), "--max-entry-size", "10K"])
    assert r.exit_code == 2
    assert "limit for one archive entry" in r.output and "runs.zip" in r.output
    r = CliRunner().invoke(main, ["info", str(arc), "--max-entry-size", "lots"])
    assert r.exit_code == 2 and "not a size" in r.output
    # The limit does not leak into the next command.
    r = CliRunner().invoke(main, ["info", str(arc)])
    assert r.exit_code == 0, r.output


def test_parse_size():
    assert archive.parse_size("4GiB") == 4 << 30
    assert archive.parse_size("512M") == 512 << 20
    assert archive.parse_size("1000") == 1000
    with pytest.raises(ValueError):
        archive.parse_size("-1")


def test_finding_runs_reads_each_file_head_once(tmp_path, monkeypatch):
    """Several readers sniff the same files (tracecvt's own output, msprof, PyPTO): while
    runs are found, a file's head is read (and gunzipped) once; outside, every time."""
    reads: list[Path] = []
    real = fileio._read_head

    def counting(path, size):
        reads.append(Path(path))
        return real(path, size)

    monkeypatch.setattr(fileio, "_read_head", counting)
    (src,) = find_runs(pypto_run_dir("ffn_medium"))
    assert src.format == "pypto" and reads
    assert len(reads) == len(set(reads))
    assert any(p.name.endswith(".gz") for p in reads)

    f = tmp_path / "a.json"
    big = b"[" + b"1," * 10_000 + b"1]"
    f.write_bytes(big)
    with fileio.heads_kept():
        assert fileio.read_head(f, 4) == b"[1,1"
        f.write_bytes(b"[changed]")
        assert fileio.read_head(f, 8192) == big[:8192]     # kept: not read again
        assert fileio.read_head(f, 9000) == b"[changed]"   # more than kept: read again
        f.write_bytes(big)
        assert fileio.read_head(f, 20_000) == b"[changed]"  # the whole file is kept
    assert fileio._heads is None and fileio.read_head(f, 3) == b"[1,"
    n = len(reads)
    fileio.read_head(f, 3)
    assert len(reads) == n + 1


def test_file_heads_kept_during_a_scan_are_bounded(tmp_path, monkeypatch):
    """A scan of a huge tree keeps at most _HEADS_MAX heads (the oldest go first), so its
    memory does not grow with the number of files."""
    monkeypatch.setattr(fileio, "_HEADS_MAX", 3)
    files = []
    for k in range(5):
        files.append(tmp_path / f"{k}.json")
        files[-1].write_bytes(b"[%d]" % k)
    with fileio.heads_kept():
        for f in files:
            assert fileio.read_head(f, 4) == f.read_bytes()
            assert len(fileio._heads) <= 3
        assert list(fileio._heads) == files[2:]
        assert fileio.read_head(files[0], 4) == b"[0]"      # read again after it went
