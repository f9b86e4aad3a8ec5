"""The model archive (.tcmodel): lossless round trip on every shared sample run, exact types
and sharing on a synthetic model, detection, errors, and the writer/reader registration."""

from __future__ import annotations

import gzip
import io
import math
import zlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

from tracecvt.convert import WRITERS, convert_source
from tracecvt.errors import InputError
from tracecvt.model import GROUP, Clock, RunMeta, Trace
from tracecvt.modelfile import END_PREFIX, END_SIZE, MAGIC, pack_crc, sniff
from tracecvt.modelfile import tracecvt_model_pb2 as pb
from tracecvt.modelfile.compare import model_differences, same_value
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.readers.model import load_model
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.model import ModelWriteError, encode_model, write_model
from tracecvt.writers.perfetto import write_perfetto

from conftest import FIELD, FIXTURES, REPO, SAMPLES


# -- the runs to round-trip: discovered at collection time ----------------------------------
def _discover() -> list:
    params = []
    families = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) if SAMPLES.is_dir() \
        else []
    places = [(f"samples/{f}", SAMPLES / f, None) for f in families]
    # The PyPTO fixtures add NPU / AICPU runs (most other fixture folders hold inputs that
    # are meant to be refused).
    places += [("fixtures", p, None) for p in sorted(FIXTURES.glob("pypto_*")) if p.is_dir()]
    # simpler's converter output alone (read as drawn)
    places += [("fixtures", p, None) for p in sorted(FIXTURES.glob("simpler_converter_*"))
               if p.is_dir()]
    places.append(("samples/pypto-raw", SAMPLES / "pypto", "pypto-raw"))
    places += [(f"field/{f.name}", f, None) for f in sorted(FIELD.iterdir()) if f.is_dir()] \
        if FIELD.is_dir() else []
    for label, path, fmt in places:
        try:
            runs = find_runs(path, fmt) if fmt is None else \
                [r for r in find_runs(path) if "swim" in r.files]
        except Exception as e:      # a reader's discovery failing is not ours to hide
            params.append(pytest.param(label, None, fmt, f"finding runs failed: {e}",
                                       id=f"{label}:discovery-failed"))
            continue
        if not runs:
            params.append(pytest.param(label, None, fmt,
                                       "no registered reader finds a run here (yet)",
                                       id=f"{label}:no-runs"))
        for src in runs:
            if fmt:
                src.variant = fmt
            try:
                top = Path(src.root).relative_to(path.parent if label == "fixtures"
                                                 else path).parts[0]
            except (ValueError, IndexError):
                top = src.name
            name = top if top == src.name or top.startswith(src.name) else f"{top}/{src.name}"
            params.append(pytest.param(label, src, fmt, None, id=f"{label}:{name}"))
    return params


RUNS = _discover()


def _roundtrip(trace: Trace, tmp_path: Path, name: str = "run.tcmodel") -> tuple[Trace, Path]:
    path = tmp_path / name
    with open(path, "wb") as f:
        write_model(trace, f)
    (src,) = find_runs(path)
    assert src.format == "model" and src.files == {"model": path}
    return src.read(ReadOptions()), path


@pytest.mark.parametrize("label,src,fmt,why", RUNS)
def test_round_trip_every_sample_run(label, src, fmt, why, tmp_path):
    """source -> model -> file -> model is identical, the file re-encodes to the same bytes,
    and Perfetto / Chrome output from the archive equals output from the source."""
    assert src is not None, f"{label}: {why}"
    original = src.read(ReadOptions())
    loaded, path = _roundtrip(original, tmp_path)
    assert model_differences(original, loaded) == []
    assert encode_model(loaded) == encode_model(original)
    for write in (write_perfetto, write_chrome):
        a, b = io.BytesIO(), io.BytesIO()
        write(original, a)
        write(loaded, b)
        assert a.getvalue() == b.getvalue(), write.__name__
    raw = gzip.decompress(path.read_bytes())
    assert raw.startswith(MAGIC)


