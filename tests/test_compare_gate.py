"""``tracecvt compare BASE CUR --fail-on FIGURE:THRESHOLD``: one verdict line, the verdict
in the JSON, exit code 1 on a regression past a threshold, 0 on pass or improvement, 2 on
a figure that is not there.  Runs: tiny_add (makespan 10.259 µs, critical-path wait
8.401 µs) and matmul_add (23.101 µs, 13.881 µs), two real PyPTO simulations."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import PYPTO, REPO, cli

SCHEMA = json.loads((REPO / "docs" / "summary.schema.json").read_text())


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate")
    out = {}
    for name in ("tiny_add", "matmul_add"):
        path = d / f"{name}.json"
        r = cli("summary", PYPTO / name, "--format", "json", "-o", path)
        assert r.exit_code == 0, r.output
        out[name] = path
    return out


def _compare(base, cur, *gates):
    args = ["compare", base, cur, "--format", "json"]
    for g in gates:
        args += ["--fail-on", g]
    return cli(*args)


def _verdict(r):
    lines = r.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("{"))
    end = max(i for i, line in enumerate(lines) if line.startswith("}"))
    return json.loads("\n".join(lines[start:end + 1]))["verdict"], \
        [line for line in lines if line.startswith("tracecvt: verdict:")]


def test_regression_past_a_threshold_exits_1(summaries):
    r = _compare(summaries["tiny_add"], summaries["matmul_add"], "makespan:+5%",
                 "critical_path_wait:+10%")
    assert r.exit_code == 1, r.output
    v, line = _verdict(r)
    assert v["verdict"] == "regression"
    assert line == ["tracecvt: verdict: regression: makespan +125.2 % (regression, limit "
                    "+5%); critical_path_wait +65.2 % (regression, limit +10%)"]
    doc = json.loads(r.output[r.output.index("{"):r.output.rindex("}") + 1])
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)        # the comparison, verdict in
    assert doc["verdict"] == v
    mk = v["checks"][0]
    assert (mk["figure"], mk["name"], mk["previous"], mk["current"], mk["fails_on"]) == \
        ("makespan", "makespan", 10.259, 23.101, "increase")
    assert mk["change_pct"] == 125.178 and mk["result"] == "regression"


def test_improvement_exits_0(summaries):
    r = _compare(summaries["matmul_add"], summaries["tiny_add"], "makespan:+5%")
    assert r.exit_code == 0, r.output
    v, line = _verdict(r)
    assert v["verdict"] == "improvement" and v["checks"][0]["change_pct"] == -55.591
    assert line == ["tracecvt: verdict: improvement: makespan -55.6 % (improvement, limit "
                    "+5%)"]


def test_within_thresholds_passes(summaries, tmp_path):
    # the same run 3 % slower (a copy of its summary, the makespan changed): within +5 %
    data = json.loads(summaries["tiny_add"].read_text())
    data["key_figures"]["makespan_us"] = 10.567
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(data))
    r = _compare(summaries["tiny_add"], slower, "makespan:+5%", "critical_path_wait:+10%")
    assert r.exit_code == 0, r.output
    v, line = _verdict(r)
    assert v["verdict"] == "pass" and [c["result"] for c in v["checks"]] == ["pass", "pass"]
    assert v["checks"][0]["change_pct"] == 3.002
    # an absolute threshold in the figure's unit: +0.2 µs is exceeded by +0.308 µs
    r = _compare(summaries["tiny_add"], slower, "makespan:+0.2")
    assert r.exit_code == 1 and _verdict(r)[0]["checks"][0]["change"] == 0.308
    # utilization is better higher: without a sign a decrease past 5 % fails (-9.3 %)
    r = _compare(summaries["matmul_add"], summaries["tiny_add"], "utilization:5%")
    v = _verdict(r)[0]["checks"][0]
    assert (v["fails_on"], v["result"], r.exit_code) == ("decrease", "regression", 1)


def test_unknown_figure_or_threshold_is_one_error_line(summaries):
    r = _compare(summaries["tiny_add"], summaries["matmul_add"], "nosuch:+5%")
    assert r.exit_code == 2
    assert "no figure 'nosuch' in either run (both have: aic_bubble_rate" in r.output \
        or "no figure 'nosuch' in either run" in r.output
    r = _compare(summaries["tiny_add"], summaries["matmul_add"], "makespan5")
    assert r.exit_code == 2 and "expected FIGURE:THRESHOLD" in r.output
    r = cli("compare", "--help")
    assert "makespan, critical_path, critical_path_wait" in " ".join(r.output.split())
