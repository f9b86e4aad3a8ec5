"""Nsight Compute inputs through the command line: every sample converts with both writers;
a missing ncu_report, corrupt or truncated reports and CSVs of other pages are one-line
errors with exit code 2."""

from __future__ import annotations

import gzip
import json
import lzma
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracecvt.cli import main

from conftest import FIXTURES, SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

NCU = SAMPLES / "ncu"
TRITON_DIR = NCU / "h200-triton-full"
TRITON = TRITON_DIR / "triton_full.ncu-rep"
MANY = NCU / "h200-nvtx-many" / "many_nvtx.ncu-rep.xz"
MANY_CSV = NCU / "h200-nvtx-many" / "many_nvtx_raw.csv"
WRONG_PAGE = FIXTURES / "ncu_wrong_page" / "summary_per_kernel.csv"
CORRUPT = FIXTURES / "ncu_corrupt" / "not_a_report.ncu-rep"

def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_line_error(r, *words):
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def leftovers():
    return sorted(Path(tempfile.gettempdir()).glob("tracecvt-ncu-*"))


def test_help_lists_ncu_formats():
    r = run("--help")
    assert r.exit_code == 0
    for word in ("ncu-rep", "ncu-csv", "Nsight Compute"):
        assert word in r.output


def test_sample_directory_converts_every_file(tmp_path):
    pytest.importorskip("ncu_report")
    r = run("to-perfetto", TRITON_DIR, "-o", tmp_path, "-q")
    assert r.exit_code == 0, r.output
    outs = sorted(p.name for p in tmp_path.glob("*.pftrace"))
    assert outs == ["triton_full.pftrace", "triton_full_details.pftrace",
                    "triton_full_raw.pftrace", "triton_full_raw_base.pftrace"]
    counts = {}
    for name in outs:
        pf = decode_pftrace(tmp_path / name)
        check_pftrace(pf)
        counts[name] = pftrace_counts(pf)
    # two kernels in each; the report adds its 32 PM-sampling timelines
    assert all(c["begin"] == c["end"] == 2 for c in counts.values())
    assert counts["triton_full.pftrace"]["counter"] > counts["triton_full_raw.pftrace"]["counter"]
    assert counts["triton_full_raw.pftrace"] == counts["triton_full_raw_base.pftrace"]


def test_many_report_both_writers_and_no_temporary_files_left(tmp_path, monkeypatch):
    pytest.importorskip("ncu_report")
    # A private temp dir: other processes may be decompressing reports in the shared one.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    before = leftovers()
    r = run("to-perfetto", MANY, "-o", tmp_path / "many.pftrace")
    assert r.exit_code == 0, r.output
    assert "warning" in r.output and "cut short" in r.output
    pf = decode_pftrace(tmp_path / "many.pftrace")
    check_pftrace(pf)
    c = pftrace_counts(pf)
    assert c["begin"] == 1867 + 801
    r = run("to-chrome", MANY, "-o", tmp_path / "many.json", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "many.json").read_bytes())
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) == 1867
    assert doc["metadata"]["extra"]["ncu_kernels"] == 1867
    assert leftovers() == before          # the decompressed copy is gone


def test_csv_both_writers(tmp_path):
    r = run("to-chrome", MANY_CSV, "-o", tmp_path / "m.json", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "m.json").read_bytes())
    assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel") == 1867
    r = run("to-perfetto", MANY_CSV, "-o", tmp_path / "m.pftrace", "-q")
    assert r.exit_code == 0
    check_pftrace(decode_pftrace(tmp_path / "m.pftrace"))


def test_all_metrics_flag(tmp_path):
    r = run("to-chrome", TRITON_DIR / "triton_full_raw_base.csv", "-o", tmp_path / "a.json",
            "--all-metrics", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "a.json").read_bytes())
    (k, _) = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert len(k["args"]["metrics"]) > 1500
    assert k["args"]["metrics"]["gpu__time_duration.sum"] == 7712