@pytest.mark.parametrize("where", [
    REPO / "samples" / "pypto" / "tiny_add",
    SAMPLES / "simpler" / "a2a3sim_tmr_sync_start_drain_phases_L4"])
def test_derived_tracks_round_trip_with_their_copies(where, tmp_path):
    """A model written with the derived tracks in it keeps which critical-path slices copy
    which tasks (``model.COPIES``: every slice of the task, by index), so the .pftrace
    written from the file gives each copy its task's correlation_id as the run itself does;
    the file's model is not given the derived tracks again."""
    from tracecvt.convert import add_derived_tracks
    from tracecvt.model import COPIES
    from tracecvt.same_work import work_ids
    (src,) = find_runs(where)
    original = src.read(ReadOptions())
    add_derived_tracks(original)
    copies = original.meta.extra[COPIES]
    on_path = [i for i, s in enumerate(original.slices) if s.cat == "critical path"
               and s.name != "wait schedule"]
    assert sorted(copies) == on_path
    for c, task in copies.items():
        step = original.slices[c].args["step"]
        assert task == [i for i, s in enumerate(original.slices)
                        if (s.args or {}).get("critical_path_step") == step]
    loaded, _ = _roundtrip(original, tmp_path)
    assert model_differences(original, loaded) == []
    assert loaded.meta.extra[COPIES] == copies
    assert add_derived_tracks(loaded) == {}
    ids = work_ids(loaded)
    assert ids == work_ids(original)
    assert all(ids[c] == ids[i] for c, task in copies.items() for i in task)
    a, b = io.BytesIO(), io.BytesIO()
    write_perfetto(original, a)
    write_perfetto(loaded, b)
    assert a.getvalue() == b.getvalue()


def test_every_pypto_sample_is_covered():
    covered = {src.root for _l, src, *_ in (p.values for p in RUNS) if src is not None}
    for run in sorted((SAMPLES / "pypto").iterdir()):
        if run.is_dir():
            assert any(str(r).startswith(str(run)) for r in covered), run.name


# -- a synthetic model with every feature and edge case --------------------------------------
@dataclass
class _NewerMeta(RunMeta):
    """Stands for a RunMeta that gained a field after format version 1."""
    host: str = ""


_PAIR = [1, 2.5]
OPPROF_RUN = next((SAMPLES / "msprof").glob(
    "tile-ai-tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1/OPPROF_*"))


