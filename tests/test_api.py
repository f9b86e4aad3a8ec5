"""The Python API (docs/api.md): runs read as the CLI reads them, written byte for byte as
the CLI writes them, analysed once, summarised as the JSON summary, tables as DataFrames,
errors as the CLI's typed exceptions; and docs/api.md's examples run as they are."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tracecvt
from tracecvt.cli import main

import conftest
from conftest import REPO, checkout_copy

SAMPLE = REPO / "samples" / "pypto" / "ffn_medium"


@pytest.fixture
def run_copy(tmp_path):
    (run,) = tracecvt.read(checkout_copy(SAMPLE, tmp_path / "ffn_medium"))
    return run


def cli(*args):
    r = conftest.cli(*args)
    assert r.exit_code == 0, r.output


def test_outputs_are_the_clis_byte_for_byte(run_copy, tmp_path):
    api, ref = tmp_path / "api", tmp_path / "cli"
    paths = [run_copy.to_perfetto(f"{api}/"), run_copy.to_chrome(f"{api}/"),
             run_copy.to_model(f"{api}/"), run_copy.to_chrome(api / "c.json.gz")]
    cli("to-perfetto", run_copy.root, "-o", f"{ref}/", "-j", "1", "-q")
    cli("to-chrome", run_copy.root, "-o", f"{ref}/", "-q")
    cli("to-model", run_copy.root, "-o", f"{ref}/", "-q")
    cli("to-chrome", run_copy.root, "-o", ref / "c.json.gz", "-q")
    assert [p.name for p in paths] == [run_copy.name + s for s in (".pftrace", ".json",
                                                                   ".tcmodel")] + ["c.json.gz"]
    for p in paths:
        assert p.read_bytes() == (ref / p.name).read_bytes(), p.name
    default = run_copy.to_perfetto()                    # default: next to the run
    assert default == run_copy.root.parent / (run_copy.name + ".pftrace")
    with pytest.raises(tracecvt.OutputError, match="already exists"):
        run_copy.to_perfetto()
    assert run_copy.to_perfetto(force=True) == default


def test_warnings_are_the_clis(run_copy, tmp_path):
    """What writing says (dependencies the trace does not draw) joins the run's warnings, as
    the command line prints it."""
    from tracecvt.convert import convert_source
    from tracecvt.readers import ReadOptions
    before = run_copy.warnings
    run_copy.to_perfetto(tmp_path / "a.pftrace")
    r = convert_source(run_copy.source, "perfetto", tmp_path / "b.pftrace", False,
                       ReadOptions())
    assert run_copy.warnings == [w.replace("b.pftrace", "a.pftrace") for w in r.warnings]
    assert len(run_copy.warnings) == len(before) + 1
    assert "dependencies are not drawn" in run_copy.warnings[-1]


def test_analysis_once_and_trace_kept_to_the_source_data(run_copy, tmp_path):
    a = run_copy.analysis
    slices = len(run_copy.trace.slices)
    run_copy.to_perfetto(tmp_path / "x.pftrace")
    assert run_copy.analysis is a                       # not computed again
    assert len(run_copy.trace.slices) == slices         # no derived tracks in it
    assert not any(t.derived for t in run_copy.trace.tracks)
    assert run_copy.summary() == run_copy.summary()
    assert run_copy.summary()["key_figures"]["critical_path_us"] == \
        round(a.critical_path.length / 1000, 3)


def test_tables_match_the_analysis(run_copy):
    pytest.importorskip("pandas")
    a = run_copy.analysis
    slices = run_copy.slices_df()
    assert len(slices) == len(run_copy.trace.slices)
    assert (slices.end_ns - slices.start_ns == slices.duration_ns).all()
    with_args = run_copy.slices_df(args=True)
    first = run_copy.trace.slices[0].all_args
    assert first and set(first) <= set(with_args.columns)
    assert all(with_args.iloc[0][k] == v for k, v in first.items() if not isinstance(v, list))
    gaps = run_copy.bubbles_df()
    assert len(gaps) == len(a.bubbles.gaps)
    by_cause = gaps.groupby("cause")["duration_ns"].sum()
    lanes = [f for f in a.bubbles.lanes]
    assert by_cause.get("wait schedule", 0) == sum(f.wait_schedule for f in lanes)
    assert by_cause.get("wait predecessor", 0) == sum(f.wait_predecessor for f in lanes)
    path = run_copy.critical_path_df()
    assert path.duration_ns.sum() == a.critical_path.length
    assert path[path.kind == "task"].step.tolist() == list(range(1, len(a.critical_path.tasks)
                                                                 + 1))
    labels = run_copy.time_by_label_df()
    for t in a.labels:
        assert labels[labels.table == t.title].total_ns.sum() == sum(r.total for r in t.rows)


def test_without_pandas_one_clear_error(run_copy, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(tracecvt.MissingDependency) as e:
        run_copy.slices_df()
    assert "\n" not in str(e.value) and "tracecvt[pandas]" in str(e.value)
    assert isinstance(e.value, ImportError) and isinstance(e.value, tracecvt.TracecvtError)


def test_errors_are_typed(tmp_path, monkeypatch):
    with pytest.raises(tracecvt.InputError, match="no such file"):
        tracecvt.read(tmp_path / "missing")
    (tmp_path / "x.bin").write_bytes(b"\x00" * 64)
    with pytest.raises(tracecvt.InputError, match="unknown format"):
        tracecvt.read(tmp_path / "x.bin")
    (run,) = tracecvt.read(SAMPLE)
    monkeypatch.delenv("TRACECVT_DEBUG", raising=False)
    monkeypatch.setattr(run.source.reader, "read", lambda *a: 1 / 0)
    with pytest.raises(tracecvt.TracecvtError, match="ZeroDivisionError.*tracecvt bug"):
        run.trace


def test_import_is_light_and_installs_one_name():
    """``import tracecvt`` loads nothing else of tracecvt; the API comes on first use; the
    docs and tests never import ``converter``."""
    code = ("import sys, tracecvt; print(sorted(m for m in sys.modules if "
            "m.startswith('tracecvt'))); tracecvt.read; print('tracecvt.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["['tracecvt']", "True"]
    for p in [*REPO.glob("docs/**/*.md"), REPO / "README.md", *REPO.glob("tests/*.py")]:
        assert not re.search(r"^\s*(import converter|from converter)", p.read_text(),
                             re.M), p


def test_docs_api_examples_run(tmp_path):
    """Every ```python block of docs/api.md, in order, in one interpreter, from a folder
    holding a copy of the bundled samples."""
    text = (REPO / "docs" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    checkout_copy(REPO / "samples", tmp_path / "samples")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "summary.schema.json", tmp_path / "docs")
    script = tmp_path / "api_examples.py"
    script.write_text("\n".join(blocks))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "tracecvt-summary/3" not in r.stderr
    assert (tmp_path / "out" / "run.tcmodel").is_file()


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_write_summary_is_the_clis(run_copy, tmp_path, fmt):
    path = run_copy.write_summary(f"{tmp_path}/api/", fmt=fmt)
    assert path.name == run_copy.name + f".summary.{fmt}"
    cli("summary", run_copy.root, "--format", fmt, "-o", f"{tmp_path}/cli/", "-q")
    assert path.read_bytes() == (tmp_path / "cli" / path.name).read_bytes()
    with pytest.raises(tracecvt.OutputError):
        run_copy.write_summary(path, fmt=fmt)
