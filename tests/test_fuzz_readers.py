"""Property-based fuzzing of every reader family (tests/fuzzing.py, docs/trust.md).

Each example mutates a real sample and converts it: it must convert (a valid trace, losses
as warnings) or fail with one ``tracecvt: error:`` line and exit code 2.  Budget per family:
TRACECVT_FUZZ_EXAMPLES (default 100); ``python benchmarks/fuzz_run.py`` is the dedicated run
of 10,000 per family.  A failure prints the draws that make the input (seed run, file,
mutations); TRACECVT_FUZZ_KEEP=DIR also keeps the failing input files there.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import FAMILIES, budget, family, fuzz_one

# The same inputs on every run (a stable suite); TRACECVT_FUZZ_RANDOM=1 explores new ones,
# as the dedicated run (benchmarks/fuzz_run.py) always does.
RANDOM = os.environ.get("TRACECVT_FUZZ_RANDOM", "").lower() in ("1", "true", "yes")


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_reader_family_survives_mutated_inputs(name, tmp_path_factory):
    fam = family(name)
    assert fam.seeds(), f"no sample runs of {name} found"
    where = tmp_path_factory.mktemp(name)

    @settings(max_examples=budget(), deadline=None, derandomize=not RANDOM,
              database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        fuzz_one(fam, data.draw, where)

    check()


# -- the contract checker itself must be able to fail -----------------------------------------

def _merged_copy(tmp_path):
    from conftest import pypto_sim_dir
    src = pypto_sim_dir("tiny_add") / "merged_swimlane.json"
    dst = tmp_path / "merged_swimlane.json"
    dst.write_bytes(src.read_bytes())
    return dst


def test_contract_accepts_a_clean_conversion_and_a_one_line_error(tmp_path):
    from fuzzing import run_cli
    path = _merged_copy(tmp_path)
    assert run_cli(path).converted
    path.write_bytes(b"{}")
    outcome = run_cli(path, fmt="pypto")
    assert outcome.exit_code == 2 and not outcome.converted


def test_contract_rejects_internal_errors_and_escapes_line_breaks(tmp_path, monkeypatch):
    from tracecvt.errors import InputError
    from tracecvt.readers.pypto import merged
    from fuzzing import ContractViolation, run_cli
    path = _merged_copy(tmp_path)

    def crash(self, events, helper=None):
        raise RuntimeError("boom")
    monkeypatch.setattr(merged.ChromeEventLoader, "load", crash)
    with pytest.raises(ContractViolation, match="internal error"):
        run_cli(path)

    # A message quoting a line break from the input still reaches the user as one line
    # (the CLI escapes it), so it meets the contract.
    def two_lines(self, events, helper=None):
        raise InputError(self.path, "first line\nsecond line")
    monkeypatch.setattr(merged.ChromeEventLoader, "load", two_lines)
    outcome = run_cli(path)
    assert outcome.exit_code == 2 and "first line\\nsecond line" in outcome.stderr


@pytest.mark.no_trace_check          # the trace it writes is broken on purpose
def test_contract_rejects_an_invalid_trace(tmp_path, monkeypatch):
    from tracecvt.writers import perfetto
    from fuzzing import ContractViolation, run_cli
    path = _merged_copy(tmp_path)
    real = perfetto.write_perfetto

    def broken(trace, out, progress=None, workers=1):
        counts = real(trace, out, progress, workers)
        out.write(b"\x0a\x05\x5a\x03\x48\x02\x58")      # a cut-off END packet
        return counts
    monkeypatch.setattr(perfetto, "write_perfetto", broken)
    with pytest.raises(ContractViolation, match="invalid"):
        run_cli(path)
