"""The JSON summary an agent reads: every sample run of every family validates against
docs/summary.schema.json, labels come from the fixed vocabulary, opportunities name the
tool's knobs, the Nsight Compute kernel table equals the figures of NCU's own CSV export,
and `summary -o -` prints the JSON alone on stdout."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import jsonschema
import pytest

import tracecvt
from tracecvt.analyses.actions import LABELS

from conftest import FIELD, REPO, SAMPLES, checkout_copy

SCHEMA = json.loads((REPO / "docs" / "summary.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
FAMILIES = [SAMPLES / "pypto", SAMPLES / "msprof", SAMPLES / "ncu", SAMPLES / "simpler", FIELD,
            # simpler's converter output alone: read as drawn, no bubble figures
            REPO / "tests" / "fixtures" / "simpler_converter_older_layout_alone"]
NCU = REPO / "samples" / "ncu" / "h200-triton-full"


def _runs(folder):
    try:
        return tracecvt.read(folder)
    except tracecvt.InputError:         # a family without a reader in this checkout
        return []


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    out = {}
    bundled = checkout_copy(REPO / "samples", tmp_path_factory.mktemp("checkout") / "samples")
    for folder in [*FAMILIES, bundled]:
        for run in _runs(folder):
            out[f"{folder.name}/{run.name}"] = run.summary()
    return out


def test_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_every_sample_run_validates(summaries):
    families = {key.split("/")[0] for key in summaries}
    assert {"pypto", "msprof", "ncu", "samples"} <= families
    assert len(summaries) >= 40
    for key, data in summaries.items():
        errors = sorted(VALIDATOR.iter_errors(data), key=lambda e: e.path)
        assert not errors, f"{key}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_labels_and_actions(summaries):
    """Every opportunity has a label of the vocabulary and at least one action of its tool
    (PyPTO's options, NCU's rules, msprof's pages or advice); runs with a timeline or kernel
    figures have run-level labels."""
    tools = {"pypto": "PyPTO", "ncu": "Nsight Compute", "msprof": "msprof"}
    seen = set()
    for key, d in summaries.items():
        for b in d["bottlenecks"]:
            assert b["label"] in LABELS
        for o in d["opportunities"] + d["more_opportunities"]:
            assert o["bottleneck"] in LABELS, (key, o["title"])
            fmt = d["configuration"]["format"]
            if fmt in tools:
                assert o["actions"] and {a["tool"] for a in o["actions"]} == {tools[fmt]}, \
                    (key, o["title"])
                seen.add(fmt)
        classified = d["ncu"] and any(b["bound"] != "unknown" for b in d["ncu"]["bounds"])
        if d["bubbles"]["computed"] or classified:
            assert d["bottlenecks"], key
    assert seen == set(tools)


def _rows(path):
    rows = list(csv.DictReader(path.open(newline="")))
    return {r["Kernel Name"]: r for r in rows[1:]}          # rows[0]: the units row


def _f(row, name):
    return float(row[name].replace(",", ""))


def _expected(row):
    """The kernel table's figures from NCU's `--print-units base --page raw` export."""
    ops = {"dadd": 1, "dmul": 1, "dfma": 2, "fadd": 1, "fmul": 1, "ffma": 2, "hadd": 2,
           "hmul": 2, "hfma": 4}
    flops = sum(_f(row, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum."
                        "per_cycle_elapsed") * n for op, n in ops.items()) \
        * _f(row, "smsp__cycles_elapsed.avg.per_second")
    return {
        "duration_us": _f(row, "gpu__time_duration.sum") / 1000,
        "tensor_core_utilization_pct":
            _f(row, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
        "dram_throughput_pct": _f(row, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        "achieved_occupancy_pct": _f(row, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "l2_hit_rate_pct": _f(row, "lts__t_sector_hit_rate.pct"),
        "local_spill_requests": _f(row, "derived__local_spilling_requests"),
        "waves_per_sm": _f(row, "launch__waves_per_multiprocessor"),
        "achieved_tflops": flops / 1e12,
        "achieved_dram_gbps": _f(row, "dram__bytes.sum.per_second") / 1e9,
    }


@pytest.mark.parametrize("source", ["triton_full_raw.csv", "triton_full.ncu-rep"])
def test_ncu_kernel_table_equals_the_csv_export(source):
    if source.endswith(".ncu-rep"):
        pytest.importorskip("ncu_report", reason="the .ncu-rep path needs tracecvt[ncu]")
    expected = _rows(SAMPLES / "ncu" / "h200-triton-full" / "triton_full_raw_base.csv")
    (run,) = tracecvt.read(NCU / source)
    kernels = run.summary()["ncu"]["kernels"]
    assert sorted(k["name"] for k in kernels) == sorted(expected)
    for k in kernels:
        want = _expected(expected[k["name"]])
        for name, value in want.items():
            got = k["figures"][name]["value"]
            assert got == pytest.approx(value, rel=2e-3, abs=2e-3), (k["name"], name)
        f = k["figures"]
        assert f["waves_per_sm"]["healthy"] == "> 1"
        assert f["waves_per_sm"]["ok"] is (want["waves_per_sm"] > 1)
        assert f["l2_hit_rate_pct"]["ok"] is (want["l2_hit_rate_pct"] > 80)
        assert f["achieved_occupancy_pct"]["healthy"] == "> 25 %"
        assert k["bound"] in ("memory-bound", "compute-bound", "latency-bound")
        assert k["key_issue"] != "—"
    softmax = next(k for k in kernels if k["name"] == "softmax_kernel")
    assert softmax["figures"]["achieved_tflops"]["value"] > 1     # fadd + fmul at ~1.9 GHz


def test_summary_to_stdout_is_the_json_alone(tmp_path):
    """A run with warnings: stdout holds exactly the JSON document (the warnings are in
    it, nothing else is printed there)."""
    run = checkout_copy(REPO / "samples" / "pypto" / "ffn_medium", tmp_path / "ffn_medium")
    r = subprocess.run([sys.executable, "-m", "tracecvt.cli", "summary", str(run), "--format",
                        "json", "-o", "-"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)                     # one JSON document, nothing else
    VALIDATOR.validate(data)
    assert data["warnings"] and "warning" not in r.stdout.split("{", 1)[0]
    assert data == tracecvt.read(run)[0].summary()


def test_compare_json_validates_and_has_the_summary_structure(tmp_path):
    a, b = (checkout_copy(REPO / "samples" / "pypto" / name, tmp_path / name)
            for name in ("matmul_add", "ffn_medium"))
    r = subprocess.run([sys.executable, "-m", "tracecvt.cli", "compare", str(a), str(b),
                        "--format", "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    VALIDATOR.validate(c)
    current = tracecvt.read(b)[0].summary()
    assert c["current"]["bottlenecks"] == current["bottlenecks"]
    assert c["current"]["opportunities"] == current["opportunities"]
    assert c["current"]["key_figures"] == current["key_figures"]
