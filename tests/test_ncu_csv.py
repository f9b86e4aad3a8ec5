"""Nsight Compute CSV exports -> model, checked cell by cell against the .ncu-rep they were
exported from (within the precision the CSV prints), plus the units, names and NVTX cells."""

from __future__ import annotations

import csv
import io
from fractions import Fraction

import pytest

from tracecvt.readers import find_runs
from tracecvt.readers.base import ReadOptions
from tracecvt.readers.ncu import csv_page
from tracecvt.readers.ncu.metrics import (DETAILS_LABELS, KEY_METRICS, base_unit, parse_cell,
                                           parse_ns, render_message, short_name)
from tracecvt.readers.ncu.nvtx import parse_push_pop
from tracecvt.writers.chrome import write_chrome
from tracecvt.writers.perfetto import write_perfetto

from conftest import FIXTURES, SAMPLES, check_pftrace, decode_pftrace, pftrace_counts

NCU = SAMPLES / "ncu"
TRITON_DIR = NCU / "h200-triton-full"
TRITON = TRITON_DIR / "triton_full.ncu-rep"
RAW = TRITON_DIR / "triton_full_raw.csv"
RAW_BASE = TRITON_DIR / "triton_full_raw_base.csv"
DETAILS = TRITON_DIR / "triton_full_details.csv"
MANY = NCU / "h200-nvtx-many" / "many_nvtx.ncu-rep.xz"
MANY_CSV = NCU / "h200-nvtx-many" / "many_nvtx_raw.csv"
ALL_CSV = [RAW, RAW_BASE, DETAILS, MANY_CSV]


def read(path, **kw):
    (src,) = find_runs(path)
    return src.read(ReadOptions(**kw))


def kernels(trace):
    return [s for s in trace.slices if s.cat == "kernel"]


def rows_of(path):
    return list(csv.reader(open(path, newline="")))


def precision(text: str, unit: str) -> float:
    """Half a unit of the last printed digit, in the base unit."""
    t = text.replace(",", "")
    places = len(t.split(".")[1]) if "." in t else 0
    return 0.5 * 10 ** -places * float(base_unit(unit)[1])


def close(got, want, tol):
    if isinstance(want, str) or isinstance(got, str):
        return got == want
    return abs(got - want) <= tol * (1 + 1e-9) + 1e-9 * abs(want)


# -- units, names, cells ---------------------------------------------------------------------

def test_units():
    assert base_unit("us") == ("ns", 1000)
    assert base_unit("usecond") == ("ns", 1000) and base_unit("msecond") == ("ns", 10**6)
    assert base_unit("nsecond") == ("ns", 1)
    assert base_unit("Kbyte/block") == ("byte/block", 1000)
    assert base_unit("Mbyte") == ("byte", 10**6) and base_unit("Tbyte/s") == ("byte/s", 10**12)
    assert base_unit("Ghz") == ("hz", 10**9) and base_unit("Mhz") == ("hz", 10**6)
    assert base_unit("sector/us") == ("sector/s", 10**6)
    assert base_unit("sector/ns") == ("sector/s", 10**9)
    # the prefix scales the printed value, even in a denominator (1.591 %/Kbyte = 1,591 %/byte)
    assert base_unit("%/Kbyte") == ("%/byte", 1000)
    assert base_unit("sector/ms") == ("sector/s", 1000)
    assert base_unit("SM") == ("SM", 1) and base_unit("register/thread")[1] == 1
    assert base_unit("") == ("", 1) and base_unit("%") == ("%", 1)
    assert parse_cell("1.024000", Fraction(1000)) == 1024
    assert parse_cell("2,311,435,684,647.30") == pytest.approx(2311435684647.30)
    assert parse_cell("1,024") == 1024 and parse_cell("0.97") == 0.97
    assert parse_cell("nan") is None and parse_cell("no data") is None and parse_cell("") is None
    assert parse_cell("NVIDIA H200") == "NVIDIA H200"
    assert parse_cell("PolicySpread") == "PolicySpread"
    assert parse_ns("7.712000", Fraction(1000)) == 7712
    assert parse_ns("7,712", Fraction(1)) == 7712
    assert parse_ns("0.0015", Fraction(10**6)) == 1500          # ms -> ns, exact
    assert parse_ns("1.0005", Fraction(1000)) == 1001            # half up, decimal arithmetic