def _synthetic() -> Trace:
    meta = _NewerMeta("synthetic \udcff run", "pypto", tool="T", tool_version="1.2",
                      device="dev", clock=Clock("cyc", "cycle", Fraction(5, 9), "odd clock"),
                      source_files=["/a/b.json", "/bad/\udce9name"],
                      extra={"tasks": 3, "f": 1.0, "nan": math.nan, "inf": -math.inf,
                             "negzero": -0.0, "big": 1 << 70, "neg_big": -(1 << 64),
                             "u64": (1 << 64) - 1, "t": (1, "x", None), "l": [], "e": {},
                             1: "int key", (2, 3): "tuple key", None: True, 2.5: False,
                             "nested": {"a": [{"b": [1, 2.0, "c", None, True]}]},
                             "twice": [_PAIR, _PAIR], "floats": [math.nan, -0.0, 1e300],
                             "bad_str": ["\udc80"], "u64_in_list": [(1 << 64) - 1],
                             "with_tuple": {"t": (1,)},
                             # as every PyPTO run now (without them, loading adds PyPTO's)
                             "task_graph": True, "label_args": {"semantic_label": "label"},
                             "arg_lines": {"call": ["label"]}},
                      warnings=["w1", "w2 \u2603"], host="node7")
    t = Trace(meta)
    dev = t.add_track("Device", kind=GROUP, description="the device")
    core = t.add_track("core 1", dev, nesting=False)
    t.add_track("core 0", dev, order=-5, derived=True)
    extra = t.add_track("core 1", dev, order=1, description="overlap lane 1 of core 1")
    t.add_track("late root", None, order=-1)
    cnt = t.add_counter("busy", dev, unit="tasks")
    cnt.add(0, 1)
    cnt.add(10, 2)
    fl = t.add_counter("freq", dev, unit="MHz")
    fl.add(5, 1.5)
    fl.add(-3, math.nan)
    mixed = t.add_counter("mixed", None)
    for i, v in enumerate([1, 2.5, True, 1 << 65, None]):
        mixed.add(i, v)
    t.add_counter("empty", None)
    inputs = [{"shape": [2, 3]}]
    shared = {"call": 7, "label": "mm", "hash": (1 << 64) - 2, "inputs": inputs}
    shared2 = {"call": 8, "label": "add", "hash": 1, "inputs": inputs}
    twin = dict(shared2)                   # equal to shared2 but a distinct object
    empty: dict = {}
    t.add_slice(core, 10**17, 500, "a", "task", {"id": 1, "x": 1.0}, shared)
    t.add_slice(core, 10**17 + 600, 50, "b", "task", {"id": 2, "x": 2.5}, shared)
    t.add_slice(core, 10**17 - 10, 5, "c", "", None, shared2)
    t.add_slice(extra, 10**17 + 1, -1, "d", "odd", {"id": 3, "x": "s"}, twin)
    t.add_slice(extra, 0, 0, "e\x00\udc80", "", empty, None)
    t.add_slice(extra, -7, 3, "f", "", empty, empty)
    t.add_slice(core, 5, 1, "g", "", {1: "int key"}, None)
    t.add_slice(core, 6, 1, "h", "", {"n": None, "b": True, "big": 1 << 80,
                                      "tuple": (1, [2, (3,)]), "f": -0.0}, None)
    t.add_slice(core, 7, 1, "i", "", {"n": None, "b": False, "big": 3,
                                      "tuple": [], "f": math.inf}, None)
    t.add_instant(core, 42, "mark", "m", shared)
    t.add_instant(extra, 40, "mark2")
    t.add_flow(0, 1)
    t.add_flow(2, 3, "dep", {"kind": "data"})
    t.add_flow(3, 0, "", shared)
    return t


def test_synthetic_model_round_trips_exactly(tmp_path):
    original = _synthetic()
    loaded, _ = _roundtrip(original, tmp_path)
    assert model_differences(original, loaded) == []
    # The sharing, explicitly.
    s = loaded.slices
    assert s[0].shared_args is s[1].shared_args is loaded.instants[0].args \
        is loaded.flows[2].args
    assert s[2].shared_args is not s[3].shared_args and s[2].shared_args == s[3].shared_args
    assert s[4].args is s[5].args is s[5].shared_args == {}
    assert s[2].args is None
    assert s[0].shared_args["inputs"] is s[2].shared_args["inputs"] is s[3].shared_args["inputs"]
    assert s[7].args["tuple"] is not s[8].args["tuple"]
    # Exact types and values.
    assert loaded.meta.clock == original.meta.clock
    assert type(loaded.meta.clock.ns_per_unit) is Fraction
    extra = loaded.meta.extra
    assert list(extra) == list(original.meta.extra)
    assert extra["t"] == (1, "x", None) and type(extra["t"]) is tuple
    assert extra["big"] == 1 << 70 and extra["neg_big"] == -(1 << 64)
    assert math.isnan(extra["nan"]) and math.copysign(1, extra["negzero"]) < 0
    assert type(extra["f"]) is float and type(extra["tasks"]) is int
    assert loaded.meta.host == "node7"
    assert extra["twice"][0] is extra["twice"][1] and extra["twice"][0] == [1, 2.5]
    assert math.isnan(extra["floats"][0]) and math.copysign(1, extra["floats"][1]) < 0
    assert extra["bad_str"] == ["\udc80"] and extra["u64_in_list"] == [(1 << 64) - 1]
    assert loaded.meta.source_files[1] == "/bad/\udce9name"
    assert s[4].name == "e\x00\udc80"
    assert [type(v) for v in loaded.counters[2].values] == [int, float, bool, int, type(None)]
    assert loaded.counters[3].ts == [] and loaded.counters[3].values == []
    assert loaded.tracks[2].order == -5 and loaded.tracks[2].derived
    assert loaded.roots == original.roots == [0, 4, 7, 8]
    assert loaded.children(0) == original.children(0)


