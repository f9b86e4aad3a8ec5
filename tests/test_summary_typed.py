"""What an agent reads in a JSON summary is typed: every figure of every sample run's summary
(../shared/samples, ../shared/field-samples, the bundled samples/) is a JSON number, never a
number in a string, under a key that is an identifier; units are in the key or, where a row
names its figure (simpler's runtime-tool figures), in the row's ``unit``.  The Markdown and
HTML summaries print the same figures, formatted from those numbers."""

from __future__ import annotations

import json
import re
from html import escape

import pytest

import tracecvt

from conftest import REPO, SAMPLES, SHARED, checkout_copy

# A key of an object: lower-case letters, digits and underscores, starting with a letter.
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
# Fields whose value is a name from the data (a task label may be all digits): text.
NAME_FIELDS = {"label", "name", "run", "function", "kernel", "figure", "kind", "task"}
# The Perfetto UI's own command invocations, passed to it verbatim: its schema
# (commandInvocationSchema) takes their arguments as strings only, a timestamp too (the same
# time is a number under the finding's slice, ts_ns).
UI_COMMAND_ARGS = "/perfetto/startup_commands[]/args[]"


def number_like(text: str) -> bool:
    """Text that reads as a number: what float() takes, thousands separators allowed."""
    t = text.strip().replace(",", "")
    try:
        float(t)
    except ValueError:
        return False
    return bool(t)


def violations(value, path="", key=None):
    if isinstance(value, dict):
        for k, v in value.items():
            if not IDENTIFIER.fullmatch(k):
                yield f"{path}: key {k!r} is not an identifier"
            yield from violations(v, f"{path}/{k}", k)
    elif isinstance(value, list):
        for v in value:
            yield from violations(v, f"{path}[]", key)
    elif isinstance(value, str) and key not in NAME_FIELDS and number_like(value) \
            and not path.endswith(UI_COMMAND_ARGS):
        yield f"{path}: {value!r} is a number in a string"


def test_violations_are_found():
    bad = {"figures": {"head P50": "467.78"}, "x": [{"n": "8"}], "name": "12",
           "key_figures": {"busy time": {"value": 1}},
           "at": {"perfetto": {"startup_commands": [{"id": "x", "args": ["1", "a"]}]}}}
    assert sorted(violations(bad)) == [
        "/figures/head P50: '467.78' is a number in a string",
        "/figures: key 'head P50' is not an identifier",
        "/key_figures: key 'busy time' is not an identifier",
        "/x[]/n: '8' is a number in a string"]


def _summaries(folder):
    try:
        runs = tracecvt.read(folder)
    except tracecvt.InputError:
        return []
    return [(f"{folder.name}/{run.name}", run) for run in runs]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    bundled = checkout_copy(REPO / "samples", tmp_path_factory.mktemp("checkout") / "samples")
    folders = [*sorted(p for p in SAMPLES.iterdir() if p.is_dir()),
               *sorted(p for p in (SHARED / "field-samples").iterdir() if p.is_dir()), bundled]
    out = [pair for folder in folders for pair in _summaries(folder)]
    assert {name.split("/")[0] for name, _ in out} >= {"pypto", "msprof", "ncu", "simpler",
                                                       "samples"}
    return out


def test_every_figure_of_every_sample_summary_is_a_number_under_an_identifier(runs):
    found = []
    for name, run in runs:
        data = json.loads(json.dumps(run.summary(), default=str))
        found += [f"{name}: {v}" for v in violations(data)]
    assert not found, "\n".join(found[:20])


def test_simpler_figures_print_the_same_in_markdown_and_html(runs):
    """Each runtime-tool figure of the JSON summary, printed with its decimals, is the figure
    the Markdown and HTML summaries show on its row."""
    from tracecvt.analyses.simpler.figures import printed
    from tracecvt.summary.simpler import _label
    simpler = [(name, run) for name, run in runs if run.summary().get("simpler")]
    assert len(simpler) >= 10
    checked = 0
    for name, run in simpler:
        s = run.summary()["simpler"]
        md = _render(run, "md")
        html = _render(run, "html")
        for tool, figs in s["figures"].items():
            comp = (s.get("comparisons") or {}).get(tool)
            for f in figs:
                if f["figure"].startswith("path ") and tool == "critical_path":
                    continue
                assert isinstance(f["value"], (int, float)) or not number_like(f["value"])
                text = printed(f["value"], f["decimals"])
                label = _label(f["figure"])
                assert f"| {label} | {text} |" in md, (name, tool, f)
                assert f"<tr><td>{escape(label)}</td><td>{escape(text)}</td>" in html
                checked += 1
            for r in (comp or {}).get("rows", []):
                if r["reference"] is not None and r["tracecvt"] is not None and \
                        not r["figure"].startswith("path "):
                    ref = printed(r["reference"], r["decimals"])
                    assert f"| {printed(r['tracecvt'], r['decimals'])} | {ref} |" in md
    assert checked > 500


def _render(run, fmt):
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        return run.write_summary(Path(d) / f"s.{fmt}", fmt=fmt).read_text()
