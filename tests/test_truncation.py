"""Inputs cut short: every real PyPTO sample file cut at ten points converts the complete
records before the cut, exactly those, and says what was lost.

The reference for each cut is an independent one: PyPTO pretty-prints its JSON, so a record
at nesting depth d ends on a line indented d*indent spaces; the file rebuilt from exactly the
records that end before the cut must read into the same model as the cut file.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracecvt.cli import main
from tracecvt.readers import ReadOptions, find_runs

from conftest import PYPTO_MERGED_RUNS, PYPTO_RUNS, check_pftrace, decode_pftrace, \
    pypto_run_dir, pypto_sim_dir

CUTS = 10


def _read_file(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def cut_points(size: int, n: int = CUTS) -> list[int]:
    return [size * i // (n + 1) for i in range(1, n + 1)]


def snapshot(trace) -> dict:
    """Everything a writer would draw, independent of track and slice numbering."""
    def path(t):
        names = []
        while t is not None:
            names.append(trace.tracks[t].name)
            t = trace.tracks[t].parent
        return "/".join(reversed(names))

    def key(s):
        return (path(s.track), s.ts, s.dur, s.name, s.cat,
                json.dumps(s.all_args, sort_keys=True, default=str))

    slices = [key(s) for s in trace.slices]
    return {
        "slices": sorted(slices),
        "flows": sorted((slices[f.src], slices[f.dst]) for f in trace.flows),
        "instants": sorted((path(i.track), i.ts, i.name) for i in trace.instants),
        "counters": sorted((path(c.track), tuple(c.ts), tuple(c.values))
                           for c in trace.counters),
    }


def read_one(path: Path, fmt: str):
    (src,) = find_runs(path, fmt)
    return src.read(ReadOptions())


# -- merged_swimlane.json ---------------------------------------------------------------------

def merged_sample(run: str) -> bytes:
    (path,) = pypto_sim_dir(run).glob("merged_swimlane.json*")
    return _read_file(path)


def event_ends(data: bytes) -> list[int]:
    """End offsets of the traceEvents elements (json.dump(indent=4): depth 2, 8 spaces)."""
    ends = [m.end() for m in re.finditer(rb"\n {8}\}", data)]
    assert len(ends) == len(json.loads(data)["traceEvents"])
    return ends


@pytest.mark.parametrize("run", PYPTO_MERGED_RUNS)
def test_merged_cut_at_ten_points(run, tmp_path):
    data = merged_sample(run)
    events = json.loads(data)["traceEvents"]
    ends = event_ends(data)
    for cut in cut_points(len(data)):
        kept = sum(1 for e in ends if e <= cut)
        cut_file = tmp_path / f"cut{cut}" / "merged_swimlane.json"
        cut_file.parent.mkdir()
        cut_file.write_bytes(data[:cut])
        ref_file = tmp_path / f"ref{cut}" / "merged_swimlane.json"
        ref_file.parent.mkdir()
        ref_file.write_text(json.dumps({"traceEvents": events[:kept]}))
        got = read_one(cut_file, "pypto")
        want = read_one(ref_file, "pypto")
        assert snapshot(got) == snapshot(want), f"cut at byte {cut}"
        notes = [w for w in got.meta.warnings if "cut short" in w]
        assert len(notes) == 1, got.meta.warnings
        assert f"byte {cut:,}" in notes[0] and f"{kept:,} events" in notes[0]
        assert not any("cut short" in w for w in want.meta.warnings)


def test_merged_missing_closing_brackets_or_trailing_comma_loses_nothing(tmp_path):
    """What Perfetto accepts (test_json_incomplete, test_json_trailing_comma)."""
    data = merged_sample("tiny_add")
    full = snapshot(read_one(write(tmp_path / "full", data), "pypto"))
    body = data.rstrip()
    assert body.endswith(b"]\n}")
    for variant in (body[:-1], body[:-3]):
        trace = read_one(write(tmp_path / f"v{len(variant)}", variant), "pypto")
        assert snapshot(trace) == full
        note = [w for w in trace.meta.warnings if "closing brackets" in w]
        assert len(note) == 1 and "all 109 events in it were read" in note[0]
    for variant in (body[:-3].rstrip() + b",", body[:-3].rstrip() + b",\n"):
        trace = read_one(write(tmp_path / f"v{len(variant)}", variant), "pypto")
        assert snapshot(trace) == full
        note = [w for w in trace.meta.warnings if "cut short" in w]
        assert len(note) == 1 and "109 events complete before" in note[0]


def write(directory: Path, data: bytes, name: str = "merged_swimlane.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)
    return directory / name


def test_merged_cut_inside_the_first_event_is_a_one_line_error(tmp_path):
    data = merged_sample("tiny_add")
    f = write(tmp_path, data[:60])
    r = CliRunner().invoke(main, ["to-perfetto", str(f), "--from", "pypto",
                                  "-o", str(tmp_path / "x.pftrace")])
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert "merged_swimlane.json" in line and "truncated JSON" in line
    assert "no complete record" in line
    assert not (tmp_path / "x.pftrace").exists()


def test_merged_cut_through_the_cli_converts_and_warns(tmp_path):
    data = merged_sample("matmul_add")
    cut = len(data) // 2
    f = write(tmp_path / "in", data[:cut])
    out = tmp_path / "x.pftrace"
    r = CliRunner().invoke(main, ["to-perfetto", str(f), "-o", str(out)])
    assert r.exit_code == 0, r.output
    warning = [line for line in r.stderr.splitlines() if "cut short" in line]
    assert len(warning) == 1 and f"mid-record at byte {cut:,}" in warning[0]
    check_pftrace(decode_pftrace(out))


def test_gzipped_merged_cut_short_is_a_corrupt_gzip_error(tmp_path):
    """A cut .gz cannot be decompressed to its end: a one-line error, not a traceback."""
    data = gzip.compress(merged_sample("tiny_add"))
    f = write(tmp_path, data[: len(data) // 2], "merged_swimlane.json.gz")
    r = CliRunner().invoke(main, ["to-perfetto", str(f), "--from", "pypto",
                                  "-o", str(tmp_path / "x.pftrace")])
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and "gzip" in r.output


# -- _simulate.swim.json (the raw path) --------------------------------------------------------

def raw_run(run: str, tmp: Path, swim: bytes) -> Path:
    """A run directory linking to the sample's files, with ``swim`` as its swim file."""
    src = pypto_run_dir(run)
    dst = tmp / src.name
    (dst / "CostModelSimulationOutput").mkdir(parents=True)
    for p in src.iterdir():
        if p.is_file():
            (dst / p.name).symlink_to(p)
    for p in (src / "CostModelSimulationOutput").iterdir():
        if p.is_file() and p.name != "_simulate.swim.json" and "merged" not in p.name:
            (dst / "CostModelSimulationOutput" / p.name).symlink_to(p)
    (dst / "CostModelSimulationOutput" / "_simulate.swim.json").write_bytes(swim)
    return dst