def test_json_containers_only_when_exact():
    """Containers without shared insides and with JSON-exact values are stored as JSON; the
    others item by item."""
    t = _synthetic()
    m = pb.ModelFile.FromString(encode_model(t)[:-END_SIZE])
    c = m.containers
    assert len(c.json) == sum(1 for k in c.kinds if k == pb.JSON) > 0
    assert set(c.kinds) >= {pb.LIST, pb.TUPLE, pb.DICT, pb.DICT_TYPED_KEYS, pb.JSON}
    import orjson
    texts = [orjson.loads(b) for b in c.json]
    assert {"a": [{"b": [1, 2.0, "c", None, True]}]} in texts         # extra["nested"]
    assert [{"shape": [2, 3]}] in texts                                 # the shared inputs
    assert [1, 2.5] in texts and [[1, 2.5], [1, 2.5]] not in texts     # sharing kept
    assert not any(isinstance(x, list) and x and x[0] != x[0] for x in texts)   # no NaN
    assert ["\udc80"] not in texts and [(1 << 64) - 1] not in texts


def test_differences_are_found():
    a, b = _synthetic(), _synthetic()
    assert model_differences(a, b) == []
    b.slices[0].args["x"] = 1                       # int instead of float
    b.slices[1].shared_args = dict(b.slices[1].shared_args)   # sharing broken
    b.tracks[1].children.append(9)
    b.meta.clock = Clock("cyc", "cycle", Fraction(5, 9), "other")
    diffs = model_differences(a, b)
    assert any("slice 0.args" in d for d in diffs)
    assert any("slice 1.shared_args" in d and "not shared" in d for d in diffs)
    assert any("track 1.children" in d for d in diffs)
    assert any("meta.clock.description" in d for d in diffs)
    c = _synthetic()
    c.slices[3].shared_args = c.slices[2].shared_args    # equal dicts merged into one
    assert any("distinct objects" in d for d in model_differences(a, c))
    c = _synthetic()
    c.slices[2].shared_args["inputs"] = list(c.slices[2].shared_args["inputs"])
    assert any("slice 2.shared_args" in d and "not shared" in d
               for d in model_differences(a, c))
    assert not same_value(0.0, -0.0) and same_value(math.nan, math.nan)
    assert not same_value([1], (1,)) and not same_value(True, 1)
    assert not same_value({"a": 1, "b": 2}, {"b": 2, "a": 1})


def test_writer_refuses_what_it_cannot_store():
    t = _synthetic()
    t.slices[0].ts = 1.5
    with pytest.raises(ModelWriteError, match="slice ts"):
        encode_model(t)
    t = _synthetic()
    t.slices[0].args["when"] = object()
    with pytest.raises(ModelWriteError, match="cannot store a object"):
        encode_model(t)
    t = _synthetic()
    t.slices[0].name = 5
    with pytest.raises(ModelWriteError, match="expected a str"):
        encode_model(t)


def test_writing_is_deterministic_and_compact():
    t = _synthetic()
    a, b = io.BytesIO(), io.BytesIO()
    write_model(t, a)
    counts = write_model(t, b)
    assert a.getvalue() == b.getvalue()
    assert counts["slices"] == len(t.slices) and counts["flows"] == 3
    raw = encode_model(t)
    assert raw[-END_SIZE:-4] == END_PREFIX
    # The whole file decodes with the generated class (End record included).
    m = pb.ModelFile.FromString(raw)
    assert m.magic == "tracecvt-model" and m.format_version == 1 and m.HasField("end")
    assert m.end.crc32 == zlib.crc32(raw[:-END_SIZE])


