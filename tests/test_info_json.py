"""`tracecvt info --json` is machine-readable, so it is typed: every key an identifier, every
figure a JSON number (a clock's ns per unit too, with the exact fraction it is as two
integers), a file's role or path a value, never a key.  The text output says the same as
before."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

from conftest import SAMPLES, cli

FIELD = SAMPLES.parent / "field-samples"
P310B = next((FIELD / "msprof" / "hansheng1001-ascendccontest-310b").rglob("PROF_*"))
SIMPLER = SAMPLES / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L1"
SIM = SAMPLES / "pypto" / "ffn_over_threshold"          # simulation cycles: 5/9 ns each
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NUMBER_LIKE = re.compile(r"[-+]?\d+(?:[./]\d+)?\Z")


def _untyped(doc, where="$"):
    """Where ``doc`` has a key that is no identifier or a number written as a string."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not IDENTIFIER.match(k):
                yield f"{where}: key {k!r}"
            yield from _untyped(v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _untyped(v, f"{where}[{i}]")
    elif isinstance(doc, str) and NUMBER_LIKE.match(doc):
        yield f"{where}: number as a string {doc!r}"


def _info(path: Path) -> list[dict]:
    r = cli("info", path, "--json", "-q")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_info_json_keys_are_identifiers_and_figures_numbers():
    for path in (P310B, SIM, SIMPLER, FIELD / "ncu" / "averyclapp-esmm"):
        for rep in _info(path):
            assert list(_untyped(rep)) == [], path
    (rep,) = _info(P310B)
    # files and files not used: lists of objects, the role and path values
    files = {f["role"]: f["path"] for f in rep["files"]}
    assert Path(files["device_0/info"]).name == "info.json.0"
    assert len(rep["not_used"]) == 54
    assert {"path": str(P310B / "device_0" / "sqlite" / "biu_perf.db"),
            "reason": "empty file"} in rep["not_used"]
    # the clock: a number, and exactly
    assert rep["clock"]["ns_per_unit"] == 1000
    assert (rep["clock"]["ns_per_unit_numerator"], rep["clock"]["ns_per_unit_denominator"]) \
        == (1000, 1)


def test_info_json_clock_of_a_fractional_rate_is_a_number_and_an_exact_fraction():
    from tracecvt.readers import find_runs
    (rep,) = _info(SIM)
    (src,) = find_runs(SIM)
    exact = src.read().meta.clock.ns_per_unit
    clock = rep["clock"]
    assert isinstance(clock["ns_per_unit"], (int, float))
    assert Fraction(clock["ns_per_unit_numerator"], clock["ns_per_unit_denominator"]) == exact
    assert exact == Fraction(5, 9) and clock["ns_per_unit"] == float(exact)
    # the text output is unchanged: the fraction as it always was
    text = cli("info", SIM, "-q").output
    assert f", {exact} ns per unit)" in text
