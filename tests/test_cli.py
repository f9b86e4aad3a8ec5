"""The command line, through click's test runner."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracecvt.readers import find_runs

from conftest import (FIELD, REPO, SHARED, check_pftrace, checkout_copy, decode_pftrace,
                      pftrace_counts, pypto_run_dir)
from conftest import cli as run


def copy_run(name: str, dest: Path) -> Path:
    """A writable copy of a shared PyPTO run directory (output_*/)."""
    src = pypto_run_dir(name)
    target = dest / src.name
    shutil.copytree(src, target, ignore=shutil.ignore_patterns("*.pefetto.*", "*.smartperf.*",
                                                               "pipe_swimlane*", "*.png"))
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target



@pytest.fixture
def tiny(tmp_path):
    return copy_run("tiny_add", tmp_path)


def test_help_lists_commands_and_formats():
    r = run("--help")
    assert r.exit_code == 0
    for word in ("to-perfetto", "to-chrome", "info", "pypto-raw"):
        assert word in r.output
    r = run("to-perfetto", "--help")
    assert "--force" in r.output and "--from" in r.output and "--clock-mhz" in r.output


def test_to_perfetto_default_name_next_to_run(tiny):
    r = run("to-perfetto", tiny, "--no-derived")      # derived tracks: test_summary_cli.py
    assert r.exit_code == 0, r.output
    out = tiny.parent / (tiny.name + ".pftrace")
    assert out.is_file()
    assert str(out) in r.output and "ui.perfetto.dev" in r.output
    pf = decode_pftrace(out)
    check_pftrace(pf)
    assert pftrace_counts(pf)["begin"] == 6
    # no temporary files left behind
    assert not list(tiny.parent.glob(".*.part"))


def test_existing_output_needs_force(tiny):
    assert run("to-perfetto", tiny).exit_code == 0
    out = tiny.parent / (tiny.name + ".pftrace")
    before = out.read_bytes()
    r = run("to-perfetto", tiny)
    assert r.exit_code == 2
    assert "already exists" in r.output and "--force" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert out.read_bytes() == before
    r = run("to-perfetto", tiny, "--force")
    assert r.exit_code == 0


def test_sim_dir_and_merged_file_as_path(tiny, tmp_path):
    r = run("to-perfetto", tiny / "CostModelSimulationOutput", "-o", tmp_path / "a.pftrace",
            "--no-derived")
    assert r.exit_code == 0, r.output
    r = run("to-perfetto", tiny / "CostModelSimulationOutput" / "merged_swimlane.json",
            "-o", tmp_path / "b.pftrace", "--no-derived")
    assert r.exit_code == 0, r.output
    a = pftrace_counts(decode_pftrace(tmp_path / "a.pftrace"))
    b = pftrace_counts(decode_pftrace(tmp_path / "b.pftrace"))
    assert a["begin"] == b["begin"] == 6 and a["flow_ids"] == b["flow_ids"] == 8


def test_to_chrome_default_and_gzip(tiny, tmp_path):
    r = run("to-chrome", tiny, "--no-derived")
    assert r.exit_code == 0, r.output
    out = tiny.parent / (tiny.name + ".json")
    doc = json.loads(out.read_bytes())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == 6
    r = run("to-chrome", tiny, "-o", tmp_path / "t.json.gz", "--no-derived")
    assert r.exit_code == 0, r.output
    doc = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == 6


def test_folder_with_several_runs_gives_one_output_per_run(tmp_path):
    runs = tmp_path / "archive"
    names = [copy_run(n, runs / n).name for n in ("tiny_add", "matmul_add")]
    out = tmp_path / "out"
    r = run("to-perfetto", runs, "-o", out)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == sorted(n + ".pftrace" for n in names)


@pytest.mark.parametrize("command,output", [("to-perfetto", "all.pftrace"),
                                            ("to-chrome", "all.json.gz"),
                                            ("to-model", "all.tcmodel"),
                                            ("summary", "all.summary.md")])
def test_several_runs_into_one_file_is_a_one_line_error(tmp_path, command, output):
    """The field folder holding two real msprof runs, with ``-o`` naming one file: nothing
    is read or written, a one-line error names the folder, its runs and what to give
    instead; a name without a suffix is a folder, made, with one output per run."""
    runs = FIELD / "msprof"
    assert len(find_runs(runs)) == 2
    r = run(command, runs, "-o", str(tmp_path / output), "-q")
    assert r.exit_code == 2
    line = r.output.strip()
    assert "\n" not in line and line.startswith(f"tracecvt: error: {runs}: 2 runs (")
    assert f"cannot go into one file {tmp_path / output}: give a folder" in line
    assert list(tmp_path.iterdir()) == []
    r = run(command, runs, "-o", str(tmp_path / "all"), "-q")
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "all").iterdir())) == 2


@pytest.mark.parametrize("fmt", ["json", "html"])
def test_summaries_of_several_runs_on_stdout_are_refused_where_one_document_is_expected(fmt):
    """``summary -o -`` over two runs: two JSON (or HTML) documents back to back are no
    JSON (or HTML) document a script can read; Markdown documents may follow each other."""
    runs = FIELD / "msprof"
    r = run("summary", runs, "--format", fmt, "-o", "-")
    assert r.exit_code == 2
    assert r.output.strip() == (f"tracecvt: error: {runs}: 2 runs ("
                                f"{', '.join(s.name for s in find_runs(runs))}), and stdout "
                                f"holds one {fmt} document: give a folder with -o, or one run")
    r = run("summary", runs, "--format", "md", "-o", "-")
    assert r.exit_code == 0 and r.output.count("# Profile report: ") == 2


def test_info_reports_runs_tasks_span_tracks(tiny):
    r = run("info", tiny.parent)
    assert r.exit_code == 0, r.output
    assert tiny.name in r.output
    assert "tasks: 6" in r.output
    assert "time span" in r.output and "AIV cores" in r.output
    r = run("info", tiny, "--json")
    (report,) = json.loads(r.output)
    assert report["tasks"] == 6
    assert report["counts"]["flows"] == 8
    # time span straight from the input: first task start .. last task end, in ns
    events = json.loads((tiny / "CostModelSimulationOutput" / "merged_swimlane.json").read_text())
    xs = [e for e in events["traceEvents"] if e["ph"] == "X"]
    first = min(round(e["ts"] * 1000) for e in xs)
    assert report["time_span_ns"][0] == first


def test_bundled_samples_are_found(tmp_path):
    r = run("info", checkout_copy(REPO / "samples", tmp_path / "samples"), "--json")
    assert r.exit_code == 0, r.output
    reports = json.loads(r.output)
    pypto = [rep for rep in reports if rep["format"] == "pypto"]
    ncu = [rep for rep in reports if rep["format"] == "ncu"]
    assert {rep["tasks"] for rep in pypto} == {6, 34, 704}
    assert sorted(rep["run"] for rep in ncu) == ["triton_full", "triton_full_details",
                                                  "triton_full_raw"]
    assert all(rep["tasks"] == 2 for rep in ncu)
    simpler = [rep for rep in reports if rep["format"] == "simpler"]
    assert [(rep["run"], rep["tasks"]) for rep in simpler] == [("a2a3sim_paged_attention", 68)]


def test_bundled_samples_convert(tmp_path):
    samples = checkout_copy(REPO / "samples", tmp_path / "samples")
    r = run("to-perfetto", samples, "-o", tmp_path, "-q")
    assert r.exit_code == 0, r.output
    outs = sorted(tmp_path.glob("*.pftrace"))
    assert len(outs) == 7
    for out in outs:
        check_pftrace(decode_pftrace(out))


# -- errors: one line naming the file, exit code 2 ------------------------------------------

def one_line_error(r, *words):
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    for w in words:
        assert w in lines[0], lines[0]


def test_missing_path(tmp_path):
    one_line_error(run("to-perfetto", tmp_path / "nope"), "nope", "no such file")


def test_unknown_format(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello\n")
    one_line_error(run("to-perfetto", f), "notes.txt", "unknown format")


def test_unknown_from(tiny):
    one_line_error(run("to-perfetto", tiny, "--from", "nvprof"), "unknown format", "nvprof")


def test_empty_folder(tmp_path):
    one_line_error(run("to-perfetto", tmp_path), "no supported run")


def test_truncated_json(tiny, tmp_path):
    """A file cut short converts the events before the cut and says so (issue 7,
    tests/test_truncation.py); cut before its first complete event it is an error."""
    merged = tiny / "CostModelSimulationOutput" / "merged_swimlane.json"
    data = merged.read_bytes()
    merged.write_bytes(data[:15000])
    r = run("to-perfetto", tiny, "-o", tmp_path / "x.pftrace")
    assert r.exit_code == 0, r.output
    assert "merged_swimlane.json: the file ends mid-record at byte 15,000 (cut short)" in r.output
    check_pftrace(decode_pftrace(tmp_path / "x.pftrace"))
    merged.write_bytes(data[:200])
    r = run("to-perfetto", tiny, "-o", tmp_path / "y.pftrace")
    one_line_error(r, "merged_swimlane.json", "truncated JSON")
    assert not (tmp_path / "y.pftrace").exists()


def test_malformed_json(tiny, tmp_path):
    merged = tiny / "CostModelSimulationOutput" / "merged_swimlane.json"
    data = merged.read_bytes()
    merged.write_bytes(data[:5000] + b"}}}garbage" + data[5000:])
    one_line_error(run("to-perfetto", tiny, "-o", tmp_path / "x.pftrace"),
                   "merged_swimlane.json", "malformed JSON")


def test_missing_task_graph_converts_without_flows(tiny, tmp_path):
    (tiny / "CostModelSimulationOutput" / "merged_swimlane.json").unlink()
    for name in ("dyn_topo.txt", "tmp_topo_json.json"):
        (tiny / name).unlink()
    for p in (tiny / "CostModelSimulationOutput").glob("*_simulate.topo.json"):
        p.unlink()
    r = run("to-perfetto", tiny, "-o", tmp_path / "x.pftrace", "--no-derived")
    assert r.exit_code == 0, r.output
    assert "warning" in r.output and "flow" in r.output
    counts = pftrace_counts(decode_pftrace(tmp_path / "x.pftrace"))
    assert counts["begin"] == 6 and counts["flow_ids"] == 0


def test_output_onto_input_is_refused(tiny):
    merged = tiny / "CostModelSimulationOutput" / "merged_swimlane.json"
    before = merged.read_bytes()
    r = run("to-chrome", merged, "-o", merged, "--force")
    one_line_error(r, "overwrite an input")
    assert merged.read_bytes() == before


def test_bad_clock(tiny):
    r = run("to-perfetto", tiny, "--clock-mhz", "fast")
    assert r.exit_code == 2


def test_own_chrome_output_is_not_taken_for_a_run(tiny, tmp_path):
    """to-chrome writes next to the run; converting the folder again must not pick it up."""
    assert run("to-chrome", tiny, "-q").exit_code == 0
    runs = find_runs(tiny.parent)
    assert [r.name for r in runs] == [tiny.name]


def test_no_chrome_output_of_any_family_is_taken_for_a_run(tmp_path):
    """The Chrome JSON of every shared sample (PyPTO, msprof, NCU) is marked as tracecvt's
    and skipped by run discovery, whichever reader would otherwise sniff it."""
    out = tmp_path / "out"
    r = run("to-chrome", REPO.parent / "shared" / "samples", "-o", out, "-q", "--no-derived")
    assert r.exit_code == 0, r.output
    written = sorted(out.glob("*.json"))
    assert len(written) >= 30
    assert find_runs(out) == []
    # Still ordinary Chrome JSON: the marker is one more arg of the first process name.
    first = json.loads(written[0].read_bytes())["traceEvents"][0]
    assert first["name"] == "process_name" and first["args"]["producer"].startswith("tracecvt ")


def test_error_quoting_a_line_break_stays_one_line(tmp_path):
    bad = tmp_path / "we\nird"
    r = run("info", bad)
    assert r.exit_code == 2
    lines = [l for l in r.output.splitlines() if l.strip()]
    assert len(lines) == 1 and "we\\nird" in lines[0]


def test_one_line_escapes_every_line_break():
    from tracecvt.errors import one_line
    text = "a\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k"
    assert len(text.splitlines()) == 11
    assert len(one_line(text).splitlines()) == 1
    assert one_line("x\ny") == "x\\ny"


def test_jobs_sets_the_processes_a_conversion_may_use(tmp_path, monkeypatch):
    """-j 2 (the default on this machine) forks a second process for large runs (here: every
    run, the thresholds lowered); -j 1 never does; the traces are the same bytes."""
    from tracecvt import forkpass
    from tracecvt.readers.pypto import merged
    from tracecvt.writers import perfetto
    src = copy_run("matmul_add", tmp_path / "in")
    monkeypatch.setattr(merged, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    forks = []
    real = forkpass.fork_pass

    def counting(fn, *wire):
        forks.append(1)
        return real(fn, *wire)
    monkeypatch.setattr(merged, "fork_pass", counting)
    monkeypatch.setattr(perfetto, "fork_pass", counting)
    counts = {}
    for jobs in ("1", "2"):
        forks.clear()
        out = tmp_path / f"j{jobs}.pftrace"
        r = run("to-perfetto", str(src), "-o", str(out), "-j", jobs, "-q")
        assert r.exit_code == 0, r.output
        assert len(forks) == (0 if jobs == "1" else 2)      # reader helper + writer part
        counts[jobs] = out.read_bytes()
    assert counts["1"] == counts["2"]
    assert pftrace_counts(decode_pftrace(counts["1"]))["begin"] > 0
    assert run("to-perfetto", str(src), "-j", "0").exit_code == 2


def test_start_up_imports_only_what_the_command_needs():
    """validate (protobuf) and batch are imported when used, rich when a progress bar first
    shows; both lazily loaded commands still take --max-entry-size like the others."""
    import subprocess
    import sys
    code = ("import sys; import tracecvt.cli as c; "
            "print(sorted(m for m in ('tracecvt.validate', 'tracecvt.batch', 'rich', "
            "'google.protobuf') if m in sys.modules)); "
            "ctx = c.click.Context(c.main); "
            "print([n for n in c.main.list_commands(ctx) if not any("
            "p.name == 'max_entry_size' for p in c.main.get_command(ctx, n).params)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(REPO), check=True).stdout
    assert out.splitlines() == ["[]", "[]"]


def test_conversion_imports_only_the_analyses_the_trace_needs(tmp_path):
    """to-perfetto runs the timeline, bubble and critical-path analyses; the summary's
    (findings, labels, ratings, the format checks) are not even imported."""
    tiny = checkout_copy(REPO / "samples" / "pypto" / "tiny_add", tmp_path / "tiny_add")
    out = _after_conversion(tiny, tmp_path / "t.pftrace",
                            "*sorted(m for m in sys.modules if m.startswith('tracecvt.analyses'))")
    assert out.split() == ["tracecvt.analyses"] + [
        f"tracecvt.analyses.{m}" for m in ("bubbles", "critical_path", "derived", "gaps",
                                          "lane_columns", "timeline")]
    assert (tmp_path / "t.pftrace").stat().st_size > 0


@pytest.mark.parametrize("run", [
    REPO / "samples" / "pypto" / "ffn_medium",
    SHARED / "samples" / "msprof" / "msinsight" / "test" / "data" / "pytorch" / "db" / "level0"
    / "rank0_ascend_pt",
    SHARED / "samples" / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L4",
], ids=["pypto", "torch_npu_db", "simpler"])
def test_conversion_leaves_numpy_ma_unimported(run, tmp_path):
    """np.unique of a plain array imports numpy.ma (about 10 ms of a small run's command):
    the conversion's distinct values and look-ups (``tracecvt.distinct``) do without."""
    out = _after_conversion(run, tmp_path / "t.pftrace",
                            "'numpy.ma' in sys.modules, 'numpy' in sys.modules")
    assert out.split() == ["False", "True"]


def _after_conversion(run: Path, out: Path, what: str) -> str:
    """What a fresh process prints (``print(what)``) after ``to-perfetto run -o out``
    in one process."""
    code = ("import sys; import tracecvt.cli as c; "
            f"c.main(['to-perfetto', {str(run)!r}, '-o', {str(out)!r}, '-j', '1', '-q'], "
            f"standalone_mode=False); print({what})")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(REPO), check=True).stdout


