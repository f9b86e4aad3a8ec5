"""A baseline written by the previous release (a JSON summary of schema tracecvt-summary/2,
whose key figures, lanes, critical-path time and NCU bound classes were keyed by name) is still
read by ``summary --baseline``, ``compare`` and ``Run.summary(baseline=...)``: its maps become
schema 3's lists and identifier keys with the same figures, and its rows meet the current run's
under the same printed names.  Any other schema is refused with one line naming the file."""

from __future__ import annotations

import gzip
import json

import jsonschema
import pytest
from click.testing import CliRunner

import tracecvt
from tracecvt.analyses.key_figures import rows as key_figure_rows
from tracecvt.cli import main
from tracecvt.summary.baseline import read_summary

from conftest import FIXTURES, REPO, checkout_copy
from test_summary_typed import violations

V2 = FIXTURES / "summary_schema2_from_previous_release"
SCHEMA = json.loads((REPO / "docs" / "summary.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# fixture -> (bundled sample, run name)
RUNS = {"matmul_add": ("pypto/matmul_add", None),
        "a2a3sim_paged_attention": ("simpler/a2a3sim_paged_attention", None),
        "triton_full_raw": ("ncu/h200-triton-full", "triton_full_raw")}


def v2(name: str) -> dict:
    with gzip.open(V2 / f"{name}.summary.json.gz") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return checkout_copy(REPO / "samples", tmp_path_factory.mktemp("checkout") / "samples")


def _run(samples, name):
    folder, run_name = RUNS[name]
    runs = tracecvt.read(samples / folder)
    return next(r for r in runs if run_name is None or r.name == run_name)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_schema2_maps_become_schema3_lists_with_the_same_figures(name):
    old = v2(name)
    assert old["schema"] == "tracecvt-summary/2"
    new = read_summary(old)
    assert new["schema"] == "tracecvt-summary/3"
    # every key figure, in its order, with its value, unit and direction
    assert list(key_figure_rows(new["key_figures"])) == [
        (n, f["value"], f["unit"], f["better"]) for n, f in old["key_figures"].items()]
    assert new["configuration"]["lanes"] == [
        {"kind": k, "lanes": v["lanes"], "used": v["used"]}
        for k, v in old["configuration"]["lanes"].items()]
    cp = old["critical_path"]
    if cp["computed"]:
        assert new["critical_path"]["time_by_kind"] == [
            {"kind": k, "time_us": t} for k, t in cp["time_by_kind_us"].items()]
        assert "time_by_kind_us" not in new["critical_path"]
    if old["ncu"]:
        assert new["ncu"]["bounds"] == [
            {"bound": b, "kernels": n, "time_us": old["ncu"]["bound_time_us"][b]}
            for b, n in old["ncu"]["bound_counts"].items()]
        assert not {"bound_counts", "bound_time_us"} & set(new["ncu"])
    # the rest as it was; the result is a valid schema 3 summary with identifier keys only
    same = set(old) - {"schema", "key_figures", "configuration", "critical_path", "ncu"}
    assert all(new[k] == old[k] for k in same)
    errors = sorted(VALIDATOR.iter_errors(new), key=lambda e: e.path)
    assert not errors, f"{errors[0].message} at {list(errors[0].absolute_path)}"
    assert not list(violations(new))
    assert old == v2(name)                      # the dict given is not changed


@pytest.mark.parametrize("name", sorted(RUNS))
def test_compare_and_summary_take_a_schema2_baseline(name, samples, tmp_path):
    base = tmp_path / f"{name}.summary.json"
    base.write_text(json.dumps(v2(name)))
    run = _run(samples, name)
    old = v2(name)["key_figures"]
    r = CliRunner().invoke(main, ["compare", str(base), str(run.root), "--format", "json"])
    assert r.exit_code == 0, r.output
    c = json.loads(r.output)
    VALIDATOR.validate(c)
    assert c["schema"] == "tracecvt-compare/3" and not list(violations(c))
    # the previous release's figures under the names the current run prints: one row each,
    # both sides filled (a renamed figure would stand twice, half empty)
    assert [(x["figure"], x["previous"]) for x in c["rows"]] == [
        (n, f["value"]) for n, f in old.items()]
    assert all(x["current"] is not None for x in c["rows"])
    assert c["baseline"]["key_figures"] == read_summary(v2(name))["key_figures"]
    r = CliRunner().invoke(main, ["summary", str(run.root), "--baseline", str(base),
                                  "--format", "json", "-o", "-", "-q"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output[r.output.index("{"):])
    VALIDATOR.validate(d)
    assert [(x["figure"], x["previous"]) for x in d["vs_baseline"]] == [
        (n, f["value"]) for n, f in old.items()]
    assert d["baseline"]["configuration"]["lanes"] == \
        read_summary(v2(name))["configuration"]["lanes"]
    # the Python API takes the dict as it was written
    assert run.summary(baseline=v2(name))["vs_baseline"] == d["vs_baseline"]


@pytest.mark.parametrize("schema", ["tracecvt-summary/1", "tracecvt-summary/4", None])
def test_other_summary_schemas_are_refused_in_one_line(schema, samples, tmp_path):
    data = v2("matmul_add")
    if schema is None:
        del data["schema"]
    else:
        data["schema"] = schema
    base = tmp_path / "base.summary.json"
    base.write_text(json.dumps(data))
    run = _run(samples, "matmul_add")
    if schema is not None:          # the CLI knows the file for a tracecvt summary
        for args in (["compare", str(base), str(run.root)],
                     ["summary", str(run.root), "--baseline", str(base), "-o", "-"]):
            r = CliRunner().invoke(main, args)
            assert r.exit_code == 2, r.output
            assert r.output.strip() == (
                f"tracecvt: error: {base}: not a summary this tracecvt reads (schema {schema!r}; it "
                "reads tracecvt-summary/3 and tracecvt-summary/2): write it again with "
                "`tracecvt summary --format json RUN`"), r.output
    with pytest.raises(tracecvt.InputError, match="^baseline: not a summary this tracecvt "
                                                  "reads"):
        run.summary(baseline=data)


def test_a_schema2_figure_the_previous_release_never_wrote_is_refused(samples, tmp_path):
    data = v2("matmul_add")
    data["key_figures"]["fastest"] = {"value": 1.0, "unit": "µs", "better": "lower"}
    base = tmp_path / "base.summary.json"
    base.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["compare", str(base), str(_run(samples, "matmul_add").root)])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"tracecvt: error: {base}: key figure 'fastest' is not one tracecvt-summary/2 writes"]
