"""``benchmarks/steps.py`` times the steps of one conversion in each process it uses, on one
clock, and changes nothing of the conversion: the file it writes is the plain command's,
byte for byte."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO, SAMPLES

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_simpler import scaled_run  # noqa: E402

_STEP = re.compile(r"^  +(\d+\.\d+) +(\d+\.\d+) +(\d+\.\d+)  ( *)(\S+)$")


def test_each_process_s_steps_are_timed_and_the_file_is_the_command_s(tmp_path):
    records = next((SAMPLES / "simpler" / "a2a3sim_tmr_benchmark_bgemm_Case0_L4")
                   .rglob("chip_swimlane_records.json")).parent
    run = scaled_run(records, 3, tmp_path / "x3")       # (large enough for two writers)
    timed, plain = tmp_path / "timed.pftrace", tmp_path / "plain.pftrace"
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "steps.py"),
                          "--min-ms", "0", "--", "to-perfetto", str(run), "-o", str(timed)],
                         capture_output=True, text=True, check=True).stdout
    subprocess.run([sys.executable, "-m", "tracecvt.cli", "to-perfetto", str(run), "-o",
                    str(plain)], capture_output=True, check=True, cwd=tmp_path)
    assert timed.read_bytes() == plain.read_bytes()
    processes: list[tuple[str, list]] = []
    for line in out.splitlines():
        if line.startswith("process "):
            processes.append((line, []))
        elif (m := _STEP.match(line)):
            start, end, length = map(float, m.group(1, 2, 3))
            assert start <= end and abs(end - start - length) < 0.0015, line
            processes[-1][1].append((start, end, m.group(5)))
    assert len(processes) >= 2, out                     # this one and the forked writer
    (head, main), *forked = processes
    names = [n for _, _, n in main]
    assert names.index("Source.read") < names.index("write_perfetto"), out
    read = main[names.index("Source.read")]
    write = main[names.index("write_perfetto")]
    assert read[1] <= write[0], out
    assert float(head.rsplit(" ", 2)[1]) == max(e for _, e, _ in main)
    # the forked writer writes slices while this process is within write_perfetto
    writes = [(s, e) for _, steps in forked for s, e, n in steps
              if n == "SequenceWriter.write_slices"]
    assert writes and all(write[0] <= s <= e <= write[1] for s, e in writes), out
