"""``ncu --csv --metrics …``: the details layout without rule columns, metrics named by their
identifier, read from a real export of another machine (Nsight Compute 2023.1, field sample)
and from one made here (2025.3.1, with ncu's ``==PROF==`` log lines before the CSV)."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction

import tracecvt

from tracecvt.readers import find_runs
from tracecvt.readers.base import ReadOptions

from conftest import FIXTURES, SHARED, cli

ESMM = SHARED / "field-samples" / "ncu" / "averyclapp-esmm" / "metrics.csv"
H100 = FIXTURES / "ncu_csv_metrics_h100" / "metrics.csv"

# Nsight Compute's time units (both spellings): ns per printed unit.  Written out here so the
# test does not borrow the reader's own table.
NS_PER = {"nsecond": 1, "ns": 1, "usecond": 1000, "us": 1000, "msecond": 10**6, "ms": 10**6}


def read(path, **kw):
    (src,) = find_runs(path)
    return src.read(ReadOptions(**kw))


def csv_rows(path):
    """The CSV's rows after ncu's log lines, as dicts."""
    lines = path.read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("==PROF=="):
        lines.pop(0)
    return list(csv.DictReader(io.StringIO("".join(lines), newline="")))


def expected(path):
    """{ID: (kernel name, {metric: (value text, unit)})} straight from the file."""
    out: dict[int, tuple[str, dict[str, tuple[str, str]]]] = {}
    for r in csv_rows(path):
        name, metrics = out.setdefault(int(r["ID"]), (r["Kernel Name"], {}))
        metrics[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    return out


def duration_ns(text, unit):
    v = Fraction(text.replace(",", "")) * NS_PER[unit]
    assert v.denominator == 1
    return int(v)


def kernels(trace):
    return [s for s in trace.slices if s.cat == "kernel"]


def test_metrics_export_without_rule_columns_gives_every_kernel_and_its_duration():
    want = expected(ESMM)
    assert len(want) == 9 and all(len(m) == 5 for _, m in want.values())
    trace = read(ESMM)
    ks = kernels(trace)
    assert [k.args["id"] for k in ks] == sorted(want) == list(range(9))
    assert [k.args["name"] for k in ks] == [want[i][0] for i in range(9)]
    durs = [duration_ns(*want[i][1]["gpu__time_duration.sum"]) for i in range(9)]
    assert durs[0] == 10_776_576
    assert [k.dur for k in ks] == [k.args["duration_ns"] for k in ks] == durs
    # no start times in the export: laid end to end in ID order, as the other CSV layouts
    assert [k.ts for k in ks] == [sum(durs[:i]) for i in range(9)]
    extra = trace.meta.extra
    assert extra["ncu_source"] == "csv-details" and extra["ncu_kernels"] == 9
    assert extra["ncu_total_kernel_time_ns"] == sum(durs) == 14_690_304
    assert "without rule columns" in extra["timeline_note"]
    assert "durations have 1 ns resolution;" in extra["timeline_note"]
    assert trace.meta.warnings == []


def test_metrics_export_summary_kernel_table_equals_the_csv(tmp_path):
    want = expected(ESMM)
    out = tmp_path / "s.json"
    r = cli("summary", ESMM, "--format", "json", "-o", out)
    assert r.exit_code == 0, r.output
    table = json.loads(out.read_text())["ncu"]["kernels"]
    got = sorted((k["figures"]["duration_us"]["value"], k["name"]) for k in table)
    durs = sorted((duration_ns(*m["gpu__time_duration.sum"]) / 1000, i)
                  for i, (_, m) in want.items())
    assert [d for d, _ in got] == [d for d, _ in durs]
    assert len(table) == 9


def test_metrics_export_units_come_from_the_metric_unit_column(tmp_path):
    """The same export with durations printed in usecond (exact: 3 decimals of whole ns)."""
    rows = list(csv.reader(open(ESMM, newline="")))
    header = rows[0]
    c_name, c_unit, c_value = (header.index(c) for c in ("Metric Name", "Metric Unit",
                                                         "Metric Value"))
    for row in rows[1:]:
        if row[c_name] == "gpu__time_duration.sum":
            ns = int(row[c_value].replace(",", ""))
            row[c_unit], row[c_value] = "usecond", f"{ns / 1000:,.3f}"
    path = tmp_path / "metrics.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    ks = kernels(read(path))
    assert [k.dur for k in ks] == [k.dur for k in kernels(read(ESMM))]
    assert ks[0].dur == 10_776_576


def test_metrics_export_with_all_metrics_keys_them_by_metric_name():
    want = expected(ESMM)
    ks = kernels(read(ESMM, all_metrics=True))
    for k in ks:
        metrics = k.args["metrics"]
        assert set(metrics) == set(want[k.args["id"]][1])
        assert metrics["dram__bytes.sum"] == int(want[k.args["id"]][1]["dram__bytes.sum"][0]
                                                 .replace(",", ""))
    assert ks[0].args["metrics"]["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] \
        == 1_073_741_824


def test_metrics_export_after_ncus_log_lines_reads_every_metric():
    """ncu writes ``==PROF== Connected …`` lines to standard output before the CSV."""
    assert H100.read_text().startswith("==PROF== Connected to process")
    want = expected(H100)
    trace = read(H100)
    ks = kernels(trace)
    assert [k.args["id"] for k in ks] == sorted(want) == list(range(6))
    for k in ks:
        m = want[k.args["id"]][1]
        assert k.dur == duration_ns(*m["gpu__time_duration.sum"])
        assert k.args["sm_throughput_pct"] == float(
            m["sm__throughput.avg.pct_of_peak_sustained_elapsed"][0])
        assert k.args["dram_throughput_pct"] == float(
            m["dram__throughput.avg.pct_of_peak_sustained_elapsed"][0])
    assert [k.dur for k in ks][:3] == [16_960, 16_768, 15_776]
    # the counter tracks step at kernel starts to the CSV's values
    counters = {trace.tracks[c.track].name: c for c in trace.counters}
    sm = counters["SM throughput"]
    assert [sm.values[sm.ts.index(k.ts)] for k in ks] == [k.args["sm_throughput_pct"]
                                                           for k in ks]
    assert trace.meta.warnings == []
    # the summary's kernel table: each kernel's duration and DRAM throughput are the CSV's
    (run,) = tracecvt.read(H100)
    table = run.summary()["ncu"]["kernels"]
    got = sorted((k["figures"]["duration_us"]["value"],
                  k["figures"]["dram_throughput_pct"]["value"]) for k in table)
    assert got == sorted((duration_ns(*m["gpu__time_duration.sum"]) / 1000, float(
        m["dram__throughput.avg.pct_of_peak_sustained_elapsed"][0])) for _, m in want.values())


def test_ncu_warning_lines_before_the_csv_are_reported(tmp_path):
    text = H100.read_text()
    warning = "==WARNING== Found outstanding GPU clock reset, trying to revert...Success."
    path = tmp_path / "metrics.csv"
    path.write_text(warning + "\n" + text)
    trace = read(path)
    assert len(kernels(trace)) == 6
    assert trace.meta.warnings == [f"{path}: Nsight Compute's log before the CSV says: "
                                   f"{warning}"]