def test_progress_bar_shows_after_the_delay_only(monkeypatch):
    """The conversion progress bar (``progress.Reporter``): nothing before DELAY_S, then a bar
    with each stage and its count; disabled, never."""
    import io

    from rich.console import Console

    from tracecvt import progress
    out = io.StringIO()
    r = progress.Reporter(True, Console(file=out, force_terminal=True, width=100))
    r("reading", 5, 10)
    assert r.progress is None
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    r("reading", 7, 10)
    r("writing", 3, 0)
    assert r.progress is not None
    r.progress.refresh()
    r.close()
    assert "reading" in out.getvalue() and "7/10" in out.getvalue()
    assert "writing" in out.getvalue()
    quiet = progress.Reporter(False)
    quiet("reading", 1, 2)
    assert quiet.progress is None and quiet.console is None


def test_progress_bar_shows_a_long_stage_that_tells_nothing_more(monkeypatch):
    """A stage told once before the delay (a reader that reports its file at the start and
    at the end only) gets its bar when the delay is up; work that ends before it, none."""
    import io
    import time

    from rich.console import Console

    from tracecvt import progress
    monkeypatch.setattr(progress, "DELAY_S", 0.2)
    out = io.StringIO()
    r = progress.Reporter(True, Console(file=out, force_terminal=True, width=100))
    r("reading msprof_1.db", 0, 1)
    assert r.progress is None
    for _ in range(100):
        time.sleep(0.05)
        with r.lock:
            if r.tasks:
                break
    with r.lock:
        assert r.progress is not None and list(r.tasks) == ["reading msprof_1.db"]
        r.progress.refresh()
    r.close()
    assert "reading msprof_1.db" in out.getvalue()
    quick = progress.Reporter(True, Console(file=io.StringIO(), force_terminal=True))
    quick("reading", 0, 1)
    quick.close()                       # done before the delay
    time.sleep(0.4)
    assert quick.progress is None and quick.timer is None