def test_short_names():
    assert short_name("add_kernel") == "add_kernel"
    assert short_name("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>"
                      "(T1::Params)") == "Kernel2"
    assert short_name("void cublasLt::splitKreduce_kernel<32, 16, int, float, 0>"
                      "(cublasLt::cublasSplitKParams<T6>, const T4 *, long)") \
        == "splitKreduce_kernel"
    assert short_name("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, "
                      "4, void templates::normal_kernel<at::CUDAGeneratorImpl *>(const "
                      "at::TensorBase &, double)::[lambda() (instance 1)]>(long, "
                      "at::PhiloxCudaState, T3, T4)") \
        == "distribution_elementwise_grid_stride_kernel"
    assert short_name("void at::reduce_kernel<512, 1, at::ReduceOp<float, at::MeanOps<float, "
                      "float, float, float>, unsigned int, float, 4, 4>>(T3)") == "reduce_kernel"


def test_rule_markup():
    assert render_message("Look at @section:LaunchStats:Launch Statistics@ for more.") \
        == "Look at Launch Statistics for more."
    assert render_message("See the @url:Profiling Guide:https://docs.nvidia.com/x#y@ now.") \
        == "See the Profiling Guide (https://docs.nvidia.com/x#y) now."


def test_nvtx_cell():
    cell = ('2199  "<default domain>:step 133:none:none:none:none:none:none"  '
            '"<default domain>:layer0:none:none:none:none:none:none" ')
    tid, domains = parse_push_pop(cell)
    assert tid == 2199 and len(domains) == 1
    assert domains[0].name == "<default domain>"
    assert domains[0].push_pop == ("step 133", "layer0")
    # a range name with ':' keeps it; attributes that are set are kept
    tid, (d,) = parse_push_pop('7  "dom:a:b:int64:5:argb:ff00ff00:ascii:hello"')
    assert (d.name, d.push_pop) == ("dom", ("a:b",))
    assert d.attrs[0] == {"message": "hello", "color": "ff00ff00", "payload": "5",
                          "payload_type": "int64"}
    assert parse_push_pop("") == (None, [])


def test_page_detection():
    assert csv_page.page_of(rows_of(RAW)[0]) == csv_page.RAW
    assert csv_page.page_of(rows_of(MANY_CSV)[0]) == csv_page.RAW
    assert csv_page.page_of(rows_of(DETAILS)[0]) == csv_page.DETAILS
    assert csv_page.page_of(rows_of(FIXTURES / "ncu_wrong_page" / "summary_per_kernel.csv")[0]) \
        == csv_page.OTHER
    for p in ALL_CSV:
        assert csv_page.sniff(p.read_bytes()[:4096])


# -- raw page vs report ------------------------------------------------------------------------

ncu_report = pytest.importorskip("ncu_report")


@pytest.fixture(scope="module")
def triton_rep():
    return read(TRITON, all_metrics=True)


@pytest.mark.parametrize("path", [RAW, RAW_BASE], ids=["auto-units", "base-units"])
def test_raw_csv_equals_report(path, triton_rep):
    trace = read(path, all_metrics=True)
    rows = rows_of(path)
    header, units, body = rows[0], rows[1], rows[2:]
    col = {n: i for i, n in enumerate(header)}
    rk, ck = kernels(triton_rep), kernels(trace)
    assert [k.name for k in ck] == [k.name for k in rk] == ["add_kernel", "softmax_kernel"]
    assert [(k.ts, k.dur) for k in ck] == [(k.ts, k.dur) for k in rk]     # exact ns
    for r, c, row in zip(rk, ck, body):
        ra, ca = r.all_args, c.all_args
        for key in ("grid", "block", "device", "device_id", "context", "stream",
                    "compute_capability", "short_name", "duration_ns"):
            assert ca[key] == ra[key], key
        for arg, names, kind in KEY_METRICS:
            name = next((n for n in names if n in col and row[col[n]].strip()), None)
            if name is None:
                assert arg not in ca
                continue
            tol = precision(row[col[name]], units[col[name]])
            assert close(ca[arg], ra[arg], tol), (arg, ca[arg], ra[arg], tol)
        # every metric cell of the export, converted by its unit, equals the report's value
        rm, cm = ra["metrics"], ca["metrics"]
        checked = 0
        for name, got in cm.items():
            want = rm.get(name)
            if want is None:
                continue
            assert close(got, want, precision(row[col[name]], units[col[name]])), \
                (name, got, want, units[col[name]])
            checked += 1
        assert checked > 1500
    assert trace.meta.extra["ncu_source"] == "csv-raw"
    assert "printed precision" in trace.meta.extra["timeline_note"]
    assert trace.meta.warnings == []


def test_details_labels_are_the_reports_header_metrics():
    """The fixed (section, label) table agrees with the report's own section layout."""
    ctx = ncu_report.load_report(str(TRITON))
    a = ctx.range_by_idx(0).action_by_idx(0)
    where = {}
    for s in a.sections():
        for m in s.header_metrics() or ():
            where[(s.name(), m.label())] = m.name()
    candidates = {arg: names for arg, names, _ in KEY_METRICS}
    for key, (arg, _kind) in DETAILS_LABELS.items():
        if arg == "pm_sampling_interval_ns":
            continue
        assert key in where, key
        assert where[key] in candidates[arg], (key, where[key])