def swim_records(data: bytes) -> tuple[list[int], list[int]]:
    """End offsets of cores (depth 1) and task records (depth 3); PyPTO writes indent=1."""
    cores = [m.end() for m in re.finditer(rb"\n \}", data)]
    tasks = [m.end() for m in re.finditer(rb"\n   \}", data)]
    doc = json.loads(data)
    assert len(cores) == len(doc) and len(tasks) == sum(len(c["tasks"]) for c in doc)
    return cores, tasks


def swim_reference(doc: list, cores: list[int], tasks: list[int], cut: int) -> tuple[list, int]:
    """The cores complete before the cut, plus the core in progress with its complete tasks
    (when it has any); and the number of task records kept."""
    out = []
    task_i = 0
    kept_tasks = 0
    for ci, core in enumerate(doc):
        n = len(core["tasks"])
        if cores[ci] <= cut:
            out.append(core)
            kept_tasks += n
        else:
            done = sum(1 for e in tasks[task_i:task_i + n] if e <= cut)
            if done:
                out.append({**core, "tasks": core["tasks"][:done]})
                kept_tasks += done
            break
        task_i += n
    return out, kept_tasks


@pytest.mark.parametrize("run", PYPTO_RUNS)
def test_swim_cut_at_ten_points(run, tmp_path):
    data = (pypto_sim_dir(run) / "_simulate.swim.json").read_bytes()
    doc = json.loads(data)
    cores, tasks = swim_records(data)
    for cut in cut_points(len(data)):
        ref_doc, kept_tasks = swim_reference(doc, cores, tasks, cut)
        got = read_one(raw_run(run, tmp_path / f"cut{cut}", data[:cut]), "pypto-raw")
        want = read_one(raw_run(run, tmp_path / f"ref{cut}", json.dumps(ref_doc).encode()),
                        "pypto-raw")
        assert snapshot(got) == snapshot(want), f"cut at byte {cut}"
        notes = [w for w in got.meta.warnings if "cut short" in w]
        assert len(notes) == 1, got.meta.warnings
        assert f"byte {cut:,}" in notes[0] and f"{kept_tasks:,} task records" in notes[0]


def test_dyn_topo_cut_mid_line_drops_that_line(tmp_path):
    run = pypto_run_dir("matmul_add")
    text = (run / "dyn_topo.txt").read_bytes()
    cut = text.rindex(b"\n", 0, len(text) // 2) + 7          # a few bytes into a line
    tmp = tmp_path / "r"
    (tmp / "CostModelSimulationOutput").mkdir(parents=True)
    for p in run.iterdir():
        if p.is_file() and p.name != "dyn_topo.txt":
            (tmp / p.name).symlink_to(p)
    (tmp / "CostModelSimulationOutput" / "_simulate.swim.json").symlink_to(
        run / "CostModelSimulationOutput" / "_simulate.swim.json")
    (tmp / "dyn_topo.txt").write_bytes(text[:cut])
    trace = read_one(tmp, "pypto-raw")
    (note,) = [w for w in trace.meta.warnings if "cut short" in w]
    assert "dyn_topo.txt" in note and "dropped" in note
    # the rows before the cut still give flows
    assert trace.flows
