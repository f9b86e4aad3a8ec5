"""tracecvt batch: outputs, index, resumability, failures (local engine)."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracecvt.batch import batch
from tracecvt.batch import index as batch_index
from tracecvt.convert import convert_source
from tracecvt.readers import ReadOptions, find_runs

from conftest import REPO, check_pftrace, decode_pftrace, pftrace_counts, pypto_run_dir



def copy_run(name: str, dest: Path) -> Path:
    """A writable copy of a shared PyPTO run directory (output_*/) inside ``dest``."""
    src = pypto_run_dir(name)
    target = dest / src.name
    shutil.copytree(src, target, ignore=shutil.ignore_patterns(
        "*.pefetto.*", "*.smartperf.*", "pipe_swimlane*", "*.png", "kernel_*"))
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target


def run(*args):
    return CliRunner().invoke(batch, [str(a) for a in args], catch_exceptions=False)


def merged(run_dir: Path) -> Path:
    return run_dir / "CostModelSimulationOutput" / "merged_swimlane.json"


@pytest.fixture
def archive(tmp_path):
    """tiny_add and matmul_add, plus a copy of tiny_add with a corrupt merged file."""
    root = tmp_path / "archive"
    runs = {"tiny": copy_run("tiny_add", root / "tiny_add"),
            "matmul": copy_run("matmul_add", root / "matmul_add"),
            "broken": copy_run("tiny_add", root / "broken")}
    m = merged(runs["broken"])
    data = m.read_bytes()
    m.write_bytes(data[:5000] + b"}}}garbage" + data[5000:])
    return root, runs


def rows_by_dir(out: Path) -> dict[str, dict]:
    doc = json.loads((out / "index.json").read_text())
    return {r["source"].split("/")[0]: r for r in doc["runs"]}


def outputs(row: dict) -> dict[str, str]:
    """A row's outputs (index version 2: a list of {target, path}) by target."""
    return {o["target"]: o["path"] for o in row["outputs"]}


def outputs_of(out: Path) -> dict[str, float]:
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns
            for p in out.rglob("*") if p.is_file() and not p.name.startswith("index.")}


def test_converts_every_run_lists_the_bad_one(archive, tmp_path):
    root, runs = archive
    out = tmp_path / "out"
    r = run(root, "-o", out, "-j", "2", "--to", "perfetto,chrome")
    assert r.exit_code == 2, r.output
    assert "1 of 3 runs failed" in r.output
    assert "malformed JSON" in r.output and "merged_swimlane.json" in r.output

    rows = rows_by_dir(out)
    assert set(rows) == {"tiny_add", "matmul_add", "broken"}
    for key, n_tasks in (("tiny", 6), ("matmul", 34)):
        run_dir = runs[key]
        rel = run_dir.relative_to(root).as_posix()
        row = rows[rel.split("/")[0]]
        assert list(row) == list(batch_index.ROW_KEYS)
        assert row["status"] == "converted" and row["error"] is None
        assert row["source"] == rel and row["run"] == run_dir.name
        assert row["format"] == "pypto" and row["variant"] == "merged"
        assert row["tasks"] == n_tasks and row["makespan_ns"] > 0
        assert 0 < row["utilization_pct"] <= 100 and 0 <= row["bubble_rate_pct"] <= 100
        assert row["bottleneck"] and row["figures_note"] is None
        assert row["outputs"] == [{"target": "perfetto", "path": rel + ".pftrace"},
                                  {"target": "chrome", "path": rel + ".json"}]
        # the same bytes as a direct conversion of the run
        (src,) = find_runs(run_dir)
        direct = tmp_path / "direct" / key
        for writer, suffix in (("perfetto", ".pftrace"), ("chrome", ".json")):
            convert_source(src, writer, direct.with_suffix(suffix), True, ReadOptions())
            assert (out / (rel + suffix)).read_bytes() == direct.with_suffix(suffix).read_bytes()
        pf = decode_pftrace(out / (rel + ".pftrace"))
        check_pftrace(pf)
        assert pftrace_counts(pf) == pftrace_counts(decode_pftrace(direct.with_suffix(".pftrace")))
        assert pftrace_counts(pf)["begin"] >= n_tasks       # tasks, and derived slices
        doc = json.loads((out / (rel + ".json")).read_bytes())
        assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") >= n_tasks
        # makespan: first task start .. last task end of the input, in ns
        xs = [e for e in json.loads(merged(run_dir).read_text())["traceEvents"]
              if e["ph"] == "X"]
        if key == "tiny":
            first = min(round(e["ts"] * 1000) for e in xs)
            last = max(round((e["ts"] + e["dur"]) * 1000) for e in xs)
            assert abs(row["makespan_ns"] - (last - first)) <= 2

    bad = rows["broken"]
    assert bad["status"] == "failed" and bad["outputs"] == []
    assert "malformed JSON" in bad["error"] and "\n" not in bad["error"]
    assert not list((out / "broken").rglob("*")) if (out / "broken").exists() else True

    doc = json.loads((out / "index.json").read_text())
    assert doc["tracecvt_batch_index"] == 2 and doc["targets"] == ["perfetto", "chrome"]
    assert (doc["runs_total"], doc["runs_converted"], doc["runs_failed"]) == (3, 2, 1)
    assert [r["source"] for r in doc["runs"]] == sorted(r["source"] for r in doc["runs"])
    # no temporary files anywhere
    assert not [p for p in out.rglob("*.part")]


