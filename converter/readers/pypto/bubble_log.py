"""``bubble_analysis.log``: PyPTO's per-core waiting figures (format reference section 7).

Layout (all numbers in µs, Python floats printed in full; idle cores print the integer ``0``)::

    Top 10 tasks in waiting schedule
        Task:<64-bit key>, label:<task name>, wait: <spaces><value>      (up to 10 lines)

    [<core name>] Execute task num:<N>[, Fake Task: <F>]
        Core Total Work Time: <value>
        Total Wait Time: <value>
        Wait Schedule Time: <value>
        Wait Predecessor Time: <value>
        Top 3 tasks in waiting schedule time                            (optional)
        Task:<key>, label:<name>, wait: <spaces><value>                  (up to 3 lines)

Core names are whatever the script printed: ``Fake Core_0``, ``AIC_<n>``, ``AIV_<n>``,
``HUB_80``, ``AI-CPU_<n>``...  Values can be negative (section 5.6).  Every line must be one of
the above (blank lines are ignored); anything else is an ``InputError`` naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import read_text
from ...model import UINT64_END

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_GLOBAL_TOP_RE = re.compile(r"Top (\d+) tasks in waiting schedule\s*$")
_CORE_TOP_RE = re.compile(r"\s+Top (\d+) tasks in waiting schedule time\s*$")
_TASK_RE = re.compile(r"\s+Task:(\d+), label:(.*), wait:\s*(" + _NUMBER + r")\s*$")
_CORE_RE = re.compile(r"\[(.+?)\] Execute task num:(\d+)(?:, Fake Task: (\d+))?\s*$")
_FIGURE_RE = re.compile(r"\s+([A-Za-z ]+?):\s*(\S*)\s*$")
_NUMBER_RE = re.compile(_NUMBER + r"$")

# (label printed in the log, key in the result), in the order the script prints them.
FIGURES = (
    ("Core Total Work Time", "work_time_us"),
    ("Total Wait Time", "total_wait_us"),
    ("Wait Schedule Time", "wait_schedule_us"),
    ("Wait Predecessor Time", "wait_predecessor_us"),
)


def parse_bubble_log(path: Path) -> dict[str, Any]:
    """The whole log as plain JSON-serialisable data.

    ``{"unit": "us", "top_wait_schedule": [entry...], "cores": {name: core}}`` where an entry
    is ``{"task_key", "seqNo", "taskId", "label", "wait_us"}`` (seqNo = key >> 32, taskId =
    key & 0xffffffff) and a core is ``{"tasks", "fake_tasks", "work_time_us",
    "total_wait_us", "wait_schedule_us", "wait_predecessor_us", "top_wait_schedule"}``.
    Cores keep the file's order.
    """
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise InputError(path, "empty file")
    return _Parser(path).parse(text)


def _show(line: str) -> str:
    line = line.strip()
    return repr(line if len(line) <= 60 else line[:57] + "...")


class _Parser:
    def __init__(self, path: Path):
        self.path = path
        self.lineno = 0
        self.top: list[dict[str, Any]] = []
        self.cores: dict[str, dict[str, Any]] = {}
        self.list_: list[dict[str, Any]] | None = None   # Top list being filled
        self.list_max = 0
        self.list_what = ""
        self.core: dict[str, Any] | None = None          # core section being filled
        self.core_name = ""
        self.figure = 0                                  # next FIGURES index expected
        self.core_top = False                            # its Top list has started
        self.seen_header = False

    def error(self, message: str) -> InputError:
        return InputError(self.path, f"line {self.lineno}: {message}")

    def number(self, text: str, what: str) -> float:
        if not _NUMBER_RE.match(text):
            raise self.error(f"{what}: {text!r} is not a number")
        return float(text)

    def parse(self, text: str) -> dict[str, Any]:
        for self.lineno, line in enumerate(text.split("\n"), 1):
            line = line.rstrip("\r")
            if not line.strip():
                continue
            self.line(line)
        if not self.seen_header:      # only reachable for a file of blank lines
            raise InputError(self.path, "empty file")
        if self.core is not None and self.figure < len(FIGURES):
            raise self.error(f"file ends inside section [{self.core_name}] before its "
                             f"'{FIGURES[self.figure][0]}' line (truncated?)")
        if not self.cores:
            raise self.error("file ends without any '[<core>] Execute task num:' section "
                             "(truncated?)")
        return {"unit": "us", "top_wait_schedule": self.top, "cores": self.cores}

    def line(self, line: str) -> None:
        if not self.seen_header:
            m = _GLOBAL_TOP_RE.match(line)
            if not m:
                raise self.error(f"expected 'Top 10 tasks in waiting schedule', found "
                                 f"{_show(line)}")
            self.seen_header = True
            self.start_list(self.top, int(m.group(1)), "global Top list")
            return
        if self.core is not None and self.figure < len(FIGURES):
            self.figure_line(line)
            return
        m = _TASK_RE.match(line)
        if m:
            self.task_line(m)
            return
        m = _CORE_RE.match(line)
        if m:
            self.core_header(m)
            return
        m = _CORE_TOP_RE.match(line)
        if m:
            if self.core is None or self.core_top:
                raise self.error(f"unexpected {_show(line)}")
            self.core_top = True
            self.start_list(self.core["top_wait_schedule"], int(m.group(1)),
                            f"Top list of [{self.core_name}]")
            return
        if line.lstrip().startswith("Task:"):
            raise self.error(f"malformed task line {_show(line)}")
        raise self.error(f"unrecognised line {_show(line)}")

    def start_list(self, target: list, size: int, what: str) -> None:
        self.list_ = target
        self.list_max = size
        self.list_what = what

    def task_line(self, m: re.Match) -> None:
        if self.list_ is None:
            raise self.error("task line outside a 'Top N tasks' list")
        if len(self.list_) >= self.list_max:
            raise self.error(f"more than {self.list_max} entries in the {self.list_what}")
        key = int(m.group(1))
        if key >= UINT64_END:
            raise self.error(f"task key {key} does not fit in 64 bits")
        self.list_.append({
            "task_key": key,
            "seqNo": key >> 32,
            "taskId": key & 0xFFFFFFFF,
            "label": m.group(2),
            "wait_us": self.number(m.group(3), "wait"),
        })

    def core_header(self, m: re.Match) -> None:
        name = m.group(1)
        if name in self.cores:
            raise self.error(f"second section for core [{name}]")
        self.core_name = name
        self.core = {
            "tasks": int(m.group(2)),
            "fake_tasks": int(m.group(3)) if m.group(3) is not None else 0,
            "work_time_us": None,
            "total_wait_us": None,
            "wait_schedule_us": None,
            "wait_predecessor_us": None,
            "top_wait_schedule": [],
        }
        self.cores[name] = self.core
        self.figure = 0
        self.core_top = False
        self.list_ = None

    def figure_line(self, line: str) -> None:
        label, key = FIGURES[self.figure]
        m = _FIGURE_RE.match(line)
        if not m or m.group(1) != label:
            raise self.error(f"expected '{label}: <number>' in section [{self.core_name}], "
                             f"found {_show(line)}")
        self.core[key] = self.number(m.group(2), label)
        self.figure += 1