def test_info(tmp_path):
    r = run("info", MANY_CSV, "-q")
    assert r.exit_code == 0, r.output
    assert "Nsight Compute" in r.output and "tasks: 1867" in r.output
    assert "cut short" in r.output


# -- one-line errors -------------------------------------------------------------------------

def test_missing_ncu_report_module(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)       # import fails
    r = run("to-perfetto", TRITON, "-o", tmp_path / "x.pftrace")
    line = one_line_error(r, str(TRITON), "ncu_report", "pip install 'tracecvt[ncu]'")
    assert "Traceback" not in line
    assert not (tmp_path / "x.pftrace").exists()
    # everything else keeps working without it
    r = run("to-perfetto", TRITON_DIR / "triton_full_raw.csv", "-o", tmp_path / "y.pftrace",
            "-q")
    assert r.exit_code == 0, r.output
    r = run("info", MANY, "-q")
    assert r.exit_code == 2 and "tracecvt[ncu]" in r.output


def test_corrupt_report():
    one_line_error(run("to-perfetto", CORRUPT), "not a Nsight Compute report")


def test_truncated_report_without_results(tmp_path):
    pytest.importorskip("ncu_report")
    p = tmp_path / "cut.ncu-rep"
    p.write_bytes(TRITON.read_bytes()[:100_000])
    one_line_error(run("to-perfetto", p), "corrupt or truncated", "ends inside a record")


def test_truncated_report_keeps_complete_results(tmp_path):
    pytest.importorskip("ncu_report")
    p = tmp_path / "cut.ncu-rep"
    p.write_bytes(TRITON.read_bytes()[:2_000_000])          # inside the second kernel
    r = run("to-perfetto", p, "-o", tmp_path / "cut.pftrace")
    assert r.exit_code == 0, r.output
    assert "ends inside a record" in r.output and "skipped" in r.output
    assert pftrace_counts(decode_pftrace(tmp_path / "cut.pftrace"))["begin"] == 1


def test_truncated_xz(tmp_path):
    p = tmp_path / "cut.ncu-rep.xz"
    p.write_bytes(MANY.read_bytes()[:200_000])
    before = leftovers()
    one_line_error(run("to-perfetto", p), "truncated xz data")
    assert leftovers() == before


def test_corrupt_xz(tmp_path):
    p = tmp_path / "bad.ncu-rep.xz"
    data = bytearray(lzma.compress(b"NVR\x00" + bytes(1000)))
    data[30:40] = b"\xff" * 10
    p.write_bytes(bytes(data))
    one_line_error(run("to-perfetto", p), str(p))


def test_gzip_report_and_zip_archive(tmp_path):
    pytest.importorskip("ncu_report")
    gz = tmp_path / "t.ncu-rep.gz"
    gz.write_bytes(gzip.compress(TRITON.read_bytes()))
    r = run("to-perfetto", gz, "-o", tmp_path / "gz.pftrace", "-q")
    assert r.exit_code == 0, r.output
    z = tmp_path / "t.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.write(TRITON, "run/triton_full.ncu-rep")
    r = run("to-perfetto", z, "-o", tmp_path / "zip.pftrace", "-q")
    assert r.exit_code == 0, r.output
    plain = run("to-perfetto", TRITON, "-o", tmp_path / "plain.pftrace", "-q")
    assert plain.exit_code == 0
    want = pftrace_counts(decode_pftrace(tmp_path / "plain.pftrace"))
    assert pftrace_counts(decode_pftrace(tmp_path / "gz.pftrace")) == want
    assert pftrace_counts(decode_pftrace(tmp_path / "zip.pftrace")) == want


def test_csv_of_another_page():
    one_line_error(run("to-perfetto", WRONG_PAGE), str(WRONG_PAGE), "--page raw",
                   "page tracecvt does not read")


