"""A user's own commands leave outputs in the checkout (the README's first command writes its
trace into samples/); the tests read the checkout's samples through ``checkout_copy``, which
holds what a fresh clone has and nothing the user wrote, in a git clone and in an unpacked
source archive alike."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import tracecvt

from conftest import REPO, checkout_copy, checkout_files

TRACECVT = [sys.executable, "-m", "tracecvt.cli"]


def tracecvt_in(cwd, *args):
    r = subprocess.run([*TRACECVT, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.fixture
def used_clone(tmp_path):
    """A clone of the checkout's samples/ in which the user ran the README's first command
    (`tracecvt to-perfetto samples/pypto/ffn_medium --force`) and then wrote a model file, a
    Chrome trace and summaries of other runs: returns (clone, the files of the clone)."""
    clone = tmp_path / "clone"
    tracked = [f.relative_to(REPO) for f in checkout_files(REPO / "samples")]
    for rel in tracked:
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, clone / rel)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "samples"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "samples"], check=True)
    before = {p for p in (clone / "samples").rglob("*") if p.is_file()}
    tracecvt_in(clone, "to-perfetto", "samples/pypto/ffn_medium", "--force")
    tracecvt_in(clone, "to-model", "samples/pypto/tiny_add")
    tracecvt_in(clone, "to-chrome", "samples/ncu/h200-triton-full/triton_full_raw.csv")
    for fmt in ("md", "json", "html"):
        tracecvt_in(clone, "summary", "samples/simpler", "--format", fmt)
    written = {p for p in (clone / "samples").rglob("*") if p.is_file()} - before
    # what the user's commands left there, next to the runs
    assert {p.name.split(".", 1)[1] for p in written} == {
        "pftrace", "tcmodel", "json", "summary.md", "summary.json", "summary.html"}
    assert any((clone / "samples" / "pypto" / "ffn_medium").glob("output_*.pftrace"))
    return clone, {p.relative_to(clone / "samples") for p in before}


def _check_copy(clone, fresh, tmp_path):
    copy = checkout_copy(clone / "samples", tmp_path / "copy", repo=clone)
    assert {p.relative_to(copy) for p in copy.rglob("*") if p.is_file()} == fresh
    # test_api's test_outputs_are_the_clis_byte_for_byte on this copy: the default output
    # next to the run is free (it was "already exists" with the user's trace copied along)
    (run,) = tracecvt.read(copy / "pypto" / "ffn_medium")
    assert run.to_perfetto() == run.root.parent / (run.name + ".pftrace")
    # and the bundled samples are the 7 runs of a fresh clone (no .tcmodel run beside them)
    r = subprocess.run([*TRACECVT, "info", copy, "--json"], capture_output=True, text=True,
                       timeout=300)
    assert sorted(rep["format"] for rep in json.loads(r.stdout)) == \
        ["ncu", "ncu", "ncu", "pypto", "pypto", "pypto", "simpler"]


def test_copies_of_a_git_clone_leave_the_users_outputs_out(used_clone, tmp_path):
    clone, fresh = used_clone
    _check_copy(clone, fresh, tmp_path)


def test_copies_of_a_source_archive_leave_the_users_outputs_out(used_clone, tmp_path):
    """Without git (an unpacked archive), tracecvt's outputs are told by name and content."""
    clone, fresh = used_clone
    shutil.rmtree(clone / ".git")
    _check_copy(clone, fresh, tmp_path)
