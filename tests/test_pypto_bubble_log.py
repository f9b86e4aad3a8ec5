"""bubble_analysis.log (format reference section 7.1), checked against the text of the samples."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from tracecvt.errors import InputError
from tracecvt.readers.pypto.bubble_log import parse_bubble_log

from conftest import PYPTO, PYPTO_RUNS, pypto_run_dir

BUBBLE_RUNS = [r for r in PYPTO_RUNS
               if list((PYPTO / r).glob("output/*/CostModelSimulationOutput/bubble_analysis.log"))]

FIGURE_KEYS = {"Core Total Work Time": "work_time_us", "Total Wait Time": "total_wait_us",
               "Wait Schedule Time": "wait_schedule_us",
               "Wait Predecessor Time": "wait_predecessor_us"}


def log_path(name):
    (path,) = (PYPTO / name).glob("output/*/CostModelSimulationOutput/bubble_analysis.log")
    return path


def test_sample_set():
    # Six runs have a log; ffn_over_threshold (above the drawing threshold) has none.
    assert len(BUBBLE_RUNS) == 6, BUBBLE_RUNS
    assert "ffn_over_threshold" not in BUBBLE_RUNS


# -- independent reading of the text ----------------------------------------------------------

def text_sections(text):
    """(global task lines, [(header line, [body lines])]) by plain string splitting."""
    lines = text.split("\n")
    first = next(i for i, l in enumerate(lines) if l.startswith("["))
    head = [l for l in lines[:first] if l.strip().startswith("Task:")]
    sections = []
    for l in lines[first:]:
        if l.startswith("["):
            sections.append((l, []))
        elif l.strip():
            sections[-1][1].append(l)
    return head, sections


def task_fields(line):
    body = line.strip()
    key = body[len("Task:"):body.index(",")]
    label = body[body.index("label:") + 6:body.rindex(", wait:")]
    wait = body.rsplit(None, 1)[1]
    return int(key), label, wait


def same_number(parsed, text):
    """The parsed float is exactly the printed one (Python prints floats round-trip)."""
    assert isinstance(parsed, float)
    assert parsed == float(text)
    assert text in ("0",) or repr(parsed) == text, (parsed, text)


@pytest.fixture(scope="module", params=BUBBLE_RUNS)
def run(request):
    path = log_path(request.param)
    return request.param, path.read_text(), parse_bubble_log(path)


def test_cores_match_headers(run):
    name, text, parsed = run
    headers = re.findall(r"^\[(.+?)\] Execute task num:(\d+)(?:, Fake Task: (\d+))?$", text,
                         re.M)
    assert len(headers) == text.count("] Execute task num:")
    assert list(parsed["cores"]) == [h[0] for h in headers]
    assert [c["tasks"] for c in parsed["cores"].values()] == [int(h[1]) for h in headers]
    assert sum(c["tasks"] for c in parsed["cores"].values()) == \
        sum(int(h[1]) for h in headers)
    assert [c["fake_tasks"] for c in parsed["cores"].values()] == \
        [int(h[2] or 0) for h in headers]
    names = set(parsed["cores"])
    assert "Fake Core_0" in names and "HUB_80" in names
    assert any(n.startswith("AIC_") for n in names) and any(n.startswith("AIV_") for n in names)


def test_figures_and_core_top_lists_match_text(run):
    name, text, parsed = run
    _, sections = text_sections(text)
    assert len(sections) == len(parsed["cores"])
    for (header, body), (core_name, core) in zip(sections, parsed["cores"].items()):
        assert header.startswith(f"[{core_name}]")
        figures = [l for l in body if l.strip().split(":")[0] in FIGURE_KEYS]
        assert [l.strip().split(":")[0] for l in figures] == list(FIGURE_KEYS)
        for l in figures:
            label, value = l.strip().split(": ")
            same_number(core[FIGURE_KEYS[label]], value)
        tasks = [l for l in body if l.strip().startswith("Task:")]
        assert len(core["top_wait_schedule"]) == len(tasks) <= 3
        has_top = any("Top 3 tasks in waiting schedule time" in l for l in body)
        assert has_top or not tasks
        for l, entry in zip(tasks, core["top_wait_schedule"]):
            key, label, wait = task_fields(l)
            assert entry["task_key"] == key and entry["label"] == label
            same_number(entry["wait_us"], wait)


def test_global_top_list_matches_text(run):
    name, text, parsed = run
    assert text.startswith("Top 10 tasks in waiting schedule\n")
    head, _ = text_sections(text)
    top = parsed["top_wait_schedule"]
    assert len(top) == len(head) <= 10
    for line, entry in zip(head, top):
        key, label, wait = task_fields(line)
        assert entry["task_key"] == key
        assert entry["label"] == label
        same_number(entry["wait_us"], wait)


def test_task_keys_decode_like_labels(run):
    """The label's formal name is {seqNo}-{funcIdx}-{opIdx} with 0.2.0's 20-bit op index."""
    name, text, parsed = run
    entries = list(parsed["top_wait_schedule"])
    for core in parsed["cores"].values():
        entries += core["top_wait_schedule"]
    assert entries
    for e in entries:
        seq, func, op = (int(x) for x in e["label"].split("-")[:3])
        assert (e["seqNo"], e["taskId"] >> 20, e["taskId"] & 0xFFFFF) == (seq, func, op), e
        assert e["seqNo"] << 32 | e["taskId"] == e["task_key"]


def test_json_serialisable(run):
    name, text, parsed = run
    assert json.loads(json.dumps(parsed, allow_nan=False)) == parsed
    assert parsed["unit"] == "us"


def test_tiny_add_known_values():
    parsed = parse_bubble_log(log_path("tiny_add"))
    aiv25 = parsed["cores"]["AIV_25"]
    assert aiv25["tasks"] == 1 and aiv25["fake_tasks"] == 0
    assert aiv25["work_time_us"] == 5.169444444444444
    assert aiv25["total_wait_us"] == 3.3127777777777774
    assert aiv25["wait_schedule_us"] == 3.312222222222222
    assert aiv25["wait_predecessor_us"] == 0.0005555555555551983
    assert aiv25["top_wait_schedule"] == [{"task_key": 1, "seqNo": 0, "taskId": 1,
                                           "label": "0-0-1-5-0()",
                                           "wait_us": 3.312222222222222}]
    assert parsed["cores"]["HUB_80"]["tasks"] == 2
    assert len(parsed["cores"]["HUB_80"]["top_wait_schedule"]) == 2
    assert len(parsed["top_wait_schedule"]) == 6
    assert parsed["top_wait_schedule"][0]["wait_us"] == 5.023888888888889
    assert parsed["cores"]["Fake Core_0"]["total_wait_us"] == 0.0   # printed as integer 0
    assert len(parsed["cores"]) == 74        # Fake Core_0, 24 AIC, 48 AIV, HUB_80


def test_softmax_multiseq_known_values():
    parsed = parse_bubble_log(log_path("softmax_multiseq"))
    assert parsed["cores"]["Fake Core_0"]["fake_tasks"] == 24
    assert parsed["cores"]["Fake Core_0"]["tasks"] == 0
    third = parsed["top_wait_schedule"][2]
    assert third == {"task_key": 8589934600, "seqNo": 2, "taskId": 8,
                     "label": "2-0-8-7-0()", "wait_us": 1.7111111111111086}


@pytest.mark.parametrize("name", ["softmax_multiseq", "ffn_medium"])
def test_negative_values(name):
    path = log_path(name)
    text = path.read_text()
    parsed = parse_bubble_log(path)
    neg_text = re.findall(r"(?:Time:|wait:) +(-\d\S*)$", text, re.M)
    assert neg_text, "the sample has negative waits (format reference 5.6)"
    values = []
    for core in parsed["cores"].values():
        values += [core[k] for k in FIGURE_KEYS.values()]
        values += [e["wait_us"] for e in core["top_wait_schedule"]]
    values += [e["wait_us"] for e in parsed["top_wait_schedule"]]
    negatives = [v for v in values if v < 0]
    assert sorted(negatives) == sorted(float(v) for v in neg_text)


def test_reader_attaches_log():
    from tracecvt.readers import find_runs
    (src,) = find_runs(pypto_run_dir("tiny_add"))
    assert src.files["bubble_log"] == log_path("tiny_add")
    trace = src.read()
    assert trace.meta.extra["pypto_bubble_log"] == parse_bubble_log(log_path("tiny_add"))
    assert str(log_path("tiny_add")) in trace.meta.source_files


def test_gzipped_log(tmp_path):
    path = tmp_path / "bubble_analysis.log.gz"
    path.write_bytes(gzip.compress(log_path("tiny_add").read_bytes()))
    assert parse_bubble_log(path) == parse_bubble_log(log_path("tiny_add"))


# -- synthetic and malformed input ----------------------------------------------------------

SMALL = """Top 10 tasks in waiting schedule
    Task:8589934600, label:2-0-8-7-0(my, label), wait:                 1.5e-05
    Task:3, label:0-0-3--1--1(), wait:                 -737.25

