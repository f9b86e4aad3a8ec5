"""Nsight Compute discovery in a folder is by content, as for a single file: a report or a CSV
export is found whatever its name, and a file named like a report that holds something else is
said to be what it is."""

from __future__ import annotations

import shutil

from click.testing import CliRunner

from tracecvt.cli import main
from tracecvt.readers import find_runs

from conftest import SAMPLES

TRITON_DIR = SAMPLES / "ncu" / "h200-triton-full"
MSPROF_CSV_RUN = SAMPLES / "msprof" / "msopprof"

LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               b"size 2211635\n")


def _ncu_runs(path):
    return sorted((s.name, sorted(s.files), s.files[next(iter(s.files))].name)
                  for s in find_runs(path) if s.format == "ncu")


def test_folder_finds_reports_and_csv_exports_by_content_not_name(tmp_path):
    # What users keep: a report without its extension, 'ncu --csv … > details.txt'.
    shutil.copy(TRITON_DIR / "triton_full.ncu-rep", tmp_path / "triton_full")
    shutil.copy(TRITON_DIR / "triton_full_details.csv", tmp_path / "details.txt")
    shutil.copy(TRITON_DIR / "triton_full_raw.csv", tmp_path / "raw.log")
    assert _ncu_runs(tmp_path) == [("details", ["csv"], "details.txt"),
                                   ("raw", ["csv"], "raw.log"),
                                   ("triton_full", ["report"], "triton_full")]
    # Each is the same run its properly named original is: 16 kernels.
    for src in find_runs(tmp_path):
        assert len(src.read().slices) == len(find_runs(TRITON_DIR / "triton_full_raw.csv")[0]
                                             .read().slices)
    # Another family's CSVs (msprof's op summaries) never become an Nsight Compute run.
    assert not [s for s in find_runs(SAMPLES / "msprof") if s.format == "ncu"]


def test_report_named_file_holding_a_git_lfs_pointer_is_said_to_be_one(tmp_path):
    (tmp_path / "triton_full.ncu-rep").write_bytes(LFS_POINTER)
    shutil.copy(TRITON_DIR / "triton_full_raw.csv", tmp_path / "triton_full_raw.csv")
    r = CliRunner().invoke(main, ["info", str(tmp_path)], catch_exceptions=False)
    err = [line for line in r.output.splitlines() if "error:" in line]
    assert len(err) == 1 and "Git LFS pointer to a 2,211,635-byte file" in err[0], r.output
    assert "git lfs pull" in err[0]
    # The CSV export beside it is read in full.
    assert "run triton_full_raw  [ncu/csv]" in r.output and "error" not in r.output.split(
        "run triton_full_raw")[1]
    single = CliRunner().invoke(main, ["to-perfetto", str(tmp_path / "triton_full.ncu-rep"),
                                       "-o", str(tmp_path / "x.pftrace")])
    assert single.exit_code == 2 and len(single.output.strip().splitlines()) == 1
    assert "Git LFS pointer" in single.output and "triton_full.ncu-rep" in single.output