def test_uncompressed_and_gz_named_outputs(tmp_path):
    t = _synthetic()
    plain = tmp_path / "plain.tcmodel"
    with open(plain, "wb") as f:
        write_model(t, f, compresslevel=None)
    assert plain.read_bytes().startswith(MAGIC)
    (src,) = find_runs(plain)
    assert model_differences(t, src.read()) == []
    # An output named .gz is compressed once, by the pipeline, not twice.
    (run,) = find_runs(FIXTURES / "pypto_raw")
    out = tmp_path / "npu.tcmodel.gz"
    result = convert_source(run, "model", out, False, ReadOptions())
    assert gzip.decompress(out.read_bytes()).startswith(MAGIC)
    assert result.counts["slices"] > 0
    (src,) = find_runs(out)
    assert src.format == "model" and src.name == "npu"
    assert model_differences(run.read(), src.read()) == []


# -- registration and detection --------------------------------------------------------------
def test_registered_as_reader_and_writer(tmp_path):
    from tracecvt.readers import READERS, format_names
    assert "model" in format_names()
    assert WRITERS["model"].suffix == ".tcmodel"
    (run,) = find_runs(FIXTURES / "pypto_raw")
    out = tmp_path / "out" / "x.tcmodel"
    convert_source(run, "model", out, False, ReadOptions())
    assert sniff(gzip.decompress(out.read_bytes())[:64])
    # Found in a directory walk by its suffix; by content when named otherwise.
    renamed = tmp_path / "out" / "archive.bin"
    renamed.write_bytes(out.read_bytes())
    runs = find_runs(tmp_path / "out")
    assert [r.name for r in runs] == ["x"]
    (src,) = find_runs(renamed)
    assert src.format == "model" and src.name == "archive"
    assert len(find_runs(tmp_path / "out", "model")) == 2
    assert any(r.formats[0] == "model" for r in READERS)