[Fake Core_0] Execute task num:0, Fake Task: 3
    Core Total Work Time: 0.0
    Total Wait Time: 0
    Wait Schedule Time: 0
    Wait Predecessor Time: 0
[AI-CPU_73] Execute task num:1
    Core Total Work Time: 2.5
    Total Wait Time: -1.25
    Wait Schedule Time: -737.25
    Wait Predecessor Time: 736.0
    Top 3 tasks in waiting schedule time
[HUB_80] Execute task num:2
    Core Total Work Time: 10.0
    Total Wait Time: 1
    Wait Schedule Time: 0.5
    Wait Predecessor Time: 0.5
    Top 3 tasks in waiting schedule time
    Task:4294967297, label:1-0-1-0-0(), wait:                     0.5
"""


def test_small_synthetic_log(tmp_path):
    path = tmp_path / "bubble_analysis.log"
    path.write_text(SMALL)
    parsed = parse_bubble_log(path)
    assert parsed["top_wait_schedule"] == [
        {"task_key": 8589934600, "seqNo": 2, "taskId": 8, "label": "2-0-8-7-0(my, label)",
         "wait_us": 1.5e-05},
        {"task_key": 3, "seqNo": 0, "taskId": 3, "label": "0-0-3--1--1()", "wait_us": -737.25}]
    assert list(parsed["cores"]) == ["Fake Core_0", "AI-CPU_73", "HUB_80"]
    assert parsed["cores"]["Fake Core_0"]["fake_tasks"] == 3
    cpu = parsed["cores"]["AI-CPU_73"]
    assert (cpu["total_wait_us"], cpu["wait_schedule_us"]) == (-1.25, -737.25)
    assert cpu["top_wait_schedule"] == []          # header only: the entries were fake
    hub = parsed["cores"]["HUB_80"]
    assert hub["top_wait_schedule"][0]["seqNo"] == 1
    assert hub["total_wait_us"] == 1.0 and isinstance(hub["total_wait_us"], float)


def _lines():
    return log_path("tiny_add").read_text().split("\n")


def _expect_error(tmp_path, lines_or_text, line_no=None, match=None):
    path = tmp_path / "bubble_analysis.log"
    text = lines_or_text if isinstance(lines_or_text, str) else "\n".join(lines_or_text)
    path.write_text(text)
    with pytest.raises(InputError) as err:
        parse_bubble_log(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert err.value.path == str(path)
    if line_no is not None:
        assert f"line {line_no}:" in message, message
    if match is not None:
        assert re.search(match, message), message
    return message


def _index(lines, prefix, start=0):
    return next(i for i in range(start, len(lines)) if lines[i].startswith(prefix))


def test_bad_number(tmp_path):
    lines = _lines()
    i = _index(lines, "    Total Wait Time:", _index(lines, "[AIV_25]"))
    lines[i] = "    Total Wait Time: 3.31x"
    _expect_error(tmp_path, lines, i + 1, "not a number")


def test_unknown_line(tmp_path):
    lines = _lines()
    lines.insert(4, "some stray text")
    _expect_error(tmp_path, lines, 5, "unrecognised line")


def test_missing_figure(tmp_path):
    lines = _lines()
    i = _index(lines, "    Wait Schedule Time:", _index(lines, "[HUB_80]"))
    del lines[i]
    _expect_error(tmp_path, lines, i + 1, "Wait Schedule Time")


def test_figures_out_of_order(tmp_path):
    lines = _lines()
    i = _index(lines, "    Total Wait Time:", _index(lines, "[AIC_3]"))
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    _expect_error(tmp_path, lines, i + 1, "expected 'Total Wait Time")


def test_truncated(tmp_path):
    lines = _lines()
    i = _index(lines, "    Core Total Work Time:", _index(lines, "[AIV_26]"))
    _expect_error(tmp_path, lines[:i + 1], i + 1, "truncated")


def test_only_global_list(tmp_path):
    lines = _lines()
    i = _index(lines, "[")
    _expect_error(tmp_path, lines[:i], match="truncated")


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty(tmp_path, text):
    assert _expect_error(tmp_path, text).endswith("empty file")


def test_bad_task_key(tmp_path):
    lines = _lines()
    lines[1] = lines[1].replace("Task:4,", "Task:0x4,")
    _expect_error(tmp_path, lines, 2, "malformed task line")


def test_task_line_outside_list(tmp_path):
    lines = _lines()
    i = _index(lines, "    Wait Predecessor Time:", _index(lines, "[AIC_1]"))
    lines.insert(i + 1, "    Task:1, label:0-0-1-5-0(), wait:     3.3")
    _expect_error(tmp_path, lines, i + 2, "outside")


def test_too_many_top_entries(tmp_path):
    lines = _lines()
    i = _index(lines, "    Task:", _index(lines, "[AIV_25]"))
    lines[i + 1:i + 1] = [lines[i]] * 3
    _expect_error(tmp_path, lines, i + 4, "more than 3")


def test_missing_global_header(tmp_path):
    lines = _lines()
    i = _index(lines, "[")
    _expect_error(tmp_path, lines[i:], 1, "Top 10 tasks in waiting schedule")


def test_duplicate_core(tmp_path):
    lines = _lines()
    i = _index(lines, "[AIC_2]")
    lines[i] = lines[i].replace("AIC_2", "AIC_1")
    _expect_error(tmp_path, lines, i + 1, r"second section for core \[AIC_1\]")


def test_not_utf8(tmp_path):
    path = tmp_path / "bubble_analysis.log"
    path.write_bytes(b"Top 10 tasks in waiting schedule\n\xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        parse_bubble_log(path)