def test_index_html_links_resolve(archive, tmp_path):
    root, _ = archive
    out = tmp_path / "out"
    run(root, "-o", out, "-j", "1", "--to", "chrome,perfetto")
    page = (out / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    links = re.findall(r'href="([^"]+)"', page)
    assert len(links) == 4
    for link in links:
        assert not link.startswith(("/", "http")), link
        assert (out / link).is_file(), link
    assert "malformed JSON" in page and "broken/" in page
    assert "<script" not in page and "stylesheet" not in page  # self-contained


def _keys_not_identifiers(doc, where="$"):
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                yield f"{where}: {k!r}"
            yield from _keys_not_identifiers(v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _keys_not_identifiers(v, f"{where}[{i}]")


def test_index_keys_are_identifiers_and_a_batch_resumes_over_a_version_1_index(archive,
                                                                               tmp_path):
    """Output kinds such as 'summary-json' are values of a list, not keys (index version 2);
    a batch resumed over an index an older tracecvt wrote (version 1, outputs keyed by kind)
    keeps its runs' figures and writes version 2; over an index of an unknown version it says
    the figures are missing."""
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    to = "perfetto,summary-json"
    assert run(root, "-o", out, "--to", to).exit_code == 0
    doc = json.loads((out / "index.json").read_text())
    assert doc["tracecvt_batch_index"] == 2
    assert list(_keys_not_identifiers(doc)) == []
    rows = rows_by_dir(out)
    assert [o["target"] for o in rows["tiny_add"]["outputs"]] == ["perfetto", "summary-json"]
    figures = {k: {f: r[f] for f in batch_index.FIGURES} for k, r in rows.items()}
    assert figures["tiny_add"]["tasks"] == 6 and figures["matmul_add"]["tasks"] == 34
    # the index as version 1 wrote it
    old = {**doc, "tracecvt_batch_index": 1,
           "runs": [{**r, "outputs": outputs(r)} for r in doc["runs"]]}
    (out / "index.json").write_text(json.dumps(old))
    r = run(root, "-o", out, "--to", to)
    assert r.exit_code == 0 and "0 converted, 2 skipped" in r.output, r.output
    doc = json.loads((out / "index.json").read_text())
    assert doc["tracecvt_batch_index"] == 2 and list(_keys_not_identifiers(doc)) == []
    rows = rows_by_dir(out)
    assert {k: {f: r[f] for f in batch_index.FIGURES} for k, r in rows.items()} == figures
    assert outputs(rows["matmul_add"])["summary-json"].endswith(".summary.json")
    # an index of a version this tracecvt does not know: no figures taken from it
    (out / "index.json").write_text(json.dumps({**old, "tracecvt_batch_index": 99}))
    assert run(root, "-o", out, "--to", to).exit_code == 0
    for row in rows_by_dir(out).values():
        assert row["status"] == "skipped" and row["tasks"] is None
        assert "not in the previous index.json" in row["figures_note"]


def test_second_call_skips_force_redoes_touch_redoes_one(archive, tmp_path):
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    assert run(root, "-o", out, "-j", "2").exit_code == 0
    first = outputs_of(out)
    tasks = {k: r["tasks"] for k, r in rows_by_dir(out).items()}
    assert len(first) == 2

    r = run(root, "-o", out, "-j", "2")
    assert r.exit_code == 0, r.output
    assert r.output.count("skipped") >= 2 and "up to date; --force to redo" in r.output
    assert "0 converted, 2 skipped" in r.output
    assert outputs_of(out) == first
    rows = rows_by_dir(out)
    assert {r["status"] for r in rows.values()} == {"skipped"}
    assert {k: r["tasks"] for k, r in rows.items()} == tasks      # figures kept
    assert all(r["makespan_ns"] for r in rows.values())

    time.sleep(0.01)
    r = run(root, "-o", out, "-j", "2", "--force")
    assert r.exit_code == 0 and "2 converted, 0 skipped" in r.output
    again = outputs_of(out)
    assert all(again[k] > first[k] for k in first)

    # touching one input redoes that run only
    later = time.time() + 5
    os.utime(runs["matmul"] / "dyn_topo.txt", (later, later))
    r = run(root, "-o", out, "-j", "2")
    assert r.exit_code == 0, r.output
    assert "1 converted, 1 skipped" in r.output
    now = outputs_of(out)
    for k in now:
        assert (now[k] > again[k]) == k.startswith("matmul_add/"), k
    rows = rows_by_dir(out)
    assert rows["matmul_add"]["status"] == "converted"
    assert rows["tiny_add"]["status"] == "skipped"

    # a new output kind is missing: the run is redone (read once, both written)
    r = run(root, "-o", out, "-j", "1", "--to", "perfetto,chrome")
    assert "2 converted" in r.output


def test_up_to_date_without_previous_index_says_why(archive, tmp_path):
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    run(root, "-o", out)
    (out / "index.json").unlink()
    r = run(root, "-o", out)
    assert r.exit_code == 0
    for row in rows_by_dir(out).values():
        assert row["status"] == "skipped" and row["tasks"] is None
        assert "--force" in row["figures_note"]


def test_same_named_runs_mirror_the_tree(tmp_path):
    root = tmp_path / "archive"
    a = copy_run("tiny_add", root / "a")
    b = copy_run("tiny_add", root / "deeper" / "b")
    out = tmp_path / "out"
    r = run(root, "-o", out, "-q")
    assert r.exit_code == 0, r.output
    assert r.output == ""
    assert (out / "a" / (a.name + ".pftrace")).is_file()
    assert (out / "deeper" / "b" / (b.name + ".pftrace")).is_file()
    rows = json.loads((out / "index.json").read_text())["runs"]
    assert [r["run"] for r in rows] == [a.name, b.name]


def test_archive_dir_is_itself_a_run(tmp_path):
    run_dir = copy_run("tiny_add", tmp_path)
    out = tmp_path / "out"
    r = run(run_dir, "-o", out)
    assert r.exit_code == 0, r.output
    (row,) = json.loads((out / "index.json").read_text())["runs"]
    assert row["source"] == "." and outputs(row) == {"perfetto": run_dir.name + ".pftrace"}
    assert (out / (run_dir.name + ".pftrace")).is_file()


def test_out_dir_inside_archive(archive):
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = root / "converted"
    assert run(root, "-o", out, "--to", "perfetto,chrome").exit_code == 0
    r = run(root, "-o", out, "--to", "perfetto,chrome")
    assert r.exit_code == 0 and "2 runs: 0 converted, 2 skipped" in r.output


def test_out_dir_around_archive(archive, tmp_path):
    """OUT_DIR may hold the archive (outputs land beside it), but may not be it."""
    root, runs = archive
    shutil.rmtree(runs["broken"])
    r = run(root, "-o", root)
    assert r.exit_code == 2 and "subfolder" in r.output
    r = run(root, "-o", root.parent)
    assert r.exit_code == 0 and "2 converted" in r.output
    assert (root.parent / "tiny_add" / (runs["tiny"].name + ".pftrace")).is_file()


@pytest.mark.parametrize("death, jobs, ending", [
    ("exit", "2", "ended (exit code 9)"),                 # -j 2: the other worker goes on
    ("kill", "1", "was killed by SIGKILL (out of memory?)"),  # a new worker takes its place
])
def test_worker_death_fails_only_that_run(archive, tmp_path, monkeypatch, death, jobs, ending):
    """A run that kills its worker process (out of memory, a crash) fails alone, with the
    exit code or signal named; the runs after it are converted."""
    import signal

    import tracecvt.batch.job as job
    import tracecvt.batch.local as local
    real = job.run_job

    def dying(spec):
        if spec["rel"].startswith("matmul_add"):
            if death == "exit":
                os._exit(9)
            os.kill(os.getpid(), signal.SIGKILL)
        return real(spec)

    monkeypatch.setattr(job, "run_job", dying)
    monkeypatch.setattr(local, "IN_PROCESS_SERIAL", False)     # -j 1 in a worker too
    root, _ = archive
    out = tmp_path / "out"
    r = run(root, "-o", out, "-j", jobs)
    assert r.exit_code == 2
    rows = rows_by_dir(out)
    assert rows["matmul_add"]["status"] == "failed"
    assert rows["matmul_add"]["error"].endswith(": the worker process converting it " + ending)
    assert rows["tiny_add"]["status"] == "converted" and rows["tiny_add"]["tasks"]
    assert rows["broken"]["status"] == "failed" and "malformed" in rows["broken"]["error"]
    assert "2 of 3 runs failed" in r.output
    assert not multiprocessing.active_children()


def test_fewer_runs_than_jobs_use_the_cpus_left_free(tmp_path, monkeypatch):
    """With fewer runs than -j, a run may use two processes, as to-perfetto does: the
    writer's second process writes the source tracks while this one makes the derived
    tracks.  The trace is the one to-perfetto writes that way."""
    from tracecvt.batch.local import run_processes
    from tracecvt.writers import perfetto
    assert [run_processes(j, n) for j, n in ((1, 1), (2, 1), (2, 2), (4, 2), (4, 3), (8, 1))] \
        == [1, 2, 1, 2, 1, 2]
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)     # fork even for a small run
    real = perfetto.write_perfetto
    calls = tmp_path / "calls"

    def watching(trace, out, progress=None, workers=1, enrich=None):
        with open(calls, "a") as f:         # the worker process cannot report through memory
            f.write(f"{workers} {enrich is not None}\n")
        return real(trace, out, progress, workers, enrich)

    monkeypatch.setattr(perfetto, "write_perfetto", watching)
    run_dir = copy_run("matmul_add", tmp_path / "archive" / "matmul_add")
    r = run(tmp_path / "archive", "-o", tmp_path / "out", "-j", "2")
    assert r.exit_code == 0, r.output
    assert calls.read_text().splitlines() == ["2 True"]
    (row,) = json.loads((tmp_path / "out" / "index.json").read_text())["runs"]
    assert row["status"] == "converted" and row["tasks"] == 34 and row["bottleneck"]
    (src,) = find_runs(run_dir)
    direct = tmp_path / "direct.pftrace"
    convert_source(src, "perfetto", direct, True, ReadOptions(), workers=2)
    assert (tmp_path / "out" / outputs(row)["perfetto"]).read_bytes() == direct.read_bytes()
    assert calls.read_text().splitlines() == ["2 True"] * 2


def test_archive_is_scanned_in_another_process_while_this_one_imports(archive, tmp_path,
                                                                     monkeypatch):
    """-j 2: the scan runs in a forked process while this one imports what the jobs need
    (the workers forked afterwards inherit it); -j 1 scans here.  Both give the same rows,
    and a scan that fails there fails here with its own one-line error."""
    import tracecvt.batch.command as command
    real = command.plan
    pids = tmp_path / "pids"

    def watching_plan(*args, **kwargs):
        with open(pids, "a") as f:      # the forked scan cannot report through memory
            f.write(f"{os.getpid()}\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(command, "plan", watching_plan)
    root, _ = archive
    for jobs in (2, 1):
        r = run(root, "-o", tmp_path / f"out{jobs}", "-j", str(jobs))
        assert r.exit_code == 2 and "1 of 3 runs failed" in r.output
    scanned_in = [int(x) for x in pids.read_text().split()]
    assert len(scanned_in) == 2
    assert scanned_in[0] != os.getpid() and scanned_in[1] == os.getpid()
    assert ({k: v["status"] for k, v in rows_by_dir(tmp_path / "out2").items()}
            == {k: v["status"] for k, v in rows_by_dir(tmp_path / "out1").items()})
    assert not multiprocessing.active_children()

    r = run(tmp_path / "nope", "-o", tmp_path / "out3", "-j", "2")
    assert r.exit_code == 2 and r.output.strip().count("\n") == 0
    assert "nope: no such file" in r.output


# -- errors and options ----------------------------------------------------------------

def test_no_runs_is_one_line_error(tmp_path):
    (tmp_path / "empty").mkdir()
    r = run(tmp_path / "empty", "-o", tmp_path / "out")
    assert r.exit_code == 2
    assert r.output.strip().count("\n") == 0 and "no supported run" in r.output


def test_missing_archive(tmp_path):
    r = run(tmp_path / "nope", "-o", tmp_path / "out")
    assert r.exit_code == 2 and "no such file" in r.output


def test_output_is_required_and_kinds_checked(archive, tmp_path):
    root, _ = archive
    assert run(root).exit_code == 2
    r = run(root, "-o", tmp_path / "out", "--to", "perfetto,pdf")
    assert r.exit_code == 2 and "pdf" in r.output and "available" in r.output


def test_dask_needs_scheduler_and_package(archive, tmp_path, monkeypatch):
    root, _ = archive
    r = run(root, "-o", tmp_path / "out", "--engine", "dask")
    assert r.exit_code == 2 and "--scheduler" in r.output
    r = run(root, "-o", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:1")
    assert r.exit_code == 2 and "--engine dask" in r.output
    import sys
    monkeypatch.setitem(sys.modules, "distributed", None)      # as if not installed
    r = run(root, "-o", tmp_path / "out", "--engine", "dask", "--scheduler", "tcp://x:1")
    assert r.exit_code == 2
    assert "pip install 'tracecvt[dask]'" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_progress_bar_counts_runs_failures_and_rate():
    from rich.console import Console

    from tracecvt.batch.command import _Display
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    d = _Display(3, quiet=False, console=console)
    assert d.progress is not None
    d.advance(False)
    d.advance(True)
    d.progress.refresh()
    d.close()
    text = buf.getvalue()
    assert "2/3" in text and "1 failed" in text and "runs/s" in text
    # not a terminal, or -q: no bar
    assert _Display(3, quiet=True).progress is None
    assert _Display(3, False, Console(file=io.StringIO())).progress is None


def test_failing_analysis(archive, tmp_path, monkeypatch):
    """Without derived tracks a failed analysis only costs the figures; with them (the
    default, as in to-perfetto) the run fails with a one-line error, and the others go on."""
    import tracecvt.analyses

    def boom(trace):
        raise ValueError("no")

    monkeypatch.setattr(tracecvt.analyses, "analyze", boom)
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    r = run(root, "-o", out, "-j", "1", "--no-derived")
    assert r.exit_code == 0, r.output
    row = rows_by_dir(out)["tiny_add"]
    assert row["status"] == "converted" and row["tasks"] == 6 and row["makespan_ns"] > 0
    assert row["utilization_pct"] is None and "analysis failed" in row["figures_note"]
    r = run(root, "-o", tmp_path / "out2", "-j", "1")
    assert r.exit_code == 2 and "2 of 2 runs failed" in r.output
    row = rows_by_dir(tmp_path / "out2")["tiny_add"]
    assert "ValueError: no" in row["error"] and "bug" in row["error"]


def test_no_derived_matches_direct_conversion(archive, tmp_path):
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    assert run(root, "-o", out, "--no-derived", "--to", "perfetto,chrome").exit_code == 0
    (src,) = find_runs(runs["matmul"])
    for writer, suffix in (("perfetto", ".pftrace"), ("chrome", ".json")):
        direct = tmp_path / ("direct" + suffix)
        convert_source(src, writer, direct, True, ReadOptions(), derived=False)
        rel = runs["matmul"].relative_to(root).as_posix() + suffix
        assert (out / rel).read_bytes() == direct.read_bytes()
    pf = decode_pftrace(out / (runs["matmul"].relative_to(root).as_posix() + ".pftrace"))
    check_pftrace(pf)
    assert pftrace_counts(pf)["begin"] == 34


def test_reachable_from_the_main_command(archive, tmp_path):
    from tracecvt.cli import main
    root, runs = archive
    shutil.rmtree(runs["broken"])
    r = CliRunner().invoke(main, ["batch", str(root), "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "2 runs: 2 converted" in r.output


def test_model_output(archive, tmp_path):
    from tracecvt.convert import WRITERS
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    r = run(root, "-o", out, "--to", "perfetto,model", "-j", "2")
    assert r.exit_code == 0, r.output
    rows = rows_by_dir(out)
    for key in ("tiny_add", "matmul_add"):
        rel = outputs(rows[key])["model"]
        assert rel.endswith(WRITERS["model"].suffix) and (out / rel).is_file()
    # byte-identical to the single-run conversion (the model keeps no derived tracks)
    (src,) = find_runs(runs["tiny"])
    convert_source(src, "model", tmp_path / "direct.tcmodel", True, ReadOptions())
    rel = outputs(rows["tiny_add"])["model"]
    assert (out / rel).read_bytes() == (tmp_path / "direct.tcmodel").read_bytes()


def test_summary_outputs(archive, tmp_path):
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    r = run(root, "-o", out, "--to", "perfetto,summary,summary-json,summary-html", "-j", "2")
    assert r.exit_code == 0, r.output
    for row in rows_by_dir(out).values():
        assert list(outputs(row)) == ["perfetto", "summary", "summary-json", "summary-html"]
        md = (out / outputs(row)["summary"]).read_text()
        assert row["run"] in md
        data = json.loads((out / outputs(row)["summary-json"]).read_text())
        # the summary and the index figures come from the same analysis
        assert data["bubbles"]["run"]["utilization_pct"] == row["utilization_pct"]
        page = (out / outputs(row)["summary-html"]).read_text()
        assert "<html" in page.lower()
        # the same bytes as the summary package writes for a freshly read run
        from tracecvt.summary import write_summary
        (src,) = find_runs(root / row["source"])
        for kind, fmt in (("summary", "md"), ("summary-json", "json"), ("summary-html", "html")):
            buf = io.BytesIO()
            write_summary(src.read(), buf, fmt)
            assert (out / outputs(row)[kind]).read_bytes() == buf.getvalue(), kind
    links = re.findall(r'href="([^"]+)"', (out / "index.html").read_text())
    assert all((out / link).is_file() for link in links) and len(links) == 8
    # the .pftrace is the same as without summaries (the analysis never touches the model)
    plain = tmp_path / "plain"
    run(root, "-o", plain)
    for p in plain.rglob("*.pftrace"):
        assert p.read_bytes() == (out / p.relative_to(plain)).read_bytes()


def test_interrupt_keeps_finished_runs_and_writes_the_index(archive, tmp_path, monkeypatch):
    import tracecvt.batch.job as job
    real = job.run_job

    def interrupted(spec):
        if spec["rel"].startswith("tiny_add"):
            raise KeyboardInterrupt
        return real(spec)

    monkeypatch.setattr(job, "run_job", interrupted)
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    r = run(root, "-o", out, "-j", "1")
    assert r.exit_code == 130 and "run the same command again" in r.output
    rows = rows_by_dir(out)
    assert rows["tiny_add"]["status"] == "not run"
    # matmul_add is bigger, so it ran first and is kept
    assert rows["matmul_add"]["status"] == "converted"
    monkeypatch.setattr(job, "run_job", real)
    r = run(root, "-o", out, "-j", "1")
    assert r.exit_code == 0 and "1 converted, 1 skipped" in r.output
    assert rows_by_dir(out)["matmul_add"]["tasks"] == 34


def test_ctrl_c_with_worker_processes(archive, tmp_path):
    """-j 2, Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while a run
    converts: exit 130, the index lists what finished and what did not run, no partial
    output (``.part``) and no worker process is left, and the same command then finishes."""
    import subprocess
    import sys
    import textwrap
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        import os, signal, time
        import tracecvt.batch.job as job
        real = job.run_job
        def run_job(spec):
            if spec["rel"].startswith("tiny_add"):
                os.killpg(0, signal.SIGINT)
                time.sleep(30)
            return real(spec)
        job.run_job = run_job
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from tracecvt.batch import batch
        batch.main([{str(root)!r}, "-o", {str(out)!r}, "-j", "2"])
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(REPO), start_new_session=True, timeout=60)
    assert p.returncode == 130, p.stderr
    assert "run the same command again" in p.stderr
    rows = rows_by_dir(out)
    assert rows["tiny_add"]["status"] == "not run"
    assert rows["matmul_add"]["status"] in ("converted", "not run")
    # (a run may finish between the interrupt and its row: its output is whole, and kept)
    assert not [f for f in out.rglob("*") if f.name.endswith(".part")]
    for r in rows.values():
        assert (out / outputs(r)["perfetto"]).is_file() if r["outputs"] else True
    assert not subprocess.run(["pgrep", "-f", str(out)], capture_output=True).stdout
    r = run(root, "-o", out, "-j", "2")
    assert r.exit_code == 0 and rows_by_dir(out)["tiny_add"]["status"] == "converted"



def test_stopping_early_interrupts_busy_workers(archive, tmp_path, monkeypatch):
    """When the batch stops early (the rows are no longer read), busy workers are
    interrupted as Ctrl-C would, not waited for: no worker and no partial output is left."""
    import tracecvt.batch.job as job
    import tracecvt.batch.local as local
    from tracecvt.batch.plan import plan
    real = job.run_job

    def slow(spec):
        if spec["rel"].startswith("tiny_add"):
            time.sleep(60)
        return real(spec)

    monkeypatch.setattr(job, "run_job", slow)
    root, runs = archive
    shutil.rmtree(runs["broken"])
    out = tmp_path / "out"
    planned = plan(root, out, {"perfetto": job.targets()["perfetto"]}, None, True)
    specs = [job.make_spec(r, {"clock_mhz": None, "all_metrics": False, "derived": True})
             for r in planned]
    rows = local.run_local(specs, 2)
    t = time.perf_counter()
    first = next(rows)
    assert first["source"].startswith("matmul_add") and first["status"] == "converted"
    rows.close()
    assert time.perf_counter() - t < 30
    assert not multiprocessing.active_children()
    assert not [f for f in out.rglob("*") if f.name.endswith(".part")]


def test_runs_are_spread_over_the_workers_first(archive, tmp_path, monkeypatch):
    """Workers hold two runs ahead, but each gets one before any gets a second: 3 runs and
    -j 3 are converted by 3 processes."""
    import tracecvt.batch.job as job
    real = job.run_job
    pids = tmp_path / "pids"

    def watching(spec):
        with open(pids, "a") as f:      # the workers cannot report through memory
            f.write(f"{os.getpid()}\n")
        return real(spec)

    monkeypatch.setattr(job, "run_job", watching)
    root, _ = archive
    r = run(root, "-o", tmp_path / "out", "-j", "3")
    assert r.exit_code == 2 and "1 of 3 runs failed" in r.output
    assert len(set(pids.read_text().split())) == 3


def test_no_run_waits_behind_a_long_one_while_a_worker_idles(monkeypatch):
    """Runs are sent ahead only while there are runs for every worker: a long run and two
    short ones under -j 2 go long | short, short, not long, short | short."""
    import time

    import tracecvt.batch.job as job
    from tracecvt.batch.local import run_local

    def sleeping(spec):
        time.sleep(spec["seconds"])
        return {"name": spec["name"], "pid": os.getpid()}

    monkeypatch.setattr(job, "run_job", sleeping)
    specs = [{"name": "long", "seconds": 0.8}, {"name": "short1", "seconds": 0.1},
             {"name": "short2", "seconds": 0.1}]
    pids = {row["name"]: row["pid"] for row in run_local(specs, 2)}
    assert set(pids) == {"long", "short1", "short2"}
    assert pids["short1"] == pids["short2"] != pids["long"]


def _run_dying_worker(tmp_path, monkeypatch, die):
    """The row of one run whose worker calls ``die(start_helper)``: ``start_helper()`` forks
    a helper that sleeps 5 s (a second reader or writer), which is killed afterwards.  The
    row must come back within 3 s, without waiting for the helper."""
    import signal
    import time

    import tracecvt.batch.job as job
    from tracecvt.batch.local import run_local
    from tracecvt.forkpass import fork_pass
    helper_pid = tmp_path / "helper"

    def start_helper():
        helper = fork_pass(lambda: time.sleep(5))
        helper_pid.write_text(str(helper.pid))

    monkeypatch.setattr(job, "run_job", lambda spec: die(start_helper))
    spec = {"rel": "a", "source_fields": {"name": "a", "root": "a", "format": "pypto"}}
    start = time.monotonic()
    try:
        (row,) = run_local([spec], 2)
        assert time.monotonic() - start < 3
        return row
    finally:
        if helper_pid.exists():
            os.kill(int(helper_pid.read_text()), signal.SIGKILL)


def test_a_dead_worker_is_seen_at_once_though_its_helper_lives_on(tmp_path, monkeypatch):
    """A worker killed while a process it forked (a second reader or writer) still runs:
    the helper does not hold the worker's pipe, so its run fails at once."""
    import signal

    def dying(start_helper):
        start_helper()
        os.kill(os.getpid(), signal.SIGKILL)

    row = _run_dying_worker(tmp_path, monkeypatch, dying)
    assert "killed by SIGKILL" in row["error"]


def test_a_worker_whose_pipe_closes_before_it_ends_is_not_waited_for_with_its_helper(
        tmp_path, monkeypatch):
    """The pipe of a dying worker can reach EOF before the worker can be reaped (its files
    close first).  Stopping it then must wait for the worker itself, not for the helper it
    forked, which holds the worker's sentinel pipe (Process.join waited 5 s here)."""
    import time

    import tracecvt.batch.local as local
    conns = []
    real = local._serve

    def serve(conn):
        conns.append(conn)
        real(conn)

    def closing(start_helper):
        start_helper()
        conns[0].close()                  # EOF for the batch while this worker still runs
        time.sleep(1)
        os._exit(9)

    monkeypatch.setattr(local, "_serve", serve)
    row = _run_dying_worker(tmp_path, monkeypatch, closing)
    assert row["error"]


def test_no_more_workers_than_runs(archive, tmp_path, monkeypatch):
    """-j 8 on 3 runs starts 3 worker processes."""
    import tracecvt.batch.local as local
    started = []
    real = local._Worker.__init__

    def counting(self, ctx):
        started.append(1)
        real(self, ctx)

    monkeypatch.setattr(local._Worker, "__init__", counting)
    root, _ = archive
    r = run(root, "-o", tmp_path / "out", "-j", "8")
    assert r.exit_code == 2 and "1 of 3 runs failed" in r.output
    assert len(started) == 3


def test_each_run_is_one_line_whatever_its_path_holds(archive, tmp_path):
    """A run whose path holds a line break: its error and done lines stay one line each."""
    root, runs = archive
    shutil.rmtree(runs["matmul"])
    runs["broken"].parent.rename(root / "bro\nken")
    r = run(root, "-o", tmp_path / "out", "-j", "1")
    assert r.exit_code == 2
    lines = r.output.splitlines()
    assert len(lines) == 4, lines       # tiny_add, bro\nken, the totals, "1 of 2 runs failed"
    assert any(line.startswith("tracecvt: error: ") and "bro\\nken" in line
               and "malformed JSON" in line for line in lines)


def test_a_busy_worker_is_interrupted_once(monkeypatch):
    """A busy worker's first SIGINT unwinds its run; a second (Ctrl-C, then the batch
    stopping) is ignored, so the clean-up (removing the partial output) is not cut short."""
    import signal

    import tracecvt.batch.local as local
    previous = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(local, "_busy", True)
    try:
        with pytest.raises(KeyboardInterrupt):
            local._on_sigint(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
