"""Every output of every sample run stays byte-identical (issue 26's guard).

Each sample folder is converted in this process (one read, then .pftrace, Chrome JSON and the
md/json/html summaries) and the sha256 of every output is compared with
``tests/golden/outputs.sha256``.  A change to any output fails here; when the change is a fix
you name, write the golden file again with ``tests/golden/update.py`` (it prints what changed)
and say which outputs change and why in the commit message.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
import digests  # noqa: E402

FOLDERS = digests.sample_folders()
GOLDEN = digests.read_golden()


def _label(line: str) -> str:
    return line.split("\t", 1)[0].split("::", 1)[0]


def test_golden_file_covers_every_sample_folder():
    assert GOLDEN, f"{digests.GOLDEN} is missing: run tests/golden/update.py"
    assert sorted({_label(line) for line in GOLDEN}) == sorted(label for label, _ in FOLDERS)


@pytest.mark.parametrize("label,folder", FOLDERS, ids=[label for label, _ in FOLDERS])
def test_outputs_byte_identical(label, folder):
    expected = [line for line in GOLDEN if _label(line) == label]
    got = digests.digest_folder(label, folder)
    changed = sorted(set(got) ^ set(expected))
    assert got == expected, (
        "outputs differ from tests/golden/outputs.sha256 (tests/golden/update.py writes it "
        "again once the change is a named fix):\n" + "\n".join(changed[:20]))