def test_a_forked_process_draws_no_bar():
    """After a fork the child's reporters are off, with a lock of their own (one its
    parent's timer thread held at the fork would never be released there)."""
    import os

    from tracecvt import progress
    r = progress.Reporter(True)
    with r.lock:
        pid = os.fork()
        if pid == 0:                                    # the child
            ok = not r.enabled and r.lock.acquire(timeout=5)
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert r.enabled


PIPED = """
import sys
from tracecvt import progress
progress.DELAY_S = 0.0
from tracecvt.cli import main
try:
    main(["to-perfetto", sys.argv[1], "-o", sys.argv[2]])
except SystemExit as e:
    assert e.code in (0, None), e.code
assert not any(m == "rich" or m.startswith("rich.") for m in sys.modules)
"""


def test_no_progress_bar_where_stderr_is_not_a_terminal(tmp_path):
    # A conversion longer than the delay, its stderr piped: nothing there, rich not imported
    done = subprocess.run([sys.executable, "-c", PIPED, str(REPO / "samples" / "pypto" /
                                                         "tiny_add"), str(tmp_path / "t.pftrace")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.startswith("wrote ")


@pytest.mark.parametrize("command,suffix", [("to-perfetto", ".pftrace"),
                                            ("to-chrome", ".json"),
                                            ("summary", ".summary.md")])
def test_output_ending_in_a_separator_is_a_new_folder(tiny, tmp_path, monkeypatch, command,
                                                      suffix):
    """``-o out/`` for a folder that does not exist yet: the output goes into a new folder
    ``out/``, named after the run (as --help says), not into a file named ``out``."""
    monkeypatch.chdir(tmp_path)
    r = run(command, tiny, "-o", "out/", "-q")
    assert r.exit_code == 0, r.output
    out = tmp_path / "out"
    assert out.is_dir()
    assert [p.name for p in out.iterdir()] == [tiny.name + suffix]
    r = run(command, tiny, "-o", str(tmp_path / "file" / "run.x"), "-q")   # no separator:
    assert r.exit_code == 0, r.output                                       # a file name
    assert (tmp_path / "file" / "run.x").is_file()


def test_a_path_inside_a_run_names_the_run(tmp_path):
    """A folder or file of a run given alone (a PROF folder's device_0, its host/info.json)
    is no run: the one-line error names the run it is part of; elsewhere it adds nothing."""
    prof = next((FIELD / "msprof" / "hansheng1001-ascendccontest-310b").rglob("PROF_*"))
    for inside in (prof / "device_0", prof / "host" / "info.json"):
        r = run("info", inside)
        assert r.exit_code == 2
        (line,) = r.output.strip().splitlines()
        assert line.startswith(f"tracecvt: error: {inside}: ")
        assert line.endswith(f"; it is part of the msprof run at {prof}: give that folder")
    alone = tmp_path / "a" / "info.json"
    alone.parent.mkdir()
    alone.write_text("{}")
    r = run("info", alone)
    assert r.exit_code == 2 and "part of" not in r.output