def test_csv_that_is_not_ncu(tmp_path):
    p = tmp_path / "other.csv"
    p.write_text("a,b,c\n1,2,3\n")
    one_line_error(run("to-perfetto", p), "unknown format")


def test_forced_format_mismatch(tmp_path):
    one_line_error(run("to-perfetto", TRITON, "--from", "ncu-csv", "-o", tmp_path / "x"),
                   "--from ncu-csv")
    one_line_error(run("to-perfetto", MANY_CSV, "--from", "ncu-rep", "-o", tmp_path / "y"),
                   "--from ncu-rep")


def test_empty_and_ragged_csv(tmp_path):
    header = (TRITON_DIR / "triton_full_raw.csv").read_text().splitlines()
    p = tmp_path / "cut_raw.csv"
    p.write_text("\n".join(header[:3] + [header[3][:500]]) + "\n")       # last row cut
    w, _ = _converted_with_short_rows(p, tmp_path / "cut.pftrace", "-q")   # the cut row kept
    assert "line 4" in w and "cut short" in w
    q = tmp_path / "empty.ncu-rep"
    q.write_bytes(b"")
    one_line_error(run("to-perfetto", q), "empty file")


# -- ragged CSV rows: what is there converts, the loss is one warning ------------------------

def _csv_rows(path):
    import csv
    return list(csv.reader(open(path, newline="")))


def _write_rows(path, rows):
    import csv
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(rows)
    return path


def _warnings(r):
    return [x for x in r.output.splitlines() if x.startswith("tracecvt: warning: ")]


def _converted_with_short_rows(p, out, *args):
    """Convert ``p`` to ``out``, which must succeed with one "fewer fields" warning: that
    warning, and the number of kernel slices the trace holds."""
    r = run("to-perfetto", p, "-o", out, *args)
    assert r.exit_code == 0, r.output
    (w,) = [x for x in _warnings(r) if "fewer fields" in x]
    return w, pftrace_counts(decode_pftrace(out))["begin"]


