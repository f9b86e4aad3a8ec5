"""Every typed JSON decoding (msgspec: simpler's records and deps.json, PyPTO's
merged_swimlane.json) reads a file with a byte that is not UTF-8 in a field it does not
keep as the plain parser (orjson) does: msgspec skips such a field without checking it,
orjson refuses the whole file (``fileio.is_utf8``).  Also UTF-8 beyond ASCII there reads
alike."""

from __future__ import annotations

import shutil

import orjson
import pytest

from tracecvt.fileio import is_utf8
from tracecvt.readers.pypto import merged
from tracecvt.readers.simpler import deps, typed
from conftest import SAMPLES
from fuzzing import read_model, same_reading

# run folder, the file edited in it, the reader, how the typed decoding is turned off
CASES = {
    "simpler records": ("simpler/a2a3sim_tmr_vector_example_L4", "chip_swimlane_records.json",
                        "simpler", (typed, "decode", lambda data: None)),
    "simpler deps": ("simpler/a2a3sim_tmr_vector_example_L4", "deps.json", "simpler",
                     (deps, "_typed", lambda data: None)),
    "pypto merged": ("pypto/ffn_medium", "merged_swimlane.json", "pypto",
                     (merged, "_typed_events", lambda decoder, data: merged.MALFORMED)),
}


def _edited(tmp_path, case, text: bytes):
    folder, name, fmt, _ = CASES[case]
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / folder, run, symlinks=True)
    (path,) = run.rglob(name)
    doc = orjson.loads(path.read_bytes())
    doc["later_field"] = "EDIT"                  # a field no decoder keeps
    path.write_bytes(orjson.dumps(doc).replace(b"EDIT", text))
    return run, fmt


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("text, utf8", [(b"a \xff\xfe\xc0 b", False),
                                        ("µs → é".encode(), True)])
def test_a_field_not_kept_reads_as_the_plain_parser_reads_it(tmp_path, monkeypatch, case,
                                                             text, utf8):
    run, fmt = _edited(tmp_path, case, text)
    assert is_utf8(text) == utf8
    fast = read_model(run, fmt)
    with monkeypatch.context() as m:
        m.setattr(*CASES[case][3])
        plain = read_model(run, fmt)
    same_reading(fast, plain)
    if case == "simpler deps":                  # deps.json is optional: a warning
        assert utf8 == (not any("deps.json" in w for w in fast[0].meta.warnings))
    else:
        assert (fast[1] is None) == utf8