def test_cli_accepts_a_model_file(tmp_path):
    from click.testing import CliRunner
    from tracecvt.cli import main
    from conftest import decode_pftrace, check_pftrace
    (run,) = find_runs(FIXTURES / "pypto_raw")
    model = tmp_path / "npu.tcmodel"
    convert_source(run, "model", model, False, ReadOptions())
    r = CliRunner().invoke(main, ["to-perfetto", str(model), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = tmp_path / "npu.pftrace"
    check_pftrace(decode_pftrace(out))
    direct = tmp_path / "direct.pftrace"
    convert_source(run, "perfetto", direct, False, ReadOptions())
    assert out.read_bytes() == direct.read_bytes()
    r = CliRunner().invoke(main, ["info", str(model), "--json"], catch_exceptions=False)
    assert r.exit_code == 0 and '"format": "model"' in r.output
    # Writing a model over its own input is refused.
    r = CliRunner().invoke(main, ["to-chrome", str(model), "-o", str(model)])
    assert r.exit_code == 2


# -- malformed, truncated, wrong version -----------------------------------------------------
def _good() -> bytes:
    return encode_model(_synthetic())


def _load_error(tmp_path, data: bytes, name="bad.tcmodel", fmt=None) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as e:
        (src,) = find_runs(path, fmt)
        src.read()
    message = str(e.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize("cut", [0, 5, 16, 17, 40, 0.5, -8, -7, -1])
def test_truncated_files(tmp_path, cut):
    data = _good()
    n = int(len(data) * cut) if isinstance(cut, float) else cut if cut >= 0 \
        else len(data) + cut
    message = _load_error(tmp_path, data[:n], fmt="model")
    assert any(w in message for w in ("truncated", "not a tracecvt model", "corrupt")), message


def test_truncated_gzip_file(tmp_path):
    data = gzip.compress(_good(), 1)
    message = _load_error(tmp_path, data[: len(data) // 2])
    assert "gzip" in message


def test_corrupt_byte_is_caught_by_the_checksum(tmp_path):
    data = bytearray(_good())
    data[len(data) // 2] ^= 0x40
    assert "checksum mismatch" in _load_error(tmp_path, bytes(data))


def _with_crc(body: bytes) -> bytes:
    return body + END_PREFIX + pack_crc(zlib.crc32(body))


def test_wrong_version(tmp_path):
    body = _good()[:-END_SIZE]
    assert body[16:18] == b"\x10\x01"
    message = _load_error(tmp_path, _with_crc(body[:17] + b"\x02" + body[18:]))
    assert "format version 2" in message and "newer tracecvt" in message
    message = _load_error(tmp_path, _with_crc(MAGIC + b"\x1a\x00"))
    assert "no format version" in message


def test_not_a_model_file(tmp_path):
    message = _load_error(tmp_path, b'{"traceEvents": []}', name="x.json", fmt="model")
    assert "not a tracecvt model file" in message


def test_valid_checksum_but_garbage(tmp_path):
    body = _good()[:-END_SIZE]
    # Cut inside a length-delimited field: undecodable protobuf, checksum recomputed.
    message = _load_error(tmp_path, _with_crc(body[: len(body) // 2]))
    assert "corrupt model file" in message


def test_inconsistent_content(tmp_path):
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.slices.ts.append(5)                         # one ts more than slices
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "corrupt model file" in message and "unequal length" in message
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.slices.name[0] = 10**6                      # no such string
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "corrupt model file: IndexError" in message
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.tracks[1].parent = 999
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "does not exist" in message
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.flows.dst[0] = 10**5
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "a flow between slices that do not exist" in message
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.slices.track[0] = 10**5
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "an event on a track that does not exist" in message
    # A container that refers to a later one (children must come first).
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    items = m.containers.items
    assert items.kinds and items.refs
    items.refs[0] = len(m.containers.kinds) + 5
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "corrupt model file: IndexError" in message
    # Container sizes that do not add up to the items stored.
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    m.containers.sizes[0] += 1
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "corrupt model file" in message
    # A mixed column whose kinds ask for more values than it holds.
    m = pb.ModelFile.FromString(_good()[:-END_SIZE])
    col = next(c for g in m.dict_groups for c in g.columns if c.kinds)
    col.kinds.append(1)
    message = _load_error(tmp_path, _with_crc(m.SerializeToString()))
    assert "kinds do not match" in message


def test_load_model_directly():
    t = _synthetic()
    assert model_differences(t, load_model(encode_model(t))) == []
    with pytest.raises(InputError, match="not a tracecvt model file"):
        load_model(b"", "x")
    assert not sniff(b"") and sniff(MAGIC + b"\x10\x01")


def test_read_options_that_cannot_apply_are_reported(tmp_path):
    t = _synthetic()
    path = tmp_path / "x.tcmodel"
    with open(path, "wb") as f:
        write_model(t, f)
    (src,) = find_runs(path)
    loaded = src.read(ReadOptions(clock_mhz=Fraction(50), all_metrics=True))
    new = loaded.meta.warnings[len(t.meta.warnings):]
    assert len(new) == 2 and "--clock-mhz ignored" in new[0] and "--all-metrics" in new[1]
    assert model_differences(t, src.read(ReadOptions())) == []


def test_summary_from_archive_equals_summary_from_source(tmp_path):
    from click.testing import CliRunner
    from tracecvt.cli import main
    (run,) = find_runs(SAMPLES / "pypto" / "softmax_multiseq")
    model = tmp_path / "run.tcmodel"
    convert_source(run, "model", model, False, ReadOptions())
    runner = CliRunner()
    a = runner.invoke(main, ["summary", str(run.root), "-o", "-"], catch_exceptions=False)
    b = runner.invoke(main, ["summary", str(model), "-o", "-"], catch_exceptions=False)
    assert a.exit_code == b.exit_code == 0
    assert a.output == b.output


@pytest.mark.parametrize("run", [SAMPLES / "pypto" / "ffn_medium",
                                 FIXTURES / "pypto_raw" / "npu_small",
                                 SAMPLES / "ncu" / "h200-triton-full"])
def test_model_file_from_before_label_args_keeps_its_label_tables(run, tmp_path):
    """A .tcmodel written before readers declared meta.extra["label_args"] lacks the key:
    a PyPTO one gets the PyPTO reader's declaration on loading (same tables, top tasks and
    shapes as from the source); other formats get nothing added.  Traces never show it."""
    from tracecvt.analyses import analyze
    src = find_runs(run)[0]
    original = src.read(ReadOptions())
    old = src.read(ReadOptions())
    declared = old.meta.extra.pop("label_args", None)
    assert (declared is not None) == (original.meta.format == "pypto")
    loaded, _ = _roundtrip(old, tmp_path)
    a, b = analyze(original).to_dict(), analyze(loaded).to_dict()
    assert a == b
    assert loaded.meta.extra == original.meta.extra         # the key comes last: same dict
    loaded.meta.extra = dict(original.meta.extra)
    assert model_differences(original, loaded) == []
    if declared is not None:
        assert {t["key"] for t in b["time_by_label"]} == {"semantic_label", "leaf_function"}
        assert b["configuration"]["shapes"] and any(t["label"] for t in b["top_tasks"])
    for write in (write_perfetto, write_chrome):
        x, y = io.BytesIO(), io.BytesIO()
        write(original, x)
        write(old, y)
        assert x.getvalue() == y.getvalue(), write.__name__
    assert b"label_args" not in x.getvalue()


@pytest.mark.parametrize("run", [SAMPLES / "pypto" / "ffn_medium",
                                 SAMPLES / "ncu" / "h200-triton-full", OPPROF_RUN])
def test_model_file_from_before_a_declaration_gets_it_on_loading(run, tmp_path):
    """A .tcmodel written before the PyPTO reader declared meta.extra["task_graph"] (and
    "label_args") lacks both keys: a PyPTO one gets both on loading, so its bubbles keep
    their causes and its critical path its dependencies.  One written before the NCU and
    msprof op readers declared "no_bubbles" (msprof op said "timeline": False) gets it back,
    so it still reports no bubbles, with the same reason."""
    from tracecvt.analyses import analyze
    src = find_runs(run)[0]
    original = src.read(ReadOptions())
    old = src.read(ReadOptions())
    popped = [old.meta.extra.pop(k, None) for k in ("task_graph", "label_args", "no_bubbles")]
    pypto = original.meta.format == "pypto"
    if pypto:
        assert popped[0] is not None and popped[1] is not None and popped[2] is None
    else:
        assert popped[:2] == [None, None] and popped[2]
    if original.meta.format == "msprof":
        assert popped[2].startswith("not a timeline")
        old.meta.extra["timeline"] = False          # how older versions said it
        original.meta.extra["timeline"] = False     # kept when loaded
    else:
        assert pypto or "by construction" in popped[2]
    loaded, _ = _roundtrip(old, tmp_path)
    assert loaded.meta.extra == original.meta.extra
    a, b = analyze(original).to_dict(), analyze(loaded).to_dict()
    assert a == b
    if pypto:
        assert b["bubbles"]["cause_model"] == "task graph"


def test_shared_schema_numbers_match_the_generated_classes():
    """modelfile's ContainerKind values and ref field number, which the reader uses before
    it imports protobuf, are the schema's."""
    import tracecvt.modelfile as mf
    from tracecvt.modelfile import tracecvt_model_pb2 as pb
    assert (mf.LIST, mf.TUPLE, mf.DICT, mf.DICT_TYPED_KEYS, mf.JSON) == (
        pb.LIST, pb.TUPLE, pb.DICT, pb.DICT_TYPED_KEYS, pb.JSON)
    assert pb.Column.DESCRIPTOR.fields_by_name["refs"].number == mf.REF