def test_raw_csv_short_rows_convert_with_one_warning(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_raw.csv")
    width = len(rows[0])
    rows[2] = rows[2][:40]                      # the first kernel row cut after 40 cells
    p = _write_rows(tmp_path / "short_raw.csv", rows)
    w, kernels = _converted_with_short_rows(p, tmp_path / "s.pftrace")
    assert f"1 row has fewer fields than the header's {width}" in w
    assert "line 3: 40" in w and "no value" in w
    assert kernels == 2                         # both kernels, the short one without duration


def test_raw_csv_units_row_missing_or_short(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_raw.csv")
    for units in ([], rows[1][:5]):             # an empty line, or the units row cut short
        p = _write_rows(tmp_path / "units_raw.csv", [rows[0], units] + rows[2:])
        r = run("to-perfetto", p, "-o", tmp_path / "u.pftrace", "--force")
        assert r.exit_code == 0, r.output
        assert _warnings(r), r.output


def test_details_csv_with_moved_columns_converts(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_details.csv")
    header = rows[0]
    for a, b in (("ID", "Estimated Speedup"), ("Section Name", "Rule Type")):
        i, j = header.index(a), header.index(b)
        moved = [list(r) for r in rows]
        for row in moved:                      # metric rows have 16 cells: j is past their end
            if j < len(row):
                row[i], row[j] = row[j], row[i]
        p = _write_rows(tmp_path / "moved_details.csv", moved)
        r = run("to-perfetto", p, "-o", tmp_path / "d.pftrace", "--force", "-q")
        assert r.exit_code == 0, r.output
        lines = r.output.strip().splitlines()
        assert all(x.startswith("tracecvt: warning: ") for x in lines), r.output
        assert any("fewer fields" in x for x in lines), r.output


def test_details_csv_short_rows_convert_with_one_warning(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_details.csv")
    rows[1] = rows[1][:13]                      # a metric row without unit and value
    rows[5] = rows[5][:3]                       # no kernel name, no metric at all
    p = _write_rows(tmp_path / "short_details.csv", rows)
    w, kernels = _converted_with_short_rows(p, tmp_path / "d.pftrace")
    assert "2 rows" in w and "line 2: 13" in w and "line 6: 3" in w
    assert kernels == 2


def test_csv_rows_without_kernel_id_are_skipped(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_raw.csv")
    header = rows[0]
    i = header.index("ID")
    moved = []
    for row in rows:                            # ID moved to the last column, then a row cut
        row = list(row)
        row.append(row.pop(i))
        moved.append(row)
    moved[3] = moved[3][:50]
    p = _write_rows(tmp_path / "noid_raw.csv", moved)
    w, kernels = _converted_with_short_rows(p, tmp_path / "n.pftrace", "--from", "ncu-csv")
    assert "kernel ID" in w and "1 of them" in w and "skipped" in w
    assert kernels == 1


def test_csv_whose_every_row_is_unusable_is_one_line_error(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_details.csv")
    header = rows[0][1:] + rows[0][:1]           # ID last: every metric row ends before it
    body = [r[1:] + r[:1] for r in rows[1:] if len(r) == 16]
    p = _write_rows(tmp_path / "noid_details.csv", [header] + body)
    one_line_error(run("to-perfetto", p), str(p), "without kernel rows", "kernel ID")


# -- found by fuzzing: cells the trace cannot hold, messages that are not one line ----------

def test_csv_numbers_beyond_int64_or_float(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_details.csv")
    header = rows[0]
    c_label, c_value = header.index("Metric Name"), header.index("Metric Value")
    for row in rows[1:]:
        if len(row) > c_value and row[c_label] == "Elapsed Cycles":
            row[c_value] = "-1e+308"                  # an int of 309 digits after scaling
        elif len(row) > c_value and row[c_label] == "Compute (SM) Throughput":
            row[c_value] = "1e999"                    # infinite
        elif len(row) > c_value and row[c_label] == "Duration":
            # kernel 0: past 2^63 ns; kernel 1: 5e18 ns, which fits int64 but not the timeline
            row[c_value] = "9" * 40 if row[0] == "0" else "5,000,000,000,000,000"
    p = _write_rows(tmp_path / "huge_details.csv", rows)
    for writer, out in (("to-perfetto", "h.pftrace"), ("to-chrome", "h.json")):
        r = run(writer, p, "-o", tmp_path / out, "-q", "--all-metrics")
        assert r.exit_code == 0, r.output
        assert "tracecvt bug" not in r.output
        assert "IDs 0)" in r.output and "IDs 1): not plausible" in r.output
    check_pftrace(decode_pftrace(tmp_path / "h.pftrace"))
    doc = json.loads((tmp_path / "h.json").read_bytes())
    args = [e["args"] for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert all("elapsed_cycles" not in a and "sm_throughput_pct" not in a for a in args)
    assert "duration_ns" not in args[0] and args[1]["duration_ns"] == 5 * 10**18


def test_csv_kernel_id_beyond_int64_is_one_line_error(tmp_path):
    rows = _csv_rows(TRITON_DIR / "triton_full_details.csv")
    rows[5][0] = "9" * 40
    p = _write_rows(tmp_path / "id_details.csv", rows)
    one_line_error(run("to-perfetto", p, "-o", tmp_path / "i.pftrace"), "line 6",
                   "not a kernel number")


@pytest.mark.parametrize("sep", ["\x0b", "\x1c", "\u2028", "\x85", "\n"])
def test_error_quoting_a_header_stays_one_line(tmp_path, sep):
    rows = _csv_rows(WRONG_PAGE)
    rows[0][rows[0].index("Invocations")] = f"first{sep}second"
    p = _write_rows(tmp_path / "page.csv", rows)
    r = run("to-perfetto", p)
    assert r.exit_code == 2
    assert len(r.output.splitlines()) == 1, r.output
    assert "page tracecvt does not read" in r.output and "first" in r.output
