"""simpler's records file read by the typed decoder (``readers.simpler.typed.decode``) and
the plain way (orjson, then our checks per row): a file the typed decoder takes gives
exactly the model, warnings included, that the plain way gives.  Checked on every simpler
sample, on mutated samples (tests/fuzzing.py's mutations: numbers past 64 bits, bools,
floats, text, rows of other widths ...) and on pathology fixtures named for what they
show."""

from __future__ import annotations

import shutil

import orjson
import pytest

from tracecvt.readers.simpler import records as records_mod
from tracecvt.readers.simpler import typed
from conftest import SAMPLES
from fuzzing import family, on_mutated, read_model, same_reading


def _read(root, plain: bool, monkeypatch):
    """(model, error) of the simpler run at ``root``; ``plain``: the typed decoder off."""
    with monkeypatch.context() as m:
        if plain:
            m.setattr(typed, "decode", lambda data: None)
        return read_model(root, "simpler")


def _same(root, monkeypatch) -> None:
    same_reading(_read(root, False, monkeypatch), _read(root, True, monkeypatch))


def _records_files(seed):
    return [t for t in seed.targets if t.name.startswith(("chip_swimlane", "l2_swimlane"))
            and t.suffix == ".json"]


def test_every_simpler_sample_reads_the_same_typed_and_plain(monkeypatch):
    seeds = [s for s in family("simpler").seeds() if _records_files(s)]
    assert len(seeds) >= 5
    typed_ones = 0
    for seed in seeds:
        for target in _records_files(seed):
            typed_ones += typed.decode(target.read_bytes()) is not None
        _same(seed.root, monkeypatch)
    assert typed_ones >= 4, "the typed decoder took too few of the samples"


def test_mutated_simpler_records_read_the_same_typed_and_plain(tmp_path_factory, monkeypatch):
    seeds = [s for s in family("simpler").seeds() if _records_files(s)]
    taken = []

    def check(root, raw):
        taken.append(typed.decode(raw) is not None)
        _same(root, monkeypatch)

    on_mutated(seeds, tmp_path_factory.mktemp("typed"), check, _records_files)
    assert any(taken) and not all(taken), "the mutations must reach both ways"


# Pathologies: what the typed decoder must hand to the plain way, or read as it does.
_SAMPLE = "simpler/a2a3sim_tmr_vector_example_L4"


def _edited(tmp_path, edit):
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / _SAMPLE, run)
    (path,) = run.rglob("chip_swimlane_records*.json")
    doc = orjson.loads(path.read_bytes())
    edit(doc)
    # orjson writes no number past 64 bits (nor bytes that are not UTF-8): an edit puts BIG
    # (NOT_UTF8) there, made the number (the bytes) here
    path.write_bytes(orjson.dumps(doc).replace(b'"BIG"', str(2**64).encode())
                     .replace(b"NOT_UTF8", b"\xff\xfe\xc0"))
    return run, path


def _first_phase(doc):
    return next(r for t in doc["aicpu_scheduler_phases"] for r in t)


@pytest.mark.parametrize("name, edit, takes", [
    ("time_past_63_bits", lambda d: d["aicore_tasks"][0].__setitem__(4, 2**63), False),
    ("time_a_bool", lambda d: d["aicore_tasks"][0].__setitem__(0, True), False),
    ("time_a_float", lambda d: _first_phase(d).__setitem__("end_cycles", 1.0), False),
    ("row_of_seven", lambda d: d["aicore_tasks"][0].append(1), True),
    ("end_before_start", lambda d: d["aicpu_tasks"][0].__setitem__(3, 0), True),
    ("loop_iter_past_64_bits", lambda d: _first_phase(d).__setitem__("loop_iter", "BIG"),
     True),
    ("time_past_64_bits", lambda d: _first_phase(d).__setitem__("start_cycles", "BIG"),
     False),
    ("kind_a_number", lambda d: _first_phase(d).__setitem__("kind", 7), True),
    ("unknown_fields", lambda d: _first_phase(d).__setitem__("later_field", [1, {}]), True),
    ("not_utf8_in_a_field_not_kept",
     lambda d: _first_phase(d).__setitem__("later_field", "a NOT_UTF8 b"), False),
    ("utf8_beyond_ascii_in_a_field_not_kept",
     lambda d: _first_phase(d).__setitem__("later_field", "µs → é"), True),
    ("level_zero", lambda d: d.__setitem__("chip_swimlane_level", 0), False),
    ("no_metadata", lambda d: d.pop("metadata"), False),
])
def test_pathology_reads_the_same_typed_and_plain(tmp_path, monkeypatch, name, edit, takes):
    run, path = _edited(tmp_path, edit)
    raw = path.read_bytes()
    assert (typed.decode(raw) is not None) == takes
    _same(run, monkeypatch)


def test_records_hold_the_same_structs_either_way(monkeypatch):
    (path,) = (SAMPLES / _SAMPLE).rglob("chip_swimlane_records*.json")
    fast = records_mod.load_records(path, lambda w: None)
    monkeypatch.setattr(typed, "decode", lambda data: None)
    plain = records_mod.load_records(path, lambda w: None)
    assert fast.sched and all(type(r) is typed.PhaseRecord for t in fast.sched for r in t)
    assert (fast.aicore, fast.aicpu, fast.sched, fast.orch) == \
        (plain.aicore, plain.aicpu, plain.sched, plain.orch)