def test_details_csv_equals_report(triton_rep):
    trace = read(DETAILS)
    rows = rows_of(DETAILS)
    h = {n: i for i, n in enumerate(rows[0])}
    rk, ck = kernels(triton_rep), kernels(trace)
    assert [k.name for k in ck] == [k.name for k in rk]
    for r, c in zip(rk, ck):
        ra, ca = r.all_args, c.all_args
        for key in ("grid", "block", "device_id", "context", "stream", "compute_capability"):
            assert ca[key] == ra[key]
        printed = {(row[h["Section Name"]], row[h["Metric Name"]]): row
                   for row in rows[1:] if int(row[h["ID"]]) == ca["id"]
                   and not (len(row) > h["Rule Name"] and row[h["Rule Name"]])}
        checked = 0
        for key, (arg, _kind) in DETAILS_LABELS.items():
            row = printed.get(key)
            if row is None or arg == "pm_sampling_interval_ns":
                continue
            tol = precision(row[h["Metric Value"]], row[h["Metric Unit"]])
            assert close(ca[arg], ra[arg], tol), (arg, ca[arg], ra[arg])
            checked += 1
        assert checked >= 20
        # 2 decimals of us: 10 ns resolution
        assert abs(ca["duration_ns"] - ra["duration_ns"]) <= 5
        assert [(x["rule"], x["type"], x["message"]) for x in ca["rules"]] == \
            [(x["rule"], x["type"], x["message"]) for x in ra["rules"]]
    assert len(trace.meta.extra["ncu_rules"]) == 27
    assert "10 ns resolution" in trace.meta.extra["timeline_note"]


def test_many_csv_equals_report():
    rep, csv_trace = read(MANY), read(MANY_CSV)
    rows = rows_of(MANY_CSV)
    header, units, body = rows[0], rows[1], rows[2:]
    col = {n: i for i, n in enumerate(header)}
    rk, ck = kernels(rep), kernels(csv_trace)
    assert len(rk) == len(ck) == len(body) == 1867
    assert [k.args["short_name"] for k in ck] == [k.args["short_name"] for k in rk]
    assert [(k.ts, k.dur) for k in ck] == [(k.ts, k.dur) for k in rk]
    for r, c, row in zip(rk, ck, body):
        ra, ca = r.args, c.args
        for key in ("id", "grid", "block", "grid_size", "block_size", "registers_per_thread",
                    "shared_memory_bytes", "threads", "device_id", "context", "stream",
                    "nvtx_path", "duration_ns"):
            assert ca.get(key) == ra.get(key), key
        for arg, metric in (("sm_throughput_pct",
                             "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                            ("dram_throughput_pct",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                            ("waves_per_sm", "launch__waves_per_multiprocessor"),
                            ("theoretical_occupancy_pct",
                             "sm__maximum_warps_per_active_cycle_pct")):
            tol = precision(row[col[metric]], units[col[metric]])
            assert close(ca[arg], ra[arg], tol), (arg, ca[arg], ra[arg])
        # the CSV's kernel name is demangled by the ncu CLI, the report's by ncu_report
        assert short_name(row[col["Kernel Name"]]) == ra["short_name"]
    assert rep.meta.warnings[0].split(": ", 1)[1] == csv_trace.meta.warnings[0].split(": ", 1)[1]
    assert [s.args for s in rep.slices if s.cat == "nvtx"] == \
        [s.args for s in csv_trace.slices if s.cat == "nvtx"]


@pytest.mark.parametrize("path", ALL_CSV, ids=lambda p: p.name)
def test_csv_with_both_writers(path):
    trace = read(path)
    assert trace.meta.extra["ncu_serialized"] is True
    buf = io.BytesIO()
    write_perfetto(trace, buf)
    pf = decode_pftrace(buf.getvalue())
    check_pftrace(pf)
    counts = pftrace_counts(pf)
    stats = trace.stats()
    assert counts["begin"] == stats["slices"] and counts["counter"] == stats["counter_samples"]
    out = io.BytesIO()
    write_chrome(trace, out)
    assert out.getvalue().startswith(b"{")


def test_all_metrics_csv_keeps_every_column():
    trace = read(MANY_CSV, all_metrics=True)
    rows = rows_of(MANY_CSV)
    header, body = rows[0], rows[2:]
    first = kernels(trace)[0].args["metrics"]
    filled = [h for h, v in zip(header[13:], body[0][13:]) if v.strip() not in
              ("", "nan", "no data")]
    assert sorted(first) == sorted(filled)
    assert first["gpu__time_duration.sum"] == 2720
    assert trace.meta.extra["ncu_metric_units"]["launch__shared_mem_per_block"] == "byte/block"
